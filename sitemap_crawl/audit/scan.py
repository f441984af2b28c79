"""Raw facts of one sitemap body, for the audit: what the page parser normalises away.

The page parser (sitemap_crawl.parsing) turns a bad lastmod into None and a relative
<loc> into an absolute URL; the audit needs the text as written. This scan reads the
body once more with lxml's pull parser (no recover pass, so a document that needs one
is reported), keeping one entry at a time: memory stays bounded. A document without
sitemap entries (a feed) is only checked by libxml2; a text sitemap is read a line at a
time (:func:`text_lines`).
"""

from __future__ import annotations

import codecs
import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from lxml import etree

from sitemap_crawl.parsing.fields import is_alternate_rel, strip_url_text
from sitemap_crawl.parsing.reader import DEFAULT_LIMITS
from sitemap_crawl.parsing.stream import (
    GZIP_MAGIC,
    Body,
    CorruptInput,
    FileBody,
    SizeLimitExceeded,
    StreamError,
    gunzip_chunks,
    iter_chunks,
    leading_text,
    peek,
)
from sitemap_crawl.parsing.text import MAX_LINE_LENGTH, escaped_bytes
from sitemap_crawl.parsing.xml.document import NO_ROOT, ROOT_SCAN_LIMIT, InputEnd
from sitemap_crawl.parsing.xml.entities import has_dtd, inline_entity_references
from sitemap_crawl.parsing.xml.input import declared_encoding, is_utf8, push_parser_chunks, wide_declaration
from sitemap_crawl.parsing.xml.libxml import (
    ElementFlood,
    EntryGap,
    RootNeeded,
    checked_error,
    checker,
    describe_error,
    error_after_namespace_errors,
    error_kept_back,
    first_error,
    in_extension_namespace,
    is_namespace_error,
    local_name,
    parser_options,
)

SITEMAP_NAMESPACE = "http://www.sitemaps.org/schemas/sitemap/0.9"
URLSET = "urlset"
INDEX = "sitemapindex"
SCAN_LIMIT = 64 * 1024 * 1024
"""Uncompressed bytes of a gzip body read: a little past the protocol's 50 MiB, to see it passed."""
_CHUNK_SIZE = 64 * 1024
"""Bytes read (and decompressed) at a time; the entries of a chunk are checked as one batch."""


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
    namespace_error: str | None = None
    """libxml2's first namespace error (a prefix not declared...); the document was then read
    in recover mode, which goes past such errors."""
    bad_utf8: int | None = None
    """Offset (in the uncompressed document) of the first byte that is not UTF-8, when
    the document claims UTF-8 (or names no encoding, so UTF-8 by default)."""
    long_lines: int = 0
    """Lines of a text sitemap over ``MAX_LINE_LENGTH`` characters: not read (as the crawl
    skips them), counted."""
    cut: bool = False
    """A gzip body inflated past ``SCAN_LIMIT``: read no further (``too-large`` says so; what
    was read is checked, and what needs the whole document is not judged)."""


def body_head(body: Body, size: int) -> bytes:
    """The first ``size`` bytes (fewer if the body is shorter) of bytes or a FileBody."""
    if isinstance(body, FileBody):
        return body.read_at(0, min(size, len(body)))
    return body[:size]


def body_bytes(body: Body) -> bytes:
    """The whole body as bytes (read from its file if need be)."""
    return body.read_at(0, len(body)) if isinstance(body, FileBody) else body


def robots_body(body: Body) -> bytes:
    """A robots.txt body as the crawl reads it: gzip bytes (sent without Content-Encoding)
    inflated as a sitemap's are (:func:`_chunks`: up to ``SCAN_LIMIT``; what inflates past
    it, or a broken stream, is cut there)."""
    if body_head(body, len(GZIP_MAGIC)) != GZIP_MAGIC:
        return body_bytes(body)
    read: list[bytes] = []
    with contextlib.suppress(StreamError):
        read.extend(_chunks(body, SitemapFacts()))
    return b"".join(read)


def _gzip_error(error: StreamError) -> str:
    """A broken gzip stream's error as a finding's detail (``gzip: ...`` once)."""
    text = str(error)
    return text if text.startswith("gzip") else f"gzip: {text}"


def _first_kept(chunks: Iterator[bytes], kept: list[bytes]) -> Iterator[bytes]:
    """``chunks``, the first also put in ``kept`` (as it was before any rewriting)."""
    for chunk in chunks:
        if not kept:
            kept.append(chunk)
        yield chunk


def _chunks(body: Body, facts: SitemapFacts) -> Iterator[bytes]:
    """The body's bytes, its gzip layers undone as the crawl undoes them (up to
    ``Limits.max_gzip_layers``, 3: a gzip file served gzipped again was read as binary text)."""
    chunks = iter_chunks(body, len(body), _CHUNK_SIZE)
    if body_head(body, len(GZIP_MAGIC)) == GZIP_MAGIC:
        facts.gzip = True
        chunks = gunzip_chunks(chunks, SCAN_LIMIT, _CHUNK_SIZE)
        for layer in range(DEFAULT_LIMITS.max_gzip_layers):
            head, chunks = peek(chunks, len(GZIP_MAGIC))
            if head != GZIP_MAGIC:
                break
            if layer + 1 == DEFAULT_LIMITS.max_gzip_layers:  # (the crawl reads no sitemap in it)
                raise CorruptInput(f"gzip nested more than {DEFAULT_LIMITS.max_gzip_layers} layers deep")
            chunks = gunzip_chunks(chunks, SCAN_LIMIT, _CHUNK_SIZE)
    for chunk in chunks:
        facts.size += len(chunk)
        yield chunk


def scan(body: Body, facts: SitemapFacts) -> Iterator[RawEntry]:
    """Yield the entries of a urlset or index and fill ``facts`` as the body is read.

    ``body`` is bytes or a FileBody (a large body the audit process spooled to a file).

    A body that is not XML yields nothing (``facts.root`` stays None). A document
    that breaks off or is not well-formed sets ``facts.error``.
    """
    for batch in scan_batches(body, facts):
        yield from batch


def scan_batches(body: Body, facts: SitemapFacts) -> Iterator[list[RawEntry]]:
    """:func:`scan`, the entries in lists (those read from one piece of the body): the
    audit checks a list at a time.

    A document that only breaks the rules of namespaces (a prefix not declared) is read
    again in recover mode from the entry after the last one read (``facts.namespace_error``
    says why); any other error stops the scan."""
    try:
        yield from _strict_then_recover(body, facts, root_aware=False)
    except RootNeeded:  # (before any entry was read: nothing was given yet)
        facts.entry_count, facts.size = 0, 0
        yield from _strict_then_recover(body, facts, root_aware=True)
    if facts.error is None or facts.cut:
        return
    if not facts.gzip:  # (an error stopped the scan before its end: the size is known all the same)
        facts.size = max(facts.size, len(body))
        return
    whole = SitemapFacts()  # (inflated to the end, or to SCAN_LIMIT, for too-large)
    with contextlib.suppress(StreamError):
        for _chunk in _chunks(body, whole):
            pass
    facts.size, facts.cut = max(facts.size, whole.size), whole.size >= SCAN_LIMIT


def _strict_then_recover(body: Body, facts: SitemapFacts, root_aware: bool) -> Iterator[list[RawEntry]]:
    try:
        yield from _scan_batches(body, facts, _EntryReader(facts, root_aware=root_aware))
    except _NamespaceErrors as exc:
        facts.namespace_error = str(exc)
        read, facts.entry_count, facts.size = facts.entry_count, 0, 0  # (counted again as it is read again)
        reader = _EntryReader(facts, recover=True)
        for batch in _scan_batches(body, facts, reader):
            if read >= len(batch):
                read -= len(batch)
            else:
                yield batch[read:]
                read = 0


def _scan_batches(body: Body, facts: SitemapFacts, reader: _EntryReader) -> Iterator[list[RawEntry]]:
    first = True
    utf8: codecs.IncrementalDecoder | None = None
    offset = 0
    try:
        raw_start: list[bytes] = []
        for chunk in push_parser_chunks(_first_kept(_chunks(body, facts), raw_start)):  # (UTF-8 unchanged)
            if first:
                first = False
                # (a UTF-16 declaration in single bytes is read as UTF-8: the declaration is still wrong)
                facts.encoding = wide_declaration(raw_start[0]) or declared_encoding(chunk)
                if not leading_text(chunk).startswith("<"):
                    return
                if is_utf8(facts.encoding):
                    utf8 = codecs.getincrementaldecoder("utf-8")()
            if utf8 is not None:
                utf8 = _check_utf8(utf8, chunk, offset, facts)
            offset += len(chunk)
            for batch in reader.feed(chunk):
                if batch:
                    yield batch
        if first:
            return  # not a byte (once decompressed): nothing says XML
        if utf8 is not None:
            _check_utf8(utf8, b"", offset, facts, final=True)
        batch = reader.close()
        if batch:
            yield batch
    except _NotWellFormed as exc:
        if reader.read_before_error:
            yield reader.read_before_error
        facts.error = f"not well-formed XML: {exc}"
    except ElementFlood as exc:
        if reader.read_before_error:
            yield reader.read_before_error
        facts.error = f"{exc}: not read further"
    except _NoRootFound as exc:
        facts.error = str(exc)
    except SizeLimitExceeded:
        if reader.read_before_error:
            yield reader.read_before_error
        facts.cut = True
        error = reader.error_at_close()  # libxml2 may hold an error back until then (``&b``: its ";")
        if error is not None and error.position and _before_the_end(error.position, body):
            facts.error = f"not well-formed XML: {error}"  # (not where the read stopped: no cut made it)
    except etree.XMLSyntaxError as exc:
        if reader.read_before_error:  # (counted: a read again in recover mode skips them)
            yield reader.read_before_error
        if not reader.recover and reader.stopped_on_namespaces():
            raise _NamespaceErrors(str(exc)) from exc  # read again in recover mode
        message = str(exc)
        other = reader.error_after_namespace_errors()
        if other is not None:  # lxml names the first error: the namespace one, and the one that matters
            facts.namespace_error = facts.namespace_error or message
            message = describe_error(other)
        if error_kept_back(message, exc.position):
            found = checked_error(push_parser_chunks(_chunks(body, SitemapFacts())), huge_tree=True)
            message = message if found is None else str(found)
        facts.error = f"not well-formed XML: {message}"
    except StreamError as exc:
        facts.error = _gzip_error(exc)


def _before_the_end(position: tuple[int, int], body: Body) -> bool:
    """Whether an error's (line, column) is before the end of the body as far as the scan
    reads it (the body read again: the scan does not count lines as it goes)."""
    end = InputEnd()
    with contextlib.suppress(StreamError):
        for chunk in _chunks(body, SitemapFacts()):
            end.fed(chunk)
    return not end.at_end(position)


def text_lines(body: Body, facts: SitemapFacts) -> Iterator[list[str]]:
    """The lines of a text sitemap (stripped; blank ones left out), in lists (those read from
    one piece of the body), read a piece at a time; fills ``facts`` (``size``, ``gzip``,
    ``bad_utf8``: the first byte that is not UTF-8; from there on such a byte is ``%XX`` in
    its line, as the crawl reads it; ``error``: a gzip stream that is broken or decompresses
    past the scan's limit).

    A byte order mark before the first line is not part of it; one of UTF-16 or UTF-32
    says how the text is read (``facts.encoding``).
    """
    decoder: codecs.IncrementalDecoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0  # of the chunk in the (uncompressed) document
    partial = ""  # the last line read so far: the next chunk may go on with it
    overlong = False  # that line is over MAX_LINE_LENGTH: not kept (the crawl skips it)
    try:
        for chunk in _chunks(body, facts):
            if offset == 0:
                facts.encoding = declared_encoding(chunk[:4])  # a byte order mark, if any
                if facts.encoding in _WIDE:
                    decoder = codecs.getincrementaldecoder(facts.encoding)("replace")
                elif chunk.startswith(codecs.BOM_UTF8):
                    offset, chunk = len(codecs.BOM_UTF8), chunk[len(codecs.BOM_UTF8) :]
            held = decoder.getstate()[0]
            try:
                text = decoder.decode(chunk)
            except UnicodeDecodeError as exc:  # (a strict decoder: the first bad byte)
                facts.bad_utf8 = max(0, offset - len(held) + exc.start)
                decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
                text = decoder.decode(held + chunk)
            offset += len(chunk)
            head, *rest = _LINE_BREAK.split(text)  # (the new text only: a line with no break grows)
            if not overlong and len(partial) + len(head) > MAX_LINE_LENGTH:
                overlong, partial = True, ""
            if not overlong:
                partial += head
            if not rest:
                continue  # the line goes on in the next piece
            lines = [] if overlong else [partial]
            facts.long_lines += overlong
            *middle, partial = rest
            for line in middle:
                if len(line) > MAX_LINE_LENGTH:
                    facts.long_lines += 1
                else:
                    lines.append(line)
            overlong = len(partial) > MAX_LINE_LENGTH
            if overlong:
                partial = ""
            batch = [line for raw in lines if (line := strip_url_text(raw))]
            if facts.bad_utf8 is not None:
                batch = [escaped_bytes(line) for line in batch]
            if batch:
                yield batch
    except SizeLimitExceeded:
        facts.cut = True
    except StreamError as exc:
        facts.error = _gzip_error(exc)
    try:
        partial += decoder.decode(b"", final=True)
    except UnicodeDecodeError as exc:  # the body ends inside a character
        facts.bad_utf8 = max(0, offset - len(decoder.getstate()[0]) + exc.start)
        partial += decoder.getstate()[0].decode("utf-8", "surrogateescape")
    if overlong or len(partial) > MAX_LINE_LENGTH:
        facts.long_lines += 1
    elif facts.error is None and not facts.cut and (line := strip_url_text(partial)):  # (a cut line is no URL)
        yield [escaped_bytes(line) if facts.bad_utf8 is not None else line]


_LINE_BREAK = re.compile(r"\r\n|\r|\n")
"""What ends a text sitemap's line, as the crawl splits them (``parsing.text.iter_lines``):
not the other breaks ``str.splitlines`` knows (U+2028, ``\\x0b``...), which stay in the URL.
A line is then stripped with ``strip_url_text``, as the crawl strips it (``page_from_line``
before the URL, ``resolve_url`` after it)."""


_WIDE = ("UTF-16", "UTF-32")
"""The encodings a byte order mark tells besides UTF-8 (their text is not ASCII bytes)."""


def _parser(
    events: tuple[Any, ...], tag: str | tuple[str, ...] | None = None, recover: bool = False
) -> etree.XMLPullParser:
    return etree.XMLPullParser(events=events, tag=tag, **parser_options(recover, huge_tree=True))


class _NotWellFormed(Exception):
    """An error past the namespace errors of a document read in recover mode."""


class _NoRootFound(Exception):
    """No root element in the first ROOT_SCAN_LIMIT bytes: the document is read no further."""


class _NamespaceErrors(Exception):
    """The strict parser stopped on namespace errors only (read again in recover mode)."""


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


class _EntryReader:
    """The pull parsers of one scan.

    A small parser finds the root element first (fed 4 KiB at a time, it stops at the
    root's start tag); the main parser then reports only the root's entry elements
    (lxml filters the tags in C: no Python call for the other elements). A document whose
    root has no entries (a feed, another root, none) only goes through a :func:`checker`.
    """

    def __init__(self, facts: SitemapFacts, recover: bool = False, root_aware: bool = False) -> None:
        self.facts = facts
        self.recover = recover
        """Read in recover mode, as far as libxml2 finds namespace errors only (see
        :func:`scan_batches`); the first other error is raised."""
        self.root_aware = root_aware
        """The main parser reports the root's start too (see EntryGap): a document with many
        elements before its first entry is read again so."""
        self.entity_references: bool | None = None
        """The document has a DTD (known from its first entry: see ``has_dtd``): references to
        its entities are put back in the texts as written."""
        self._finder: etree.XMLPullParser | None = _parser(("start",))
        self._held: list[bytes] = []
        self._held_size = 0
        self._main: etree.XMLPullParser | etree.XMLParser | None = None
        """The pull parser of the entries, or a :func:`checker` when the root has none."""
        self._entry_tag: str | None = None
        self._gap = EntryGap("")
        self.read_before_error: list[RawEntry] = []
        """The entries read, in the feed that raised a parse error, before that error: still
        checked (they were lost with the feed's other entries, up to 32 KiB of them)."""

    def feed(self, chunk: bytes) -> list[list[RawEntry]]:
        """The entries the chunk completes (in one list, or several when held chunks are fed)."""
        if self._main is None:
            self._held.append(chunk)
            self._held_size += len(chunk)
            if not self._find_root(chunk):
                if self._held_size >= ROOT_SCAN_LIMIT:
                    raise _NoRootFound(NO_ROOT)  # (as the crawl's reader: an invalid node)
                return []
            self._start_main()
            held, self._held = self._held, []
            batches: list[list[RawEntry]] = []
            try:
                for data in held:
                    batches.append(self._feed_main(data))
            except (etree.XMLSyntaxError, _NotWellFormed, ElementFlood):
                self.read_before_error[:0] = [entry for batch in batches for entry in batch]
                raise
            return batches
        return [self._feed_main(chunk)]

    def close(self) -> list[RawEntry]:
        """The entries left once the body is all fed."""
        entries: list[RawEntry] = []
        if self._main is None:  # no root seen (an empty or broken document): the main parser says why
            self._start_main()
            held, self._held = self._held, []
            for data in held:
                entries += self._feed_main(data)
        assert self._main is not None
        try:
            self._main.close()
        except etree.XMLSyntaxError:
            if isinstance(self._main, etree.XMLPullParser):
                self.read_before_error = entries + self._read()
            raise
        if isinstance(self._main, etree.XMLPullParser):
            return entries + self._read()
        error = first_error(self._main.feed_error_log, namespace=True)  # a checker reads on past them
        if error is not None and self.facts.namespace_error is None:
            self.facts.namespace_error = describe_error(error)
        return entries

    def _find_root(self, chunk: bytes) -> bool:
        finder = self._finder
        if finder is None:
            return True
        try:
            for start in range(0, len(chunk), _ROOT_STEP):
                finder.feed(chunk[start : start + _ROOT_STEP])
                if self._root_read(finder):
                    return True
        except etree.XMLSyntaxError:
            self._root_read(finder)  # (its start tag may have come before the error, in the same feed)
            self._finder = None  # broken before the root, or soon after it: the main parser reports it
            return True
        return False

    def _root_read(self, finder: etree.XMLPullParser) -> bool:
        """Whether the finder read the root's start tag (``facts.root`` and ``namespace`` set)."""
        for _event, element in finder.read_events():
            if isinstance(element, etree._Element):
                tag = element.tag  # "{namespace}name", or "name" or "prefix:name" in none
                self.facts.root = local_name(tag)
                self.facts.namespace = tag[1 : tag.index("}")] if tag.startswith("{") else None
                self._finder = None
                return True
        return False

    def _start_main(self) -> None:
        self._entry_tag = _ENTRY_TAGS.get(self.facts.root or "")
        if self._entry_tag is None:
            self._main = checker(self.recover, huge_tree=True)
        elif self.recover:  # every element: one named prefix:url (its prefix not declared) too
            self._main = _parser(("end",), None, recover=True)
        elif self.root_aware:  # the entries, and the root's start (see EntryGap)
            self._main = _parser(("start", "end"), ("{*}" + self._entry_tag, "{*}" + (self.facts.root or "")))
        else:
            self._main = _parser(("end",), "{*}" + self._entry_tag)
        self._gap = EntryGap(self._entry_tag or "", root_aware=self.recover or self.root_aware)

    def _feed_main(self, data: bytes) -> list[RawEntry]:
        assert self._main is not None
        if not isinstance(self._main, etree.XMLPullParser):
            self._main.feed(data)
            self._raise_past_namespaces()
            return []
        entries: list[RawEntry] = []
        try:
            for start in range(0, len(data), _FEED_SIZE):
                piece = data[start : start + _FEED_SIZE]
                self._main.feed(piece)
                entries += self._read()
                self._gap.fed(piece)
                self._raise_past_namespaces()
        except (etree.XMLSyntaxError, _NotWellFormed, ElementFlood):
            self.read_before_error = entries + self._read()  # (the entries libxml2 completed before it)
            raise
        return entries

    def error_at_close(self) -> etree.XMLSyntaxError | None:
        """The error the main parser names when closed (its input stopped early), if any."""
        if self._main is None:
            return None
        try:
            self._main.close()
        except etree.XMLSyntaxError as exc:
            return exc
        return None

    def stopped_on_namespaces(self) -> bool:
        """Whether the main parser stopped on namespace errors only."""
        return self._main is not None and is_namespace_error(self._main)

    def error_after_namespace_errors(self) -> Any:
        """The main parser's first error that is not a namespace error, when namespace errors
        came before it (else None)."""
        return None if self._main is None else error_after_namespace_errors(self._main)

    def _raise_past_namespaces(self) -> None:
        """In recover mode, raise the first error that is not a namespace error."""
        if self.recover:
            assert self._main is not None
            error = first_error(self._main.feed_error_log, namespace=False)
            if error is not None:
                raise _NotWellFormed(describe_error(error))

    def _read(self) -> list[RawEntry]:
        assert isinstance(self._main, etree.XMLPullParser)
        entries: list[RawEntry] = []
        last: Any = None
        element: Any
        for event, element in self._main.read_events():
            if event == "start":
                self._gap.started(element)
                continue
            if self.recover and self._gap.root is None:  # (every element's end: the root from the first)
                self._gap.root = element.getroottree().getroot()
            parent = element.getparent()
            if parent is None or parent.getparent() is not None:
                continue  # the root, or deeper than the root's children
            if (self.recover or self.root_aware) and local_name(element.tag) != self._entry_tag:
                continue  # (not an entry: another element, or one named like the root)
            if self.entity_references is None:  # (known from the first entry: see has_dtd)
                self.entity_references = has_dtd(element)
            if self.entity_references:
                inline_entity_references(element)
            last = element
            entries.append(_read_entry(element))
        if last is not None:
            self.facts.entry_count += len(entries)
            self._gap.entry_read(last)
            parent = last.getparent()
            del parent[: parent.index(last) + 1]  # free the entries read (and what came between)
        return entries


_ROOT_STEP = 4096
_FEED_SIZE = 32 * 1024
"""Bytes fed to the main parser at a time: the entries read are freed after each feed, so the
tree never holds more than about this much of the document."""
_ENTRY_TAGS = {URLSET: "url", INDEX: "sitemap"}
"""The entry element of each root that has entries."""


_LOC, _LASTMOD, _PRIORITY, _CHANGEFREQ, _IMAGE, _NEWS, _LINK, _OTHER = range(8)
_CODES = {
    "loc": _LOC,
    "lastmod": _LASTMOD,
    "priority": _PRIORITY,
    "changefreq": _CHANGEFREQ,
    "image": _IMAGE,
    "news": _NEWS,
    "link": _LINK,
}
_CODE_BY_TAG: dict[object, int] = {}
"""Tag (namespace and all) -> field code, learnt as tags are met (bounded)."""


def _code(tag: object) -> int:
    code = _CODES.get(local_name(tag), _OTHER)
    if code <= _CHANGEFREQ and in_extension_namespace(tag):
        code = _OTHER  # (an <image:loc> in the <url> itself is not its loc, as the crawl reads it)
    if len(_CODE_BY_TAG) < 4096:
        _CODE_BY_TAG[tag] = code
    return code


def _read_entry(element: etree._Element) -> RawEntry:
    loc = lastmod = priority = changefreq = None
    news_dates: list[str] = []
    hreflangs: list[tuple[str | None, str | None]] = []
    image_count = 0
    by_tag = _CODE_BY_TAG
    for child in element:
        tag = child.tag
        code = by_tag.get(tag)
        if code is None:
            code = _code(tag)
        if code <= _CHANGEFREQ:
            text = child.text
            # present but empty (<lastmod/>): "", as when it holds only spaces; None when absent
            text = "" if text is None else text.strip()
            if code == _LOC:
                loc = text
            elif code == _LASTMOD:
                lastmod = text
            elif code == _PRIORITY:
                priority = text
            else:
                changefreq = text
        elif code == _IMAGE:
            image_count += 1
        elif code == _NEWS:
            for part in child:
                if local_name(part.tag) == "publication_date":
                    news_dates.append((part.text or "").strip())
        elif code == _LINK and is_alternate_rel(child.get("rel")):
            hreflangs.append((child.get("hreflang"), child.get("href")))
    return RawEntry(loc, lastmod, priority, changefreq, news_dates, image_count, hreflangs)
