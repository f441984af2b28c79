"""Property-based fuzzing of the pure parsers: whatever bytes arrive, they never raise.

Inputs are real sitemaps, feeds and robots.txt files from the real-world
corpus (see docs/development.md; never modified: mutations are made here), mutated the way broken
and hostile servers mutate them: cut, spliced, bit-flipped, stuffed with markup, entity
declarations and control bytes, gzipped (sometimes too often, sometimes cut), re-encoded.

The properties: ``parse_sitemap`` and ``SitemapReader`` return (no exception, no hang) a
known kind and a known error token; pages are absolute http(s) URLs; line splitting does
not depend on where the chunks break.

CI runs a bounded number of examples (deterministic when CI is set). A longer campaign:

    HYPOTHESIS_PROFILE=fuzz FUZZ_EXAMPLES=20000 .venv/bin/python -m pytest tests/test_fuzz.py -q -n 2

(see docs/limits-and-security.md, "Fuzzing").
"""

from __future__ import annotations

import codecs
import functools
import gzip
import itertools
import os
import zlib
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sitemap_crawl.audit.auditor import SiteAudit
from sitemap_crawl.items import SitemapPage, SitemapRef
from sitemap_crawl.parsing import Limits, SitemapReader, parse_sitemap
from sitemap_crawl.parsing.robots import iter_robots_lines, sitemap_urls_from_robots
from sitemap_crawl.parsing.stream import StreamError, decoded_stream
from sitemap_crawl.parsing.text import iter_lines
from tests.support import CORPUS_DIR

CORPUS = CORPUS_DIR
CORPUS_FILES = sorted(p.name for p in CORPUS.glob("*") if p.is_file() and p.name != "MANIFEST.tsv")

FUZZ = os.environ.get("HYPOTHESIS_PROFILE") == "fuzz"
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "20000")) if FUZZ else 0


def bounded(ci_examples: int) -> settings:
    """CI: ``ci_examples`` examples, deterministic when CI is set; HYPOTHESIS_PROFILE=fuzz:
    FUZZ_EXAMPLES examples (20,000 by default), random, shrunk and saved as usual."""
    return settings(
        max_examples=EXAMPLES or ci_examples,
        deadline=None,
        derandomize=bool(os.environ.get("CI")) and not FUZZ,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


KINDS = {"xml_urlset", "xml_index", "rss", "atom", "text", "robots_txt", "invalid"}
ERRORS = ("truncated", "size limit", "parse error", "not a sitemap")
SITEMAP_URL = "https://fuzz.example/dir/sitemap.xml"
SMALL = Limits(max_size=2 << 20, max_index_children=500, max_line_length=4096)


@functools.cache
def corpus_bytes(name: str) -> bytes:
    data = (CORPUS / name).read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data


needs_corpus = pytest.mark.skipif(not CORPUS_FILES, reason=f"no corpus at {CORPUS}")

SNIPPETS = [
    b"<",
    b">",
    b"&",
    b"&amp;",
    b"&#0;",
    b"&#xD800;",
    b"&undefined;",
    b"]]>",
    b"<![CDATA[",
    b"<!--",
    b"-->",
    b"\x00",
    b"\xff\xfe",
    b"\xef\xbb\xbf",
    b"\r",
    b"\n",
    b"\x1f\x8b\x08\x00",
    b"<url><loc>",
    b"</url>",
    b"<sitemap><loc>http://a/s.xml</loc></sitemap>",
    b"</urlset>",
    b"<urlset>",
    b'<?xml version="1.0" encoding="UTF-16"?>',
    b'<?xml version="1.0" encoding="x-unknown"?>',
    b'<!DOCTYPE urlset [<!ENTITY x SYSTEM "file:///etc/passwd">]>',
    b'<!DOCTYPE urlset [<!ENTITY % p SYSTEM "http://127.0.0.1:9/p.dtd"> %p;]>',
    b'<!DOCTYPE urlset [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>',
    b"&b;&b;&b;&b;",
    b"<x>" * 300,
    b"Sitemap: http://a/s.xml\n",
    b"Sitemap:\n",
    b"http://a/page\n",
    b"\xc3\x28\xe2\x82",
    b"<sitemap><loc>https://[a/s.xml</loc></sitemap>",  # no Request can be made of these
    b"<url><loc>http://a:99999/p</loc></url>",
    b"Sitemap: https://a]b/s.xml\n",
    b"[",
]


@st.composite
def mutated(draw: st.DrawFn, source: st.SearchStrategy[bytes]) -> bytes:
    """``source`` bytes after a few mutations, then maybe re-encoded or gzipped."""
    data = draw(source)
    for _ in range(draw(st.integers(0, 4))):
        position = draw(st.integers(0, len(data)))
        operation = draw(st.sampled_from(["cut", "insert", "snippet", "delete", "flip", "duplicate", "splice"]))
        if operation == "cut":
            data = data[:position]
        elif operation == "insert":
            data = data[:position] + draw(st.binary(max_size=64)) + data[position:]
        elif operation == "snippet":
            data = data[:position] + draw(st.sampled_from(SNIPPETS)) + data[position:]
        elif operation == "delete":
            data = data[:position] + data[position + draw(st.integers(1, 4096)) :]
        elif operation == "flip" and data:
            index = min(position, len(data) - 1)
            data = data[:index] + bytes([data[index] ^ draw(st.integers(1, 255))]) + data[index + 1 :]
        elif operation == "duplicate":
            end = min(len(data), position + draw(st.integers(1, 2048)))
            data = data[:end] + data[position:end] * draw(st.integers(1, 20)) + data[end:]
        elif operation == "splice" and CORPUS_FILES:
            other = corpus_bytes(draw(st.sampled_from(CORPUS_FILES)))
            start = draw(st.integers(0, len(other)))
            data = data[:position] + other[start : start + draw(st.integers(1, 8192))] + data[position:]
    wrapping = draw(st.sampled_from(["none", "none", "none", "gzip", "gzip-cut", "gzip-many", "utf-16", "utf-32"]))
    if wrapping == "gzip":
        data = gzip.compress(data, compresslevel=1, mtime=0)
    elif wrapping == "gzip-cut":
        packed = gzip.compress(data, compresslevel=1, mtime=0)
        data = packed[: draw(st.integers(0, len(packed)))]
    elif wrapping == "gzip-many":
        for _ in range(draw(st.integers(2, 5))):
            data = gzip.compress(data, compresslevel=1, mtime=0)
    elif wrapping in ("utf-16", "utf-32"):
        data = data.decode("utf-8", "replace").encode(wrapping)
    return data


corpus_files = st.sampled_from(CORPUS_FILES or ["(none)"]).map(lambda name: corpus_bytes(name) if CORPUS_FILES else b"")


def assert_well_formed(body: bytes, is_robots: bool, limits: Limits) -> None:
    """Parsing ``body`` returns normally, with a known kind/error and sane entries."""
    result = parse_sitemap(body, SITEMAP_URL, is_robots=is_robots, limits=limits)
    assert result.kind in KINDS
    assert result.error is None or result.error.startswith(ERRORS), result.error
    if result.kind == "invalid":
        assert not result.pages and not result.sub_sitemaps
        assert result.error is not None
    for page in result.pages:
        assert isinstance(page, SitemapPage)
        assert page.url.startswith(("http://", "https://")), page.url
        assert 0.0 <= page.priority <= 1.0
    for url in [page.url for page in result.pages] + list(result.sub_sitemaps):
        urlsplit(url).port  # noqa: B018 - what Scrapy's Request needs: it raises on no port
    assert len(result.sub_sitemaps) <= limits.max_index_children
    assert len(set(result.sub_sitemaps)) == len(result.sub_sitemaps)
    page_urls = [page.url for page in result.pages]
    assert len(set(page_urls)) == len(page_urls)


@needs_corpus
@bounded(200)
@given(body=mutated(corpus_files), is_robots=st.booleans())
def test_mutated_corpus_files_never_raise(body: bytes, is_robots: bool) -> None:
    assert_well_formed(body, is_robots, SMALL)


@needs_corpus
@bounded(60)
@given(body=mutated(corpus_files))
def test_mutated_corpus_files_with_default_limits(body: bytes) -> None:
    assert_well_formed(body, False, Limits())


@bounded(300)
@given(body=st.binary(max_size=4096), is_robots=st.booleans())
def test_arbitrary_bytes_never_raise(body: bytes, is_robots: bool) -> None:
    assert_well_formed(body, is_robots, SMALL)


@bounded(200)
@given(
    body=st.lists(st.sampled_from(SNIPPETS), max_size=40).map(b"".join),
    is_robots=st.booleans(),
)
def test_hostile_fragments_never_raise(body: bytes, is_robots: bool) -> None:
    assert_well_formed(body, is_robots, SMALL)


@needs_corpus
@bounded(150)
@given(body=mutated(corpus_files), text=st.booleans())
def test_the_audit_of_mutated_corpus_files_never_raises(body: bytes, text: bool) -> None:
    # (the audit process reports a sitemap whose checks raise, and loses its findings)
    audit = SiteAudit("https://fuzz.example/")
    list(audit.audit_robots(body, "https://fuzz.example/robots.txt", "*"))
    where = SITEMAP_URL.replace(".xml", ".txt") if text else SITEMAP_URL
    list(audit.audit_sitemap(body, where, requested_url="https://fuzz.example/old.xml"))
    list(audit.finish())


@bounded(200)
@given(text=st.text(max_size=2000))
def test_robots_text_never_raises(text: str) -> None:
    urls = sitemap_urls_from_robots(text, "https://fuzz.example/robots.txt")
    assert len(set(urls)) == len(urls)
    assert all(url.startswith(("http://", "https://")) for url in urls)


def _chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(cut, len(data)) for cut in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


@bounded(200)
@given(
    data=st.lists(
        st.sampled_from([b"a", b"bc", b"\r", b"\n", b"\r\n", b"http://x/", b"\xc3\xa9", b"\xff"]), max_size=60
    ).map(b"".join),
    cuts=st.lists(st.integers(0, 400), max_size=12),
    max_line=st.integers(1, 20),
)
def test_line_splitting_does_not_depend_on_chunk_boundaries(data: bytes, cuts: list[int], max_line: int) -> None:
    # text sitemaps ignore blank lines (a CRLF cut between its CR and LF gives one more)
    whole_text = [line for line in iter_lines(iter([data]), max_line) if line != b""]
    assert [line for line in iter_lines(iter(_chunked(data, cuts)), max_line) if line != b""] == whole_text
    for encoding in ("utf-8", "utf-16"):
        body = data.decode("utf-8", "replace").encode(encoding)
        whole = list(iter_robots_lines([body], max_line))
        assert list(iter_robots_lines(_chunked(body, cuts), max_line)) == whole


@bounded(100)
@given(
    payload=st.binary(max_size=2048),
    layers=st.integers(0, 5),
    cut=st.one_of(st.none(), st.integers(0, 4096)),
    limit=st.integers(1, 4096),
)
def test_decompression_is_capped_and_only_raises_stream_errors(
    payload: bytes, layers: int, cut: int | None, limit: int
) -> None:
    body = payload
    for _ in range(layers):
        body = gzip.compress(body, compresslevel=1, mtime=0)
    if cut is not None:
        body = body[:cut]
    _format, _head, chunks = decoded_stream(body, limit)
    produced = 0
    try:
        for chunk in chunks:
            produced += len(chunk)
    except StreamError:
        pass
    assert produced <= limit


@bounded(100)
@given(data=st.binary(min_size=1, max_size=1024), encoding=st.sampled_from(["utf-8", "utf-16", "utf-32", "latin-1"]))
def test_reader_iterates_like_parse_sitemap(data: bytes, encoding: str) -> None:
    body = data.decode("latin-1").encode(encoding)
    assume(not body.startswith(codecs.BOM_UTF8) or encoding != "latin-1")
    reader = SitemapReader(body, SITEMAP_URL, limits=SMALL)
    entries = list(reader)
    result = parse_sitemap(body, SITEMAP_URL, limits=SMALL)
    assert [e.url for e in entries if isinstance(e, SitemapPage)] == [p.url for p in result.pages]
    assert [e.url for e in entries if isinstance(e, SitemapRef)] == result.sub_sitemaps
    assert (reader.kind, reader.error) == (result.kind, result.error)


def test_corpus_is_there_or_skipped() -> None:
    if not CORPUS_FILES:
        pytest.skip(f"no corpus at {CORPUS}")
    assert len(CORPUS_FILES) >= 100
    assert any(corpus_bytes(name).lstrip().startswith(b"<") for name in CORPUS_FILES)
    assert zlib.crc32(corpus_bytes(CORPUS_FILES[0])) is not None
