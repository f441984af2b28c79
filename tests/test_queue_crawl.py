"""Workers sharing one queue (``-a queue=redis://...``) against a real server: the commands,
two workers draining one stream, a worker killed mid-site, the dead-letter path, a server
that goes away, and the exactly-once collect step."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support import robots, urlset
from tests.support.crawl import REPO_ROOT, CrawlRunner, RunningCrawl
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
    """``count`` sites s00.test...: robots.txt names a urlset of n % 3 + 1 pages (a ``slow``
    site's urlset answers after that many seconds); with the pages each should give."""
    routes: dict[str, RouteLike] = {}
    expected: dict[str, int] = {}
    for n in range(count):
        name = f"s{n:02d}.test"
        pages = urlset(*(f"{host(name)}/page-{i}" for i in range(n % 3 + 1)))
        routes[f"//{name}/robots.txt"] = robots(f"{host(name)}/map.xml")
        routes[f"//{name}/map.xml"] = Route(pages, delay=(slow or {}).get(name, 0))
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


def worker(crawl: CrawlRunner, server: QueueServer, name: str, tmp_path: Path, **settings: object) -> RunningCrawl:
    """A worker writing pages-<name>.jsonl (appending) and trees-<name>.jsonl in tmp_path."""
    return crawl.start(
        {"queue": server.url},
        output_format=None,
        settings={**SETTINGS, "SITEMAP_CRAWL_TREE_FILE": str(tmp_path / f"trees-{name}.jsonl"), **settings},
        extra_args=["-o", str(tmp_path / f"pages-{name}.jsonl")],
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
    assert first.stdout.strip() == "2 new, 0 already there, 1 repeated in the list, 1 lines skipped (not http(s) URLs)"
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
        "pages": 0,
        "dead": [],
    }
    text = scrapy("sitemaps-status", "--queue", queue_server.url)
    assert f"Queue {queue_server.url} (key sitemap_crawl)" in text.stdout
    assert "  waiting:       3" in text.stdout and "  done:          0" in text.stdout
    bad = scrapy("sitemaps-status", "--queue", "http://not-redis/")
    assert bad.returncode != 0 and "is not a redis:// or rediss:// URL" in bad.stderr
    gone = scrapy("sitemaps-status", "--queue", "redis://127.0.0.1:1/0")
    assert gone.returncode == 1 and "cannot be reached" in gone.stderr


def test_two_workers_drain_one_queue_and_each_site_is_mapped_once(
    fixture_site: SiteFactory, crawl: CrawlRunner, queue_server: QueueServer, tmp_path: Path
) -> None:
    site, expected = sites(fixture_site, 24)
    homepages = list(expected)
    assert enqueue(queue_server, homepages + homepages[:3]) == "24 new, 0 already there, 3 repeated in the list"
    assert enqueue(queue_server, homepages[:5]) == "0 new, 5 already there"

    workers = [worker(crawl, queue_server, name, tmp_path) for name in ("one", "two")]
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
    rows = [json.loads(line) for name in ("one", "two") for line in (tmp_path / f"pages-{name}.jsonl").open()]
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
        "pages": sum(expected.values()),
        "dead": [],
    }
    collected, log, code = collect(tmp_path)
    assert code == 0 and "24 sites, 48 pages kept; 0 rows" in log
    assert rows_by_site(collected) == expected_urls(expected)
    assert site.hits("/robots.txt") == 24  # every robots.txt once over both workers (any host)
