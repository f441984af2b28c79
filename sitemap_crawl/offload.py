"""Reading sitemaps in the spider: inline, or in parsing workers on the other CPU cores.

Both readers offer the same interface: ``kind``, ``error``, ``detail`` and
``chunks()``, an async iterator of lists of entries (pages or sub-sitemap
references). Large bodies go to a pool of worker processes
(SITEMAP_CRAWL_PARSE_WORKERS; by default one per usable CPU but the crawl
process's own, 1 to 4), which read them while the crawl process finishes and
exports the pages; small
ones are read inline, where a round trip would cost more than it saves. A
worker that cannot start or dies is not used again (the log says so); when
none is left, every body is read inline.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import sys
from collections.abc import AsyncIterator, Callable
from types import TracebackType
from typing import Any

from sitemap_crawl.cpus import MAX_AUTO_WORKERS, default_worker_count, usable_cpus
from sitemap_crawl.items import SitemapPage, SitemapRef
from sitemap_crawl.kinds import ErrorReason, NodeKind
from sitemap_crawl.parsing import Limits, SitemapReader
from sitemap_crawl.parsing.reader import in_lists
from sitemap_crawl.parsing.worker_protocol import (
    DONE,
    ENTRIES,
    FAILED,
    HEADER_SIZE,
    KIND,
    WORKER_MODULE,
    decode_frame,
    decode_length,
    entries_from_tuples,
    job_header,
)
from sitemap_crawl.processes import child_command, child_process_env

logger = logging.getLogger(__name__)

Entry = SitemapPage | SitemapRef
_PIPE_LIMIT = 1 << 20
_BODY_CHUNK = 1 << 20
__all__ = [  # usable_cpus and default_worker_count live in sitemap_crawl.cpus; importable here too
    "MAX_AUTO_WORKERS",
    "InlineReader",
    "ParseWorker",
    "ParseWorkerPool",
    "SitemapReaders",
    "WorkerGone",
    "WorkerReader",
    "default_worker_count",
    "usable_cpus",
]


class InlineReader:
    """A SitemapReader read in the spider's own process."""

    def __init__(self, body: bytes, url: str, is_robots: bool, limits: Limits, chunk_size: int) -> None:
        self._reader = SitemapReader(body, url, is_robots=is_robots, limits=limits)
        self._chunk_size = chunk_size

    @property
    def kind(self) -> str:
        return self._reader.kind

    @property
    def error(self) -> str | None:
        return self._reader.error

    @property
    def detail(self) -> str | None:
        return self._reader.detail

    async def chunks(self) -> AsyncIterator[list[Entry]]:
        for chunk in in_lists(self._reader, self._chunk_size):
            yield chunk

    async def __aenter__(self) -> InlineReader:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        return None


class WorkerReader:
    """A body being read by the parsing worker; holds the worker until closed."""

    def __init__(
        self,
        worker: ParseWorker,
        job_id: int,
        url: str,
        header: tuple[Any, ...],
        fallback: Callable[[], InlineReader],
    ) -> None:
        self._worker = worker
        self._job_id = job_id
        self._url = url
        self._fallback = fallback
        _tag, _job, self.kind, self.error, self.detail = header
        self._done = False

    async def chunks(self) -> AsyncIterator[list[Entry]]:
        url = self._url
        given = 0
        while not self._done:
            try:
                message = await self._worker.receive()
            except WorkerGone:
                # The worker died mid-sitemap: read the rest here, after the entries already given.
                self._done = True
                async for chunk in self._read_inline_after(given):
                    yield chunk
                return
            tag = message[0]
            if tag == ENTRIES:
                given += len(message[2])
                yield entries_from_tuples(message[2], url)
            elif tag == DONE:
                _tag, _job, self.kind, self.error, self.detail = message
                self._done = True
            else:  # "failed": a bug in the parser, reported instead of crashing the crawl
                self.error, self.detail = ErrorReason.PARSE_ERROR, str(message[2])
                self._done = True

    async def _read_inline_after(self, skip: int) -> AsyncIterator[list[Entry]]:
        inline = self._fallback()
        async for chunk in inline.chunks():
            if skip >= len(chunk):
                skip -= len(chunk)
                continue
            yield chunk[skip:]
            skip = 0
        self.kind, self.error, self.detail = inline.kind, inline.error, inline.detail

    async def drain(self) -> None:
        while not self._done:
            message = await self._worker.receive()
            if message[0] in (DONE, FAILED):
                self._done = True


class _WorkerSession:
    """``async with`` wrapper: takes an idle worker, sends the job, gives its WorkerReader,
    hands the worker back after.

    Falls back to an InlineReader when no worker is left, or when the worker cannot be
    started or dies before it has said anything about the body.
    """

    def __init__(self, pool: ParseWorkerPool, job: tuple[Any, ...], fallback: Callable[[], InlineReader]) -> None:
        self._pool = pool
        self._job = job
        self._fallback = fallback
        self._reader: WorkerReader | None = None
        self._worker: ParseWorker | None = None

    async def __aenter__(self) -> WorkerReader | InlineReader:
        worker = self._worker = await self._pool.acquire()
        if worker is None:
            return self._fallback()
        try:
            if await worker.start():
                await worker.send(self._job)
                header = await worker.receive()
                if header[0] == FAILED:
                    header = (KIND, self._job[0], NodeKind.INVALID, ErrorReason.PARSE_ERROR, str(header[2]))
                self._reader = WorkerReader(worker, self._job[0], self._job[2], header, self._fallback)
                if header[0] != KIND:
                    self._reader._done = True
                return self._reader
        except WorkerGone:
            pass
        except BaseException:
            self._release()
            raise
        self._release()
        return self._fallback()

    def _release(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            self._pool.release(worker)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if self._reader is not None and self._worker is not None:
                if exc_type is None:
                    await self._reader.drain()
                else:
                    self._worker.kill("abandoned in the middle of a sitemap")
        except WorkerGone:
            pass
        finally:
            self._release()


class ParseWorker:
    """One worker process and its pipe; one job at a time (the pool sees to that)."""

    def __init__(self, number: int = 1) -> None:
        self.number = number
        self._process: asyncio.subprocess.Process | None = None
        self._killed: list[asyncio.subprocess.Process] = []
        self.broken = False

    async def start(self) -> bool:
        if self.broken:
            return False
        if self._process is not None and self._process.returncode is None:
            return True
        try:
            self._process = await asyncio.create_subprocess_exec(
                *child_command(sys.executable, "-m", WORKER_MODULE),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                limit=_PIPE_LIMIT,
                env=child_process_env(),
            )
        except (OSError, RuntimeError, NotImplementedError) as exc:
            self._give_up(f"cannot start: {exc}")
            return False
        return True

    async def send(self, job: tuple[Any, ...]) -> None:
        """Send a job: its header frame, then the raw body in pieces (bounded write buffer)."""
        assert self._process is not None and self._process.stdin is not None
        body = job[1]
        stdin = self._process.stdin
        try:
            stdin.write(job_header(*job))
            view = memoryview(body)
            for start in range(0, len(body), _BODY_CHUNK):
                stdin.write(view[start : start + _BODY_CHUNK])
                await stdin.drain()
        except (ConnectionError, RuntimeError) as exc:
            self._give_up(f"stopped reading ({exc})")
            raise WorkerGone from exc

    async def receive(self) -> tuple[Any, ...]:
        if self._process is None or self._process.stdout is None:
            self._give_up("is gone")
            raise WorkerGone
        try:
            header = await self._process.stdout.readexactly(HEADER_SIZE)
            data = await self._process.stdout.readexactly(decode_length(header))
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            self._give_up(f"stopped answering ({exc})")
            raise WorkerGone from exc
        message: tuple[Any, ...] = decode_frame(data)
        return message

    def kill(self, why: str) -> None:
        if self._process is not None and self._process.returncode is None:
            logger.debug("Stopping the parsing worker: %s", why)
            self._process.kill()
            self._killed.append(self._process)
        self._process = None

    def _give_up(self, why: str) -> None:
        if not self.broken:
            logger.warning("Parsing worker %d %s; it is not used again", self.number, why)
        self.broken = True
        self.kill(why)

    async def close(self) -> None:
        for killed in self._killed:
            await killed.wait()
        self._killed.clear()
        process, self._process = self._process, None
        if process is None or process.returncode is not None:
            return
        if process.stdin is not None:
            process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), timeout=5)
        except TimeoutError:
            process.kill()


class WorkerGone(Exception):
    """The parsing worker died while reading a sitemap."""


class ParseWorkerPool:
    """Up to ``size`` worker processes, each started when first needed.

    A body takes an idle worker, or waits for one: at most ``size`` sitemaps
    are parsed at once, each on its own core. The last worker used is the
    next one given, so a crawl that never parses two large sitemaps at once
    starts one process only.
    """

    def __init__(self, size: int) -> None:
        self.workers = [ParseWorker(number) for number in range(1, size + 1)]
        self._idle: asyncio.LifoQueue[ParseWorker] = asyncio.LifoQueue()
        for worker in reversed(self.workers):
            self._idle.put_nowait(worker)
        self._warned = False

    @property
    def broken(self) -> bool:
        """Whether no worker is left (each failed to start or died)."""
        return all(worker.broken for worker in self.workers)

    async def acquire(self) -> ParseWorker | None:
        """An idle working worker (waiting for one if all are busy), or None when none is left."""
        while not self.broken:
            worker = await self._idle.get()
            if not worker.broken:
                return worker
            if self.broken:
                self._idle.put_nowait(worker)  # wakes the next waiter, who also reads inline
        if not self._warned:
            self._warned = True
            logger.warning("No parsing worker left; sitemaps are parsed in the crawl process from now on")
        return None

    def release(self, worker: ParseWorker) -> None:
        """Give a worker back; a broken one is dropped (kept only to wake waiters once all are)."""
        if not worker.broken or self.broken:
            self._idle.put_nowait(worker)

    def session(
        self,
        body: bytes,
        url: str,
        is_robots: bool,
        limits: Limits,
        batch_size: int,
        fallback: Callable[[], InlineReader],
    ) -> _WorkerSession:
        """Parse ``body`` in the first worker to be idle."""
        job = (next(_JOB_IDS), body, url, is_robots, limits, batch_size)
        return _WorkerSession(self, job, fallback)

    async def close(self) -> None:
        await asyncio.gather(*(worker.close() for worker in self.workers))


_JOB_IDS = itertools.count(1)


class SitemapReaders:
    """Opens a reader per body: a parsing worker for large bodies, inline otherwise."""

    def __init__(self, limits: Limits, chunk_size: int, workers: int, worker_min_size: int) -> None:
        self.limits = limits
        self.chunk_size = max(1, chunk_size)
        self.pool = ParseWorkerPool(workers) if workers > 0 and _asyncio_running() else None
        self.worker_min_size = worker_min_size

    async def open(self, body: bytes, url: str, is_robots: bool) -> Any:
        """An async context manager giving a reader (InlineReader or WorkerReader).

        A large body goes to the first idle worker (waiting for one if need be);
        measured, parsing it here instead when every worker is busy made the crawl
        slower: this process already has every page to export.
        """
        pool = self.pool
        if pool is None or pool.broken or is_robots or len(body) < self.worker_min_size:
            return self.inline(body, url, is_robots)
        return pool.session(
            body, url, is_robots, self.limits, self.chunk_size, lambda: self.inline(body, url, is_robots)
        )

    def inline(self, body: bytes, url: str, is_robots: bool) -> InlineReader:
        """A reader in this process (for small bodies, robots.txt and bodies that broke off)."""
        return InlineReader(body, url, is_robots, self.limits, self.chunk_size)

    async def close(self) -> None:
        if self.pool is not None:
            await self.pool.close()


def _asyncio_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
