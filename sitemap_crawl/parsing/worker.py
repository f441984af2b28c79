"""A parsing worker process: reads sitemap bodies on stdin, streams entries on stdout.

Run as ``python -m sitemap_crawl.parsing.worker``. It imports only the pure
parsers (no Scrapy), so it starts fast and stays small. The spider uses it to
parse large sitemaps on a second CPU core while it exports pages on the first.

Protocol: frames of a 4-byte big-endian length and a pickle. The parent sends
``(job_id, body_length, url, is_robots, limits, batch_size)`` followed by the
``body_length`` raw bytes of the body (not pickled: no second copy of a large
body on either side; the worker writes a large body to a temporary file as it
arrives and parses it from there); the worker answers with
``("kind", job_id, kind, error, detail)``, then any number of
``("entries", job_id, [entry tuples])`` and finally
``("done", job_id, kind, error, detail)``. Entries travel as plain tuples
(see :func:`entry_to_tuple`), which pickle several times faster than dataclasses.
"""

from __future__ import annotations

import os
import pickle
import struct
import sys
import tempfile
from typing import Any, BinaryIO

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows
    fcntl = None  # type: ignore[assignment]

from sitemap_crawl.items import Alternate, Image, NewsStory, SitemapPage, SitemapRef, Video
from sitemap_crawl.memory import trim, tune_malloc
from sitemap_crawl.parsing.reader import SitemapReader
from sitemap_crawl.parsing.stream import Body, FileBody
from sitemap_crawl.parsing.xml import RAW_PAGE, finish_page

_LENGTH = struct.Struct(">I")
EntryTuple = tuple[Any, ...]


def entry_to_tuple(entry: SitemapPage | SitemapRef) -> EntryTuple:
    """A page or reference as a tuple of plain values (the sitemap URL is left out)."""
    if type(entry) is SitemapRef:
        return (entry.url, entry.last_modified)
    page: SitemapPage = entry  # type: ignore[assignment]
    news = page.news
    return (
        page.url,
        page.priority,
        page.last_modified,
        page.change_frequency,
        None
        if news is None
        else (
            news.title,
            news.publish_date,
            news.publication_name,
            news.publication_language,
            news.access,
            news.genres,
            news.keywords,
            news.stock_tickers,
        ),
        [(i.loc, i.caption, i.title, i.geo_location, i.license) for i in page.images] if page.images else None,
        [
            (
                v.thumbnail_loc,
                v.title,
                v.description,
                v.content_loc,
                v.player_loc,
                v.duration,
                v.publication_date,
                v.family_friendly,
                v.tags,
            )
            for v in page.videos
        ]
        if page.videos
        else None,
        [(a.hreflang, a.href) for a in page.alternates] if page.alternates else None,
    )


def entry_from_tuple(values: EntryTuple, sitemap_url: str) -> SitemapPage | SitemapRef:
    """The inverse of :func:`entry_to_tuple`; an :func:`extract_url` tuple (a urlset page
    whose fields the worker left as written) is finished here."""
    if len(values) == 2:
        return SitemapRef(values[0], values[1])
    if values[0] == RAW_PAGE and len(values) == 9:
        return finish_page(values, sitemap_url)
    url, priority, last_modified, change_frequency, news, images, videos, alternates = values
    return SitemapPage(
        url,
        sitemap_url,
        priority,
        last_modified,
        change_frequency,
        None if news is None else NewsStory(*news),
        [Image(*image) for image in images] if images else [],
        [Video(*video) for video in videos] if videos else [],
        [Alternate(*alternate) for alternate in alternates] if alternates else [],
    )


def write_frame(stream: BinaryIO, message: Any) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LENGTH.pack(len(data)))
    stream.write(data)


def read_frame(stream: BinaryIO) -> Any | None:
    header = stream.read(_LENGTH.size)
    if len(header) < _LENGTH.size:
        return None
    (length,) = _LENGTH.unpack(header)
    data = stream.read(length)
    if len(data) < length:
        return None
    return pickle.loads(data)


def decode_length(header: bytes) -> int:
    """Length of a frame from its 4-byte header."""
    return int(_LENGTH.unpack(header)[0])


HEADER_SIZE = _LENGTH.size


def run_job(job: tuple[Any, ...], output: BinaryIO) -> None:
    """Parse one body and write its frames."""
    job_id, body, url, is_robots, limits, batch_size = job
    reader = SitemapReader(body, url, is_robots=is_robots, limits=limits)
    write_frame(output, ("kind", job_id, reader.kind, reader.error, reader.detail))
    batch: list[EntryTuple] = []
    for entry in reader.iter_raw():  # urlset pages come unfinished: the crawl process finishes them
        batch.append(entry if type(entry) is tuple else entry_to_tuple(entry))
        if len(batch) >= batch_size:
            write_frame(output, ("entries", job_id, batch))
            output.flush()
            batch = []
    if batch:
        write_frame(output, ("entries", job_id, batch))
    write_frame(output, ("done", job_id, reader.kind, reader.error, reader.detail))
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
    import gc

    gc.freeze()
    gc.set_threshold(50_000, 50, 1_000)
    tune_malloc()
    source = sys.stdin.buffer
    sink = sys.stdout.buffer
    for stream in (source, sink):
        widen_pipe(stream.fileno())
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
        except Exception as exc:  # a parser bug must not kill the crawl: report it
            write_frame(sink, ("failed", job_id, f"{type(exc).__name__}: {exc}"))
            sink.flush()
        finally:
            if isinstance(body, FileBody):
                body.close()
            del job, body
            trim()


if __name__ == "__main__":
    main()
