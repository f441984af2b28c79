"""The audit runs in a process of its own: with the smallest backlog (every body alone) the
crawl is paused while the audit catches up, never stalled, and every finding is there."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support import robots, sitemapindex, urlset
from tests.support.crawl import CrawlRunner
from tests.support.fixture_server import SiteFactory

FAST = {"RETRY_TIMES": 0, "DOWNLOAD_TIMEOUT": 5, "SITEMAP_CRAWL_KNOWN_PATHS": "sitemap.xml"}


def _findings(path: Path) -> list[tuple[Any, ...]]:
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    return sorted((row["rule"], row["sitemap_url"], row["url"]) for row in rows)


def test_a_one_byte_backlog_pauses_the_crawl_and_loses_nothing(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    children = [f"{{base}}/part-{number}.xml" for number in range(8)]
    routes: dict[str, Any] = {
        "/robots.txt": robots("{base}/sitemap.xml"),
        "/sitemap.xml": sitemapindex(*children),
    }
    for number in range(8):
        routes[f"/part-{number}.xml"] = urlset(
            f"{{base}}/page-{number}", "{base}/shared", {"loc": f"{{base}}/dated-{number}", "lastmod": "soon"}
        )
    site = fixture_site(routes)
    audit_file = tmp_path / "findings.jsonl"
    settings = {**FAST, "SITEMAP_CRAWL_AUDIT_FILE": str(audit_file), "SITEMAP_CRAWL_AUDIT_BACKLOG": 1}
    result = crawl({"homepage": site.base}, settings=settings).assert_ok()
    assert len(result.pages) == 8 * 3  # a row per page of each sitemap
    url = site.url
    expected = [("lastmod-format", url(f"/part-{number}.xml"), url(f"/dated-{number}")) for number in range(8)]
    got = _findings(audit_file)
    duplicates = [row for row in got if row[0] == "duplicate-across-sitemaps"]
    assert [row for row in got if row[0] == "lastmod-format"] == expected
    assert len(duplicates) == 7 and {row[2] for row in duplicates} == {url("/shared")}
    assert result.stats["sitemap_crawl/audit/lastmod-format"] == 8
    assert result.stats["sitemap_crawl/audit_paused"] >= 1
    assert "Sitemap audit: " in result.log
