"""A queue run's homepage source: a worker that takes sites from the shared queue.

``scrapy crawl sitemaps -a queue=redis://host:6379/0`` makes the ``sitemaps`` spider a
worker: :class:`QueueWorker` stands where a run's list of homepages stands (the spider
iterates it as it has room, SITEMAP_CRAWL_CONCURRENT_SITES), but it is filled from the
server as room opens, in the background, and iterating it again later may give more.

A site the spider has mapped is *committed* in this order, several sites at a time:

1. its pages have all left the item pipelines (:mod:`sitemap_crawl.queue.ledger`);
2. the feed files are flushed and synced to disk;
3. its tree line, naming the attempt (``"attempt": "<entry id>/<delivery>"``), is
   appended to the tree file (the ``site_finished`` signal) and the file synced;
4. it is acknowledged on the server, which accepts only the attempt that holds the site;
5. (SITEMAP_CRAWL_HISTORY) the history writes the site's new state (``site_acknowledged``).

A crash before 4 leaves the site pending: another worker claims it after CLAIM_AFTER
(rows written by the dead attempt have no tree line naming their attempt, so
``sitemaps-collect`` leaves them out; its history is as it was, so the changes are
exported again under the new attempt). A crash between 4 and 5 exports the site's
changes again next run: at least once, never lost. A worker that was silent too long (paused) and
finishes a site another worker took over is told so at 4: its attempt is not
acknowledged, and ``sitemaps-collect`` keeps the newer one. While it runs, the worker
renews its hold on its sites every quarter of CLAIM_AFTER, so a long site is never taken
from a live worker.
The run ends when the queue is drained (nothing waits, nothing is pending anywhere),
or keeps waiting for more with ``-a queue_wait=true``. A server that goes away stops
the worker cleanly (finish reason ``queue_unavailable``): what it acknowledged is
written, what it held is taken by another worker later.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from redis.exceptions import RedisError, ResponseError
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider

from sitemap_crawl.arguments import SpiderArgumentError, parse_homepage
from sitemap_crawl.engine_state import is_closing
from sitemap_crawl.feed_files import feed_files
from sitemap_crawl.names import (
    QUEUE_ACKED_STAT,
    QUEUE_CLAIMED_STAT,
    QUEUE_DEAD_STAT,
    QUEUE_DUPLICATE_STAT,
    QUEUE_ROUND_TRIPS_STAT,
    QUEUE_TAKEN_OVER_STAT,
)
from sitemap_crawl.queue.config import QueueConfig, display_url, is_wrong_type, server_error
from sitemap_crawl.queue.feed_storage import feed_write_failures, use_queue_feed_storage
from sitemap_crawl.queue.files import OutputWriteError, lock_outputs, prepare_feeds, sync_files, tree_files
from sitemap_crawl.queue.ledger import PageLedger
from sitemap_crawl.queue.stream import Acknowledgement, Lease, SiteQueue, check_server
from sitemap_crawl.settings_reader import SettingsReader
from sitemap_crawl.signals import site_acknowledged, site_finished, sitemap_node
from sitemap_crawl.sites.shard import Shard
from sitemap_crawl.tree_file import is_lines_file

logger = logging.getLogger(__name__)

POLL_INTERVAL = 1.0
"""Seconds between two looks at the queue while it has nothing for this worker."""
UNAVAILABLE = "queue_unavailable"
"""The finish reason of a worker whose queue server went away."""
OUTPUT_FAILED = "output_failed"
"""The finish reason of a worker that could not write its output files (a full disk)."""


def worker_name() -> str:
    """This worker's consumer name: host, process id and a random part (unique per run)."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(2)}"


@dataclass(slots=True)
class _Mapped:
    lease: Lease
    unreachable: str | None


class QueueUnreachableError(SpiderArgumentError):
    """The queue's server did not answer as the worker started: the crawl stops before it
    starts (one error line, exit status 1, as for a bad argument)."""


class QueueWorker:
    """The homepages of a queue run (iterable like :class:`~sitemap_crawl.sites.HomepageList`)."""

    def __init__(self, url: str, normalize: bool = True, wait: bool = False) -> None:
        self.url = url
        self.normalize = normalize
        self.wait = wait
        self.name = worker_name()
        self.source = f"the queue at {display_url(url)}"
        self.shard = Shard(0, 1)  # a worker maps every site it takes
        self.taken = 0
        self.queue: SiteQueue | None = None
        self.config: QueueConfig | None = None
        self.ledger = PageLedger()
        self.held: dict[str, Lease] = {}
        """The sites this worker took and has not acknowledged, by homepage."""
        self._ready: deque[Lease] = deque()
        self._mapped: dict[str, _Mapped] = {}
        """Sites mapped whose pages are still on their way to the feed."""
        self._to_commit: list[_Mapped] = []
        self._lost: set[str] = set()
        """Sites another worker took over (this one was silent too long): no longer renewed."""
        self._taken_back: dict[str, Lease] = {}
        """Sites this worker took over again while it still maps an older attempt at them: each is
        mapped again under the newer attempt once the older one is committed (and refused)."""
        self._acking: set[str] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._fetching = False
        self._committing = False
        self._drained = False
        self._stopping = False
        self._locks: list[int] = []
        """Descriptors holding the locks on this worker's output files (see lock_outputs)."""
        self._closing: asyncio.Future[Any] | None = None
        self.crawler: Crawler | None = None
        self.spider: Any = None

    # -- wiring --------------------------------------------------------------------------

    def bind(self, crawler: Crawler, spider: Any) -> None:
        """Connect to the crawl's signals (from the spider's ``from_crawler``)."""
        self.crawler = crawler
        self.spider = spider
        self.config = QueueConfig.from_settings(self.url, crawler.settings)
        try:
            check_server(self.config)  # (before the crawl starts: a worker that cannot work exits 1)
        except RedisError as exc:
            raise QueueUnreachableError(
                f"{server_error(self.url, exc, self.config.key)}: this worker did not start"
            ) from None
        files = SettingsReader(crawler.settings)
        tree_file = files.tree_file
        if tree_file and not is_lines_file(tree_file):
            raise SpiderArgumentError(
                f"a queue run appends a line per site to its tree file: SITEMAP_CRAWL_TREE_FILE={tree_file!r} "
                "must end in .jsonl or .jl"
            )
        if not tree_file:
            logger.warning(
                "Queue run without SITEMAP_CRAWL_TREE_FILE: sitemaps-collect needs the tree lines to keep "
                "each site's pages once (-s SITEMAP_CRAWL_TREE_FILE=trees-%s.jsonl)",
                self.name,
            )
        prepare_feeds(crawler.settings.getdict("FEEDS"), spider)
        use_queue_feed_storage(crawler.settings)
        self._locks = lock_outputs(
            crawler.settings.getdict("FEEDS"), spider, tree_file, files.audit_file, files.report_file
        )
        crawler.signals.connect(self.ledger.node, signal=sitemap_node)
        crawler.signals.connect(self._item_done, signal=signals.item_scraped)
        crawler.signals.connect(self._item_done, signal=signals.item_dropped)
        crawler.signals.connect(self._item_done, signal=signals.item_error)
        crawler.signals.connect(self._idle, signal=signals.spider_idle)
        crawler.signals.connect(self._closed, signal=signals.spider_closed)

    async def open(self) -> bool:
        """Connect and make sure the consumer group exists; False (logged) when the server
        cannot be reached."""
        assert self.config is not None
        self.queue = SiteQueue(self.config)
        try:
            await self.queue.ensure_group()
        except RedisError as exc:
            self._server_gone(exc)
            return False
        logger.info(
            "Worker %s takes sites from %s (claims sites silent for %gs; dead-letters after %d attempts)",
            self.name,
            display_url(self.url),
            self.config.claim_after,
            self.config.max_attempts,
        )
        self._spawn(self._keep_loop())
        return True

    # -- the spider's side ---------------------------------------------------------------

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        """The next homepage taken from the queue; StopIteration when none is here yet (the
        worker asks the server for more, and the spider is offered them when they come)."""
        if self._ready:
            return self._ready.popleft().homepage
        self._fetch_soon()
        raise StopIteration

    def attempt_of(self, site: str) -> str | None:
        """The attempt at ``site`` this worker is making (its pages carry it)."""
        lease = self.held.get(site)
        return lease.attempt if lease is not None else None

    def site_mapped(self, site: str, unreachable: str | None) -> None:
        """The spider has read the site to its end: commit it once its pages are written."""
        lease = self.held.get(site)
        if lease is None:  # not a site of the queue (cannot happen): finish it as a list run would
            self._send_finished(site, unreachable, None)
            return
        self._mapped[site] = _Mapped(lease, unreachable)
        self._commit_if_written(site)

    # -- taking sites --------------------------------------------------------------------

    def _room(self) -> int:
        return int(self.spider.concurrent_sites) - len(self.spider.sites) - len(self._ready)

    def _fetch_soon(self) -> None:
        if not self._fetching and not self._stopping and self.queue is not None:
            self._fetching = True
            self._spawn(self._fetch())

    async def _fetch(self) -> None:
        assert self.queue is not None and self.crawler is not None
        stats = self.crawler.stats
        assert stats is not None
        try:
            while not self._stopping:
                room = self._room()
                if room <= 0 or is_closing(self.crawler):  # (a stopping worker takes no site: it could not map it)
                    return
                leases, dead = await self.queue.take(self.name, room)
                if dead:
                    stats.inc_value(QUEUE_DEAD_STAT, dead)
                    logger.warning("%d site(s) taken too often went to the dead-letter stream", dead)
                await self._take_all(leases)
                if leases:
                    self._drained = False
                    self.spider._open_sites()
                    if len(leases) == room:
                        continue  # there may be more
                elif not self.held and await self.queue.idle():
                    if not self._drained:
                        logger.info("The queue is drained%s", ": waiting for more sites" if self.wait else "")
                    self._drained = True
                    if not self.wait:
                        self._fetching = False
                        self._close_if_done()
                        return
                await asyncio.sleep(POLL_INTERVAL)
        except RedisError as exc:
            self._server_gone(exc)
        finally:
            self._fetching = False

    async def _take_all(self, leases: list[Lease]) -> None:
        """Take the leases the server handed out: each reduced to its site; one whose site
        another entry maps (two ``--keep-path`` entries of one site) is a duplicate, which the
        server acknowledged and counted as such: it is not mapped (see ``SiteQueue.own``)."""
        assert self.queue is not None and self.crawler is not None and self.crawler.stats is not None
        reduced: list[Lease] = []
        given: list[str] = []
        for lease in leases:
            try:
                homepage = parse_homepage(lease.homepage, self.normalize)
            except SpiderArgumentError:  # not added by sitemaps-enqueue: done with, as unreachable
                logger.error(
                    "The queue holds %r, which is not an http(s) URL: acknowledged, not mapped", lease.homepage
                )
                self._spawn(self._ack_unusable(lease))
                continue
            reduced.append(Lease(lease.entry_id, homepage, lease.deliveries, lease.previous_holder))
            given.append(lease.homepage)
        owners = await self.queue.own(self.name, reduced)
        for lease, owner, homepage in zip(reduced, owners, given, strict=True):
            if owner == lease.entry_id:
                self._take(lease)
                continue
            self.crawler.stats.inc_value(QUEUE_DUPLICATE_STAT)
            logger.info(
                "Entry %s (%s) reduces to %s, which entry %s maps: acknowledged as a duplicate, not mapped",
                lease.entry_id,
                homepage,
                lease.homepage,
                owner,
            )

    def _take(self, lease: Lease) -> None:
        """Take a lease of this worker's (its homepage reduced to its site): map it, or map it
        again under a newer attempt (taken back)."""
        assert self.crawler is not None and self.crawler.stats is not None
        homepage = lease.homepage
        held = self.held.get(homepage)
        if held is not None and held.entry_id == lease.entry_id and lease.deliveries > held.deliveries:
            # taken over from a worker that had taken it over from this one: only the newer attempt
            # can be acknowledged, so the site is mapped again under it once this attempt ends
            logger.info(
                "Took back %s (attempt %d) while still mapping attempt %d", homepage, lease.deliveries, held.deliveries
            )
            self._taken_back[homepage] = lease
            self._lost.discard(homepage)  # held again: renewed again
            self.crawler.stats.inc_value(QUEUE_CLAIMED_STAT)
            return
        if held is not None or homepage in self.spider.sites:
            return  # cannot happen (the server gives a site one entry: SiteQueue.own): never map a site twice at once
        if lease.previous_holder:
            self.crawler.stats.inc_value(QUEUE_CLAIMED_STAT)
            logger.info("Took over %s from worker %s (attempt %d)", homepage, lease.previous_holder, lease.deliveries)
        self.held[homepage] = lease
        self.taken += 1
        self._ready.append(lease)

    async def _ack_unusable(self, lease: Lease) -> None:
        assert self.queue is not None
        try:
            await self.queue.ack(self.name, [(lease, 0, True)])
        except RedisError as exc:
            self._server_gone(exc)

    async def _keep_loop(self) -> None:
        """Renew this worker's hold on its sites every quarter of CLAIM_AFTER."""
        assert self.queue is not None and self.config is not None
        try:
            while not self._stopping:
                await asyncio.sleep(self.config.keep_interval)
                ids = {
                    lease.entry_id: site
                    for site, lease in self.held.items()
                    if site not in self._lost and site not in self._acking
                }
                for entry_id in await self.queue.keep(self.name, list(ids)):
                    site = ids[entry_id]
                    if site in self._acking or site not in self.held:
                        continue  # acknowledged meanwhile (by this worker)
                    self._lost.add(site)
                    logger.warning(
                        "%s was taken over by another worker (this one was silent for longer than "
                        "SITEMAP_CRAWL_QUEUE_CLAIM_AFTER); it is finished here too, but not acknowledged: "
                        "sitemaps-collect keeps the site's newest complete attempt",
                        site,
                    )
        except RedisError as exc:
            self._server_gone(exc)

    # -- committing sites ----------------------------------------------------------------

    def _item_done(self, item: Any) -> None:
        site = self.ledger.item(item)
        if site is not None and site in self._mapped:
            self._commit_if_written(site)

    def _commit_if_written(self, site: str, force: bool = False) -> None:
        if not (force or self.ledger.complete(site)):
            return
        mapped = self._mapped.pop(site, None)
        if mapped is None:
            return
        self._to_commit.append(mapped)
        if not self._committing:
            self._committing = True
            self._spawn(self._commit())

    async def _commit(self) -> None:
        """Commit the sites whose pages are written (see the module docstring), a batch at a time."""
        assert self.queue is not None and self.crawler is not None and self.crawler.stats is not None
        try:
            while self._to_commit and not self._stopping:
                batch, self._to_commit = self._to_commit, []
                failed = feed_write_failures(self.crawler)  # (a batch's file may be closed already)
                if failed:
                    raise OutputWriteError(failed[0])
                await sync_files(feed_files(self.crawler))
                for mapped in batch:
                    self._send_finished(mapped.lease.homepage, mapped.unreachable, mapped.lease.attempt)
                await sync_files(tree_files(self.crawler))
                self._acking.update(mapped.lease.homepage for mapped in batch)
                outcomes = await self.queue.ack(
                    self.name,
                    (
                        (mapped.lease, self.ledger.pages(mapped.lease.homepage), mapped.unreachable is not None)
                        for mapped in batch
                    ),
                )
                for mapped, outcome in zip(batch, outcomes, strict=True):
                    self._acknowledged(mapped.lease, outcome)
        except RedisError as exc:
            self._server_gone(exc)
        except OutputWriteError as exc:
            self._output_failed(exc)
        finally:
            self._committing = False
        self._fetch_soon()
        self._close_if_done()

    def _acknowledged(self, lease: Lease, outcome: Acknowledgement) -> None:
        """The server's answer to the acknowledgement of ``lease``: the site is done with here (or,
        taken back meanwhile, mapped again under the newer attempt)."""
        assert self.crawler is not None and self.crawler.stats is not None
        site = lease.homepage
        reported = site in self._lost  # its loss was logged by the renewal already
        self.held.pop(site, None)
        self._lost.discard(site)
        self._acking.discard(site)
        self.ledger.forget(site)
        taken_back = self._taken_back.pop(site, None)
        acknowledged = outcome is Acknowledgement.ACKNOWLEDGED
        self.crawler.signals.send_catch_log(site_acknowledged, site=site, acknowledged=acknowledged)
        if acknowledged:
            self.crawler.stats.inc_value(QUEUE_ACKED_STAT)
            return
        if taken_back is not None:  # (this worker holds the newer attempt: nothing was lost)
            logger.info("%s: mapping it again under attempt %s, the one that holds it", site, taken_back.attempt)
            self.held[site] = taken_back
            self._ready.append(taken_back)
            self.spider._open_sites()
            return
        self.crawler.stats.inc_value(QUEUE_TAKEN_OVER_STAT)
        logger.log(
            logging.INFO if reported else logging.WARNING,
            "%s: attempt %s is not acknowledged (%s); sitemaps-collect keeps the site's newest complete attempt",
            site,
            lease.attempt,
            "another worker took the site over"
            if outcome is Acknowledgement.TAKEN_OVER
            else "a newer attempt was acknowledged, or the site was dead-lettered",
        )

    def _send_finished(self, site: str, unreachable: str | None, attempt: str | None) -> None:
        assert self.crawler is not None
        self.crawler.signals.send_catch_log(site_finished, site=site, unreachable=unreachable, attempt=attempt)

    # -- the end -------------------------------------------------------------------------

    def _busy(self) -> bool:
        return bool(self.held or self._ready or self._fetching or self._committing or self._to_commit)

    def _idle(self) -> None:
        """spider_idle: the crawl is idle, so every page is written; keep the spider open while
        the queue may still have work for it."""
        for site in list(self._mapped):
            self._commit_if_written(site, force=True)
        if self._stopping:
            return
        if self._busy() or self.wait or not self._drained:
            self._fetch_soon()
            raise DontCloseSpider

    def _close_if_done(self) -> None:
        if self._drained and not self.wait and not self._busy() and not self.spider.sites and not self._stopping:
            self._close("finished")

    def _close(self, reason: str) -> None:
        assert self.crawler is not None
        engine = self.crawler.engine
        if engine is not None and engine.running and self._closing is None:
            self._closing = asyncio.ensure_future(engine.close_spider_async(reason=reason))  # not cancelled at close

    def _output_failed(self, exc: OutputWriteError) -> None:
        """An output file cannot be written: no site is acknowledged any more (its rows or tree
        line would not be on disk), and the worker stops."""
        if self._stopping:
            return
        self._stopping = True
        logger.error(
            "This worker cannot write its output (%s): it stops. The sites it acknowledged are written; "
            "the %d it holds (their rows may be in part in its files) stay pending and another worker "
            "takes them after SITEMAP_CRAWL_QUEUE_CLAIM_AFTER.",
            exc,
            len(self.held),
        )
        self._close(OUTPUT_FAILED)

    def _server_gone(self, exc: BaseException) -> None:
        if self._stopping:
            return
        self._stopping = True
        if isinstance(exc, ResponseError) and "NOGROUP" in str(exc):
            logger.error(
                "The queue at %s was deleted on the server (its stream or consumer group is gone: %s): this "
                "worker stops. The sites it acknowledged are written; the %d it held are no longer queued.",
                display_url(self.url),
                exc,
                len(self.held),
            )
            self._close(UNAVAILABLE)
            return
        if is_wrong_type(exc):
            logger.error(
                "%s: this worker stops. The sites it acknowledged are written; the %d it holds stay pending.",
                server_error(self.url, exc, self.config.key if self.config is not None else None),
                len(self.held),
            )
            self._close(UNAVAILABLE)
            return
        logger.error(
            "The queue server %s cannot be reached (%s): this worker stops. The sites it acknowledged "
            "are written; the %d it holds stay pending and another worker takes them after "
            "SITEMAP_CRAWL_QUEUE_CLAIM_AFTER.",
            display_url(self.url),
            exc,
            len(self.held),
        )
        self._close(UNAVAILABLE)

    async def _closed(self) -> None:
        """spider_closed: stop the background work, report the round trips, close the client."""
        self._stopping = True
        for descriptor in self._locks:  # (a descriptor of its own: the feeds' files are not touched)
            os.close(descriptor)
        self._locks = []
        for task in list(self._tasks):
            if task is not asyncio.current_task():
                task.cancel()
        if self.queue is not None:
            assert self.crawler is not None and self.crawler.stats is not None
            self.crawler.stats.set_value(QUEUE_ROUND_TRIPS_STAT, self.queue.round_trips)
            with contextlib.suppress(RedisError, OSError):
                await self.queue.close()

    def _spawn(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
