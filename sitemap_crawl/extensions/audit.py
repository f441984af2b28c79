"""The audit extension: runs sitemap_crawl.audit on every sitemap and robots.txt the crawl reads.

Enabled by ``SITEMAP_CRAWL_AUDIT_FILE`` or ``SITEMAP_CRAWL_REPORT_FILE`` (else
NotConfigured: no signal handler, no process, no cost). Each response the ``sitemaps``
spider handles (its ``sitemap_response`` signal: what it reads, as the tree shows it) goes
with its body, in that order, to one audit process (:mod:`sitemap_crawl.audit.process`,
started on the first body) that runs the checks and writes the findings as it finds them;
the reactor only counts them in the stats. A thread writes the bodies to the process's
pipe, another reads its answers. At most ``SITEMAP_CRAWL_AUDIT_BACKLOG`` bytes of bodies
are with the audit at once (:mod:`sitemap_crawl.audit.backlog`): past that, the engine is
paused until the audit catches up. No body is dropped.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from http import HTTPStatus
from typing import IO, Any, BinaryIO, cast

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response

from sitemap_crawl.audit.backlog import AuditBacklog
from sitemap_crawl.audit.crawl_audit import FINDINGS_OUTPUT, REPORT_OUTPUT, OutputFailure, ResponseFacts
from sitemap_crawl.audit.process import AUDIT_MODULE, CALL, DONE, FINISH, OPEN, OUTPUT_FAILED, RESPONSE
from sitemap_crawl.discovery.rules import KNOWN, ROBOTS
from sitemap_crawl.discovery.site import Visit
from sitemap_crawl.history.conditional import asked_conditionally
from sitemap_crawl.items import NodeReport
from sitemap_crawl.kinds import ErrorReason, NodeKind, is_download_failure
from sitemap_crawl.names import (
    AUDIT_ENCODING_META_KEY,
    AUDIT_FILE_FAILED_STAT,
    AUDIT_PAUSED_STAT,
    AUDIT_REPORT_FAILED_STAT,
    AUDIT_STAT,
    META_KEY,
)
from sitemap_crawl.parsing.stream import GZIP_MAGIC
from sitemap_crawl.parsing.worker_protocol import encode_frame, read_frame
from sitemap_crawl.processes import child_command, child_process_env
from sitemap_crawl.settings_reader import SettingsReader
from sitemap_crawl.signals import site_finished, site_tree, sitemap_failure, sitemap_node, sitemap_response
from sitemap_crawl.tree import SitemapTree

logger = logging.getLogger(__name__)

_BODY_CHUNK = 1 << 20


class SitemapAuditExtension:
    """Audits each sitemap and robots.txt response; findings go to ``SITEMAP_CRAWL_AUDIT_FILE``."""

    def __init__(self, crawler: Crawler, path: str | None, report_path: str | None = None) -> None:
        self.crawler = crawler
        self.path = path
        self.report_path = report_path
        settings = crawler.settings  # (the agent Scrapy's RobotsTxtMiddleware reads robots.txt for)
        self.user_agent = str(settings.get("ROBOTSTXT_USER_AGENT") or settings.get("USER_AGENT") or "*")
        self.counts: Counter[str] = Counter()
        self.failed_outputs: dict[str, OutputFailure] = {}
        """The outputs (FINDINGS_OUTPUT, REPORT_OUTPUT) the audit process could not write."""
        self.backlog = AuditBacklog(
            SettingsReader(crawler.settings).audit_backlog, self._send, self._pause, self._resume
        )
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sitemap-audit")
        self._process: subprocess.Popen[bytes] | None = None
        self._reader: threading.Thread | None = None
        self._broken = False
        self._reads_nothing = False
        """The spider is not the ``sitemaps`` spider: no response comes, no process is started."""
        self._unreachable_sites: set[str] = set()
        """Sites whose robots.txt could not be reached (their website node says it), until finished."""
        self._finished: asyncio.Future[None] | None = None
        """Set at spider close; done once every job, FINISH the last, is answered or let go."""
        crawler.signals.connect(self._downloaded, signal=signals.response_downloaded)
        crawler.signals.connect(self._response, signal=sitemap_response)
        crawler.signals.connect(self._site_finished, signal=site_finished)
        crawler.signals.connect(self._node, signal=sitemap_node)
        crawler.signals.connect(self._failure, signal=sitemap_failure)
        if report_path:
            crawler.signals.connect(self._site_tree, signal=site_tree)
        crawler.signals.connect(self._close, signal=signals.spider_closed)
        crawler.signals.connect(self._opened, signal=signals.spider_opened)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SitemapAuditExtension:
        config = SettingsReader(crawler.settings)
        if not config.audited:
            raise NotConfigured  # off (no message: Scrapy would log one WARNING line per crawl)
        return cls(crawler, config.audit_file, config.report_file)

    # in the reactor thread

    def _opened(self, spider: Any) -> None:
        from sitemap_crawl.spiders.sitemaps import SitemapsSpider  # (here: the extension loads first)

        self._reads_nothing = not isinstance(spider, SitemapsSpider)
        if self._reads_nothing:
            settings = [
                name
                for name, path in (
                    ("SITEMAP_CRAWL_AUDIT_FILE", self.path),
                    ("SITEMAP_CRAWL_REPORT_FILE", self.report_path),
                )
                if path
            ]
            logger.warning(
                "%s: the audit reads what the sitemaps spider reads; the %s spider is not it, so "
                "this crawl writes no findings and no report",
                " and ".join(settings),
                spider.name,
            )
            return
        self._clear_earlier_outputs()

    def _clear_earlier_outputs(self) -> None:
        """An earlier run's findings file is emptied and its report removed as the crawl opens
        (as ``-O`` empties a feed): should the audit process end early, or a second Ctrl-C stop
        the crawl, none of theirs passes for this run's. A queue worker's findings file is its
        own across runs: kept."""
        for path, keep in ((self.path, self._appends), (self.report_path, False)):
            if not path or keep or not os.path.isfile(path):
                continue  # (only a regular file: never /dev/null, a pipe or a device)
            try:
                if path == self.path:
                    open(path, "w").close()  # (emptied)
                else:
                    os.unlink(path)
            except FileNotFoundError:
                pass
            except OSError as exc:
                logger.warning("%s from an earlier run could not be cleared: %s", path, exc.strerror or exc)

    def _downloaded(self, response: Response, request: Request, **_kwargs: Any) -> None:
        """The response as the server sent it (before the downloader middlewares decode it)."""
        visit = request.meta.get(META_KEY)
        if not isinstance(visit, Visit):
            return
        encoding = (response.headers.get(b"Content-Encoding") or b"").decode("latin-1").strip().lower()
        request.meta[AUDIT_ENCODING_META_KEY] = encoding
        body = response.body
        if encoding not in ("gzip", "x-gzip") or not body or body.startswith(GZIP_MAGIC):
            return
        # the download will fail. A well-known path's answer is a finding only if it holds a
        # sitemap (else the probe found nothing): the audit process reads it, not the reactor
        if visit.role != KNOWN:
            self.call("undecodable", visit.site, response.url, encoding)
        elif response.status < HTTPStatus.BAD_REQUEST:
            self.backlog.add((CALL, "undecodable", (visit.site, response.url, encoding, body)), len(body))

    def _response(self, response: Response, visit: Visit, left_out: bool, **_kwargs: Any) -> None:
        """A response the spider handled (``left_out``: a redirect it does not follow)."""
        if response.status == HTTPStatus.NOT_MODIFIED and asked_conditionally(response.request):
            return  # (a 304 has no body to audit: its empty one was an empty-sitemap; one not asked for is an error)
        content_type = (response.headers.get(b"Content-Type") or b"").decode("latin-1").lower()
        encoding = str(response.meta.get(AUDIT_ENCODING_META_KEY, ""))
        # answered from another URL only after a redirect (Scrapy escapes a URL it requests:
        # thé.xml is asked as th%C3%A9.xml, which is no redirect)
        final_url = response.url if response.meta.get("redirect_urls") else visit.url
        facts = ResponseFacts(
            visit.site, visit.url, visit.role, response.status, final_url, content_type, encoding, left_out
        )
        body = response.body
        self.backlog.add((RESPONSE, facts, body), len(body))

    def _node(self, node: NodeReport, site: str | None = None, **_kwargs: Any) -> None:
        """A node with no response to audit: a sitemap ROBOTSTXT_OBEY kept the crawl from
        fetching (``sitemap-disallowed`` all the same), or an unreachable site
        (``download-failed`` on the website: its robots.txt's own is then not written)."""
        if not node.finished or node.error is None:
            return
        if node.error == ErrorReason.FORBIDDEN_BY_ROBOTS_TXT:
            self.call("forbidden", site or "", node.url)
        elif node.kind == NodeKind.WEBSITE and node.error.startswith(ErrorReason.UNREACHABLE):
            self._unreachable_sites.add(site or "")
            self.call("download_failed", site or "", node.url, node.error)

    def _failure(self, visit: Visit, reason: str, url: str, **_kwargs: Any) -> None:
        """A sitemap or robots.txt whose download brought no answer to read: ``download-failed``
        (not a well-known path's: a probe that finds nothing is no fault of the site)."""
        if visit.role == KNOWN or not is_download_failure(reason):
            return
        if visit.role == ROBOTS and visit.site in self._unreachable_sites:
            return  # (said on the website node)
        detail = reason if url == visit.url else f"{reason} at {url} (redirected)"
        self.call("download_failed", visit.site, visit.url, detail)

    def _site_finished(self, site: str, **_kwargs: Any) -> None:
        self._unreachable_sites.discard(site)
        self.call("forget", site)

    def _site_tree(self, site: str, tree: SitemapTree, **_kwargs: Any) -> None:
        """A site's finished tree goes to the report (after the findings already queued)."""
        if tree.root is not None:
            self.call("add_tree", site, tree.root)

    def call(self, method: str, *args: Any) -> None:
        """Have the audit process call a CrawlAudit method (``CALLS``), after the bodies already given."""
        self.backlog.add((CALL, method, args), 0)

    def _send(self, job_id: int, job: tuple[Any, ...]) -> None:
        if self._broken:
            self._done(job_id, {})
            return
        self._writer.submit(self._write_job, job_id, job)

    def _done(self, job_id: int, counts: dict[str, int]) -> None:
        if counts:
            self.counts.update(counts)
            stats = self.crawler.stats
            if stats is not None:
                for rule, count in counts.items():
                    stats.inc_value(f"{AUDIT_STAT}/{rule}", count)
        self.backlog.done(job_id)
        self._check_finished()

    def _check_finished(self) -> None:
        if self._finished is not None and self.backlog.idle and not self._finished.done():
            self._finished.set_result(None)

    def _engine(self) -> Any:
        try:
            return self.crawler.engine
        except RuntimeError:  # not started (or already gone): nothing to pause
            return None

    def _pause(self) -> None:
        engine = self._engine()
        if engine is not None:
            engine.pause()
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(AUDIT_PAUSED_STAT)

    def _resume(self) -> None:
        engine = self._engine()
        if engine is not None:
            engine.unpause()
            slot = getattr(engine, "_slot", None)  # unpause() alone waits for the next heartbeat (5 s)
            if slot is not None:
                slot.nextcall.schedule()

    @property
    def _appends(self) -> bool:
        """Whether the findings file is appended to: a queue worker keeps its findings across runs."""
        return getattr(self.crawler.spider, "queue", None) is not None

    def _ended(self, why: str) -> None:
        """The process's answers ended: as they should once FINISH is answered, else it is gone."""
        if not (self._finished is not None and self.backlog.idle):
            self._gone(why)

    def _gone(self, why: str) -> None:
        """The audit process cannot be used: the jobs in flight and to come are let go."""
        if not self._broken:
            logger.error("The sitemap audit process %s; the rest of the crawl is not audited", why)
        self._broken = True
        for job_id in self.backlog.in_flight_ids():
            self._done(job_id, {})

    async def _close(self, spider: Any) -> None:
        if self._reads_nothing:
            return  # (said at the start)
        self._finished = asyncio.get_running_loop().create_future()
        self.backlog.add((FINISH,), 0)
        self._check_finished()  # already let go (the process is gone)
        await self._finished  # answered by the process, or let go if it is gone
        await asyncio.to_thread(self._writer.shutdown, True)
        if self._process is not None:
            if self._broken:
                self._process.kill()  # it may still be running, but it is not told FINISH
            await asyncio.to_thread(self._process.wait)
        if self._reader is not None:
            await asyncio.to_thread(self._reader.join)
        total = sum(self.counts.values())
        summary = ", ".join(f"{rule} {count}" for rule, count in self.counts.most_common())
        if self.failed_outputs and not self._broken:
            self._log_failed_outputs(total, summary)
            return
        if self._broken:  # the process ended early: what it wrote is all there is, and no report
            logger.error(
                "Sitemap audit incomplete: %d finding(s) counted%s%s",
                total,
                f", those written are in {self.path}" if self.path else "",
                f"; {self.report_path} was not written" if self.report_path else "",
            )
            return
        where = " and ".join(path for path in (self.path, self.report_path) if path)
        logger.info("Sitemap audit: %d finding(s) in %s%s", total, where, f": {summary}" if summary else "")

    def _output_failed(self, output: str, path: str, reason: str, written: int) -> None:
        """The audit process could not write one of its outputs: said once, as it happens."""
        failure = OutputFailure(output, path, reason, written)
        self.failed_outputs.setdefault(output, failure)
        stats = self.crawler.stats
        if output == FINDINGS_OUTPUT:
            logger.error(
                "The sitemap audit's findings file %s could not be written (%s): no more is written to it;"
                " the %d finding(s) written before are in it, the rest are still counted",
                path,
                reason,
                written,
            )
            if stats is not None:
                stats.set_value(AUDIT_FILE_FAILED_STAT, 1)
        else:
            logger.error("The sitemap audit report %s could not be written (%s)", path, reason)
            if stats is not None:
                stats.set_value(AUDIT_REPORT_FAILED_STAT, 1)

    def _log_failed_outputs(self, total: int, summary: str) -> None:
        """The closing line when an output could not be written: what is where, and what is not."""
        parts = [f"Sitemap audit: {total} finding(s)"]
        findings = self.failed_outputs.get(FINDINGS_OUTPUT)
        if findings is not None:
            parts.append(f"{findings.written} of them written to {findings.path} before it failed ({findings.reason})")
        elif self.path:
            parts[0] += f" in {self.path}"
        report = self.failed_outputs.get(REPORT_OUTPUT)
        if report is not None:
            parts.append(f"the report {report.path} was not written ({report.reason})")
        elif self.report_path:
            parts.append(f"the report in {self.report_path}")
        logger.error("%s%s", "; ".join(parts), f": {summary}" if summary else "")

    # in the writer thread

    def _write_job(self, job_id: int, job: tuple[Any, ...]) -> None:
        try:
            stdin = self._stdin()
            tag = job[0]
            if tag == RESPONSE:
                body = job[2]
                stdin.write(encode_frame((RESPONSE, job_id, tuple(job[1]), len(body))))
                view = memoryview(body)
                for start in range(0, len(body), _BODY_CHUNK):
                    stdin.write(view[start : start + _BODY_CHUNK])
            elif tag == CALL:
                stdin.write(encode_frame((CALL, job_id, job[1], job[2])))
            else:
                stdin.write(encode_frame((FINISH, job_id)))
            stdin.flush()
            if tag == FINISH:
                stdin.close()
        except (OSError, ValueError) as exc:
            self._from_thread(self._gone, f"stopped reading ({exc})")

    def _stdin(self) -> IO[bytes]:
        if self._process is None:
            self._process = subprocess.Popen(
                child_command(sys.executable, "-m", AUDIT_MODULE),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=child_process_env(),
            )
            self._reader = threading.Thread(target=self._read_answers, name="sitemap-audit-answers", daemon=True)
            self._reader.start()
            assert self._process.stdin is not None
            self._process.stdin.write(encode_frame((OPEN, self.path, self.report_path, self.user_agent, self._appends)))
        assert self._process.stdin is not None
        return self._process.stdin

    # in the reader thread

    def _read_answers(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        stdout = cast(BinaryIO, self._process.stdout)
        while True:
            try:
                message = read_frame(stdout)
            except (OSError, ValueError) as exc:
                message = None
                why = f"stopped answering ({exc})"
            else:
                why = "ended early"
            if message is None:
                self._from_thread(self._ended, why)
                return
            if message[0] == DONE:
                self._from_thread(self._done, message[1], message[2])
            elif message[0] == OUTPUT_FAILED:
                self._from_thread(self._output_failed, *message[1:])

    def _from_thread(self, function: Any, *args: Any) -> None:
        from twisted.internet import reactor  # here: importing it at module level would install one

        reactor.callFromThread(function, *args)
