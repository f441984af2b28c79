"""Raw facts of one sitemap body, for the audit: what the page parser normalises away.

The page parser (sitemap_crawl.parsing) turns a bad lastmod into None and a relative
<loc> into an absolute URL; the audit needs the text as written. This scan reads the
body once more with lxml's pull parser (no recover pass, so a document that needs one
is reported), keeping one entry at a time: memory stays bounded.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from lxml import etree

from sitemap_crawl.parsing.stream import GZIP_MAGIC, StreamError, gunzip_chunks, iter_chunks
from sitemap_crawl.parsing.xml import local_name

SITEMAP_NAMESPACE = "http://www.sitemaps.org/schemas/sitemap/0.9"
URLSET = "urlset"
INDEX = "sitemapindex"
_SCAN_LIMIT = 64 * 1024 * 1024  # read a little past the protocol's 50 MiB to see it is passed
_ENCODING = re.compile(rb"""^\s*<\?xml[^>]*encoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")
_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


@dataclass(slots=True)
class RawEntry:
    """One <url> or <sitemap> entry, its texts as written (stripped)."""

    loc: str | None
    lastmod: str | None = None
    priority: str | None = None
    changefreq: str | None = None
    news_dates: list[str] = field(default_factory=list)
    image_count: int = 0
    hreflangs: list[tuple[str | None, str | None]] = field(default_factory=list)


@dataclass(slots=True)
class SitemapFacts:
    """What the scan learnt about the document as a whole (complete once entries are read)."""

    root: str | None = None
    namespace: str | None = None
    encoding: str | None = None
    size: int = 0
    gzip: bool = False
    error: str | None = None
    entry_count: int = 0
    bad_utf8: int | None = None
    """Offset (in the uncompressed document) of the first byte that is not UTF-8, when
    the document claims UTF-8 (or names no encoding, so UTF-8 by default)."""


def is_utf8(encoding: str | None) -> bool:
    """Whether an encoding name (None: not named) means UTF-8."""
    return encoding is None or encoding.upper().replace("_", "-") in ("UTF-8", "UTF8")


def declared_encoding(head: bytes) -> str | None:
    """The encoding a byte order mark or the XML declaration names, or None (UTF-8 by default)."""
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name
    if head.startswith(codecs.BOM_UTF8):
        return "UTF-8"
    match = _ENCODING.match(head[:200])
    return match.group(1).decode("ascii") if match else None


def _chunks(body: bytes, facts: SitemapFacts) -> Iterator[bytes]:
    chunks = iter_chunks(body, len(body))
    if body.startswith(GZIP_MAGIC):
        facts.gzip = True
        chunks = gunzip_chunks(chunks, _SCAN_LIMIT)
    for chunk in chunks:
        facts.size += len(chunk)
        yield chunk


def scan(body: bytes, facts: SitemapFacts) -> Iterator[RawEntry]:
    """Yield the entries of a urlset or index and fill ``facts`` as the body is read.

    A body that is not XML yields nothing (``facts.root`` stays None). A document
    that breaks off or is not well-formed sets ``facts.error``.
    """
    parser = etree.XMLPullParser(events=("start", "end"), resolve_entities=False, huge_tree=True)
    first = True
    utf8: codecs.IncrementalDecoder | None = None
    offset = 0
    try:
        for chunk in _chunks(body, facts):
            if first:
                first = False
                stripped = chunk.lstrip()
                facts.encoding = declared_encoding(chunk)
                if not (stripped.startswith(b"<") or facts.encoding in ("UTF-16", "UTF-32")):
                    return
                if is_utf8(facts.encoding):
                    utf8 = codecs.getincrementaldecoder("utf-8")()
            if utf8 is not None:
                utf8 = _check_utf8(utf8, chunk, offset, facts)
                offset += len(chunk)
            parser.feed(chunk)
            yield from _entries(parser, facts)
        if utf8 is not None:
            _check_utf8(utf8, b"", offset, facts, final=True)
        parser.close()
        yield from _entries(parser, facts)
    except etree.XMLSyntaxError as exc:
        facts.error = f"not well-formed XML: {exc}"
    except StreamError as exc:
        facts.error = f"gzip: {exc}"


def _check_utf8(
    decoder: codecs.IncrementalDecoder, chunk: bytes, offset: int, facts: SitemapFacts, final: bool = False
) -> codecs.IncrementalDecoder | None:
    """Decode ``chunk`` (the check only: the text is dropped); on the first bad byte, note its
    offset and return None (no more checking)."""
    try:
        decoder.decode(chunk, final)
    except UnicodeDecodeError as exc:
        pending = len(decoder.getstate()[0])  # bytes held from the chunk before
        facts.bad_utf8 = max(0, offset - pending + exc.start)
        return None
    return decoder


def _entries(parser: etree.XMLPullParser, facts: SitemapFacts) -> Iterator[RawEntry]:
    for event, item in parser.read_events():
        if not isinstance(item, etree._Element):
            continue
        element = item
        name = local_name(element.tag)
        if event == "start":
            if facts.root is None:
                facts.root = name
                facts.namespace = etree.QName(element).namespace
            continue
        parent = element.getparent()
        if parent is None or parent.getparent() is not None:
            continue  # only the root's children are entries
        if (facts.root, name) in ((URLSET, "url"), (INDEX, "sitemap")):
            facts.entry_count += 1
            yield _read_entry(element)
        element.clear()
        while element.getprevious() is not None:
            del parent[0]


def _text(element: etree._Element) -> str | None:
    text = element.text
    return text.strip() if text is not None else None


def _read_entry(element: etree._Element) -> RawEntry:
    entry = RawEntry(loc=None)
    for child in element:
        name = local_name(child.tag)
        if name == "loc":
            entry.loc = _text(child)
        elif name == "lastmod":
            entry.lastmod = _text(child)
        elif name == "priority":
            entry.priority = _text(child)
        elif name == "changefreq":
            entry.changefreq = _text(child)
        elif name == "image":
            entry.image_count += 1
        elif name == "news":
            for part in child:
                if local_name(part.tag) == "publication_date" and part.text:
                    entry.news_dates.append(part.text.strip())
        elif name == "link" and child.get("rel") == "alternate":
            entry.hreflangs.append((child.get("hreflang"), child.get("href")))
    return entry
