"""A parsing worker process: reads sitemap bodies on stdin, streams entries on stdout.

Run as ``python -m sitemap_crawl.parsing.worker``. It imports only the pure
parsers (no Scrapy), so it starts fast and stays small. The spider uses it to
parse large sitemaps on a second CPU core while it exports pages on the first.

Protocol: frames of a 4-byte big-endian length and a pickle. The parent sends
``(job_id, body_length, url, is_robots, limits, batch_size)`` followed by the
``body_length`` raw bytes of the body (not pickled: no second copy of a large
body on either side); the worker answers with
``("kind", job_id, kind, error, detail)``, then any number of
``("entries", job_id, [entry tuples])`` and finally
``("done", job_id, kind, error, detail)``. Entries travel as plain tuples
(see :func:`entry_to_tuple`), which pickle several times faster than dataclasses.
"""

from __future__ import annotations

import pickle
import struct
import sys
from typing import Any, BinaryIO

from sitemap_crawl.items import Alternate, Image, NewsStory, SitemapPage, SitemapRef, Video
from sitemap_crawl.memory import trim, tune_malloc
from sitemap_crawl.parsing.reader import SitemapReader

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
    """The inverse of :func:`entry_to_tuple`."""
    if len(values) == 2:
        return SitemapRef(values[0], values[1])
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
    for entry in reader:
        batch.append(entry_to_tuple(entry))
        if len(batch) >= batch_size:
            write_frame(output, ("entries", job_id, batch))
            output.flush()
            batch = []
    if batch:
        write_frame(output, ("entries", job_id, batch))
    write_frame(output, ("done", job_id, reader.kind, reader.error, reader.detail))
    output.flush()


def main() -> None:
    """Serve jobs until stdin closes."""
    import gc

    gc.freeze()
    gc.set_threshold(50_000, 50, 1_000)
    tune_malloc()
    source = sys.stdin.buffer
    sink = sys.stdout.buffer
    while True:
        header = read_frame(source)
        if header is None:
            return
        job_id, body_length, *rest = header
        body = source.read(body_length)
        if len(body) < body_length:
            return
        job = (job_id, body, *rest)
        del header, body
        try:
            run_job(job, sink)
            del job
            trim()
        except Exception as exc:  # a parser bug must not kill the crawl: report it
            write_frame(sink, ("failed", job[0], f"{type(exc).__name__}: {exc}"))
            sink.flush()


if __name__ == "__main__":
    main()
