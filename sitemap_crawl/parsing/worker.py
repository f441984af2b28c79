"""A parsing worker process: reads sitemap bodies on stdin, streams entries on stdout.

Run as ``python -m sitemap_crawl.parsing.worker``. It imports only the pure
parsers (no Scrapy), so it starts fast and stays small. The spider uses it to
parse large sitemaps on a second CPU core while it exports pages on the first.

The pipe protocol (frames, message tags, entry tuples) is
:mod:`sitemap_crawl.parsing.worker_protocol`, which the crawl process imports too.
The worker writes a large body to a temporary file as it arrives and parses it
from there.
"""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Any, BinaryIO

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows
    fcntl = None  # type: ignore[assignment]

from sitemap_crawl.memory import CHILD_MMAP_THRESHOLD, trim, tune_malloc
from sitemap_crawl.parsing.reader import SitemapReader
from sitemap_crawl.parsing.stream import Body, FileBody
from sitemap_crawl.parsing.worker_protocol import (
    DONE,
    ENTRIES,
    FAILED,
    KIND,
    TO_TUPLE,
    EntryTuple,
    read_frame,
    write_frame,
)
from sitemap_crawl.processes import ignore_terminal_interrupt


def run_job(job: tuple[Any, ...], output: BinaryIO) -> None:
    """Parse one body and write its frames."""
    job_id, body, url, is_robots, limits, batch_size = job
    batch_size = max(batch_size, 1)  # (0 or less: a frame an entry, as a full batch at every entry)
    reader = SitemapReader(body, url, is_robots=is_robots, limits=limits)
    write_frame(output, (KIND, job_id, reader.kind, reader.error, reader.detail))
    batch: list[EntryTuple] = []
    # urlset pages come unfinished: the crawl process finishes them. The reader gives a list
    # of entries at a time (a generator resumed once a list, not once an entry).
    for entries in reader.iter_raw_batches():
        batch += [entry if type(entry) is tuple else TO_TUPLE[type(entry)](entry) for entry in entries]
        if len(batch) >= batch_size:
            start = 0
            while len(batch) - start >= batch_size:
                write_frame(output, (ENTRIES, job_id, batch[start : start + batch_size]))
                output.flush()
                start += batch_size
            batch = batch[start:]
    if batch:
        write_frame(output, (ENTRIES, job_id, batch))
    write_frame(output, (DONE, job_id, reader.kind, reader.error, reader.detail))
    output.flush()


SPOOL_MIN_SIZE = 1 << 20
"""Bodies of at least this many bytes are written to a temporary file as they arrive and
parsed from there, so the worker never holds a large body in memory (the crawl process
already holds one copy)."""
_COPY_SIZE = 1 << 20


def receive_body(source: BinaryIO, length: int) -> Body | None:
    """The ``length`` body bytes that follow a job header: bytes, or a FileBody for a large
    body (an unlinked temporary file, gone when closed). None if the input ended early.
    If the file cannot be written (no room), the body is kept in memory instead."""
    if length < SPOOL_MIN_SIZE:
        body = source.read(length)
        return body if len(body) == length else None
    spool = tempfile.TemporaryFile(prefix="sitemap-crawl-", buffering=0)  # noqa: SIM115 - handed to FileBody
    in_memory: list[bytes] | None = None
    written = 0
    left = length
    while left:
        piece = source.read(min(left, _COPY_SIZE))
        if not piece:
            spool.close()
            return None
        left -= len(piece)
        if in_memory is None:
            view = memoryview(piece)
            try:
                while view:
                    count = spool.write(view) or 0
                    written += count
                    view = view[count:]
                continue
            except OSError:
                in_memory = [os.pread(spool.fileno(), written, 0), bytes(view)]
                spool.close()
                continue
        in_memory.append(piece)
    if in_memory is not None:
        return b"".join(in_memory)
    return FileBody(spool, length)


PIPE_SIZE = 1 << 20
"""Bytes a pipe to or from the worker holds (Linux; 64 KiB otherwise). A batch of pages is
about 80 KB: with 64 KiB pipes the worker waited on the crawl process at every batch."""


def widen_pipe(fd: int) -> None:
    """Make the pipe ``fd`` hold PIPE_SIZE bytes where the system allows it."""
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None) if fcntl is not None else None
    if set_size is None:
        return
    for size in (PIPE_SIZE, PIPE_SIZE // 4):
        try:
            fcntl.fcntl(fd, set_size, size)
            return
        except OSError:  # not a pipe, or over /proc/sys/fs/pipe-max-size
            continue


def main() -> None:
    """Serve jobs until stdin closes."""
    ignore_terminal_interrupt()
    import gc

    gc.freeze()
    gc.set_threshold(50_000, 50, 1_000)
    tune_malloc(CHILD_MMAP_THRESHOLD)
    source = sys.stdin.buffer
    sink = sys.stdout.buffer
    for stream in (source, sink):
        widen_pipe(stream.fileno())
    try:
        serve(source, sink)
    except BrokenPipeError:  # the crawl process is gone (killed): nothing to say, nobody to say it to
        os._exit(0)


def serve(source: BinaryIO, sink: BinaryIO) -> None:
    """Parse the jobs read from ``source`` until it closes, the answers to ``sink``."""
    while True:
        header = read_frame(source)
        if header is None:
            return
        job_id, body_length, *rest = header
        body = receive_body(source, body_length)
        if body is None:
            return
        job = (job_id, body, *rest)
        del header
        try:
            run_job(job, sink)
        except BrokenPipeError:
            raise
        except Exception as exc:  # a parser bug must not kill the crawl: report it
            write_frame(sink, (FAILED, job_id, f"{type(exc).__name__}: {exc}"))
            sink.flush()
        finally:
            if isinstance(body, FileBody):
                body.close()
            del job, body
            trim()


if __name__ == "__main__":
    main()
