"""sitemap_crawl.shards: what a helper crawl process inherits and what it sends back, and
how a run in two processes stops. (A whole run in two processes: tests/test_crawl_many_sites.py.)"""

from __future__ import annotations

import asyncio
import json
import os
import re
import select
import signal
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from scrapy import Spider
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from sitemap_crawl.codec import page_to_tuple
from sitemap_crawl.extensions.tree import SitemapTreeExtension
from sitemap_crawl.items import Image, SitemapPage
from sitemap_crawl.parsing.worker_protocol import HEADER_SIZE, decode_frame, decode_length, encode_frame
from sitemap_crawl.settings_reader import SettingsReader
from sitemap_crawl.shards.helpers import HelperProcesses, page_batch
from sitemap_crawl.shards.output import ShardOutput, helper_stats
from sitemap_crawl.shards.protocol import PAGES, STATS, STOPPED_EXIT_CODE
from sitemap_crawl.shards.runner import finish_closing_on_sigterm, helper_exit_code, helper_settings
from sitemap_crawl.shards.settings_copy import NotPlain, copy_settings, plain
from sitemap_crawl.sites.shard import Shard
from tests.support import FixtureServer, Route, RouteLike, robots, urlset
from tests.support.crawl import CrawlResult, CrawlRunner
from tests.support.fixture_server import SiteFactory

SLOW_S = 1.0
"""How long each sitemap of the stop tests takes to answer: a stop finds some in flight."""
STOP_SETTINGS = {
    "TWISTED_DNS_RESOLVER": "tests.support.dns.LoopbackResolver",
    "RETRY_TIMES": 0,
    "DOWNLOAD_TIMEOUT": 20,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
    "SITEMAP_CRAWL_CONCURRENT_SITES": 2,
    "SITEMAP_CRAWL_KNOWN_PATHS": "sitemap.xml",
    "SITEMAP_CRAWL_PROCESSES": 2,
}


def test_settings_travel_as_plain_values_with_their_priority() -> None:
    settings = Settings()
    settings.set("EXTENSIONS", {SitemapTreeExtension: 100, "some.Extension": None}, priority="project")
    settings.set("CONCURRENT_REQUESTS", 7, priority="cmdline")
    settings.set("FEEDS", {"pages.jsonl": {"format": "jsonlines"}}, priority="cmdline")
    copied = copy_settings(settings)
    assert copied["EXTENSIONS"] == [
        {"sitemap_crawl.extensions.tree.SitemapTreeExtension": 100, "some.Extension": None},
        20,
    ]
    assert copied["CONCURRENT_REQUESTS"] == [7, 40]
    assert "FEEDS" not in copied  # the main process writes the feeds
    assert "USER_AGENT" not in copied  # Scrapy's default: the helper has it anyway


def test_single_values_the_spider_set_itself_are_left_for_the_helpers_spider() -> None:
    settings = Settings()
    settings.set("DOWNLOADER_STATS", False, priority="spider")
    settings.set("CONCURRENT_ITEMS", 3, priority="project")
    settings.set("EXTENSIONS", {"some.Extension": 10}, priority="project")
    settings["EXTENSIONS"].set("other.Extension", 20, priority="spider")
    copied = copy_settings(settings)
    assert "DOWNLOADER_STATS" not in copied  # the helper's spider turns it off and counts itself
    assert copied["CONCURRENT_ITEMS"] == [3, 20]
    assert copied["EXTENSIONS"][0] == {"some.Extension": 10, "other.Extension": 20}


def test_a_value_that_cannot_travel_is_refused() -> None:
    with pytest.raises(NotPlain):
        plain(object())
    with pytest.raises(NotPlain):
        plain(lambda: None)


def test_a_helper_writes_no_feed_tree_or_job_state_of_its_own() -> None:
    overrides = helper_settings("1/2", 5)
    assert overrides["FEEDS"] == {} and overrides["SITEMAP_CRAWL_TREE_FILE"] is None
    assert overrides["JOBDIR"] is None and overrides["SITEMAP_CRAWL_PROCESSES"] == 1
    assert overrides["ITEM_PIPELINES"] == {"sitemap_crawl.shards.output.ShardOutput": 0}
    assert (overrides["SITEMAP_CRAWL_SHARD"], overrides["SITEMAP_CRAWL_SHARD_FD"]) == ("1/2", 5)


def test_pages_cross_the_pipe_whole() -> None:
    page = SitemapPage(
        "https://a.example/p",
        "https://a.example/map.xml",
        priority=0.8,
        last_modified="2026-11-01T00:00:00+02:00",
        images=[Image("https://a.example/i.png", caption="an image")],
        website="https://a.example/",
    )
    frame = encode_frame((PAGES, page.website, page.sitemap_url, (0, 2), [page_to_tuple(page)]))
    batch = page_batch(decode_frame(frame[HEADER_SIZE:]))
    assert (batch.website, batch.sitemap_url, batch.node_path) == ("https://a.example/", page.sitemap_url, (0, 2))
    assert batch.pages == [page]


def test_a_helpers_figures_join_the_main_processes_but_what_it_counts_itself() -> None:
    sent = helper_stats(
        {
            "httpcache/hit": 3,
            "robotstxt/request_count": 2,
            "my_project/counter": 1.5,
            "request_depth_max": 4,
            "item_scraped_count": 9,  # the main process counts the items, pages and sites it gets
            "sitemap_crawl/pages": 9,
            "memusage/max": 10**8,  # not sums
            "elapsed_time_seconds": 2.5,
            "finish_reason": "finished",
        }
    )
    assert sent == {"httpcache/hit": 3, "robotstxt/request_count": 2, "my_project/counter": 1.5, "request_depth_max": 4}
    helpers = HelperProcesses.__new__(HelperProcesses)
    helpers.stats, helpers.maxima = {}, {}
    helpers.add_stats(sent)
    helpers.add_stats({"httpcache/hit": 4, "request_depth_max": 2})
    assert helpers.stats == {"httpcache/hit": 7, "robotstxt/request_count": 2, "my_project/counter": 1.5}
    assert helpers.maxima == {"request_depth_max": 4}


@pytest.mark.parametrize(
    "name", ["SITEMAP_CRAWL_HISTORY", "SITEMAP_CRAWL_AUDIT_FILE", "SITEMAP_CRAWL_REPORT_FILE", None]
)
def test_a_run_that_writes_one_file_from_every_site_is_one_process(name: str | None) -> None:
    settings = Settings({"SITEMAP_CRAWL_PROCESSES": 3})
    if name is not None:
        settings.set(name, "out.file")
    assert SettingsReader(settings).crawl_processes == (1 if name else 3)


@pytest.mark.parametrize(
    ("reason", "code"),
    [
        ("finished", 0),
        ("closespider_pagecount", 0),
        ("closespider_itemcount", 0),
        ("shutdown", STOPPED_EXIT_CODE),  # a signal: the main process knows whether it sent it
        ("cancelled", 1),
        (None, 1),  # it never started
    ],
)
def test_a_helpers_exit_code_says_how_it_ended(reason: object, code: int) -> None:
    assert helper_exit_code(reason) == code


def _slow_sites(fixture_site: SiteFactory, tmp_path: Path) -> tuple[FixtureServer, list[str], Path, Path]:
    """Two sites in each share of two processes, each with two slow sitemaps of 3 pages: the
    site, the host names (the helper's last), the homepages file and the tree file to give."""
    names = [f"s{n}.test" for n in range(40)]
    hosts = [name for name in names if Shard(0, 2).holds(name)][:2]
    hosts += [name for name in names if Shard(1, 2).holds(name)][:2]
    routes: dict[str, RouteLike] = {}
    for name in hosts:
        base = f"http://{name}:{{port}}"
        routes[f"//{name}/robots.txt"] = robots(f"{base}/a.xml", f"{base}/b.xml")
        for part in ("a", "b"):
            routes[f"//{name}/{part}.xml"] = Route(urlset(*(f"{base}/{part}{i}" for i in range(3))), delay=SLOW_S)
    site = fixture_site(routes)
    homepages = tmp_path / "sites.txt"
    homepages.write_text("".join(f"http://{name}:{site.port}/\n" for name in hosts), encoding="utf-8")
    return site, hosts, homepages, tmp_path / "trees.jsonl"


def _requested_sitemaps(site: FixtureServer) -> set[str]:
    """The URLs of the sitemaps the server was asked for so far."""
    return {
        f"http://{request.header('Host')}{request.path}"
        for request in site.requests
        if request.path.endswith(("/a.xml", "/b.xml"))
    }


def _start(crawl: CrawlRunner, homepages: Path, trees_path: Path) -> Any:
    """A run of the sites of ``homepages`` in two processes, started (not waited for)."""
    return crawl.start(
        {"homepages_file": str(homepages)}, settings={**STOP_SETTINGS, "SITEMAP_CRAWL_TREE_FILE": str(trees_path)}
    )


def _wait_for_sitemap_requests(running: Any, site: FixtureServer, hosts: list[str]) -> None:
    """Wait until a sitemap of every one of ``hosts`` has been asked for."""
    deadline = time.monotonic() + 30
    while not all(any(host in url for url in _requested_sitemaps(site)) for host in hosts):
        assert time.monotonic() < deadline and running.running(), running.log()[-3000:]
        time.sleep(0.05)


def _assert_every_requested_sitemap_is_mapped(result: CrawlResult, site: FixtureServer, trees_path: Path) -> None:
    """What one process gives: every sitemap requested before the stop is answered and read
    (tree and feed), and every page counted is in the feed."""
    assert result.log_lines("ERROR") == [], result.log[-3000:]
    nodes: dict[str, dict[str, Any]] = {}
    for line in trees_path.read_text("utf-8").splitlines():
        stack = [json.loads(line)]
        while stack:
            node = stack.pop()
            nodes[node["url"]] = node
            stack += node["sub_sitemaps"]
    rows = result.pages
    assert result.stats["item_scraped_count"] == len(rows)
    requested = _requested_sitemaps(site)
    assert requested
    for url in requested:
        assert url in nodes and nodes[url]["error"] is None, (url, nodes.get(url))
        assert sum(row["sitemap_url"] == url for row in rows) == 3, url


def test_a_closespider_limit_passes_on_what_the_helpers_had_in_flight(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    # the helper's last pages reached the feed after it was closed ("write to closed file",
    # counted but not written) or never (sitemaps answered in full, missing from tree and feed)
    site, _hosts, homepages, trees_path = _slow_sites(fixture_site, tmp_path)
    settings = {**STOP_SETTINGS, "SITEMAP_CRAWL_TREE_FILE": str(trees_path), "CLOSESPIDER_TIMEOUT": 1.5}

    result = crawl({"homepages_file": str(homepages)}, settings=settings).assert_ok()

    assert "closespider_timeout" in result.log
    _assert_every_requested_sitemap_is_mapped(result, site, trees_path)


def test_one_ctrl_c_in_a_terminal_is_one_graceful_stop_of_every_process(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    # the helper got the terminal's SIGINT and the main process's SIGTERM: "Received SIGTERM
    # twice, forcing unclean shutdown", and its sitemaps in flight were lost
    site, hosts, homepages, trees_path = _slow_sites(fixture_site, tmp_path)
    running = _start(crawl, homepages, trees_path)
    _wait_for_sitemap_requests(running, site, hosts[2:])  # (the helper's)

    os.killpg(running.pid, signal.SIGINT)  # a terminal's Ctrl-C: to the whole process group
    result = running.wait(60).assert_ok()

    assert "forcing unclean shutdown" not in result.log
    _assert_every_requested_sitemap_is_mapped(result, site, trees_path)


def test_a_ctrl_c_while_a_helper_starts_is_one_graceful_stop(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    # a helper still importing Scrapy died of the SIGINT (a KeyboardInterrupt traceback, "ended
    # with exit code -2"): it ignored it only once started; now it is started ignoring it
    _site, _hosts, homepages, trees_path = _slow_sites(fixture_site, tmp_path)
    running = _start(crawl, homepages, trees_path)
    assert running.wait_for_log("Mapping the sites in 2 crawl processes"), running.log()[-3000:]

    os.killpg(running.pid, signal.SIGINT)
    result = running.wait(60).assert_ok()

    assert "Traceback" not in result.log and "KeyboardInterrupt" not in result.log
    assert result.log_count("Crawl process 1/2 stopped with the run") == 1
    assert result.log_lines("ERROR") == []


def _helper_pid(running: Any) -> int | None:
    """The helper crawl process of a running crawl, found in /proc."""
    for pid in running.session_processes():
        try:
            if b"sitemap_crawl.shards.runner" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return pid
        except OSError:
            continue
    return None


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM])
def test_the_sites_a_helper_ended_from_outside_had_not_started_are_mapped_by_the_main_process(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path, signum: int
) -> None:
    names = [f"d{n}.test" for n in range(60)]
    hosts = [name for name in names if Shard(0, 2).holds(name)][:2]
    helper_hosts = [name for name in names if Shard(1, 2).holds(name)][:6]
    routes: dict[str, RouteLike] = {}
    for name in hosts + helper_hosts:
        base = f"http://{name}:{{port}}"
        routes[f"//{name}/robots.txt"] = robots(f"{base}/a.xml")
        routes[f"//{name}/a.xml"] = Route(urlset(*(f"{base}/a{i}" for i in range(3))), delay=SLOW_S)
    site = fixture_site(routes)
    homepages = tmp_path / "sites.txt"
    homepages.write_text("".join(f"http://{name}:{site.port}/\n" for name in hosts + helper_hosts), "utf-8")
    trees_path = tmp_path / "trees.jsonl"
    running = _start(crawl, homepages, trees_path)
    _wait_for_sitemap_requests(running, site, helper_hosts[:2])
    time.sleep(0.3)  # (its reports of the two robots.txt it read reach the pipe; a.xml answers in 1 s)
    helper = _helper_pid(running)
    assert helper is not None

    os.kill(helper, signum)  # (SIGTERM: it stops gracefully, exit code 3, which the run did not ask for)
    result = running.wait(90)

    # before: the 4 sites of its share it had not started were in neither the tree nor the feed
    websites = [json.loads(line)["url"] for line in trees_path.read_text("utf-8").splitlines()]
    assert sorted(websites) == sorted(f"http://{name}:{site.port}/" for name in hosts + helper_hosts)
    assert result.log_count("This process maps the 4 sites crawl process 1/2 had not started") == 1
    mapped_here = [f"http://{name}:{site.port}/" for name in helper_hosts[2:]]
    assert {row["website"] for row in result.pages} >= set(mapped_here)
    assert all(sum(row["website"] == website for row in result.pages) == 3 for website in mapped_here)
    # the last progress line: the helper's sites in flight no longer counted so (they end
    # interrupted), the ones this process took over counted taken (it said more done than taken)
    last = re.findall(r"Sites: (\d+) done, (\d+) in flight, (?:(\d+) interrupted, )?(\d+) taken", result.log)[-1]
    done, in_flight, interrupted, taken = (int(figure or 0) for figure in last)
    assert (in_flight, taken) == (0, len(hosts + helper_hosts)) and done + interrupted == taken
    assert f"Sites: {taken} mapped" in result.log and (f"{interrupted} interrupted)" in result.log) == bool(interrupted)


def _read_late(read_fd: int, into: list[bytes]) -> None:
    """Read a pipe as a busy main process does: a second late, then until it has said
    nothing for 2 s (or ended)."""
    time.sleep(1.0)
    while select.select([read_fd], [], [], 2.0)[0]:
        data = os.read(read_fd, 1 << 16)
        if not data:
            return
        into.append(data)


def _frames(data: bytes) -> list[Any]:
    frames = []
    while data:
        length = decode_length(data[:HEADER_SIZE])
        frames.append(decode_frame(data[HEADER_SIZE : HEADER_SIZE + length]))
        data = data[HEADER_SIZE + length :]
    return frames


def test_a_helper_hands_its_last_frames_to_the_pipe_before_its_loop_stops() -> None:
    # the main process was slow to read at the end: the frames the helper's pipe transport
    # still held (under its 64 KiB high-water mark, so drain() did not wait) were lost when
    # its loop stopped after spider_closed: its last pages, the end of its site and its
    # stats (seen once in 30 two-process runs; 44 KB of 94 here)
    read_fd, write_fd = os.pipe()
    received: list[bytes] = []
    reader = threading.Thread(target=_read_late, args=(read_fd, received))
    reader.start()
    crawler = get_crawler(Spider)
    pages = [
        (PAGES, "https://a.example/", "https://a.example/s.xml", None, [(f"{n:04}" + "x" * 1000,)]) for n in range(90)
    ]

    async def helper_closes() -> None:
        output = ShardOutput(crawler, write_fd)
        await output._open()
        for page in pages:
            output._send(page)
        await output._close()

    try:
        asyncio.run(helper_closes())  # (the loop is closed at once, as the helper's ends)
    finally:
        reader.join()
        os.close(read_fd)
    frames = _frames(b"".join(received))
    assert frames[:-1] == pages
    assert frames[-1][0] == STATS


def test_a_helper_already_closing_lets_the_sigterm_of_a_stopping_run_pass() -> None:
    # Scrapy's handler stopped the helper's loop at once when its spider was already closing
    # (its share done): its last pages, site ends and stats, still waiting for a main process
    # slow to read, were lost on one Ctrl-C (a helper's sites "interrupted", their pages in
    # the feed). Not yet closing, the helper stops gracefully, as before.
    received: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, _frame: received.append(signum))
    try:
        slot = SimpleNamespace(closing=object())
        crawler = SimpleNamespace(engine=SimpleNamespace(_slot=slot))
        finish_closing_on_sigterm(crawler)
        signal.raise_signal(signal.SIGTERM)
        assert received == []
        slot.closing = None
        signal.raise_signal(signal.SIGTERM)
        assert received == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, previous)
