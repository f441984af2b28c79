"""Workers sharing one queue (``-a queue=redis://...``) against a real server: the commands,
two workers draining one stream, a worker killed mid-site, the dead-letter path, a server
that goes away, and the exactly-once collect step."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support import robots, urlset
from tests.support.crawl import REPO_ROOT, CrawlResult, CrawlRunner, RunningCrawl
from tests.support.fixture_server import FixtureServer, Route, RouteLike, SiteFactory
from tests.support.queue_server import QueueServer

SETTINGS = {
    "TWISTED_DNS_RESOLVER": "tests.support.dns.LoopbackResolver",
    "RETRY_TIMES": 0,
    "DOWNLOAD_TIMEOUT": 30,
    "SITEMAP_CRAWL_CONCURRENT_SITES": 4,
    "SITEMAP_CRAWL_KNOWN_PATHS": "sitemap.xml",
    "SITEMAP_CRAWL_PARSE_WORKERS": 0,
    "LOGSTATS_INTERVAL": 0.5,
    "LOG_LEVEL": "INFO",
}


def host(name: str) -> str:
    return f"http://{name}:{{port}}"


def sites(
    fixture_site: SiteFactory, count: int, slow: dict[str, float] | None = None
) -> tuple[FixtureServer, dict[str, int]]:
    """``count`` sites s00.test...: robots.txt names a urlset /map-<n>.xml of n % 3 + 1 pages (a ``slow``
    site's urlset answers after that many seconds); with the pages each should give."""
    routes: dict[str, RouteLike] = {}
    expected: dict[str, int] = {}
    for n in range(count):
        name = f"s{n:02d}.test"
        pages = urlset(*(f"{host(name)}/page-{i}" for i in range(n % 3 + 1)))
        routes[f"//{name}/robots.txt"] = robots(f"{host(name)}/map-{n}.xml")
        routes[f"//{name}/map-{n}.xml"] = Route(pages, delay=(slow or {}).get(name, 0))
        expected[name] = n % 3 + 1
    site = fixture_site(routes)
    return site, {f"http://{name}:{site.port}/": pages for name, pages in expected.items()}


def scrapy(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scrapy", *args],
        cwd=REPO_ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def enqueue(server: QueueServer, homepages: list[str]) -> str:
    result = scrapy("sitemaps-enqueue", "-", "--queue", server.url, stdin="\n".join(homepages) + "\n")
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def status(server: QueueServer) -> dict[str, Any]:
    result = scrapy("sitemaps-status", "--queue", server.url, "--json")
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout))


def worker(
    crawl: CrawlRunner, server: QueueServer, name: str, tmp_path: Path, feed: str = "", **settings: object
) -> RunningCrawl:
    """A worker writing pages-<name>.jsonl (appending; or ``feed``) and trees-<name>.jsonl in tmp_path."""
    return crawl.start(
        {"queue": server.url},
        output_format=None,
        settings={**SETTINGS, "SITEMAP_CRAWL_TREE_FILE": str(tmp_path / f"trees-{name}.jsonl"), **settings},
        extra_args=["-o", str(tmp_path / (feed or f"pages-{name}.jsonl"))],
    )


def collect(tmp_path: Path) -> tuple[list[dict[str, Any]], str, int]:
    out = tmp_path / "all.jsonl"
    result = scrapy(
        "sitemaps-collect", "--trees", str(tmp_path / "trees-*.jsonl"), "--pages", str(tmp_path / "pages-*.jsonl"),
        "-O", str(out),
    )  # fmt: skip
    rows = [json.loads(line) for line in out.read_text("utf-8").splitlines()] if out.exists() else []
    return rows, result.stderr, result.returncode


def rows_by_site(rows: list[dict[str, Any]]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for row in rows:
        found.setdefault(row["website"], []).append(row["url"])
    return found


def expected_urls(expected: dict[str, int]) -> dict[str, list[str]]:
    return {site: [f"{site}page-{i}" for i in range(count)] for site, count in expected.items()}


def test_enqueue_counts_new_and_already_there_and_status_shows_it(queue_server: QueueServer, tmp_path: Path) -> None:
    listing = tmp_path / "sites.txt"
    listing.write_text("# mine\nhttp://a.test/x\nhttp://b.test/\n\nnot a url\nhttp://a.test/y\n", encoding="utf-8")
    first = scrapy("sitemaps-enqueue", str(listing), "--queue", queue_server.url)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "2 new, 0 already there, 1 repeated in the list, 1 line skipped (not http(s) URLs)"
    assert enqueue(queue_server, ["http://b.test/", "http://c.test:8080/page"]) == "1 new, 1 already there"
    assert status(queue_server) == {
        "queue": queue_server.url,
        "key": "sitemap_crawl",
        "enqueued": 3,
        "waiting": 3,
        "in_flight": 0,
        "workers": {},
        "done": 0,
        "failed": 0,
        "dead_lettered": 0,
        "duplicates": 0,
        "pages": 0,
        "dead": [],
    }
    text = scrapy("sitemaps-status", "--queue", queue_server.url)
    assert f"Queue {queue_server.url} (key sitemap_crawl)" in text.stdout
    assert "  waiting:       3" in text.stdout and "  done:          0" in text.stdout
    bad = scrapy("sitemaps-status", "--queue", "http://not-redis/")
    assert bad.returncode != 0 and "is not a redis:// or rediss:// URL" in bad.stderr
    bad_option = scrapy("sitemaps-status", "--queue", f"{queue_server.url}?socket_timeout=abc")
    assert bad_option.returncode == 2 and "Invalid value for 'socket_timeout'" in bad_option.stderr
    assert "Traceback" not in bad_option.stderr
    gone = scrapy("sitemaps-status", "--queue", "redis://127.0.0.1:1/0")
    assert gone.returncode == 1 and "cannot be reached" in gone.stderr


def test_enqueue_reads_standard_input_as_a_file_is_read(queue_server: QueueServer) -> None:
    # a byte that is not UTF-8 in a kept path reached the server key as a surrogate: a
    # traceback, and not even the lines before it were added
    given = b"http://ok.test/\nhttp://s5.test/caf\xe9\nhttp://after.test/\n"
    command = [sys.executable, "-m", "scrapy", "sitemaps-enqueue", "-", "--keep-path", "--queue", queue_server.url]
    result = subprocess.run(command, cwd=REPO_ROOT, input=given, capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.decode().strip() == "3 new, 0 already there"


def test_ctrl_c_stops_an_enqueue_after_the_batch_being_sent(queue_server: QueueServer, tmp_path: Path) -> None:
    # it went on to add the whole list and exited 0 (a second Ctrl-C: a traceback)
    listed = tmp_path / "sites.txt"
    listed.write_text("".join(f"http://s{n}.test/\n" for n in range(400_000)), encoding="utf-8")
    command = [sys.executable, "-m", "scrapy", "sitemaps-enqueue", str(listed), "--queue", queue_server.url]
    process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while status(queue_server)["enqueued"] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 1, err
    assert out.startswith("Stopped (Ctrl-C): ") and "the rest of the list was not added" in out
    assert "Traceback" not in err
    assert 0 < status(queue_server)["enqueued"] < 400_000


def test_ctrl_c_stops_an_enqueue_that_waits_for_standard_input(queue_server: QueueServer) -> None:
    # a person typing homepages, a slow pipe: the read blocked the loop, Ctrl-C was not heard
    command = [sys.executable, "-m", "scrapy", "sitemaps-enqueue", "-", "--queue", queue_server.url]
    process = subprocess.Popen(
        command, cwd=REPO_ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdin is not None
    process.stdin.write("".join(f"http://t{n}.test/\n" for n in range(1500)))
    process.stdin.flush()  # (not closed: it waits for more)
    deadline = time.monotonic() + 60
    while status(queue_server)["enqueued"] < 1000 and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    try:
        out, err = process.communicate(timeout=20)
    finally:
        process.kill()
    assert process.returncode == 1, err
    assert out.startswith("Stopped (Ctrl-C): ")  # (1000 new, or 1500 if the end of the input came first)
    assert "Traceback" not in err


def test_ctrl_c_stops_an_enqueue_of_a_list_of_bad_lines(queue_server: QueueServer, tmp_path: Path) -> None:
    # heard while an invalid line was logged, the interruption was swallowed by logging (a
    # "Logging error" traceback) and the whole list was read
    listed = tmp_path / "sites.txt"
    listed.write_text("".join(f"not a url {n}\n" for n in range(300_000)), encoding="utf-8")
    command = [sys.executable, "-m", "scrapy", "sitemaps-enqueue", str(listed), "--queue", queue_server.url]
    process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    for _ in range(50):  # its first skipped lines: it reads the list
        process.stderr.readline()
    process.send_signal(signal.SIGINT)
    try:
        out, err = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 1
    assert out.startswith("Stopped (Ctrl-C): 0 new, 0 already there")
    assert "Logging error" not in err and "Traceback" not in err
    assert err.count("skipped") < 250_000


def test_two_workers_drain_one_queue_and_each_site_is_mapped_once(
    fixture_site: SiteFactory, crawl: CrawlRunner, queue_server: QueueServer, tmp_path: Path
) -> None:
    site, expected = sites(fixture_site, 24, slow={f"s{n:02d}.test": 0.5 for n in range(24)})  # work to share
    homepages = list(expected)
    assert enqueue(queue_server, homepages + homepages[:3]) == "24 new, 0 already there, 3 repeated in the list"
    assert enqueue(queue_server, homepages[:5]) == "0 new, 5 already there"

    workers = [
        worker(crawl, queue_server, "one", tmp_path),
        worker(crawl, queue_server, "two", tmp_path, feed="pages-%(worker)s.jsonl"),  # as the docs say
    ]
    results = [running.wait(90) for running in workers]
    for result in results:
        result.assert_ok()
        assert result.stats["finish_reason"] == "finished"
        assert "The queue is drained" in result.log

    trees = [json.loads(line) for name in ("one", "two") for line in (tmp_path / f"trees-{name}.jsonl").open()]
    assert sorted(tree["url"] for tree in trees) == sorted(homepages)  # each site once, by one worker
    assert all(tree["attempt"].endswith("/1") for tree in trees)
    per_worker = [result.stats.get("sitemap_crawl/queue/acknowledged", 0) for result in results]
    assert sum(per_worker) == 24 and all(per_worker), per_worker  # both took a share
    (named,) = [path for path in tmp_path.glob("pages-*.jsonl") if path.name != "pages-one.jsonl"]
    name = results[1].log.split("[sitemap_crawl.queue.worker] INFO: Worker ", 1)[1].split()[0]
    assert named.name == f"pages-{name}.jsonl"  # %(worker)s: the worker's name
    rows = [json.loads(line) for path in (tmp_path / "pages-one.jsonl", named) for line in path.open()]
    assert rows_by_site(rows) == expected_urls(expected)
    attempts = {tree["url"]: tree["attempt"] for tree in trees}
    assert all(row["attempt"] == attempts[row["website"]] for row in rows)
    assert status(queue_server) | {"workers": None} == {
        "queue": queue_server.url,
        "key": "sitemap_crawl",
        "enqueued": 24,
        "waiting": 0,
        "in_flight": 0,
        "workers": None,
        "done": 24,
        "failed": 0,
        "dead_lettered": 0,
        "duplicates": 0,
        "pages": sum(expected.values()),
        "dead": [],
    }
    collected, log, code = collect(tmp_path)
    assert code == 0 and "24 sites, 48 pages kept; 0 rows" in log
    assert rows_by_site(collected) == expected_urls(expected)
    assert site.hits("/robots.txt") == 24  # every robots.txt once over both workers (any host)


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()] if path.exists() else []


def wait_until(condition: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_worker_killed_mid_site_costs_only_time(
    fixture_site: SiteFactory, crawl: CrawlRunner, queue_server: QueueServer, tmp_path: Path
) -> None:
    # worker "one" is killed (-9) while it maps s00 (its urlset hangs); restarted with the same
    # files (-o appends), it maps the rest and takes s00 over once it has been silent for
    # CLAIM_AFTER; the collect step gives every site's pages once
    site, expected = sites(fixture_site, 10, slow={"s00.test": 60})
    homepages = list(expected)
    enqueue(queue_server, homepages)
    claim = {"SITEMAP_CRAWL_QUEUE_CLAIM_AFTER": 2, "SITEMAP_CRAWL_CONCURRENT_SITES": 2}
    first = worker(crawl, queue_server, "one", tmp_path, **claim)
    assert site.wait_for("/map-0.xml", timeout=30)
    trees_path = tmp_path / "trees-one.jsonl"
    wait_until(lambda: len(lines(trees_path)) >= 2)  # sites acknowledged before the kill
    first.kill()
    first.wait(30)
    before = lines(trees_path)
    assert before and all(tree["url"] != homepages[0] for tree in before)
    site["//s00.test/map-0.xml"] = urlset(f"{homepages[0]}page-0")  # it answers at once now

    second = worker(crawl, queue_server, "one", tmp_path, **claim).wait(90).assert_ok()
    assert second.stats["finish_reason"] == "finished"
    assert f"Took over {homepages[0]} from worker" in second.log
    trees = lines(trees_path)
    assert trees[: len(before)] == before  # the restarted worker appended
    # every site complete; a site killed between its tree line and its acknowledgement is done
    # twice (two complete attempts, the collect step keeps one)
    assert {tree["url"] for tree in trees} == set(homepages)
    assert len({tree["attempt"] for tree in trees}) == len(trees)
    claimed = [tree for tree in trees if tree["url"] == homepages[0]]
    assert [tree["attempt"][-2:] for tree in claimed] == ["/2"]
    assert status(queue_server)["done"] == 10 and status(queue_server)["in_flight"] == 0

    collected, log, code = collect(tmp_path)
    assert code == 0, log
    assert rows_by_site(collected) == expected_urls(expected)
    kept = {row["website"]: row["attempt"] for row in collected}
    assert all(row["attempt"] == kept[row["website"]] for row in collected)  # one attempt per site


def test_a_site_taken_max_attempts_times_goes_to_the_dead_letter_stream(
    fixture_site: SiteFactory, crawl: CrawlRunner, queue_server: QueueServer, tmp_path: Path
) -> None:
    site, expected = sites(fixture_site, 4, slow={"s00.test": 60})
    homepages = list(expected)
    enqueue(queue_server, homepages[:1])
    first = worker(crawl, queue_server, "one", tmp_path, SITEMAP_CRAWL_QUEUE_MAX_ATTEMPTS=1)
    assert site.wait_for("/map-0.xml", timeout=30)
    first.kill()  # s00 "killed its worker"
    first.wait(30)
    enqueue(queue_server, homepages[1:])

    result = worker(
        crawl, queue_server, "two", tmp_path, SITEMAP_CRAWL_QUEUE_MAX_ATTEMPTS=1, SITEMAP_CRAWL_QUEUE_CLAIM_AFTER=1
    ).wait(60)
    result.assert_ok()
    assert result.stats["sitemap_crawl/queue/dead_lettered"] == 1
    assert "went to the dead-letter stream" in result.log
    assert sorted(tree["url"] for tree in lines(tmp_path / "trees-two.jsonl")) == sorted(homepages[1:])
    now = status(queue_server)
    assert (now["done"], now["dead_lettered"], now["in_flight"], now["waiting"]) == (3, 1, 0, 0)
    assert now["dead"][0]["homepage"] == homepages[0]
    assert now["dead"][0]["reason"].startswith("taken 1 times and never finished (last by ")
    text = scrapy("sitemaps-status", "--queue", queue_server.url).stdout
    assert f"    dead: {homepages[0]} - taken 1 times" in text


def test_a_server_gone_mid_run_stops_the_worker_cleanly(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    from tests.support.queue_server import server_binary

    binary = server_binary()
    if binary is None:
        pytest.skip("no server binary")
    server = QueueServer(binary).start()
    try:
        slow = {f"s{n:02d}.test": 0.3 for n in range(30)}
        _site, expected = sites(fixture_site, 30, slow=slow)
        enqueue(server, list(expected))
        running = worker(crawl, server, "one", tmp_path, SITEMAP_CRAWL_CONCURRENT_SITES=2)
        trees_path = tmp_path / "trees-one.jsonl"
        wait_until(lambda: len(lines(trees_path)) >= 3)
        server.stop()
        result = running.wait(60)
    finally:
        server.stop()
    assert result.returncode == 0
    assert result.stats["finish_reason"] == "queue_unavailable"
    assert result.log_count("cannot be reached") == 1
    assert "this worker stops. The sites it acknowledged are written" in result.log
    assert "Traceback" not in result.log
    trees = [tree for tree in lines(trees_path) if "attempt" in tree]
    assert 3 <= len(trees) < 30
    rows = lines(tmp_path / "pages-one.jsonl")
    done = {tree["url"] for tree in trees}
    assert rows_by_site([row for row in rows if row["website"] in done]) == {
        url: urls for url, urls in expected_urls(expected).items() if url in done
    }  # every site it finished has all its rows


def second_works_while_first_is_paused(
    crawl: CrawlRunner, queue_server: QueueServer, tmp_path: Path, site: FixtureServer, path: str
) -> tuple[CrawlResult, CrawlResult]:
    """Worker one starts and is paused (SIGSTOP) once ``path`` is requested; worker two runs to
    its end meanwhile (CLAIM_AFTER 1 s: it takes one's site over); one resumes and ends.
    Their results, (one, two)."""
    import signal

    claim = {"SITEMAP_CRAWL_QUEUE_CLAIM_AFTER": 1}
    first = worker(crawl, queue_server, "one", tmp_path, **claim)
    assert site.wait_for(path, timeout=30)
    first.process.send_signal(signal.SIGSTOP)
    try:
        second = worker(crawl, queue_server, "two", tmp_path, **claim).wait(60).assert_ok()
    finally:
        first.process.send_signal(signal.SIGCONT)
    return first.wait(60).assert_ok(), second


def test_a_slow_worker_that_finishes_a_claimed_site_gives_a_second_copy_that_collect_drops(
    fixture_site: SiteFactory, crawl: CrawlRunner, queue_server: QueueServer, tmp_path: Path
) -> None:
    # worker one is paused (SIGSTOP) while it maps s00; worker two claims s00 after
    # CLAIM_AFTER and finishes it; worker one resumes and finishes it too
    site, expected = sites(fixture_site, 1, slow={"s00.test": 3})
    enqueue(queue_server, list(expected))
    one, second = second_works_while_first_is_paused(crawl, queue_server, tmp_path, site, "/map-0.xml")

    assert second.stats["sitemap_crawl/queue/claimed"] == 1
    assert "was taken over by another worker" not in second.log  # its own acknowledgement is no loss
    assert second.stats["sitemap_crawl/queue/acknowledged"] == 1
    assert one.stats.get("sitemap_crawl/queue/acknowledged", 0) == 0  # counted once, for the newer attempt
    assert one.stats["sitemap_crawl/queue/taken_over"] == 1
    attempts = [tree["attempt"][-2:] for name in ("one", "two") for tree in lines(tmp_path / f"trees-{name}.jsonl")]
    assert attempts == ["/1", "/2"]  # two complete attempts
    assert status(queue_server)["done"] == 1 and status(queue_server)["pages"] == 1
    collected, log, code = collect(tmp_path)
    assert code == 0 and "1 sites, 1 pages kept; 1 rows of incomplete or repeated attempts left out" in log
    assert rows_by_site(collected) == expected_urls(expected)


def test_a_paused_worker_whose_taken_over_site_failed_loses_no_page(
    fixture_site: SiteFactory, crawl: CrawlRunner, queue_server: QueueServer, tmp_path: Path
) -> None:
    # worker one is paused (SIGSTOP) with its robots.txt request in flight; worker two takes the
    # site over after CLAIM_AFTER, maps it and is acknowledged; one resumes, its request has
    # failed meanwhile (the connection dropped), and it writes a complete-looking line for the
    # site with no pages, in trees-one.jsonl, which sorts before trees-two.jsonl. The server
    # does not acknowledge one's attempt and collect keeps two's, the newer one.
    site, expected = sites(fixture_site, 1)
    homepage = next(iter(expected))
    site["//s00.test/robots.txt"] = Route(robots(f"{homepage}map-0.xml"), delay=1, drop_connection=True, fail_times=1)
    enqueue(queue_server, list(expected))
    one, second = second_works_while_first_is_paused(crawl, queue_server, tmp_path, site, "/robots.txt")

    assert second.stats["sitemap_crawl/queue/acknowledged"] == 1
    assert one.stats.get("sitemap_crawl/queue/acknowledged", 0) == 0
    assert one.stats["sitemap_crawl/queue/taken_over"] == 1
    assert f"{homepage}: attempt " in one.log and "is not acknowledged" in one.log
    (failed,) = lines(tmp_path / "trees-one.jsonl")
    assert failed["attempt"].endswith("/1") and failed["sub_sitemaps"] == []  # complete-looking, no pages
    assert [tree["attempt"][-2:] for tree in lines(tmp_path / "trees-two.jsonl")] == ["/2"]
    now = status(queue_server)
    assert (now["done"], now["pages"], now["failed"]) == (1, expected[homepage], 0)
    collected, log, code = collect(tmp_path)
    assert code == 0 and "1 sites, 1 pages kept" in log and "(1 repeated complete attempts)" in log, log
    assert rows_by_site(collected) == expected_urls(expected)
    assert {row["attempt"][-2:] for row in collected} == {"/2"}


def test_a_worker_that_takes_back_a_site_it_still_maps_maps_it_again_under_the_newer_attempt(
    fixture_site: SiteFactory, crawl: CrawlRunner, queue_server: QueueServer, tmp_path: Path
) -> None:
    # one is paused mapping s00 (attempt 1); two takes it over (attempt 2) and is paused too;
    # one resumes and takes it back (attempt 3) while attempt 1 is still in flight. Only
    # attempt 3 can be acknowledged: one maps the site again under it once attempt 1 ends.
    import signal

    site, expected = sites(fixture_site, 1)
    homepage = next(iter(expected))
    site["//s00.test/robots.txt"] = Route(robots(f"{homepage}map-0.xml"), delay=8)
    enqueue(queue_server, list(expected))
    claim = {"SITEMAP_CRAWL_QUEUE_CLAIM_AFTER": 1}
    first = worker(crawl, queue_server, "one", tmp_path, **claim)
    assert site.wait_for("/robots.txt", timeout=30)
    first.process.send_signal(signal.SIGSTOP)
    second = worker(crawl, queue_server, "two", tmp_path, **claim)
    try:
        assert site.wait_for("/robots.txt", count=2, timeout=30)
        second.process.send_signal(signal.SIGSTOP)
        first.process.send_signal(signal.SIGCONT)
        wait_until(lambda: f"Took back {homepage} (attempt 3)" in first.stderr_path.read_text(), timeout=15)
        assert "is not acknowledged" not in first.stderr_path.read_text()  # attempt 1 still in flight
        one = first.wait(60).assert_ok()
    finally:
        first.process.send_signal(signal.SIGCONT)
        second.process.send_signal(signal.SIGCONT)
    two = second.wait(60).assert_ok()

    # one's attempt 1 was refused, but it holds attempt 3: a claim, not a site taken over
    counts = ("acknowledged", "taken_over", "claimed")
    assert [one.stats.get(f"sitemap_crawl/queue/{name}", 0) for name in counts] == [1, 0, 1]
    assert "mapping it again under attempt" in one.log
    assert (two.stats.get("sitemap_crawl/queue/acknowledged", 0), two.stats["sitemap_crawl/queue/taken_over"]) == (0, 1)
    assert [tree["attempt"][-2:] for tree in lines(tmp_path / "trees-one.jsonl")] == ["/1", "/3"]
    assert [tree["attempt"][-2:] for tree in lines(tmp_path / "trees-two.jsonl")] == ["/2"]
    assert status(queue_server)["done"] == 1
    collected, log, code = collect(tmp_path)
    assert code == 0 and "(2 repeated complete attempts)" in log, log
    assert rows_by_site(collected) == expected_urls(expected)
    assert {row["attempt"][-2:] for row in collected} == {"/3"}


def test_a_worker_does_not_overwrite_a_feed_that_holds_rows(
    crawl: CrawlRunner, queue_server: QueueServer, tmp_path: Path
) -> None:
    feed = tmp_path / "pages.jsonl"
    feed.write_text('{"url": "http://a.test/p", "website": "http://a.test/", "attempt": "1-0/1"}\n', encoding="utf-8")
    result = crawl.start(
        {"queue": queue_server.url},
        output_format=None,
        settings={**SETTINGS, "SITEMAP_CRAWL_TREE_FILE": str(tmp_path / "trees.jsonl")},
        extra_args=["-O", str(feed)],
    ).wait(60)
    assert result.returncode == 1
    assert f"would erase the rows that {feed} holds" in result.log and "Traceback" not in result.log
    assert feed.read_text("utf-8").count("\n") == 1
    feed.write_text(feed.read_text("utf-8") + '{"url": "http://a.test/q", "webs', encoding="utf-8")  # cut by a kill
    appended = crawl.start(
        {"queue": queue_server.url},
        output_format=None,
        settings={**SETTINGS, "SITEMAP_CRAWL_TREE_FILE": str(tmp_path / "trees.jsonl")},
        extra_args=["-o", str(feed)],
    ).wait(60)
    assert appended.returncode == 0
    assert feed.read_text("utf-8").endswith('"webs\n')  # the next row appended starts a line of its own
    tree_json = crawl.start(
        {"queue": queue_server.url},
        output_format=None,
        settings={**SETTINGS, "SITEMAP_CRAWL_TREE_FILE": str(tmp_path / "tree.json")},
    ).wait(60)
    assert tree_json.returncode == 1 and "must end in .jsonl or .jl" in tree_json.log


def test_queue_wait_keeps_a_worker_for_sites_added_later(
    fixture_site: SiteFactory, crawl: CrawlRunner, queue_server: QueueServer, tmp_path: Path
) -> None:
    _site, expected = sites(fixture_site, 2)
    homepages = list(expected)
    running = crawl.start(
        {"queue": queue_server.url, "queue_wait": True},
        output_format=None,
        settings={**SETTINGS, "SITEMAP_CRAWL_TREE_FILE": str(tmp_path / "trees-w.jsonl")},
        extra_args=["-o", str(tmp_path / "pages-w.jsonl")],
    )
    assert running.wait_for_log("The queue is drained: waiting for more sites")
    enqueue(queue_server, homepages[:1])
    wait_until(lambda: len(lines(tmp_path / "trees-w.jsonl")) == 1)
    enqueue(queue_server, [*homepages[1:], "garbage"])  # a bad line is skipped by the command
    wait_until(lambda: len(lines(tmp_path / "trees-w.jsonl")) == 2)
    assert running.running()  # still waiting
    running.interrupt()
    result = running.wait(30)
    assert result.stats["finish_reason"] == "shutdown"
    assert sorted(tree["url"] for tree in lines(tmp_path / "trees-w.jsonl")) == sorted(homepages)
    assert rows_by_site(lines(tmp_path / "pages-w.jsonl")) == expected_urls(expected)


def test_a_worker_stopped_by_ctrl_c_takes_no_more_sites(
    fixture_site: SiteFactory, crawl: CrawlRunner, queue_server: QueueServer, tmp_path: Path
) -> None:
    # the site that finished during the graceful stop made room: the worker took new sites it
    # could not map, and left them held (another worker waited SITEMAP_CRAWL_QUEUE_CLAIM_AFTER)
    site, expected = sites(fixture_site, 4, slow={"s00.test": 2})
    homepages = list(expected)
    enqueue(queue_server, homepages)
    running = worker(crawl, queue_server, "w", tmp_path, SITEMAP_CRAWL_CONCURRENT_SITES=1, SITEMAP_CRAWL_KNOWN_PATHS="")
    assert site.wait_for("/map-0.xml", timeout=30)
    running.interrupt()
    result = running.wait(30)
    assert result.stats["finish_reason"] == "shutdown"
    assert [tree["url"] for tree in lines(tmp_path / "trees-w.jsonl")] == homepages[:1]
    counts = status(queue_server)  # (s00, finished during the stop, may wait for its acknowledgement)
    assert (counts["waiting"], counts["done"] + counts["in_flight"]) == (3, 1), counts


def test_a_restarted_worker_keeps_its_findings_and_a_second_one_cannot_share_them(
    fixture_site: SiteFactory, crawl: CrawlRunner, queue_server: QueueServer, tmp_path: Path
) -> None:
    # the findings file was started anew by each run: the findings of the sites acknowledged
    # before lost for good (they are not mapped again); two workers on it mixed their lines
    routes: dict[str, RouteLike] = {}
    for name in ("a.test", "b.test"):
        routes[f"//{name}/robots.txt"] = robots(f"{host(name)}/map.xml")
        routes[f"//{name}/map.xml"] = urlset(f"{host(name)}/page#part")  # url-fragment
    site = fixture_site(routes)
    findings = tmp_path / "findings.jsonl"
    audit = {"SITEMAP_CRAWL_AUDIT_FILE": str(findings), "SITEMAP_CRAWL_REPORT_FILE": str(tmp_path / "report.html")}
    for name in ("a.test", "b.test"):
        enqueue(queue_server, [f"http://{name}:{site.port}/"])
        worker(crawl, queue_server, "w", tmp_path, **audit).wait(60).assert_ok()
    rows = [(row["website"], row["rule"]) for row in lines(findings)]
    assert rows == [(f"http://{name}:{site.port}/", "url-fragment") for name in ("a.test", "b.test")]

    first = crawl.start(
        {"queue": queue_server.url, "queue_wait": True},
        output_format=None,
        settings={**SETTINGS, "SITEMAP_CRAWL_TREE_FILE": str(tmp_path / "trees-w.jsonl"), **audit},
        extra_args=["-o", str(tmp_path / "pages-w.jsonl")],
    )
    assert first.wait_for_log("The queue is drained: waiting for more sites")
    second = worker(crawl, queue_server, "other", tmp_path, **audit).wait(60)
    assert second.returncode == 1 and f"another worker writes {findings}" in second.log
    first.interrupt()
    first.wait(60)


def assert_stopped_acknowledging_nothing(result: Any, server: QueueServer, pending: int) -> None:
    """The worker stopped on an output it could not write, and every site stays pending."""
    assert result.returncode == 0 and result.stats["finish_reason"] == "output_failed", result.log
    assert "sitemap_crawl/queue/acknowledged" not in result.stats
    counts = status(server)
    assert (counts["done"], counts["in_flight"] + counts["waiting"]) == (0, pending), counts


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full (a device every write to fails)")
def test_a_worker_that_cannot_write_its_tree_file_acknowledges_no_site_and_stops(
    fixture_site: SiteFactory, crawl: CrawlRunner, queue_server: QueueServer, tmp_path: Path
) -> None:
    # it acknowledged every site all the same: sitemaps-collect, finding no tree line, kept
    # none of their rows, and the queue counted them done
    _site, expected = sites(fixture_site, 6)
    enqueue(queue_server, list(expected))
    full = tmp_path / "full.jsonl"
    full.symlink_to("/dev/full")

    result = worker(crawl, queue_server, "w", tmp_path, SITEMAP_CRAWL_TREE_FILE=str(full)).wait(60)

    assert_stopped_acknowledging_nothing(result, queue_server, 6)
    assert result.log_count(f"The sitemap tree file {full} could not be written (No space left on device)") == 1
    assert result.log_count("This worker cannot write its output (the tree file") == 1
    assert "Traceback" not in result.log


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full (a device every write to fails)")
def test_a_worker_whose_feed_rows_cannot_be_written_acknowledges_no_site_and_stops(
    fixture_site: SiteFactory, crawl: CrawlRunner, queue_server: QueueServer, tmp_path: Path
) -> None:
    # a sitemap's rows larger than the file's buffer are one write: when it failed nothing
    # stayed buffered, the flush and sync before the acknowledgement succeeded, and every
    # site was acknowledged with no row on disk (Scrapy only logged each failed write)
    routes: dict[str, RouteLike] = {}
    for name in ("a.test", "b.test", "c.test"):
        routes[f"//{name}/robots.txt"] = robots(f"{host(name)}/map.xml")
        routes[f"//{name}/map.xml"] = urlset(*(f"{host(name)}/a-rather-long-page-name-{i}" for i in range(300)))
    site = fixture_site(routes)
    enqueue(queue_server, [f"http://{name}:{site.port}/" for name in ("a.test", "b.test", "c.test")])
    full = tmp_path / "pages-full.jsonl"
    full.symlink_to("/dev/full")

    result = worker(crawl, queue_server, "w", tmp_path, feed=full.name).wait(60)

    assert_stopped_acknowledging_nothing(result, queue_server, 3)
    assert result.log_count(f"This worker cannot write its output ({full}: No space left on device)") == 1


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full (a device every write to fails)")
def test_a_worker_whose_batch_file_could_not_be_written_acknowledges_no_site(
    fixture_site: SiteFactory, crawl: CrawlRunner, queue_server: QueueServer, tmp_path: Path
) -> None:
    # the failed write was kept on the file only: once the next batch started, that file was
    # closed and the sync before the acknowledgement saw only the new one (rows lost, site done)
    routes: dict[str, RouteLike] = {
        "//a.test/robots.txt": robots(f"{host('a.test')}/map.xml"),
        "//a.test/map.xml": urlset(*(f"{host('a.test')}/page-{i}" for i in range(100))),
    }
    site = fixture_site(routes)
    enqueue(queue_server, [f"http://a.test:{site.port}/"])
    (tmp_path / "pages-2.jsonl").symlink_to("/dev/full")  # the second batch's file only (closed by the third)

    result = crawl.start(
        {"queue": queue_server.url},
        output_format=None,
        settings={
            **SETTINGS,
            "SITEMAP_CRAWL_TREE_FILE": str(tmp_path / "trees-w.jsonl"),
            "FEED_EXPORT_BATCH_ITEM_COUNT": 20,  # (a batch fits in the file's buffer: its rows fail at its close)
        },
        extra_args=["-o", str(tmp_path / "pages-%(batch_id)d.jsonl")],
    ).wait(60)

    assert_stopped_acknowledging_nothing(result, queue_server, 1)
    assert result.log_count(f"This worker cannot write its output ({tmp_path / 'pages-2.jsonl'}: No space") == 1


def test_a_worker_refuses_a_post_processed_feed(crawl: CrawlRunner, queue_server: QueueServer, tmp_path: Path) -> None:
    # a GzipPlugin holds the rows until the feed closes: sites were acknowledged with their rows
    # in the compressor (and, on a full disk, lost)
    feed = tmp_path / "pages.jsonl.gz"
    postprocessed = {
        str(feed): {"format": "jsonlines", "postprocessing": ["scrapy.extensions.postprocessing.GzipPlugin"]}
    }
    result = crawl.start(
        {"queue": queue_server.url},
        output_format=None,
        settings={**SETTINGS, "SITEMAP_CRAWL_TREE_FILE": str(tmp_path / "trees.jsonl"), "FEEDS": postprocessed},
    ).wait(60)
    assert result.returncode == 1
    assert f"the feed {feed} of a queue worker cannot be post-processed" in result.log
    assert "Traceback" not in result.log


def test_a_worker_whose_tree_extension_is_off_writes_no_tree_and_says_so(
    fixture_site: SiteFactory, crawl: CrawlRunner, queue_server: QueueServer, tmp_path: Path
) -> None:
    # the worker made the extension itself mid-run: a tree file of the last sites only, with
    # an empty website URL, and a summary that counted them only
    _site, expected = sites(fixture_site, 6)
    enqueue(queue_server, list(expected))
    off = {"sitemap_crawl.extensions.tree.SitemapTreeExtension": None}
    result = worker(crawl, queue_server, "w", tmp_path, EXTENSIONS=off).wait(60).assert_ok()
    assert result.log_count("is not written: the tree extension") == 1
    assert lines(tmp_path / "trees-w.jsonl") == []
    assert rows_by_site(lines(tmp_path / "pages-w.jsonl")) == expected_urls(expected)
    assert "Sites: " not in result.log.split("Dumping Scrapy stats")[-1]  # (no summary: no tree)


def test_a_waiting_worker_whose_queue_is_deleted_says_so(
    crawl: CrawlRunner, queue_server: QueueServer, tmp_path: Path
) -> None:
    running = crawl.start(
        {"queue": queue_server.url, "queue_wait": True},
        output_format=None,
        settings={**SETTINGS, "SITEMAP_CRAWL_TREE_FILE": str(tmp_path / "trees-w.jsonl")},
    )
    assert running.wait_for_log("The queue is drained: waiting for more sites")
    queue_server.command("DEL", "sitemap_crawl:sites", "sitemap_crawl:seen")  # started afresh under it
    result = running.wait(30)
    assert result.stats["finish_reason"] == "queue_unavailable"
    assert result.log_count(f"The queue at {queue_server.url} was deleted on the server") == 1
    assert "cannot be reached" not in result.log and "Traceback" not in result.log


def test_a_second_worker_given_the_files_of_a_running_one_stops_at_start(
    crawl: CrawlRunner, queue_server: QueueServer, tmp_path: Path
) -> None:
    # the contract's command in one directory: both wrote pages-1.jsonl (-O, no batch
    # size: batch 1 for both), each over the other's rows (60 of 90 rows were left)
    def start() -> RunningCrawl:
        return crawl.start(
            {"queue": queue_server.url, "queue_wait": True},
            output_format=None,
            settings={**SETTINGS, "SITEMAP_CRAWL_TREE_FILE": str(tmp_path / "trees.jsonl")},
            extra_args=["-O", str(tmp_path / "pages-%(batch_id)s.jsonl")],
        )

    first = start()
    assert first.wait_for_log("The queue is drained: waiting for more sites")
    second = start().wait(60)
    assert second.returncode == 1 and "Traceback" not in second.log
    assert second.log_count(f"another worker writes {tmp_path / 'pages-1.jsonl'}") == 1
    assert first.running()
    first.interrupt()
    assert first.wait(30).stats["finish_reason"] == "shutdown"
    third = start()  # the files are free again once the first has stopped
    assert third.wait_for_log("The queue is drained: waiting for more sites")
    third.interrupt()
    third.wait(30)


def test_a_queue_entry_that_is_not_a_url_is_acknowledged_not_mapped(
    crawl: CrawlRunner, queue_server: QueueServer, tmp_path: Path
) -> None:
    queue_server.command("XADD", "sitemap_crawl:sites", "*", "homepage", "not-a-url")  # not via sitemaps-enqueue
    result = worker(crawl, queue_server, "one", tmp_path).wait(60).assert_ok()
    assert "The queue holds 'not-a-url', which is not an http(s) URL: acknowledged, not mapped" in result.log
    assert status(queue_server)["done"] == 1 and status(queue_server)["failed"] == 1


def test_two_entries_of_one_site_are_mapped_once_and_the_worker_ends(
    crawl: CrawlRunner, fixture_site: SiteFactory, queue_server: QueueServer, tmp_path: Path
) -> None:
    _site, expected = sites(fixture_site, 2)
    homepage, pages = list(expected.items())[1]  # s01.test: 2 pages
    added = scrapy(
        "sitemaps-enqueue", "-", "--queue", queue_server.url, "--keep-path", stdin=f"{homepage}a\n{homepage}b\n"
    )
    assert added.stdout.strip() == "2 new, 0 already there"
    # the worker reduces both to the site: it maps it once, and did not hold the second entry forever
    result = worker(crawl, queue_server, "one", tmp_path).wait(60).assert_ok()
    assert result.stats["finish_reason"] == "finished"
    assert result.stats["sitemap_crawl/queue/duplicates"] == 1
    assert "acknowledged as a duplicate, not mapped" in result.log
    now = status(queue_server)
    assert (now["done"], now["duplicates"], now["in_flight"], now["pages"]) == (1, 1, 0, pages)
    collected, log, code = collect(tmp_path)
    assert code == 0 and f"1 sites, {pages} pages kept" in log
    assert rows_by_site(collected) == expected_urls({homepage: pages})


def test_a_worker_whose_server_cannot_be_reached_does_not_start(crawl: CrawlRunner, tmp_path: Path) -> None:
    tree_file = tmp_path / "trees.jsonl"
    result = crawl.start(
        {"queue": "redis://127.0.0.1:1/0"},
        output_format=None,
        settings={**SETTINGS, "SITEMAP_CRAWL_TREE_FILE": str(tree_file)},
    ).wait(60)
    # exit status 1 (it was 0, the crawl closed as queue_unavailable): a supervisor restarts it
    assert result.returncode == 1 and "Spider opened" not in result.log
    assert result.log_count("The queue server redis://127.0.0.1:1/0 cannot be reached") == 1
    assert result.log_count("this worker did not start") == 1
    assert "Traceback" not in result.log and result.duration < 30
    assert not tree_file.exists()
    bad = crawl.start({"queue": "http://127.0.0.1:1/"}, output_format=None).wait(60)
    assert bad.returncode == 1 and "is not a redis:// or rediss:// URL" in bad.log
    # the Redis client raised at the first command (a traceback), and the worker hung
    bad_port = crawl.start({"queue": "redis://:secret@127.0.0.1:notaport/0"}, output_format=None).wait(60)
    assert bad_port.returncode == 1 and "Traceback" not in bad_port.log
    assert bad_port.log_count("Port could not be cast to integer value as 'notaport'") == 1
    assert "secret" not in bad_port.log
    both = crawl.start({"queue": "redis://127.0.0.1:1/0", "homepage": "http://a.test/"}, output_format=None).wait(60)
    assert both.returncode == 1 and "queue maps the sites of the queue" in both.log


def history_day(
    crawl: CrawlRunner, server: QueueServer, homepage: str, day: Path, history: Path
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A day of an incremental queue run, as docs/incremental.md says: the site on a fresh queue
    key, one worker with the history; its rows and its site's tree line."""
    day.mkdir()
    key = f"SITEMAP_CRAWL_QUEUE_KEY={day.name}"
    result = scrapy("sitemaps-enqueue", "-", "--queue", server.url, "-s", key, stdin=homepage + "\n")
    assert result.returncode == 0, result.stderr
    worker(crawl, server, "one", day, SITEMAP_CRAWL_QUEUE_KEY=day.name, SITEMAP_CRAWL_HISTORY=str(history)).wait(
        60
    ).assert_ok()
    (tree,) = lines(day / "trees-one.jsonl")
    return lines(day / "pages-one.jsonl"), tree


def test_a_history_run_on_the_queue_exports_each_change_with_its_own_attempt(
    fixture_site: SiteFactory, crawl: CrawlRunner, queue_server: QueueServer, tmp_path: Path
) -> None:
    # the stored records held the attempt: every unchanged page of a changed sitemap was
    # `modified`, and a removed page's row carried the previous day's attempt
    site, expected = sites(fixture_site, 3)
    homepage = list(expected)[2]  # s02.test: page-0, page-1, page-2
    history = tmp_path / "history.sqlite"
    first, _ = history_day(crawl, queue_server, homepage, tmp_path / "day1", history)
    site["//s02.test/map-2.xml"] = urlset(f"{homepage}page-0", f"{homepage}page-1", f"{homepage}page-new")

    rows, tree = history_day(crawl, queue_server, homepage, tmp_path / "day2", history)

    assert sorted((row["url"], row["change"]) for row in first) == [(f"{homepage}page-{i}", "added") for i in range(3)]
    assert sorted((row["url"].removeprefix(homepage), row["change"]) for row in rows) == [
        ("page-2", "removed"),
        ("page-new", "added"),
    ]
    assert {row["attempt"] for row in rows} == {tree["attempt"]}
    collected, log, code = collect(tmp_path / "day2")
    assert code == 0 and "1 sites, 2 pages kept; 0 rows" in log, log
    assert sorted(row["url"] for row in collected) == sorted(row["url"] for row in rows)
    unchanged, _ = history_day(crawl, queue_server, homepage, tmp_path / "day3", history)
    collected, log, code = collect(tmp_path / "day3")  # no row: no change, not a feed file missing
    assert (unchanged, collected, code) == ([], [], 0), log


def test_a_history_run_on_the_queue_exports_the_pages_of_a_dropped_sitemap_at_the_sites_end(
    fixture_site: SiteFactory, crawl: CrawlRunner, queue_server: QueueServer, tmp_path: Path
) -> None:
    site, expected = sites(fixture_site, 3)
    homepage = list(expected)[2]
    history = tmp_path / "history.sqlite"
    history_day(crawl, queue_server, homepage, tmp_path / "day1", history)
    site["//s02.test/robots.txt"] = robots(f"{host('s02.test')}/new.xml")  # map-2.xml no longer declared
    site["//s02.test/new.xml"] = urlset(f"{homepage}page-new")

    rows, tree = history_day(crawl, queue_server, homepage, tmp_path / "day2", history)

    assert sorted((row["url"].removeprefix(homepage), row["change"]) for row in rows) == [
        *((f"page-{i}", "removed") for i in range(3)),
        ("page-new", "added"),
    ]
    assert {row["attempt"] for row in rows} == {tree["attempt"]}
    assert tree["sub_sitemaps"][0]["changes"] == 3  # robots.txt: the rows of the sitemap it dropped
    collected, log, code = collect(tmp_path / "day2")
    assert code == 0 and len(collected) == 4, log


def test_a_history_worker_stopped_before_the_acknowledgement_loses_no_change(
    fixture_site: SiteFactory, crawl: CrawlRunner, queue_server: QueueServer, tmp_path: Path
) -> None:
    # killed after the rows were written, before the acknowledgement: the history was
    # written once the rows were, so the worker that took the site over found
    # map-2.xml unchanged and exported only slow.xml's page: collect kept 1 of the 4
    site, expected = sites(fixture_site, 3)
    homepage = list(expected)[2]
    enqueue(queue_server, [homepage])
    site["//s02.test/robots.txt"] = robots(f"{host('s02.test')}/map-2.xml", f"{host('s02.test')}/slow.xml")
    site["//s02.test/slow.xml"] = Route(urlset(f"{homepage}page-3"), delay=5)  # the site is not finished yet
    history = {"SITEMAP_CRAWL_HISTORY": str(tmp_path / "history.sqlite"), "SITEMAP_CRAWL_QUEUE_CLAIM_AFTER": 1}
    first = worker(crawl, queue_server, "one", tmp_path, **history)
    assert site.wait_for("/slow.xml", timeout=30)
    time.sleep(1)  # map-2.xml's rows are written by now (and were its history)
    first.kill()
    first.wait(60)
    assert lines(tmp_path / "trees-one.jsonl") == []  # killed before its tree line

    again = worker(crawl, queue_server, "one", tmp_path, **history).wait(60).assert_ok()

    assert again.stats["sitemap_crawl/queue/claimed"] == 1
    collected, log, code = collect(tmp_path)
    assert code == 0, log
    assert rows_by_site(collected) == expected_urls({homepage: 4})
    assert {row["change"] for row in collected} == {"added"}
