"""The audit of a whole crawl: every response of every site, the findings file and the report.

Pure (no Scrapy): the audit process (sitemap_crawl.audit.process) runs one, fed the
responses in the order the crawl received them. Per site it keeps a SiteAudit, the
robots.txt rules and the sitemaps robots.txt declares, until the site is forgotten.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from typing import IO, NamedTuple

from sitemap_crawl.audit import rules
from sitemap_crawl.audit.auditor import SiteAudit
from sitemap_crawl.audit.discovery import RobotsRules
from sitemap_crawl.audit.finding import Finding
from sitemap_crawl.audit.report import Report
from sitemap_crawl.audit.scan import body_bytes
from sitemap_crawl.discovery.rules import KNOWN, ROBOTS
from sitemap_crawl.parsing.stream import Body

_JSON_STRING: Callable[[str], str] = json.encoder.encode_basestring  # the C one when there is one


def _json(value: str | None) -> str:
    return "null" if value is None else _JSON_STRING(value)


def json_line(finding: Finding) -> str:
    """``json.dumps(finding.to_dict(), ensure_ascii=False)`` and a newline, built directly."""
    return (
        f'{{"website": {_json(finding.website)}, "sitemap_url": {_JSON_STRING(finding.sitemap_url)}, '
        f'"url": {_json(finding.url)}, "rule": {_JSON_STRING(finding.rule)}, '
        f'"severity": {_JSON_STRING(finding.severity)}, "detail": {_JSON_STRING(finding.detail)}}}\n'
    )


_WRITE_BATCH = 1000


class ResponseFacts(NamedTuple):
    """What the audit is told of one sitemap or robots.txt response, besides its body."""

    site: str
    url: str
    role: str
    status: int
    final_url: str
    content_type: str


class CrawlAudit:
    """Audits the responses of a crawl; writes the findings (JSON lines) and the HTML report."""

    def __init__(self, path: str | None, report_path: str | None, user_agent: str) -> None:
        self.path = path
        self.report_path = report_path
        self.report = Report() if report_path else None
        self.user_agent = user_agent
        self._audits: dict[str, SiteAudit] = {}
        self._robots: dict[str, RobotsRules] = {}
        self._declared: dict[str, set[str]] = {}
        self._file: IO[str] | None = None

    def audit(self, facts: ResponseFacts, body: Body) -> Counter[str]:
        """Audit one response; its findings are written; their count by rule is returned.

        The findings are written in batches as they come: a sitemap that yields a finding
        per page does not hold them all in memory.
        """
        counts: Counter[str] = Counter()
        batch: list[Finding] = []
        for finding in self._findings(facts, body):
            batch.append(finding)
            if len(batch) >= _WRITE_BATCH:
                self._write(batch, counts)
                batch = []
        if batch:
            self._write(batch, counts)
        return counts

    def _findings(self, facts: ResponseFacts, body: Body) -> Iterator[Finding]:
        site, url, role, status, final_url, content_type = facts
        audit = self._audits.get(site)
        if audit is None:
            audit = self._audits[site] = SiteAudit(site or None)
        if status >= 400:
            yield audit.finding(rules.HTTP_ERROR, url, None, f"HTTP {status}")
        elif role == ROBOTS:
            text = body_bytes(body)
            yield from audit.audit_robots(text, url)
            self._robots[site] = RobotsRules(text, self.user_agent)
            self._declared[site] = set(audit.declared)
        else:
            if final_url != url:
                yield audit.finding(rules.REDIRECTED, url, final_url, f"redirects to {final_url}")
            if content_type.startswith("text/html"):
                yield audit.finding(rules.SERVED_AS_HTML, final_url, None, f"Content-Type {content_type}")
            robots = self._robots.get(site)
            if robots is not None and robots.disallows(url):
                yield audit.finding(rules.SITEMAP_DISALLOWED, url, None, f"disallowed for {robots.user_agent!r}")
            if role == KNOWN and url not in self._declared.get(site, ()):
                yield audit.finding(rules.FOUND_AT_KNOWN_PATH, url, None, "not declared in robots.txt")
            yield from audit.audit_sitemap(body, final_url)

    def forget(self, site: str) -> None:
        """A site is finished: its facts go to the report, its state is dropped."""
        audit = self._audits.pop(site, None)
        if audit is not None and self.report is not None:
            self.report.add_site_facts(site, audit.sitemap_pages, audit.months)
        self._robots.pop(site, None)
        self._declared.pop(site, None)

    def _write(self, found: list[Finding], counts: Counter[str]) -> None:
        counts.update(f.rule for f in found)
        if self.report is not None:
            for finding in found:
                self.report.add_finding(finding)
        if self.path is not None and self._file is None:
            self._file = open(self.path, "w", encoding="utf-8")  # noqa: SIM115 (closed by finish)
        if self._file is not None:
            self._file.write("".join(map(json_line, found)))

    def finish(self) -> None:
        """Close the findings file (an empty one when nothing was found) and write the report."""
        if self._file is not None:
            self._file.close()
        elif self.path is not None:
            open(self.path, "w", encoding="utf-8").close()  # no finding: an empty file, not a stale one
        if self.report is not None and self.report_path is not None:
            for site in list(self._audits):
                self.forget(site)
            with open(self.report_path, "w", encoding="utf-8") as report_file:
                report_file.write(self.report.render())
