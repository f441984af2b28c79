"""Many sites in one run (``-a homepages_file=``): virtual hosts on one fixture server,
resolved to 127.0.0.1 by tests.support.dns; every site once, a tree line per site, the
``website`` field on every page, and a bound on requests in flight per host."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support import robots, sitemapindex, urlset
from tests.support.crawl import CrawlRunner
from tests.support.fixture_server import Route, RouteLike, SiteFactory

PER_HOST = 2
SETTINGS = {
    "TWISTED_DNS_RESOLVER": "tests.support.dns.LoopbackResolver",
    "RETRY_TIMES": 0,
    "DOWNLOAD_TIMEOUT": 10,
    "CONCURRENT_REQUESTS_PER_DOMAIN": PER_HOST,
    "SITEMAP_CRAWL_CONCURRENT_SITES": 7,
    "SITEMAP_CRAWL_CONCURRENT_SITEMAPS": 8,  # more than PER_HOST: the per-host bound must hold anyway
    "SITEMAP_CRAWL_KNOWN_PATHS": "sitemap.xml",
    "LOGSTATS_INTERVAL": 0.3,
}


def host(name: str) -> str:
    return f"http://{name}:{{port}}"


def many_sites(fixture_site: SiteFactory) -> tuple[Any, dict[str, int]]:
    """40 sites with sitemaps (one with an index of 12 children), 5 whose robots.txt names
    none (a known path instead), 1 whose robots.txt redirects to another host; with the
    pages each should give."""
    routes: dict[str, RouteLike] = {}
    expected: dict[str, int] = {}
    for n in range(40):
        name = f"s{n:02d}.test"
        base = host(name)
        if n == 0:
            children = [f"{base}/part-{k}.xml" for k in range(12)]
            routes[f"//{name}/robots.txt"] = robots(f"{base}/index.xml")
            routes[f"//{name}/index.xml"] = sitemapindex(*children)
            for k in range(12):
                pages = urlset(*(f"{base}/p{k}-{i}" for i in range(3)))
                routes[f"//{name}/part-{k}.xml"] = Route(pages, delay=0.2)  # slow: requests overlap
            expected[name] = 36
        else:
            routes[f"//{name}/robots.txt"] = robots(f"{base}/sitemap-{n}.xml")
            routes[f"//{name}/sitemap-{n}.xml"] = urlset(*(f"{base}/page-{i}" for i in range(n % 4 + 1)))
            expected[name] = n % 4 + 1
    for n in range(5):
        name = f"plain{n}.test"
        routes[f"//{name}/robots.txt"] = robots()
        routes[f"//{name}/sitemap.xml"] = urlset(f"{host(name)}/only")
        expected[name] = 1
    routes["//moved.test/robots.txt"] = Route(redirect_to=f"{host('new-home.test')}/robots.txt")
    routes["//new-home.test/robots.txt"] = robots(f"{host('new-home.test')}/map.xml")
    routes["//new-home.test/map.xml"] = urlset(f"{host('new-home.test')}/there")
    expected["moved.test"] = 1
    return fixture_site(routes), expected


@pytest.mark.parametrize("processes", [1, 2])
def test_a_file_of_homepages_maps_every_site_once(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path, processes: int
) -> None:
    # with 2 crawl processes the sites are split by host; the feed, tree lines, stats and
    # per-host bound must be those of one process
    site, expected = many_sites(fixture_site)
    port = site.port
    lines = ["# sites to map", ""]
    lines += [f"http://{name}:{port}/some/page" for name in expected]
    lines += [f"http://s01.test:{port}/", "not a homepage", f"http://gone.invalid:{port}/"]
    homepages = tmp_path / "sites.txt"
    homepages.write_text("\n".join(lines) + "\n", encoding="utf-8")
    trees_path = tmp_path / "trees.jsonl"

    settings = {**SETTINGS, "SITEMAP_CRAWL_TREE_FILE": str(trees_path), "SITEMAP_CRAWL_PROCESSES": processes}
    result = crawl({"homepages_file": str(homepages)}, settings=settings).assert_ok()

    trees = [json.loads(line) for line in trees_path.read_text("utf-8").splitlines()]
    by_site = {tree["url"]: tree for tree in trees}
    assert len(trees) == len(by_site) == len(expected) + 1  # each site once, the unreachable one too
    unreachable = by_site.pop(f"http://gone.invalid:{port}/")
    assert (unreachable["error"], unreachable["sub_sitemaps"]) == ("unreachable: DNS lookup failed", [])
    pages_by_site: dict[str, int] = {}
    for row in result.pages:
        pages_by_site[row["website"]] = pages_by_site.get(row["website"], 0) + 1
        assert row["url"].startswith(row["website"].rstrip("/")) or row["website"].startswith("http://moved.test")
    assert pages_by_site == {f"http://{name}:{port}/": count for name, count in expected.items()}
    for name, count in expected.items():
        tree = by_site[f"http://{name}:{port}/"]
        assert tree["kind"] == "website" and tree["error"] is None
        assert sum(node["page_count"] for node in _walk(tree)) == count, name
    plain = by_site[f"http://plain0.test:{port}/"]
    assert [(node["url"], node["kind"]) for node in plain["sub_sitemaps"]] == [
        (f"http://plain0.test:{port}/robots.txt", "robots_txt"),
        (f"http://plain0.test:{port}/sitemap.xml", "xml_urlset"),
    ]
    # politeness: no host saw more sitemap requests in flight than CONCURRENT_REQUESTS_PER_DOMAIN
    assert max(site.most_in_flight.values()) <= PER_HOST, site.most_in_flight
    assert site.most_in_flight["s00.test"] == PER_HOST  # the index's 12 children did queue up
    assert "sites.txt line 2" not in result.log
    assert result.log.count(f"sites.txt line {len(lines) - 1}: 'not a homepage' is not an http(s) URL; skipped") == 1
    assert ("Mapping the sites in 2 crawl processes" in result.log) == (processes == 2)
    assert f"Sites: {len(expected) + 1} mapped" in result.log
    assert "1 unreachable" in result.log
    assert " in flight, " in result.log and "taken from " in result.log  # the progress line
    # the last one, at the end: the sitemaps read are the tree's nodes (robots.txt included), as
    # many with 2 processes as with 1 (one process counted its failed probes, the other not)
    last = re.findall(r"Sites: (\d+) done, (\d+) in flight, (\d+) taken from .*; sitemaps read: (\d+);", result.log)
    nodes = sum(len(_walk(tree)) - 1 for tree in trees)
    assert tuple(map(int, last[-1])) == (len(expected) + 1, 0, len(expected) + 1, nodes)
    # sitemap requests: robots.txt, what it declares, the known path sitemap.xml (mode always)
    requests = (
        (1 + 1 + 12 + 1)  # s00: robots.txt, the index, its 12 children, sitemap.xml
        + 39 * 3  # s01-s39: robots.txt, their sitemap, sitemap.xml
        + 5 * 2  # plain0-4: robots.txt, sitemap.xml
        + 3  # moved.test: robots.txt (redirected by Scrapy), map.xml, sitemap.xml
        + 1  # gone.invalid: robots.txt only (unreachable: nothing else)
    )
    assert result.stats["sitemap_crawl/sites_done"] == len(expected) + 1
    assert result.stats["sitemap_crawl/requests"] == requests
    # Scrapy's downloader/* counts, kept by the spider (DOWNLOADER_STATS is off in a many-site run)
    assert result.stats["downloader/request_count"] == requests
    assert result.stats["downloader/response_count"] == requests - 1
    statuses = {k: v for k, v in result.stats.items() if k.startswith("downloader/response_status_count/")}
    assert sum(statuses.values()) == requests - 1 and statuses["downloader/response_status_count/404"] > 0
    assert result.stats["downloader/exception_type_count/scrapy.exceptions.CannotResolveHostError"] == 1
    assert "downloader/request_bytes" not in result.stats
    # every other Scrapy component's counts too (a helper's once came back only for a few
    # prefixes): the scheduler's (the redirect of moved.test's robots.txt is scheduled too,
    # and with helpers the request that passes on their output)
    assert result.stats["scheduler/enqueued"] == requests + 1 + (1 if processes == 2 else 0)


def _walk(node: dict[str, Any]) -> list[dict[str, Any]]:
    nodes = [node]
    for child in node["sub_sitemaps"]:
        nodes += _walk(child)
    return nodes


@pytest.mark.parametrize("processes", [1, 2])
def test_a_run_stopped_with_sigint_keeps_the_tree_lines_of_finished_sites(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path, processes: int
) -> None:
    import time

    routes: dict[str, RouteLike] = {}
    for n in range(4):
        name = f"fast{n}.test"
        routes[f"//{name}/robots.txt"] = robots(f"{host(name)}/map.xml")
        routes[f"//{name}/map.xml"] = urlset(f"{host(name)}/page")
    routes["//slow.test/robots.txt"] = robots(f"{host('slow.test')}/map.xml")
    routes["//slow.test/map.xml"] = Route(urlset(f"{host('slow.test')}/page"), delay=20)
    site = fixture_site(routes)
    homepages = tmp_path / "sites.txt"
    names = ["slow.test"] + [f"fast{n}.test" for n in range(4)]
    homepages.write_text("".join(f"http://{name}:{site.port}/\n" for name in names), encoding="utf-8")
    trees_path = tmp_path / "trees.jsonl"

    running = crawl.start(
        {"homepages_file": str(homepages)},
        settings={
            **SETTINGS,
            "DOWNLOAD_TIMEOUT": 60,
            "SITEMAP_CRAWL_TREE_FILE": str(trees_path),
            "SITEMAP_CRAWL_PROCESSES": processes,
        },
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (not trees_path.exists() or len(trees_path.read_text().splitlines()) < 4):
        time.sleep(0.1)
    finished = [json.loads(line) for line in trees_path.read_text("utf-8").splitlines()]
    assert sorted(tree["url"] for tree in finished) == sorted(f"http://fast{n}.test:{site.port}/" for n in range(4))
    running.interrupt()  # Scrapy waits for the slow download...
    time.sleep(1)
    running.interrupt()  # ...a second Ctrl-C stops it at once
    running.wait(60)

    trees = [json.loads(line) for line in trees_path.read_text("utf-8").splitlines()]
    assert trees[:4] == finished  # every finished site kept, as written
    for tree in trees[4:]:  # the site stopped halfway, if the stop let it be written: marked
        assert (tree["url"], tree["error"]) == (f"http://slow.test:{site.port}/", "interrupted")
        # (the sitemap in flight is not in it: the forced stop ran none of the spider's closing)
        assert [node["error"] for node in tree["sub_sitemaps"][0]["sub_sitemaps"]] in ([], ["interrupted"])
    deadline = time.monotonic() + 20
    while running.session_processes() and time.monotonic() < deadline:  # helpers and workers end too
        time.sleep(0.2)
    assert running.session_processes() == []


def test_no_site_is_started_once_a_ctrl_c_stops_the_run(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    # the site that finished during the graceful stop made room: the next one of the list was
    # opened, never fetched, and written as an "interrupted" tree (a queue worker took new sites)
    routes: dict[str, RouteLike] = {}
    for name in ("slow.test", "next0.test", "next1.test"):
        routes[f"//{name}/robots.txt"] = robots(f"{host(name)}/map.xml")
        routes[f"//{name}/map.xml"] = Route(urlset(f"{host(name)}/page"), delay=2 if name == "slow.test" else 0)
    site = fixture_site(routes)
    homepages = tmp_path / "sites.txt"
    homepages.write_text("".join(f"http://{name}:{site.port}/\n" for name in ("slow.test", "next0.test", "next1.test")))
    trees_path = tmp_path / "trees.jsonl"
    settings = {
        **SETTINGS,
        "SITEMAP_CRAWL_PROCESSES": 1,
        "SITEMAP_CRAWL_CONCURRENT_SITES": 1,
        "SITEMAP_CRAWL_TREE_FILE": str(trees_path),
    }
    running = crawl.start({"homepages_file": str(homepages), "use_known_paths": "false"}, settings=settings)
    assert site.wait_for("/map.xml", timeout=30)  # (slow.test's: the first site, alone)
    running.interrupt()
    result = running.wait(60)

    assert result.log_has("Received SIGINT")
    trees = [json.loads(line) for line in trees_path.read_text("utf-8").splitlines()]
    assert [(tree["url"], tree["error"]) for tree in trees] == [(f"http://slow.test:{site.port}/", None)]
    assert [request.header("Host") for request in site.requests] == [f"slow.test:{site.port}"] * 2
    assert result.urls() == [f"http://slow.test:{site.port}/page"]


def test_a_site_the_run_stopped_is_counted_interrupted_not_with_errors(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    routes: dict[str, RouteLike] = {}
    for name in ("fast.test", "slow.test"):
        routes[f"//{name}/robots.txt"] = robots(f"{host(name)}/map.xml")
        routes[f"//{name}/map.xml"] = Route(urlset(f"{host(name)}/page"), delay=3 if name == "slow.test" else 0)
        routes[f"//{name}/sitemap.xml"] = urlset(f"{host(name)}/other")
    site = fixture_site(routes)
    homepages = tmp_path / "sites.txt"
    homepages.write_text(f"http://fast.test:{site.port}/\nhttp://slow.test:{site.port}/\n", encoding="utf-8")
    settings = {**SETTINGS, "SITEMAP_CRAWL_PROCESSES": 1, "CLOSESPIDER_TIMEOUT": 1.5}
    result = crawl({"homepages_file": str(homepages)}, settings=settings).assert_ok()
    # (slow.test's urlset came in during the stop; its well-known path was never asked)
    assert "Sites: 2 mapped (1 with sitemaps, 1 interrupted)." in result.log
    assert "Sites: 1 done, 0 in flight, 1 interrupted, 2 taken from " in result.log  # (the last progress line)
    assert result.stats["sitemap_crawl/sites/interrupted"] == 1
    assert result.stats["sitemap_crawl/sites/with_errors"] == 0


def test_sites_with_nothing_to_fetch_finish_one_after_another(crawl: CrawlRunner, tmp_path: Path) -> None:
    # nothing is fetched (no robots.txt, no known path): each site is done as soon as it
    # starts, and the next one takes its place, for a list longer than Python's recursion limit
    homepages = tmp_path / "sites.txt"
    homepages.write_text("".join(f"http://s{n}.test/\n" for n in range(3000)), encoding="utf-8")
    trees_path = tmp_path / "trees.jsonl"

    result = crawl(
        {"homepages_file": str(homepages), "use_robots": False, "use_known_paths": False},
        settings={**SETTINGS, "SITEMAP_CRAWL_TREE_FILE": str(trees_path)},
    ).assert_ok()

    assert len(trees_path.read_text("utf-8").splitlines()) == 3000
    assert result.stats["sitemap_crawl/sites_done"] == 3000


def test_the_warning_of_a_file_without_homepages_is_said_once_and_only_then(crawl: CrawlRunner, tmp_path: Path) -> None:
    # a helper process whose share was empty (every line one host) warned that the file
    # lists no usable homepage, and a file without one warned once per process
    one_host = tmp_path / "one-host.txt"
    one_host.write_text("http://a.test/\nhttp://a.test/x\n", encoding="utf-8")
    none = tmp_path / "none.txt"
    none.write_text("# nothing\nnot a url\n", encoding="utf-8")
    settings = {**SETTINGS, "SITEMAP_CRAWL_PROCESSES": 2}
    fine = crawl({"homepages_file": str(one_host), "use_robots": False, "use_known_paths": False}, settings=settings)
    trees = tmp_path / "trees.json"
    empty = crawl({"homepages_file": str(none)}, settings={**settings, "SITEMAP_CRAWL_TREE_FILE": str(trees)})
    assert fine.assert_ok().log_count("lists no usable homepage") == 0
    assert empty.assert_ok().log_count("lists no usable homepage") == 1
    assert trees.read_text("utf-8") == "[]\n"  # no tree file was written
    assert "Sites: 0 mapped" in empty.log


def test_each_sites_pages_keep_the_document_order_among_many_sites(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    # a sitemap ended (its turn passed to the next) once its last batch was yielded, not once
    # it was through the item pipelines: with many sites' items processed at once, the next
    # sitemap's batch could pass it (c7 c10 c8 c9 in a probe's feed)
    routes: dict[str, RouteLike] = {}
    homepages = tmp_path / "sites.txt"
    names = [f"o{n:03d}.test" for n in range(200)]
    for name in names:
        base = host(name)
        routes[f"//{name}/robots.txt"] = robots(f"{base}/idx.xml")
        routes[f"//{name}/idx.xml"] = sitemapindex(*(f"{base}/c{k}.xml" for k in range(20)))
        for k in range(20):
            pages = urlset(*(f"{base}/c{k}/p{i}" for i in range(5)))
            routes[f"//{name}/c{k}.xml"] = Route(pages, delay=1.0 if k in (0, 7) else 0.05)
    site = fixture_site(routes)
    homepages.write_text("".join(f"http://{name}:{site.port}/\n" for name in names))
    settings = {"TWISTED_DNS_RESOLVER": SETTINGS["TWISTED_DNS_RESOLVER"], "SITEMAP_CRAWL_PROCESSES": 1}
    result = crawl({"homepages_file": str(homepages), "use_known_paths": False}, settings=settings).assert_ok()
    by_site: dict[str, list[str]] = {}
    for row in result.pages:
        by_site.setdefault(row["website"], []).append(row["url"].split("/")[3])
    expected = [f"c{k}" for k in range(20) for _page in range(5)]
    assert {website: urls for website, urls in by_site.items() if urls != expected} == {}
    assert len(by_site) == len(names)


def sites_of_page_sitemaps(
    fixture_site: SiteFactory, tmp_path: Path, sites: int, maps: int, pages: int, delay: float = 0.0
) -> Path:
    """``sites`` sites s0.test, s1.test..., each a robots.txt declaring ``maps`` sitemaps of
    ``pages`` pages (each answered after ``delay`` s); the homepages file that lists them."""
    routes: dict[str, RouteLike] = {}
    for n in range(sites):
        name = f"s{n}.test"
        routes[f"//{name}/robots.txt"] = robots(*(f"{host(name)}/map{m}.xml" for m in range(maps)))
        for m in range(maps):
            listed = urlset(*(f"{host(name)}/p{m}-{i}" for i in range(pages)))
            routes[f"//{name}/map{m}.xml"] = Route(listed, delay=delay)
    site = fixture_site(routes)
    homepages = tmp_path / "sites.txt"
    homepages.write_text("".join(f"http://s{n}.test:{site.port}/\n" for n in range(sites)), encoding="utf-8")
    return homepages


def test_a_run_a_closespider_limit_stops_stops_its_crawl_processes_without_an_error(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    # the main process ends its helpers itself (SIGTERM): that is no helper dying
    homepages = sites_of_page_sitemaps(fixture_site, tmp_path, sites=4, maps=3, pages=50, delay=0.5)
    settings = {**SETTINGS, "SITEMAP_CRAWL_PROCESSES": 2, "CLOSESPIDER_PAGECOUNT": 3}

    result = crawl({"homepages_file": str(homepages)}, settings=settings).assert_ok()

    assert "closespider_pagecount" in result.log
    assert "ERROR" not in result.log, result.log[-3000:]


@pytest.mark.parametrize("limit", ["per-ip", "download-slots"])
def test_the_per_ip_and_per_slot_bounds_hold_for_sitemap_requests(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path, limit: str
) -> None:
    # the spider held CONCURRENT_REQUESTS_PER_DOMAIN only: 10 sites on one address with
    # CONCURRENT_REQUESTS_PER_IP=2 were seen 30 requests at a time, a DOWNLOAD_SLOTS
    # concurrency of 1 three at a time
    site, expected = many_sites(fixture_site)
    homepages = tmp_path / "sites.txt"
    homepages.write_text("".join(f"http://{name}:{site.port}/\n" for name in list(expected)[:12]), encoding="utf-8")
    settings: dict[str, Any] = {**SETTINGS, "SITEMAP_CRAWL_PROCESSES": 1}
    if limit == "per-ip":  # (Scrapy's default priority queue refuses CONCURRENT_REQUESTS_PER_IP)
        settings |= {"CONCURRENT_REQUESTS_PER_IP": 2, "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.ScrapyPriorityQueue"}
    else:
        settings["DOWNLOAD_SLOTS"] = {"s00.test": {"concurrency": 1}}

    result = crawl({"homepages_file": str(homepages)}, settings=settings).assert_ok()

    assert len({row["website"] for row in result.pages}) == 12
    if limit == "per-ip":  # every *.test host is 127.0.0.1
        assert site.most_in_flight_in_all == 2, site.most_in_flight
    else:
        assert site.most_in_flight["s00.test"] == 1  # its index's 12 slow children, one at a time
        assert max(site.most_in_flight.values()) <= PER_HOST


def test_feeds_that_count_or_filter_items_get_every_page_of_the_helper_processes(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    # a feed's item_classes, item_filter or batch_item_count makes every page an item of its
    # own: the helpers' pages came as page batches all the same, dropped by item_classes and
    # counted as one item each by batch_item_count
    homepages = sites_of_page_sitemaps(fixture_site, tmp_path, sites=8, maps=1, pages=20)
    classes, parts = tmp_path / "classes.jsonl", tmp_path / "parts"
    feeds = {
        str(classes): {"format": "jsonlines", "item_classes": ["sitemap_crawl.items.SitemapPage"]},
        str(parts / "p-%(batch_id)s.jsonl"): {"format": "jsonlines", "batch_item_count": 30},
    }
    settings = {**SETTINGS, "SITEMAP_CRAWL_PROCESSES": 2, "FEEDS": feeds}

    result = crawl({"homepages_file": str(homepages)}, settings=settings).assert_ok()

    assert "Mapping the sites in 2 crawl processes" in result.log
    assert len(result.pages) == 160
    assert len(classes.read_text("utf-8").splitlines()) == 160
    sizes = sorted(len(path.read_text("utf-8").splitlines()) for path in parts.iterdir())
    assert sum(sizes) == 160 and max(sizes) == 30, sizes
