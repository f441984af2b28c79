"""The audit extension: runs sitemap_crawl.audit on every sitemap and robots.txt the crawl reads.

Enabled by ``SITEMAP_CRAWL_AUDIT_FILE`` (else NotConfigured: no signal handler, no cost).
Each response's body is handed to one worker thread that runs the checks and writes the
findings (JSON lines) as it finds them; the reactor only counts them in the stats.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from typing import IO, Any

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response

from sitemap_crawl.audit.auditor import SiteAudit
from sitemap_crawl.audit.discovery import SitemapDeclarations
from sitemap_crawl.audit.finding import Finding
from sitemap_crawl.audit.report import Report
from sitemap_crawl.discovery.rules import KNOWN, ROBOTS
from sitemap_crawl.discovery.site import Visit
from sitemap_crawl.names import AUDIT_ENCODING_META_KEY, AUDIT_STAT, META_KEY
from sitemap_crawl.parsing.stream import GZIP_MAGIC
from sitemap_crawl.signals import site_finished, site_tree
from sitemap_crawl.tree import SitemapTree

logger = logging.getLogger(__name__)


class SitemapAuditExtension:
    """Audits each sitemap and robots.txt response; findings go to ``SITEMAP_CRAWL_AUDIT_FILE``."""

    def __init__(self, crawler: Crawler, path: str | None, report_path: str | None = None) -> None:
        self.crawler = crawler
        self.path = path
        self.report_path = report_path
        self.report = Report() if report_path else None
        self.user_agent = str(crawler.settings.get("USER_AGENT") or "*")
        self.counts: Counter[str] = Counter()
        self._audits: dict[str, SiteAudit] = {}
        self._declarations = SitemapDeclarations()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sitemap-audit")
        self._file: IO[str] | None = None
        self._last: Future[None] | None = None
        crawler.signals.connect(self._downloaded, signal=signals.response_downloaded)
        crawler.signals.connect(self._response, signal=signals.response_received)
        crawler.signals.connect(self._site_finished, signal=site_finished)
        if self.report is not None:
            crawler.signals.connect(self._site_tree, signal=site_tree)
        crawler.signals.connect(self._close, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SitemapAuditExtension:
        path = crawler.settings.get("SITEMAP_CRAWL_AUDIT_FILE")
        report_path = crawler.settings.get("SITEMAP_CRAWL_REPORT_FILE")
        if not path and not report_path:
            raise NotConfigured  # off (no message: Scrapy would log one WARNING line per crawl)
        return cls(crawler, str(path) if path else None, str(report_path) if report_path else None)

    def _downloaded(self, response: Response, request: Request, **_kwargs: Any) -> None:
        """The response as the server sent it (before the downloader middlewares decode it)."""
        visit = request.meta.get(META_KEY)
        if not isinstance(visit, Visit):
            return
        encoding = (response.headers.get(b"Content-Encoding") or b"").decode("latin-1").strip().lower()
        request.meta[AUDIT_ENCODING_META_KEY] = encoding
        if encoding in ("gzip", "x-gzip") and response.body and not response.body.startswith(GZIP_MAGIC):
            self._executor.submit(self._undecodable, visit.site, response.url, encoding)  # the download will fail

    def _undecodable(self, site: str, url: str, encoding: str) -> None:
        self._write(list(self._site_audit(site).audit_undecodable(url, encoding)))

    def _response(self, response: Response, request: Request, spider: Any) -> None:
        visit = request.meta.get(META_KEY)
        if not isinstance(visit, Visit):
            return
        content_type = (response.headers.get(b"Content-Type") or b"").decode("latin-1").lower()
        encoding = str(request.meta.get(AUDIT_ENCODING_META_KEY, ""))
        facts = (visit.site, visit.url, visit.role, response.status, response.url, content_type, encoding)
        self._last = self._executor.submit(self._audit, facts, response.body)

    def _site_finished(self, site: str, **_kwargs: Any) -> None:
        self._executor.submit(self._forget, site)

    def _site_tree(self, site: str, tree: SitemapTree, **_kwargs: Any) -> None:
        """A site's finished tree goes to the report (after the findings already queued)."""
        if self.report is not None and tree.root is not None:
            self._executor.submit(self.report.add_tree, site, tree.root)

    def _forget(self, site: str) -> None:
        audit = self._audits.pop(site, None)
        if audit is not None:
            found = list(audit.finish())
            if found:
                self._write(found)
        if audit is not None and self.report is not None:
            self.report.add_site_facts(site, audit.sitemap_pages, audit.months)

    # in the worker thread
    def _audit(self, facts: tuple[str, str, str, int, str, str, str], body: bytes) -> None:
        site, url, role, status, final_url, content_type, encoding = facts
        audit = self._site_audit(site)
        found: list[Finding] = []
        if status >= 400:
            found += audit.audit_fetch(url, final_url, status, known_path=role == KNOWN)
        elif role == ROBOTS:
            found += audit.audit_robots(body, url, self.user_agent)
        else:
            found += audit.audit_fetch(url, final_url, status, content_type, known_path=role == KNOWN)
            found += audit.audit_served(body, final_url, content_type, encoding)
            found += audit.audit_sitemap(body, final_url)
        if found:
            self._write(found)

    def _site_audit(self, site: str) -> SiteAudit:
        audit = self._audits.get(site)
        if audit is None:
            audit = self._audits[site] = SiteAudit(site or None, declarations=self._declarations)
        return audit

    def _write(self, found: list[Finding]) -> None:
        if self.report is not None:
            for finding in found:
                self.report.add_finding(finding)
        if self.path is not None and self._file is None:
            self._file = open(self.path, "w", encoding="utf-8")  # noqa: SIM115 (closed at spider close)
        if self._file is not None:
            self._file.write("".join(json.dumps(f.to_dict(), ensure_ascii=False) + "\n" for f in found))
        by_rule = Counter(f.rule for f in found)
        from twisted.internet import reactor  # here: importing it at module level would install one

        reactor.callFromThread(self._count, by_rule)

    def _count(self, by_rule: Counter[str]) -> None:
        self.counts.update(by_rule)
        stats = self.crawler.stats
        if stats is not None:
            for rule, count in by_rule.items():
                stats.inc_value(f"{AUDIT_STAT}/{rule}", count)

    def _finish(self) -> None:
        for site in list(self._audits):
            self._forget(site)  # the findings known at a site's end, before the file is closed
        if self._file is not None:
            self._file.close()
        elif self.path is not None:
            open(self.path, "w", encoding="utf-8").close()  # no finding: an empty file, not a stale one
        if self.report is not None and self.report_path is not None:
            with open(self.report_path, "w", encoding="utf-8") as report_file:
                report_file.write(self.report.render())

    async def _close(self, spider: Any) -> None:
        self._executor.submit(self._finish)
        await asyncio.to_thread(self._executor.shutdown, True)
        # the counts posted by the last writes run before this line (callFromThread order)
        await asyncio.to_thread(lambda: None)
        total = sum(self.counts.values())
        summary = ", ".join(f"{rule} {count}" for rule, count in self.counts.most_common())
        where = " and ".join(path for path in (self.path, self.report_path) if path)
        logger.info("Sitemap audit: %d finding(s) in %s%s", total, where, f": {summary}" if summary else "")
