"""The audit of a whole crawl: every response of every site, the findings file and the report.

Pure (no Scrapy): the audit process (sitemap_crawl.audit.process) runs one, fed the
responses in the order the crawl received them. It keeps a SiteAudit per site until the
site is forgotten, and the sitemaps each robots.txt declares (SitemapDeclarations).
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from operator import attrgetter
from pathlib import Path
from typing import Any, NamedTuple

from sitemap_crawl.atomic_file import write_atomically
from sitemap_crawl.audit.auditor import SiteAudit, is_error_status
from sitemap_crawl.audit.discovery import SitemapDeclarations
from sitemap_crawl.audit.finding import Finding
from sitemap_crawl.audit.report import Report
from sitemap_crawl.audit.scan import body_head, robots_body
from sitemap_crawl.discovery.rules import KNOWN, ROBOTS
from sitemap_crawl.lines_file import LinesFile
from sitemap_crawl.parsing import INVALID, SitemapReader
from sitemap_crawl.parsing.stream import Body

_JSON_STRING: Callable[[str], str] = json.encoder.encode_basestring  # the C one when there is one


def _json(value: str | None) -> str:
    return "null" if value is None else _JSON_STRING(value)


def json_lines(found: list[Finding]) -> str:
    """The findings as JSON lines: ``json.dumps(finding.to_dict(), ensure_ascii=False)`` and a
    newline each, built directly (the strings findings share encoded once)."""
    places: dict[str | None, str] = {}
    kinds: dict[str, str] = {}
    lines: list[str] = []
    append = lines.append
    encode = _JSON_STRING
    for website, sitemap_url, url, rule, severity, detail in found:
        site = places.get(website) or places.setdefault(website, _json(website))
        where = places.get(sitemap_url) or places.setdefault(sitemap_url, _json(sitemap_url))
        what = kinds.get(rule) or kinds.setdefault(rule, f'"rule": {_json(rule)}, "severity": {_json(severity)}')
        page = "null" if url is None else encode(url)  # (_json written out: a call a finding less)
        append(f'{{"website": {site}, "sitemap_url": {where}, "url": {page}, {what}, "detail": {encode(detail)}}}\n')
    return "".join(lines)


_RULE = attrgetter("rule")
_WRITE_BATCH = 1000

FINDINGS_OUTPUT = "findings"
REPORT_OUTPUT = "report"


class OutputFailure(NamedTuple):
    """An output of the audit that could not be written (a full disk, a file system turned
    read-only): which (FINDINGS_OUTPUT or REPORT_OUTPUT), its path, why, and the findings
    written to it before (the findings file keeps those, whole lines only)."""

    output: str
    path: str
    reason: str
    written: int = 0


class ResponseFacts(NamedTuple):
    """What the audit is told of one sitemap or robots.txt response, besides its body."""

    site: str
    url: str
    role: str
    status: int
    final_url: str
    content_type: str
    encoding: str = ""
    """The Content-Encoding the server sent (before the downloader decoded the body)."""
    left_out: bool = False
    """A redirect the crawl does not follow (a loop, a URL already read, a well-known path
    that leads to a sitemap read under another URL): its body is not read, so not audited."""


class CrawlAudit:
    """Audits the responses of a crawl; writes the findings (JSON lines) and the HTML report.

    Each method that may find something returns the findings' count by rule.
    """

    def __init__(self, path: str | None, report_path: str | None, user_agent: str, append: bool = False) -> None:
        self.path = path
        self.append = append
        """Add to the findings file instead of starting it anew (a queue worker's, restarted)."""
        self.report_path = report_path
        self.report = Report() if report_path else None
        self.user_agent = user_agent
        self._audits: dict[str, SiteAudit] = {}
        self._declarations = SitemapDeclarations()
        self._file: LinesFile | None = None
        self._file_failed = False
        self.written = 0
        """Findings written to the findings file."""
        self.failures: list[OutputFailure] = []
        """Outputs that could not be written, not yet taken (:meth:`take_failures`)."""

    def audit(self, facts: ResponseFacts, body: Body) -> Counter[str]:
        """Audit one response; its findings are written; their count by rule is returned."""
        return self._write_all(self._findings(facts, body))

    def _findings(self, facts: ResponseFacts, body: Body) -> Iterator[Finding]:
        site, url, role, status, final_url, content_type, encoding, left_out = facts
        audit = self._site_audit(site)
        if left_out and role == KNOWN:
            return  # a probe the tree leaves out (it may be read later, should the other probe fail)
        if (url, final_url) in audit.responses_audited:
            return  # a sitemap the site lists twice (two indexes): one fault is one finding
        audit.responses_audited.add((url, final_url))
        if role == KNOWN and status < 400 and found_nothing(body, final_url):
            return  # a probe that found nothing (a "not found" page...): left out of the tree too
        if role == ROBOTS and 400 <= status < 500:
            yield from audit.audit_robots_missing(url, final_url, status)  # (a 5xx is an http-error)
            return
        if is_error_status(status):
            yield from audit.audit_fetch(url, final_url, status, known_path=role == KNOWN)
            return
        if role == ROBOTS:
            yield from audit.audit_robots(robots_body(body), url, self.user_agent)
            return
        yield from audit.audit_fetch(url, final_url, status, content_type, known_path=role == KNOWN)
        if left_out:
            return  # not read (a redirect not followed)
        if final_url in audit.bodies_audited:  # a sitemap already audited, reached again by a redirect
            yield from audit.reached_again(url, final_url)
            return
        audit.bodies_audited.add(final_url)
        head = body_head(body, 16)  # all it reads is whether the body starts as gzip
        yield from audit.audit_served(head, final_url, content_type, encoding)
        yield from audit.audit_sitemap(body, final_url, requested_url=url)

    def undecodable(self, site: str, url: str, encoding: str, known_path_body: bytes | None = None) -> Counter[str]:
        """A body the HTTP client cannot decode (its Content-Encoding is not what it holds).

        ``known_path_body``: the body, as sent, of a well-known path's answer (status below
        400); unless it holds a sitemap, the probe found nothing and there is no finding."""
        if known_path_body is not None and found_nothing(known_path_body, url):
            return Counter()
        return self._write_all(self._site_audit(site).audit_undecodable(url, encoding))

    def forbidden(self, site: str, url: str) -> Counter[str]:
        """A sitemap the crawl did not fetch because robots.txt disallows it (ROBOTSTXT_OBEY)."""
        return self._write_all(self._site_audit(site).audit_forbidden(url))

    def download_failed(self, site: str, url: str, reason: str) -> Counter[str]:
        """A sitemap of the tree (or the site) whose download brought no answer to read."""
        return self._write_all(self._site_audit(site).audit_download_failure(url, reason))

    def add_tree(self, site: str, root: Any) -> Counter[str]:
        """A site's finished sitemap tree, for the report. The site is forgotten first: the
        tree comes on its ``site_finished`` signal, which may reach this extension after the
        tree's, and the findings known at a site's end must be counted on the tree's nodes
        (not on the website node, once the tree is folded)."""
        counts = self.forget(site)
        if self.report is not None:
            self.report.add_tree(site, root)
        return counts

    def forget(self, site: str) -> Counter[str]:
        """A site is finished: the findings known at its end are written, its facts go to the
        report, its state is dropped."""
        audit = self._audits.pop(site, None)
        if audit is None:
            return Counter()
        counts = self._write_all(audit.finish())
        if self.report is not None:
            self.report.add_site_facts(site, audit.sitemap_pages, audit.months, audit.urlset_pages)
        return counts

    def _site_audit(self, site: str) -> SiteAudit:
        audit = self._audits.get(site)
        if audit is None:
            audit = self._audits[site] = SiteAudit(site or None, declarations=self._declarations)
        return audit

    def _write_all(self, findings: Iterable[Finding]) -> Counter[str]:
        """Write findings in batches as they come: a sitemap that yields a finding per page
        does not hold them all in memory."""
        counts: Counter[str] = Counter()
        found = iter(findings)
        while batch := list(islice(found, _WRITE_BATCH)):  # (batched in C: no Python step a finding)
            self._write(batch, counts)
        return counts

    def _write(self, found: list[Finding], counts: Counter[str]) -> None:
        counts.update(map(_RULE, found))
        if self.report is not None:
            self.report.add_findings(found)
        stream = self._findings_file()
        if stream is None:
            return
        try:
            stream.write(json_lines(found).encode("utf-8"))
        except OSError as exc:
            self.written += stream.salvaged_lines
            self._findings_failed(exc)
            return
        self.written += len(found)

    def _findings_file(self) -> LinesFile | None:
        """The open findings file; None when there is none or it failed."""
        if self._file is None and self.path is not None and not self._file_failed:
            try:
                self._file = LinesFile(self.path, append=self.append)
            except OSError as exc:
                self._findings_failed(exc)
        return self._file

    def _findings_failed(self, error: OSError) -> None:
        """The findings file cannot be written: it keeps its whole lines (:class:`LinesFile`)
        and no more is written to it; the findings are still counted (and go to the report)."""
        assert self.path is not None
        self._file_failed = True
        stream, self._file = self._file, None
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
        self.failures.append(OutputFailure(FINDINGS_OUTPUT, self.path, _reason(error), self.written))

    def take_failures(self) -> list[OutputFailure]:
        """The outputs that failed since the last call."""
        failures, self.failures = self.failures, []
        return failures

    def finish(self) -> Counter[str]:
        """Forget every site left (their end findings), close the findings file (an empty one
        when nothing was found) and write the report."""
        counts: Counter[str] = Counter()
        for site in list(self._audits):
            counts.update(self.forget(site))
        stream = self._findings_file()  # no finding: an empty file, not a stale one (appending: as it was)
        if stream is not None:
            self._file = None
            stream.close()
        if self.report is not None and self.report_path is not None:
            # whole or not at all: a process killed while it writes leaves no cut or empty report
            try:
                write_atomically(Path(self.report_path), self.report.render().encode("utf-8"))
            except OSError as exc:
                self.failures.append(OutputFailure(REPORT_OUTPUT, self.report_path, _reason(exc)))
        return counts


def _reason(error: OSError) -> str:
    return error.strerror or str(error)


def found_nothing(body: Body, url: str) -> bool:
    """Whether a body at a well-known path is what the crawl leaves out of the tree: no
    sitemap (an HTML page, an empty body, another root) or one with no entry. Read up to its
    first entry only."""
    reader = SitemapReader(body, url)
    return reader.kind == INVALID or next(iter(reader), None) is None
