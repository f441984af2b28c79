"""The audit runs in a process of its own: with the smallest backlog (every body alone) the
crawl is paused while the audit catches up, never stalled, and every finding is there; a
process that dies does not hold the crawl."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
from pathlib import Path
from typing import Any

import pytest
from scrapy.utils.test import get_crawler

from sitemap_crawl.audit import process
from sitemap_crawl.audit.crawl_audit import ResponseFacts
from sitemap_crawl.audit.process import RESPONSE
from sitemap_crawl.extensions.audit import SitemapAuditExtension
from sitemap_crawl.parsing.worker_protocol import read_frame, write_frame
from sitemap_crawl.spiders.sitemaps import SitemapsSpider
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


def test_a_gone_audit_process_does_not_hold_the_crawl(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The answers of the audit process stop (it died): its bodies are let go, the close ends."""
    crawler = get_crawler(settings_dict={"SITEMAP_CRAWL_AUDIT_FILE": str(tmp_path / "findings.jsonl")})
    extension = SitemapAuditExtension.from_crawler(crawler)
    facts = ResponseFacts("https://example.com/", "https://example.com/a.xml", "child", 200, "", "text/xml")
    extension._gone("was killed")  # what the answer reader reports when the pipe closes early
    for _ in range(3):
        extension.backlog.add((RESPONSE, facts, b"<urlset/>"), 9)  # let go at once, none waits

    async def close() -> None:
        await asyncio.wait_for(extension._close(None), timeout=5)

    with caplog.at_level(logging.INFO):
        asyncio.run(close())
    assert extension.backlog.idle and not extension.backlog.paused
    assert "The sitemap audit process was killed; the rest of the crawl is not audited" in caplog.text
    # the last line says the audit is incomplete (no report), not where its findings are
    assert "Sitemap audit incomplete: 0 finding(s) counted, those written are in " in caplog.text
    assert "Sitemap audit: 0 finding(s)" not in caplog.text


def test_an_earlier_runs_outputs_are_cleared_as_the_crawl_opens(tmp_path: Path) -> None:
    # the findings file and report of an earlier run stayed at their paths when the audit
    # process ended early (or a second Ctrl-C stopped the crawl), and the log pointed to that
    # findings file for this run's findings
    findings, report = tmp_path / "findings.jsonl", tmp_path / "report.html"
    settings = {"SITEMAP_CRAWL_AUDIT_FILE": str(findings), "SITEMAP_CRAWL_REPORT_FILE": str(report)}
    findings.write_text('{"stale": true}\n')
    report.write_text("<html>stale</html>")
    crawler = get_crawler(SitemapsSpider, settings_dict=settings)
    extension = SitemapAuditExtension.from_crawler(crawler)
    extension._opened(SitemapsSpider(homepage="https://example.com/"))
    assert findings.read_text() == "" and not report.exists()


def test_outputs_that_are_no_regular_files_are_left_alone(tmp_path: Path) -> None:
    # a report sent to a device or a pipe must not be removed (as root: /dev/null itself)
    os.mkfifo(tmp_path / "report.html")
    os.mkfifo(tmp_path / "findings.jsonl")  # (opened to be emptied, a pipe would block)
    settings = {
        "SITEMAP_CRAWL_AUDIT_FILE": str(tmp_path / "findings.jsonl"),
        "SITEMAP_CRAWL_REPORT_FILE": str(tmp_path / "report.html"),
    }
    extension = SitemapAuditExtension.from_crawler(get_crawler(SitemapsSpider, settings_dict=settings))
    extension._opened(SitemapsSpider(homepage="https://example.com/"))
    assert (tmp_path / "report.html").exists() and (tmp_path / "findings.jsonl").exists()


def test_the_process_gives_back_the_memory_of_each_large_body(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """serve() trims the heap after a body of SPOOL_MIN_SIZE bytes or more (as the parse worker
    does), not after a small one: without it the RSS of the audit process ratchets up."""
    trims: list[int] = []
    monkeypatch.setattr(process, "trim", lambda: trims.append(1))
    facts = ResponseFacts("https://example.com/", "https://example.com/a.xml", "child", 200, "", "text/xml")
    small = urlset("https://example.com/a").encode()
    large = small.replace(b"</urlset>", b" " * process.SPOOL_MIN_SIZE + b"</urlset>")
    source = io.BytesIO()
    write_frame(source, (process.OPEN, str(tmp_path / "f.jsonl"), None, "*"))
    for job_id, body in enumerate([small, large, small], 1):
        write_frame(source, (RESPONSE, job_id, tuple(facts), len(body)))
        source.write(body)
    write_frame(source, (process.FINISH, 4))
    source.seek(0)
    sink = io.BytesIO()
    process.serve(source, sink)
    assert len(trims) == 1
    sink.seek(0)
    assert [read_frame(sink)[:2] for _ in range(4)] == [(process.DONE, job_id) for job_id in range(1, 5)]


def test_the_backlog_bound_is_its_default_without_the_add_on(tmp_path: Path) -> None:
    # read with settings.getint, an unset setting was 0: a bound of 1 byte, the crawl paused
    # after every body (sitemap_crawl/audit_paused) unless the add-on had set the defaults
    crawler = get_crawler(settings_dict={"SITEMAP_CRAWL_AUDIT_FILE": str(tmp_path / "findings.jsonl")})
    assert SitemapAuditExtension.from_crawler(crawler).backlog.limit == 16 * 1024 * 1024
