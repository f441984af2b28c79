"""The parsing worker's pipe protocol, shared by the worker and the crawl process.

Frames are a 4-byte big-endian length and a pickle. The crawl process sends a
job header frame ``(job_id, body_length, url, is_robots, limits, batch_size)``
followed by the ``body_length`` raw bytes of the body (not pickled: no second
copy of a large body on either side). The worker answers with
``(KIND, job_id, kind, error, detail)``, then any number of
``(ENTRIES, job_id, [entry tuples])`` and finally ``(DONE, job_id, kind, error,
detail)``, or ``(FAILED, job_id, message)`` when its parser raised. Entries
travel as plain tuples (see :func:`entry_to_tuple`), which pickle several times
faster than dataclasses. Pure: no Scrapy here.
"""

from __future__ import annotations

import pickle
import struct
from collections.abc import Callable
from typing import Any, BinaryIO

from sitemap_crawl.codec import (
    REF_TUPLE_SIZE,
    page_from_tuple,
    page_to_tuple,
    ref_from_tuple,
    ref_to_tuple,
)
from sitemap_crawl.items import SitemapPage, SitemapRef
from sitemap_crawl.parsing.xml.sitemap_entries import RAW_PAGE, RAW_REF, finish_page, finish_ref

WORKER_MODULE = "sitemap_crawl.parsing.worker"
"""The module the crawl process runs (``python -m``) as a parsing worker."""

KIND = "kind"
"""First answer to a job: what the body is (``(KIND, job_id, kind, error, detail)``)."""
ENTRIES = "entries"
"""A batch of entry tuples: ``(ENTRIES, job_id, [entry tuples])``."""
DONE = "done"
"""The last answer to a job: ``(DONE, job_id, kind, error, detail)``."""
FAILED = "failed"
"""The parser raised: ``(FAILED, job_id, message)``; nothing follows for that job."""

_LENGTH = struct.Struct(">I")
HEADER_SIZE = _LENGTH.size
"""Bytes of a frame's length header."""
EntryTuple = tuple[Any, ...]
RAW_PAGE_SIZE = 9
"""Length of an :func:`~sitemap_crawl.parsing.xml.sitemap_entries.extract_url` tuple (RAW_PAGE, eight texts)."""
RAW_REF_SIZE = 3
"""Length of a :func:`~sitemap_crawl.parsing.xml.sitemap_entries.extract_sitemap_entry` tuple: RAW_REF, URL, lastmod."""
JobHeader = tuple[Any, ...]
"""``(job_id, body_length, url, is_robots, limits, batch_size)``."""


def encode_frame(message: Any) -> bytes:
    """A message as one frame: length header and pickle."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _LENGTH.pack(len(data)) + data


def decode_length(header: bytes) -> int:
    """Length of a frame from its :data:`HEADER_SIZE`-byte header."""
    return int(_LENGTH.unpack(header)[0])


def decode_frame(data: bytes) -> Any:
    """The message of a frame's data (the bytes after its header)."""
    return pickle.loads(data)


def write_frame(stream: BinaryIO, message: Any) -> None:
    """Write one frame to ``stream``."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LENGTH.pack(len(data)))
    stream.write(data)


def read_frame(stream: BinaryIO) -> Any | None:
    """Read one frame from ``stream``; None when the stream ends first."""
    header = stream.read(HEADER_SIZE)
    if len(header) < HEADER_SIZE:
        return None
    length = decode_length(header)
    data = stream.read(length)
    if len(data) < length:
        return None
    return decode_frame(data)


def job_header(job_id: int, body: bytes, url: str, is_robots: bool, limits: Any, batch_size: int) -> bytes:
    """The frame announcing a job; the body's raw bytes follow it."""
    return encode_frame((job_id, len(body), url, is_robots, limits, batch_size))


TO_TUPLE: dict[type, Callable[[Any], EntryTuple]] = {SitemapPage: page_to_tuple, SitemapRef: ref_to_tuple}
"""The tuple maker of each entry class (``TO_TUPLE[type(entry)](entry)``: one call per entry)."""


def entry_to_tuple(entry: SitemapPage | SitemapRef) -> EntryTuple:
    """A page or reference as a tuple of plain values (a page's sitemap URL left out)."""
    return TO_TUPLE[type(entry)](entry)


def entry_from_tuple(values: EntryTuple, sitemap_url: str) -> SitemapPage | SitemapRef:
    """The inverse of :func:`entry_to_tuple`; an :func:`~sitemap_crawl.parsing.xml.sitemap_entries.extract_url`
    or :func:`~sitemap_crawl.parsing.xml.sitemap_entries.extract_sitemap_entry` tuple (a urlset page or an
    index entry whose fields the worker left as written) is finished here."""
    return entries_from_tuples([values], sitemap_url)[0]


def entries_from_tuples(batch: list[EntryTuple], sitemap_url: str) -> list[SitemapPage | SitemapRef]:
    """:func:`entry_from_tuple` of every tuple of an ENTRIES message (one call per entry)."""
    entries: list[SitemapPage | SitemapRef] = []
    append = entries.append
    for values in batch:
        size = len(values)
        if size == REF_TUPLE_SIZE:
            append(ref_from_tuple(values))
        elif size == RAW_PAGE_SIZE and values[0] == RAW_PAGE:
            append(finish_page(values, sitemap_url))
        elif size == RAW_REF_SIZE and values[0] == RAW_REF:
            append(finish_ref(values))
        else:
            append(page_from_tuple(values, sitemap_url))
    return entries
