"""The main process's side of a many-site run split across processes: it starts one
helper crawl process per other share of the sites and turns what they send into its own
items and signals.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Iterable
from typing import Any

from scrapy.crawler import Crawler
from scrapy.statscollectors import StatsCollector

from sitemap_crawl.codec import page_from_tuple
from sitemap_crawl.engine_state import is_closing
from sitemap_crawl.items import PageBatch
from sitemap_crawl.parsing.worker_protocol import HEADER_SIZE, decode_frame, decode_length
from sitemap_crawl.processes import child_command, child_process_env
from sitemap_crawl.shards.output import MAX_STATS
from sitemap_crawl.shards.protocol import ENDED, NODE, PAGES, RUNNER_MODULE, SITE, STATS, STOPPED_EXIT_CODE, Shard
from sitemap_crawl.shards.settings_copy import copy_settings

logger = logging.getLogger(__name__)

QUEUE_SIZE = 64
"""Messages read ahead from the helpers (beyond it, their pipes fill and they slow down)."""
STOP_GRACE_S = 10.0
"""How long a helper may take to stop after SIGTERM, beyond DOWNLOAD_TIMEOUT (it finishes
its downloads in flight first, as the main process does), before it is killed."""
WATCH_INTERVAL_S = 0.1
"""How often the main process looks whether its engine is closing (then it stops the helpers)."""


class HelperProcesses:
    """The helper crawl processes of one run, and the messages they send."""

    def __init__(self, crawler: Crawler, spider_path: str, arguments: dict[str, Any], count: int) -> None:
        self.crawler = crawler
        self.spider_path = spider_path
        self.arguments = arguments
        self.count = count
        self.stats: dict[str, Any] = {}
        """The helpers' figures added up (see :meth:`add_stats`)."""
        self.maxima: dict[str, Any] = {}
        self._processes: dict[Shard, asyncio.subprocess.Process] = {}
        self._queue: asyncio.Queue[tuple[Shard, Any]] = asyncio.Queue(QUEUE_SIZE)
        self._readers: list[asyncio.Task[None]] = []
        self._watcher: asyncio.Task[None] | None = None
        self._discarding = False
        """Nobody takes the messages any more (the spider closed): the readers drop them."""
        self._running = 0
        self._stopping = False
        """The main process is stopping the helpers (SIGTERM): one that ends so did not die."""
        self._progress: dict[Shard, tuple[int, int]] = {}
        self._ended: set[Shard] = set()
        """The helpers that ended (their messages all read)."""
        self._opened: dict[Shard, int] = {}
        """Sites each helper started (its website node reported), for the progress line."""
        self._finished: dict[Shard, int] = {}
        """Sites each helper finished (SITE messages), for the progress line."""
        self._started_since: dict[Shard, set[str]] = {}
        """Each helper's sites named in its messages since the last site it finished (those
        it started after it told how many it had taken)."""

    @property
    def running(self) -> int:
        """Helpers whose messages are not all handled yet."""
        return self._running

    def progress(self) -> tuple[int, int, int]:
        """Sites in flight, interrupted and taken from the list, summed over the helpers: the
        sites each one started (its website node reported) and finished, as its messages say
        so far (those a helper had not finished when it ended are interrupted in the tree)."""
        in_flight = interrupted = 0
        for shard, opened in self._opened.items():
            unfinished = opened - self._finished.get(shard, 0)
            if shard in self._ended:
                interrupted += unfinished
            else:
                in_flight += unfinished
        return in_flight, interrupted, sum(self._opened.values())

    async def start(self) -> None:
        """Start a helper for every share but the first (the main process maps that one)."""
        settings = copy_settings(self.crawler.settings)
        for index in range(1, self.count):
            shard = Shard(index, self.count)
            spec = {"spider": self.spider_path, "arguments": self.arguments, "settings": settings, "shard": str(shard)}
            process = await asyncio.create_subprocess_exec(
                *child_command(sys.executable, "-m", RUNNER_MODULE),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                limit=1 << 20,
                env=child_process_env(),
            )
            assert process.stdin is not None
            process.stdin.write(json.dumps(spec).encode())
            await process.stdin.drain()
            process.stdin.close()
            self._processes[shard] = process
            self._running += 1
            self._readers.append(asyncio.create_task(self._read(shard, process)))
        self._watcher = asyncio.create_task(self._stop_with_engine())
        atexit.register(self._kill_left)
        logger.info("Mapping the sites in %d crawl processes (SITEMAP_CRAWL_PROCESSES)", self.count)

    async def _read(self, shard: Shard, process: asyncio.subprocess.Process) -> None:
        stream = process.stdout
        assert stream is not None
        try:
            while True:
                try:
                    header = await stream.readexactly(HEADER_SIZE)
                    data = await stream.readexactly(decode_length(header))
                except asyncio.IncompleteReadError:
                    break
                if not self._discarding:
                    await self._queue.put((shard, decode_frame(data)))
        finally:
            code = await process.wait()
            await self._queue.put((shard, code))

    async def messages(self) -> AsyncIterator[tuple[str, Any]]:
        """Every message of every helper, as ``(tag, message)``, until all have ended."""
        while self._running:
            shard, message = await self._queue.get()
            if isinstance(message, int):
                self._running -= 1
                self._ended.add(shard)
                if message in (STOPPED_EXIT_CODE, -signal.SIGTERM) and self._stopping:
                    logger.info("Crawl process %s stopped with the run", shard)
                elif message != 0:
                    if message == STOPPED_EXIT_CODE:
                        logger.warning("Crawl process %s was stopped by a signal this run did not send", shard)
                    else:
                        logger.error(
                            "Crawl process %s ended with exit code %d: the sites it was mapping may be incomplete",
                            shard,
                            message,
                        )
                    if not self.engine_closing():
                        yield ENDED, (ENDED, shard)
                continue
            if message[0] == SITE:
                self._progress[shard] = (message[3], message[4])
                self._started_since[shard] = set()
                self._finished[shard] = self._finished.get(shard, 0) + 1
            elif message[0] in (NODE, PAGES):
                self._started_since.setdefault(shard, set()).add(message[1])
                if message[0] == NODE and message[2].path == () and message[2].error is None:  # a site started
                    self._opened[shard] = self._opened.get(shard, 0) + 1
            if message[0] == STATS:
                self.add_stats(message[1])
                continue
            yield message[0], message

    def add_stats(self, stats: dict[str, Any]) -> None:
        """A helper's figures (:func:`~sitemap_crawl.shards.output.helper_stats`) join those of
        the helpers before: added up, the largest kept of a maximum (MAX_STATS)."""
        for name, value in stats.items():
            if name in MAX_STATS:
                self.maxima[name] = max(self.maxima.get(name, value), value)
            else:
                self.stats[name] = self.stats.get(name, 0) + value

    def merge_into(self, stats: StatsCollector) -> None:
        """Add the helpers' figures to the main process's."""
        for name, value in self.stats.items():
            stats.inc_value(name, value)
        for name, value in self.maxima.items():
            stats.max_value(name, value)

    def not_started(self, shard: Shard, share: Iterable[str]) -> list[str]:
        """The homepages of ``share`` (a helper's, in list order, as it takes them) that the
        helper of ``shard`` had not started when it ended: past the count it had taken as of
        the last site it finished, and never named in its messages since."""
        _in_flight, taken = self._progress.get(shard, (0, 0))
        started = self._started_since.get(shard, set())
        return [homepage for position, homepage in enumerate(share) if position >= taken and homepage not in started]

    def engine_closing(self) -> bool:
        """Whether this process's engine is stopping (Ctrl-C), closing the spider (a
        ``CLOSESPIDER_*`` limit: :func:`~sitemap_crawl.engine_state.is_closing`) or done."""
        engine = self.crawler.engine
        if engine is None or not engine.running or is_closing(self.crawler):
            return True
        slot = engine.scraper.slot
        return slot is None or slot.closing is not None

    async def _stop_with_engine(self) -> None:
        """Stop the helpers as soon as the engine closes: they finish what they have in flight,
        and what they send until they end is still passed on (the spider's callback that reads
        :meth:`messages` holds Scrapy's item pipelines and feeds open till then)."""
        while self._running:
            if self.engine_closing():
                await self.stop()
                return
            await asyncio.sleep(WATCH_INTERVAL_S)

    async def stop(self) -> None:
        """Stop the helpers that still run (the main process is stopping): one SIGTERM each, a
        graceful stop; one that has not ended DOWNLOAD_TIMEOUT + STOP_GRACE_S later is killed."""
        if not self._stopping:
            self._stopping = True
            for process in self._processes.values():
                if process.returncode is None:
                    with contextlib.suppress(ProcessLookupError):
                        process.send_signal(signal.SIGTERM)
        grace = self.crawler.settings.getfloat("DOWNLOAD_TIMEOUT") + STOP_GRACE_S
        for process in self._processes.values():
            try:
                await asyncio.wait_for(process.wait(), grace)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()

    async def close(self) -> None:
        """The spider closed: stop the helpers still running (their messages are dropped, nobody
        takes them any more) and the tasks that read them."""
        self._discarding = True
        while not self._queue.empty():  # a reader waiting to queue a message goes on
            self._queue.get_nowait()
        await self.stop()
        for task in [*self._readers, *filter(None, [self._watcher])]:
            task.cancel()
        atexit.unregister(self._kill_left)

    def _kill_left(self) -> None:
        """At the main process's exit (a second Ctrl-C forced it): kill the helpers still
        running, nobody takes what they map."""
        for process in self._processes.values():
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, signal.SIGKILL)


def page_batch(message: tuple[Any, ...]) -> PageBatch:
    """The PageBatch of a PAGES message."""
    _, website, sitemap_url, node_path, tuples = message
    pages = [page_from_tuple(values, sitemap_url) for values in tuples]
    return PageBatch(sitemap_url, tuple(node_path or ()), pages, website)


__all__ = ["ENDED", "NODE", "PAGES", "SITE", "HelperProcesses", "page_batch"]
