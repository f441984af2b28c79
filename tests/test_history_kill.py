"""A history run killed with SIGKILL after one changed sitemap was recorded and while
another is in flight, then a normal run: together their feeds hold every change once (a
sitemap is recorded as seen only after its rows were written; one killed after its rows
reached the feed and before it was recorded is exported again, see docs/incremental.md)."""

from __future__ import annotations

import sqlite3
import time
from collections import Counter
from pathlib import Path

from tests.support import Route, robots, sitemapindex, urlset
from tests.support.crawl import CrawlRunner
from tests.support.fixture_server import SiteFactory

FAST = {"RETRY_TIMES": 0, "DOWNLOAD_TIMEOUT": 60}


def _stored_page(history: Path, sitemap_url: str, page_url: str) -> bool:
    try:
        with sqlite3.connect(f"file:{history}?mode=ro", uri=True) as db:
            row = db.execute(
                "SELECT 1 FROM pages JOIN sitemaps ON sitemaps.id = sitemap_id "
                "WHERE sitemaps.url = ? AND pages.url = ?",
                (sitemap_url, page_url),
            ).fetchone()
    except sqlite3.Error:
        return False
    return row is not None


def test_sigkill_mid_sitemap_then_a_normal_run_exports_each_change_once(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/index.xml"),
            "/index.xml": sitemapindex("{base}/a.xml", "{base}/b.xml"),
            "/a.xml": urlset(*[f"{{base}}/a{i}" for i in range(50)]),
            "/b.xml": urlset(*[f"{{base}}/b{i}" for i in range(50)]),
        }
    )
    history = tmp_path / "history.sqlite"
    settings = {**FAST, "SITEMAP_CRAWL_HISTORY": str(history), "SITEMAP_CRAWL_BATCH_SIZE": 7}
    arguments = {"homepage": site.base, "use_known_paths": False}
    crawl(arguments, settings=settings).assert_ok()
    # a.xml: a0-a9 removed, a50-a59 added; b.xml (slow): b0 modified, b50-b79 added
    site["/a.xml"] = urlset(*[f"{{base}}/a{i}" for i in range(10, 60)])
    b_body = urlset({"loc": "{base}/b0", "lastmod": "2024-05-01"}, *[f"{{base}}/b{i}" for i in range(1, 80)])
    site["/b.xml"] = Route(b_body, trickle=(200, 0.5), chunked=True)

    killed = crawl.start(arguments, settings=settings)
    deadline = time.monotonic() + 60
    while not _stored_page(history, site.url("/a.xml"), site.url("/a59")):
        assert time.monotonic() < deadline and killed.running(), killed.log()
        time.sleep(0.1)
    assert site.wait_for("/b.xml", count=2)  # the slow body is being sent
    killed.kill()
    first = killed.wait()
    assert first.returncode != 0
    site["/b.xml"] = b_body

    second = crawl(arguments, settings=settings).assert_ok()

    rows = Counter((row["url"].removeprefix(site.base), row["change"]) for row in first.pages + second.pages)
    expected = Counter(
        [(f"/a{i}", "removed") for i in range(10)]
        + [(f"/a{i}", "added") for i in range(50, 60)]
        + [("/b0", "modified")]
        + [(f"/b{i}", "added") for i in range(50, 80)]
    )
    assert rows == expected
    assert {row["url"] for row in first.pages} <= {site.url(f"/a{i}") for i in range(60)}
    assert crawl(arguments, settings=settings).assert_ok().pages == []
