"""Streaming XML sitemap reader: urlset, sitemapindex, RSS 2.0 and Atom 0.3/1.0.

The document is fed to lxml's XMLPullParser chunk by chunk; each entry element
(``url``, ``sitemap``, ``item``, ``entry``, in any namespace or none) is turned
into a page or a sub-sitemap reference as soon as it ends, then cleared, so a
large sitemap never becomes a whole tree in memory. Entities are never resolved,
no DTD is loaded and nothing is fetched.
"""

from __future__ import annotations

import codecs
import contextlib
import functools
import re
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from lxml import etree

from sitemap_crawl.items import Alternate, Image, NewsStory, SitemapPage, SitemapRef, Video
from sitemap_crawl.kinds import ErrorReason, NodeKind, with_detail
from sitemap_crawl.parsing.fields import (
    child_sitemap_url,
    clean_text,
    normalize_change_frequency,
    normalize_date,
    normalize_priority,
    parse_duration,
    parse_yes_no,
    resolve_url,
    split_list,
)
from sitemap_crawl.parsing.stream import UTF16_STARTS, UTF32_BOMS, UTF32_STARTS, StreamError, wide_markup_start

_ROOT_SCAN_LIMIT = 1 << 20
FEED_SIZE = 32 * 1024
"""Bytes fed to lxml at a time: small feeds keep the unreleased part of the tree small (and fast)."""

Element = Any  # lxml's _Element; kept loose so lxml-stubs are optional


@dataclass(frozen=True, slots=True)
class Dialect:
    """How one XML root element maps to a tree kind and an entry reader."""

    kind: str
    root: str
    """The root element's local name, lower case (how :func:`find_root_name` gives it)."""
    entry_tag: str
    read_entry: Callable[[Element, str], SitemapPage | SitemapRef | None]
    extract_entry: Callable[[Element, str], Any] | None = None
    """Reads an entry without normalising its fields (see :func:`extract_url`), or None
    when the dialect has no such split; used by the parse worker, which leaves the
    normalising to the crawl process, and by ``SitemapReader.iter_with_texts``."""

    def reader(self, raw: bool) -> Callable[[Element, str], Any]:
        return self.extract_entry if raw and self.extract_entry is not None else self.read_entry


class XmlProblem(Exception):
    """An XML document stopped short; ``reason`` is the tree error text."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def _parser_options(recover: bool) -> dict[str, Any]:
    return {
        "recover": recover,
        "resolve_entities": False,
        "no_network": True,
        "load_dtd": False,
        "dtd_validation": False,
        "huge_tree": False,
        "remove_comments": True,
        "remove_pis": True,
    }


_LOCAL_NAMES: dict[object, str] = {}
_LOCAL_NAMES_MAX = 4096
_ROOT_SCAN_STEP = 4096


def local_name(tag: object) -> str:
    """Tag name without namespace or prefix; '' for comments and PIs."""
    name = _LOCAL_NAMES.get(tag)
    if name is None:
        name = tag[max(tag.rfind("}"), tag.rfind(":")) + 1 :] if type(tag) is str else ""
        if len(_LOCAL_NAMES) < _LOCAL_NAMES_MAX:
            _LOCAL_NAMES[tag] = name
    return name


def find_root_name(chunks: Iterator[bytes]) -> tuple[str | None, str | None, list[bytes]]:
    """Local name of the root element, an error text if none was found, and the chunks read.

    Reads at most about 1 MiB; the chunks read are returned so the caller can
    feed them again to the real parser.
    """
    parser = etree.XMLPullParser(events=("start",), **_parser_options(recover=True))
    seen: list[bytes] = []
    size = 0
    try:
        for chunk in push_parser_chunks(chunks):
            seen.append(chunk)
            for start in range(0, len(chunk), _ROOT_SCAN_STEP):
                parser.feed(chunk[start : start + _ROOT_SCAN_STEP])
                for _event, element in parser.read_events():
                    return local_name(_tag(element)).lower(), None, seen
            size += len(chunk)
            if size >= _ROOT_SCAN_LIMIT:  # (a comment or DOCTYPE of megabytes before it)
                return None, f"no root element in the first {_ROOT_SCAN_LIMIT >> 20} MiB", seen
        else:
            parser.close()
            for _event, element in parser.read_events():
                return local_name(_tag(element)).lower(), None, seen
    except etree.XMLSyntaxError as exc:
        return None, with_detail(ErrorReason.PARSE_ERROR, str(exc)), seen
    except StreamError as exc:
        return None, exc.reason, seen
    return None, None, seen


def _tag(element: Any) -> object:
    return getattr(element, "tag", None)


def iter_entry_batches(
    make_chunks: Callable[[], Iterator[bytes]],
    dialect: Dialect,
    sitemap_url: str,
    raw: bool = False,
) -> Iterator[list[Any]]:
    """Pages or sub-sitemap references of one XML document, in document order, a non-empty
    list at a time: the entries of one fed piece (those read after an error, one a list), so
    that a consumer resumes the generator once a piece, not once an entry.

    ``make_chunks`` opens the (decompressed) document as a chunk stream; it is
    called a second time only for a malformed document, which is then read
    again in lxml's recover mode from the entry after the last good one.
    Raises XmlProblem (after yielding every good entry) when the document is
    truncated, over a limit or unreadable past some point. With ``raw``, urlset
    pages come as :func:`extract_url` tuples (see :func:`finish_page`).
    """
    make_chunks = functools.partial(_without_leading_space, make_chunks)
    produced = 0
    line_count = 1
    last_line_length = 0  # in characters, as libxml2 counts columns
    tail = b""  # the document's last bytes: does it end with its root's end tag?
    width: int | None = None  # bytes a character: 2 in UTF-16, 4 in UTF-32, else UTF-8's count
    strict = etree.XMLPullParser(events=("end",), tag=(dialect.entry_tag,), **_parser_options(recover=False))
    reading = _EntryReading(dialect.reader(raw))
    try:
        for chunk in make_chunks():
            if width is None:
                width = 4 if chunk.startswith(UTF32_STARTS) else 2 if chunk[:2] in _WIDE_STARTS else 1
            newline = chunk.rfind(b"\n")
            if newline < 0:
                last_line_length += _char_count(chunk, width)
            else:
                line_count += chunk.count(b"\n")
                last_line_length = _char_count(chunk[newline + 1 :], width)
            tail = chunk[-_TAIL_SIZE:] if len(chunk) >= _TAIL_SIZE else (tail + chunk)[-_TAIL_SIZE:]
            for start in range(0, len(chunk), FEED_SIZE):
                strict.feed(chunk[start : start + FEED_SIZE])
                entries: list[Any] = []
                last = None
                for _event, element in strict.read_events():
                    last = element
                    produced += 1
                    entry = reading.read(element, sitemap_url)
                    if entry is not None:
                        entries.append(entry)
                if last is not None:
                    _release_through(last)
                if entries:
                    yield entries
        strict.close()
    except StreamError as exc:
        _drain(strict)
        raise XmlProblem(exc.reason, str(exc)) from exc
    except etree.XMLSyntaxError as exc:
        # entries completed before the error (in the same feed) are still good
        for _event, element in strict.read_events():
            produced += 1
            entry = reading.read(element, sitemap_url)
            _release(element)
            if entry is not None:
                yield [entry]
        message, position = str(exc), exc.position
        other = error_after_namespace_errors(strict)
        if other is not None:  # lxml names the first error: say the one that matters
            message, position = describe_error(other), (other.line, other.column)
        if _is_resource_limit(message):
            raise XmlProblem(ErrorReason.PARSE_ERROR, message) from exc
        if message.startswith("Extra content at the end of the document"):
            raise XmlProblem(ErrorReason.PARSE_ERROR, message) from exc  # junk after the root: every entry was read
        namespace_error = is_namespace_error(strict)
        if (
            not namespace_error
            and "tag mismatch" not in message  # a cut never causes a tag mismatch
            and _at_end(position, line_count, last_line_length)
            and not _closes_root(tail, dialect.root)  # an error near the end of a whole document
        ):
            raise XmlProblem(ErrorReason.TRUNCATED, message) from exc
        recovered = yield from one_a_list(_recover(make_chunks, dialect, sitemap_url, skip=produced, raw=raw))
        if recovered.stream_error is not None:  # the body also broke off (size limit, cut gzip): say that
            raise XmlProblem(recovered.stream_error.reason, str(recovered.stream_error)) from exc
        if namespace_error and recovered.only_namespace_errors:
            return  # a prefix not declared (xmlns:image left out...): every entry was read
        raise XmlProblem(ErrorReason.PARSE_ERROR, message) from exc
    for _event, element in strict.read_events():
        entry = reading.read(element, sitemap_url)
        if entry is not None:
            yield [entry]


_Returned = TypeVar("_Returned")


def one_a_list(entries: Generator[Any, None, _Returned]) -> Generator[list[Any], None, _Returned]:
    """Each entry of ``entries`` in a list of its own; returns what ``entries`` returns."""
    while True:
        try:
            entry = next(entries)
        except StopIteration as stop:
            return stop.value
        yield [entry]


_END_SLACK = 64
_TAIL_SIZE = 1024
_WIDE_STARTS = (b"\xff\xfe", b"\xfe\xff", b"<\x00", b"\x00<", b"\x00\x00")
_NOT_UTF8_CONTINUATION = bytes(range(0x80)) + bytes(range(0xC0, 0x100))


def _char_count(data: bytes, width: int) -> int:
    """Characters in ``data`` (UTF-8 continuation bytes do not count; UTF-16 is two bytes
    a character, UTF-32 four), so that a cut inside non-ASCII text is still seen at the end."""
    if width > 1:
        return len(data) // width
    return len(data) - len(data.translate(None, _NOT_UTF8_CONTINUATION))


def _at_end(position: tuple[int, int], line_count: int, last_line_length: int) -> bool:
    """Whether a syntax error (its line and column) sits at the very end of the input (a cut document)."""
    line, column = position
    return line >= line_count and column >= last_line_length - _END_SLACK


def _closes_root(tail: bytes, root: str) -> bool:
    """Whether a document's last bytes are its root's end tag (then only comments, PIs or
    whitespace): it did not break off, whatever libxml2 found wrong near its end (the
    message does not tell: a raw ``&b`` and a body cut at ``&a`` both give "EntityRef")."""
    markup = tail.replace(b"\x00", b"")  # UTF-16 and UTF-32: the markup is ASCII
    end_tag = rb"</(?:[^\s<>/:]+:)?" + re.escape(root.encode()) + rb"\s*>(?:\s|<!--.*?-->|<\?.*?\?>)*\Z"
    return re.search(end_tag, markup, re.IGNORECASE | re.DOTALL) is not None


def has_dtd(element: Element) -> bool:
    """Whether the document of ``element`` has a DTD (``<!DOCTYPE ...>``, whatever its encoding
    or place before the root). Its entities, declared in its internal subset or in an external
    one (never loaded), are never expanded: lxml keeps a reference to one as a node of its own,
    even to one nothing declares, with no error, and an element's ``.text`` stops before it."""
    return element.getroottree().docinfo.internalDTD is not None


class _EntryReading:
    """The entry reader of one document: on the first entry read it looks whether the
    document has a DTD (:func:`has_dtd`), and if so reads every entry with
    :func:`_keeping_entity_references`."""

    __slots__ = ("_plain", "read")

    def __init__(self, read_entry: Callable[[Element, str], Any]) -> None:
        self._plain = read_entry
        self.read: Callable[[Element, str], Any] = self._first

    def _first(self, element: Element, sitemap_url: str) -> Any:
        self.read = _keeping_entity_references(self._plain) if has_dtd(element) else self._plain
        return self.read(element, sitemap_url)


def inline_entity_references(element: Element) -> None:
    """Put each entity reference below ``element`` back in the text as written (``a&e;b``):
    lxml keeps a reference to a declared entity as a node of its own, and ``.text`` stops
    before it (a URL was cut there)."""
    for reference in list(element.iter(etree.Entity)):
        written = (reference.text or "") + (reference.tail or "")
        before, parent = reference.getprevious(), reference.getparent()
        if before is not None:
            before.tail = (before.tail or "") + written
        elif parent is not None:
            parent.text = (parent.text or "") + written
        if parent is not None:
            parent.remove(reference)


_URL_FIELDS = frozenset({"loc", "link", "guid"})
"""The children of an entry that give its URL (urlset, index, RSS)."""


def _keeping_entity_references(read_entry: Callable[[Element, str], Any]) -> Callable[[Element, str], Any]:
    """``read_entry`` for a document with a DTD (see :func:`has_dtd`, :func:`inline_entity_references`);
    an entry whose URL holds a reference is skipped: what it names is not known."""

    def read(element: Element, sitemap_url: str) -> Any:
        for reference in element.iter(etree.Entity):
            field = reference.getparent()
            if field is not None and field.getparent() is element and local_name(field.tag) in _URL_FIELDS:
                return None
        inline_entity_references(element)
        return read_entry(element, sitemap_url)

    return read


def _drain(parser: etree.XMLPullParser) -> None:
    """Discard what a parser holds (entries cut by a stream error are not complete)."""
    for _event, element in parser.read_events():
        _release(element)


@dataclass(frozen=True, slots=True)
class Recovered:
    """How a read in recover mode went."""

    stream_error: StreamError | None
    """What stopped the input early (a size limit, a broken gzip stream), if anything."""
    only_namespace_errors: bool
    """libxml2 found nothing wrong but namespace errors (such as a prefix not declared),
    which it reads past without losing anything."""


_NAMESPACE_DOMAIN = etree.ErrorDomains.NAMESPACE


def first_error(log: Any, *, namespace: bool) -> Any:
    """The first error (level ERROR or worse) of a parser's log that is a namespace error
    (``namespace``) or is not one; None when there is none."""
    for entry in log:
        if entry.level >= etree.ErrorLevels.ERROR and (entry.domain == _NAMESPACE_DOMAIN) is namespace:
            return entry
    return None


def is_namespace_error(parser: etree._FeedParser) -> bool:
    """Whether libxml2 stopped a strict parser on namespace errors only (a prefix not
    declared, ...): the document is well-formed XML, readable in recover mode as it is.
    (The parser's own log: an exception's ``error_log`` may hold other parsers' errors.)"""
    log = parser.feed_error_log
    return first_error(log, namespace=True) is not None and first_error(log, namespace=False) is None


def describe_error(entry: Any) -> str:
    """An error of a parser's log as lxml's exceptions word it: its message, line and column."""
    return f"{entry.message.strip()}, line {entry.line}, column {entry.column}"


def error_after_namespace_errors(parser: etree._FeedParser) -> Any:
    """The first error in a parser's log that is not a namespace error, when namespace errors
    came before it (else None)."""
    errors = [entry for entry in parser.feed_error_log if entry.level >= etree.ErrorLevels.ERROR]
    if not errors or errors[0].domain != _NAMESPACE_DOMAIN:
        return None
    return first_error(errors, namespace=False)


def _recover(
    make_chunks: Callable[[], Iterator[bytes]],
    dialect: Dialect,
    sitemap_url: str,
    skip: int,
    raw: bool = False,
) -> Generator[Any, None, Recovered]:
    """Read a malformed document again in recover mode, skipping ``skip`` entries.

    Unescaped ``&`` and ``<`` in text are escaped first (see :func:`_repair_markup`),
    so such entries keep their exact values. An entry that lxml closes only because
    the input ran out (the document ends inside it) is not given: its values may be cut.
    """
    parser = etree.XMLPullParser(events=("end",), tag=(dialect.entry_tag,), **_parser_options(recover=True))
    reading = _EntryReading(dialect.reader(raw))
    seen = 0
    stream_error: StreamError | None = None
    ends_cleanly = True
    try:
        for chunk in _repair_markup(make_chunks()):
            stripped = chunk.rstrip(_TAIL_SPACE)
            if stripped:
                ends_cleanly = stripped.endswith(b">")
            parser.feed(chunk)
            for _event, element in parser.read_events():
                seen += 1
                if seen > skip:
                    entry = reading.read(element, sitemap_url)
                    if entry is not None:
                        yield entry
                _release(element)
    except StreamError as exc:
        stream_error = exc
    with contextlib.suppress(etree.XMLSyntaxError):
        parser.close()
    if stream_error is None:
        held: Element | None = None  # the last element may be one the cut left open
        for _event, element in parser.read_events():
            if held is not None:
                seen += 1
                if seen > skip:
                    entry = reading.read(held, sitemap_url)
                    if entry is not None:
                        yield entry
            held = element
        if held is not None and ends_cleanly:
            seen += 1
            if seen > skip:
                entry = reading.read(held, sitemap_url)
                if entry is not None:
                    yield entry
    return Recovered(stream_error, first_error(parser.feed_error_log, namespace=False) is None and ends_cleanly)


_TAIL_SPACE = b" \t\r\n\x00"
_XML_SPACE = b" \t\r\n"
_UTF8_BOM = b"\xef\xbb\xbf"


_UTF16_BOM_OF_START = dict(zip(UTF16_STARTS, (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE), strict=True))
_UTF16_DECLARATION_STARTS = (b"<\x00?\x00", b"\x00<\x00?")
_UTF32_SPACES_LE = frozenset(space.encode("utf-32-le") for space in " \t\r\n")
_UTF32_SPACES_BE = frozenset(space.encode("utf-32-be") for space in " \t\r\n")


_WIDE_DECLARATION = re.compile(
    rb"""\A((?:\xef\xbb\xbf)?[ \t\r\n]*<\?xml\b[^>]{0,200}?\bencoding[ \t\r\n]*=[ \t\r\n]*["'])"""
    rb"""((?:utf|ucs)-?(?:16|32|2|4)[\w-]{0,8})(?=["'])""",
    re.IGNORECASE,
)
"""A declaration of UTF-16 or UTF-32 (or UCS-2/4) written in single bytes (group 2: the name)."""


def wide_declaration(chunk: bytes) -> str | None:
    """The UTF-16 or UTF-32 encoding a document's first chunk declares while its ``<?xml``
    is written in single bytes (a .NET StringWriter's document, sent as UTF-8), or None."""
    match = _WIDE_DECLARATION.match(chunk)
    return None if match is None else match[2].decode("ascii")


def push_parser_start(chunk: bytes) -> bytes:
    """A document's first chunk as libxml2's push parser (lxml's feed parsers) can read it.

    That parser fails on a UTF-32 byte order mark (``fromstring`` does not): it is
    dropped, the parser tells UTF-32 from the ``<`` that follows. UTF-16 without a byte
    order mark is read by it only when it starts ``<?xml``: a mark is put before any
    other start. A declaration of UTF-16 or UTF-32 in single bytes (:func:`wide_declaration`:
    libxml2 then found no root element) is read as UTF-8. Every other start passes unchanged."""
    if (match := _WIDE_DECLARATION.match(chunk)) is not None:
        return chunk[: match.start(2)] + b"UTF-8" + chunk[match.end(2) :]
    wide = wide_markup_start(chunk)
    if wide is not None:  # whitespace before the "<" of UTF-16/32 without a mark hides the encoding
        chunk = chunk[wide[1] :]
    if chunk.startswith(UTF32_BOMS):
        # without the mark, libxml2 tells UTF-32 from the "<": whitespace before it goes too
        spaces = _UTF32_SPACES_BE if chunk.startswith(codecs.BOM_UTF32_BE) else _UTF32_SPACES_LE
        start = 4
        while chunk[start : start + 4] in spaces:
            start += 4
        return chunk[start:]
    bom = _UTF16_BOM_OF_START.get(chunk[:2])
    if bom is None or chunk.startswith(_UTF16_DECLARATION_STARTS) or chunk.startswith(UTF32_STARTS):
        return chunk
    return bom + chunk


def push_parser_chunks(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """``chunks``, the first as :func:`push_parser_start` gives it."""
    for chunk in chunks:
        yield push_parser_start(chunk)
        yield from chunks
        return


def _without_leading_space(make_chunks: Callable[[], Iterator[bytes]]) -> Iterator[bytes]:
    """The document without the whitespace some servers send before ``<?xml``
    (which makes it ill-formed); a UTF-8 BOM stays. UTF-16 and UTF-32 get the start
    :func:`push_parser_start` gives; other encodings pass unchanged."""
    chunks = push_parser_chunks(make_chunks())
    bom = b""
    for index, chunk in enumerate(chunks):
        if index == 0 and chunk.startswith(_UTF8_BOM):
            bom, chunk = _UTF8_BOM, chunk[len(_UTF8_BOM) :]
        stripped = chunk.lstrip(_XML_SPACE)
        if not stripped:
            continue
        if stripped.startswith(b"<") and not stripped.startswith(b"<\x00"):
            yield bom + stripped
        else:
            yield bom + chunk
        yield from chunks
        return
    if bom:
        yield bom


_MARKUP_FIX = re.compile(
    rb"&(?:(amp|lt|gt|quot|apos);|(?!#[0-9]{1,8};|#x[0-9a-fA-F]{1,8};))|<(?![A-Za-z_:/!?\x80-\xff])"
)
_CHARACTER_REFERENCES = {b"amp": b"&#38;", b"lt": b"&#60;", b"gt": b"&#62;", b"quot": b"&#34;", b"apos": b"&#39;"}
_CDATA_START = b"<![CDATA["
_CDATA_END = b"]]>"
_REPAIR_LOOKAHEAD = 16


def _repair_markup(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """Escape the raw ``&`` (``a=1&b=2``, ``Tom & Jerry``) and lone ``<`` (``a < b``)
    that generators leave in text and attribute values, outside CDATA sections,
    and write ``&amp;``, ``&lt;``... as character references (``&#38;``...).

    Without this, recover mode drops ``&b`` from ``?a=1&b=2`` (a wrong URL), lxml
    stops reading at a lone ``<``, and libxml2 (2.14) drops every ``&amp;`` after
    the first error in recover mode (``?a=1&amp;b=2`` would become ``?a=1b=2``),
    while character references survive. Only ASCII-compatible encodings are
    touched; a UTF-16/32 document passes unchanged.
    """
    in_cdata = False
    pending = b""
    first = True
    try:
        for chunk in chunks:
            if first:
                first = False
                if chunk[:2] in _WIDE_STARTS:
                    yield chunk
                    yield from chunks
                    return
            data = pending + chunk
            limit = len(data) - _REPAIR_LOOKAHEAD
            if limit <= 0:
                pending = data
                continue
            repaired, in_cdata, consumed = _escape_markup(data, limit, in_cdata)
            pending = data[consumed:]
            yield repaired
    except StreamError:
        if pending:  # the body broke off: the bytes held back were still read
            yield _escape_markup(pending, len(pending), in_cdata)[0]
        raise
    if pending:
        yield _escape_markup(pending, len(pending), in_cdata)[0]


def _escape_markup(data: bytes, limit: int, in_cdata: bool) -> tuple[bytes, bool, int]:
    """``data`` repaired from its start to at least ``limit`` (the bytes after it serve
    as lookahead), whether that ends inside a CDATA section, and how far it went."""
    pieces: list[bytes] = []
    position = 0
    while position < limit:
        if in_cdata:
            end = data.find(_CDATA_END, position)
            if end < 0 or end >= limit:
                pieces.append(data[position:limit])
                position = limit
                break
            pieces.append(data[position : end + len(_CDATA_END)])
            position, in_cdata = end + len(_CDATA_END), False
            continue
        start = data.find(_CDATA_START, position)
        stop = limit if start < 0 or start >= limit else start
        last = position
        for match in _MARKUP_FIX.finditer(data, position, min(len(data), stop + _REPAIR_LOOKAHEAD)):
            if match.start() >= stop:
                break
            pieces.append(data[last : match.start()])
            name = match.group(1)
            if name is not None:
                pieces.append(_CHARACTER_REFERENCES[name])
            else:
                pieces.append(b"&#38;" if data[match.start()] == 0x26 else b"&#60;")
            last = match.end()
        pieces.append(data[last:stop])
        position = max(stop, last)  # a reference that began before ``stop`` may end after it
        if stop == start:
            pieces.append(_CDATA_START)
            position, in_cdata = start + len(_CDATA_START), True
    return b"".join(pieces), in_cdata, position


def _is_resource_limit(message: str) -> bool:
    lowered = message.lower()
    return "xml_parse_huge" in lowered or "resource limit" in lowered or "excessive depth" in lowered


def _release(element: Element) -> None:
    """Free an entry element and the already handled siblings before it."""
    element.clear(keep_tail=False)
    parent = element.getparent()
    if parent is not None:
        while element.getprevious() is not None:
            del parent[0]


def _release_through(last: Element) -> None:
    """Free every handled entry up to ``last`` (once per fed chunk, not per entry).

    Only finished elements are removed: the element the parser is still
    building comes after ``last``.
    """
    parent = last.getparent()
    if parent is None:
        last.clear(keep_tail=False)
    else:
        del parent[: parent.index(last) + 1]


def _texts(element: Element) -> dict[str, str | None]:
    """Local name → text of the direct children (first occurrence wins)."""
    texts: dict[str, str | None] = {}
    for child in element:
        name = local_name(child.tag)
        if name and name not in texts:
            texts[name] = child.text
    return texts


class _ChildFields:
    """Texts of the named direct children of an element, by position (first occurrence wins).

    The position of each tag (namespace and all) is remembered, so a child costs a
    dictionary lookup, not a local-name computation.
    """

    __slots__ = ("_positions", "_size", "by_tag")

    def __init__(self, *names: str) -> None:
        self._positions = {name: position for position, name in enumerate(names)}
        self.by_tag: dict[object, int] = {}
        """Tag → position (-1: not one of the names), filled by :meth:`position`."""
        self._size = len(names)

    def texts(self, element: Element) -> list[str | None]:
        values: list[str | None] = [None] * self._size
        by_tag = self.by_tag
        for child in reversed(element):  # backwards, so that the first occurrence is written last
            tag = child.tag
            position = by_tag.get(tag)
            if position is None:
                position = self.position(tag)
            if position >= 0:
                values[position] = child.text
        return values

    def position(self, tag: object) -> int:
        """The position of a tag's local name among the names, -1 if absent (remembered)."""
        position = self._positions.get(local_name(tag), -1)
        if len(self.by_tag) < _LOCAL_NAMES_MAX:
            self.by_tag[tag] = position
        return position


_IMAGE_FIELDS = _ChildFields("loc", "caption", "title", "geo_location", "license")
_NEWS_FIELDS = _ChildFields("title", "publication_date", "access", "genres", "keywords", "stock_tickers")
_PUBLICATION_FIELDS = _ChildFields("name", "language")


_URL_CHILDREN = _ChildFields("loc", "lastmod", "changefreq", "priority", "image", "video", "news", "link")


RAW_PAGE = "raw-page"
"""First item of an :func:`extract_url` tuple."""


def extract_url(element: Element, sitemap_url: str) -> tuple[Any, ...] | None:
    """A urlset ``<url>`` as the raw texts of its fields (only the page URL resolved), or None.

    ``(RAW_PAGE, url, priority, lastmod, changefreq, news, images, videos, alternates)``:
    the texts as written ("" for an empty element, None for an absent one), nested ones as
    tuples (lists of them for images, videos and alternates, or None). :func:`finish_page`
    makes the page; ``read_url`` does both.
    """
    loc = lastmod = changefreq = priority = news = None
    images: list[Any] | None = None
    videos: list[Any] | None = None
    alternates: list[Any] | None = None
    # The hot loop of the parse worker: codes are compared as literals (the positions in
    # _URL_CHILDREN: loc 0, lastmod 1, changefreq 2, priority 3, image 4, video 5, news 6,
    # link 7), not as module constants (a global lookup each).
    by_tag = _URL_CHILDREN.by_tag
    for child in element:
        tag = child.tag
        code = by_tag.get(tag)
        if code is None:
            code = _URL_CHILDREN.position(tag)
        if code == 0:
            loc = child.text
        elif code == 1:
            lastmod = child.text or ""  # an empty element is "" (absent: None), as Scrapy tells them
        elif code == 2:
            changefreq = child.text or ""
        elif code == 3:
            priority = child.text or ""
        elif code == 4:
            if images is None:
                images = []
            images.append(_IMAGE_FIELDS.texts(child))
        elif code == 5:
            if videos is None:
                videos = []
            videos.append(_video_texts(child))
        elif code == 6:
            news = _news_texts(child)
        elif code == 7:
            if alternates is None:
                alternates = []
            alternates.append((child.get("rel"), child.get("hreflang"), child.get("href")))
    url = resolve_url(loc if loc is not None else _bare_text(element), sitemap_url)
    if url is None:
        return None
    return (RAW_PAGE, url, priority, lastmod, changefreq, news, images, videos, alternates)


def finish_page(raw: tuple[Any, ...], sitemap_url: str, every_link: bool = False) -> SitemapPage:
    """The page of an :func:`extract_url` tuple: every field normalised.

    ``alternates`` holds the hreflang alternates; with ``every_link``, every
    ``xhtml:link`` that has an href (what Scrapy's SitemapSpider calls ``alternate``).
    """
    _mark, url, priority, lastmod, changefreq, news, images, videos, alternates = raw
    finish_alternate = _any_link if every_link else _finish_alternate
    return SitemapPage(
        url,
        sitemap_url,
        normalize_priority(priority),
        normalize_date(lastmod),
        normalize_change_frequency(changefreq),
        None if news is None else _finish_news(news),
        [image for texts in images if (image := _finish_image(texts, sitemap_url)) is not None] if images else [],
        [_finish_video(texts, sitemap_url) for texts in videos] if videos else [],
        [alt for attrs in alternates if (alt := finish_alternate(attrs, sitemap_url)) is not None]
        if alternates
        else [],
    )


def read_url(element: Element, sitemap_url: str) -> SitemapPage | None:
    """A urlset ``<url>`` as a page, or None when it has no usable location."""
    raw = extract_url(element, sitemap_url)
    return None if raw is None else finish_page(raw, sitemap_url)


def read_url_every_link(element: Element, sitemap_url: str) -> SitemapPage | None:
    """:func:`read_url`, its ``alternates`` holding every ``xhtml:link`` with an href."""
    raw = extract_url(element, sitemap_url)
    return None if raw is None else finish_page(raw, sitemap_url, every_link=True)


def _bare_text(element: Element) -> str | None:
    """Text of an entry that holds a bare URL instead of a ``<loc>``."""
    text = element.text
    if text is None or len(element):
        return None
    value = text.strip()
    return value if value[:4].lower() == "http" else None


def _finish_image(texts: list[str | None], sitemap_url: str) -> Image | None:
    loc, caption, title, geo_location, license_url = texts
    url = resolve_url(loc, sitemap_url)
    if url is None:
        return None
    return Image(url, clean_text(caption), clean_text(title), clean_text(geo_location), clean_text(license_url))


_VIDEO_FIELDS = _ChildFields(
    "thumbnail_loc", "title", "description", "content_loc", "player_loc", "duration", "publication_date",
    "family_friendly",
)  # fmt: skip


def _video_texts(element: Element) -> tuple[Any, ...]:
    tags = [child.text for child in element if local_name(child.tag) == "tag"]
    return (*_VIDEO_FIELDS.texts(element), tags)


def _finish_video(texts: tuple[Any, ...], sitemap_url: str) -> Video:
    thumbnail, title, description, content, player, duration, published, family_friendly, tags = texts
    return Video(
        thumbnail_loc=resolve_url(thumbnail, sitemap_url),
        title=clean_text(title),
        description=clean_text(description),
        content_loc=resolve_url(content, sitemap_url),
        player_loc=resolve_url(player, sitemap_url),
        duration=parse_duration(duration),
        publication_date=normalize_date(published),
        family_friendly=parse_yes_no(family_friendly),
        tags=[tag for tag in map(clean_text, tags) if tag],
    )


def _news_texts(element: Element) -> tuple[str | None, ...]:
    title, publication_date, access, genres, keywords, stock_tickers = _NEWS_FIELDS.texts(element)
    name = language = None
    for child in element:
        if local_name(child.tag) == "publication":
            name, language = _PUBLICATION_FIELDS.texts(child)
            break
    return (title, publication_date, name, language, access, genres, keywords, stock_tickers)


def _finish_news(texts: tuple[str | None, ...]) -> NewsStory:
    title, publication_date, name, language, access, genres, keywords, stock_tickers = texts
    return NewsStory(
        clean_text(title),
        normalize_date(publication_date),
        clean_text(name),
        clean_text(language),
        clean_text(access),
        split_list(genres),
        split_list(keywords),
        split_list(stock_tickers),
    )


def _finish_alternate(attributes: tuple[str | None, ...], sitemap_url: str) -> Alternate | None:
    """An hreflang alternate: an ``xhtml:link`` with ``rel="alternate"``, an hreflang and an href."""
    rel, hreflang, href = attributes
    if rel is None or (rel != "alternate" and rel.strip().lower() != "alternate"):
        return None
    language = clean_text(hreflang)
    if language is None:
        return None  # e.g. a mobile alternate (media="..."): not a language version
    url = resolve_url(href, sitemap_url)
    if url is None:
        return None
    return Alternate(language, url)


def _any_link(attributes: tuple[str | None, ...], sitemap_url: str) -> Alternate | None:
    """Any ``xhtml:link`` with an href, whatever its rel and hreflang (Scrapy's ``alternate``)."""
    _rel, hreflang, href = attributes
    url = resolve_url(href, sitemap_url)
    return None if url is None else Alternate(clean_text(hreflang), url)


RAW_REF = "raw-ref"
"""First item of an :func:`extract_sitemap_entry` tuple."""


def extract_sitemap_entry(element: Element, sitemap_url: str) -> tuple[str, str, str | None] | None:
    """A sitemapindex ``<sitemap>`` as ``(RAW_REF, url, lastmod)``, its lastmod the text as
    written ("" for an empty element, None for an absent one), or None without a usable
    location. :func:`finish_ref` makes the reference; ``read_sitemap_entry`` does both."""
    texts = _texts(element)
    loc = texts["loc"] if "loc" in texts else _bare_text(element)
    url = child_sitemap_url(loc, sitemap_url)
    if url is None:
        return None
    lastmod = (texts["lastmod"] or "") if "lastmod" in texts else None
    return (RAW_REF, url, lastmod)


def finish_ref(raw: tuple[Any, ...]) -> SitemapRef:
    """The sub-sitemap reference of an :func:`extract_sitemap_entry` tuple (lastmod normalised)."""
    return SitemapRef(url=raw[1], last_modified=normalize_date(raw[2]))


def read_sitemap_entry(element: Element, sitemap_url: str) -> SitemapRef | None:
    """A sitemapindex ``<sitemap>`` as a sub-sitemap reference."""
    raw = extract_sitemap_entry(element, sitemap_url)
    return None if raw is None else finish_ref(raw)


def finish_entry(raw: tuple[Any, ...], sitemap_url: str, every_link: bool = False) -> SitemapPage | SitemapRef:
    """The page or reference of an :func:`extract_url` or :func:`extract_sitemap_entry` tuple."""
    return finish_ref(raw) if raw[0] == RAW_REF else finish_page(raw, sitemap_url, every_link)


def _namespace(tag: str) -> str:
    """A tag's namespace as lxml writes it (``{uri}``), ``prefix:`` for a prefix that was
    not declared (such a tag is read as it is written), '' for none."""
    if tag[:1] == "{":
        return tag[: tag.index("}") + 1]
    return tag[: tag.find(":") + 1]


def _own_children(entry: Element) -> Iterator[tuple[str, Element]]:
    """The local name and element of each child of an RSS item or Atom entry that is one of
    its own fields: in the entry's namespace or in none. A child of another namespace is an
    extension (``media:title``, ``itunes:title``, an RSS item's ``atom:link``) and is left
    out, even when it comes first."""
    namespace = _namespace(entry.tag)
    for child in entry:
        tag = child.tag
        if type(tag) is str:
            child_namespace = _namespace(tag)
            if not child_namespace or child_namespace == namespace:
                yield local_name(tag), child


def _any_child_text(entry: Element, name: str) -> str | None:
    """The text of the first child of that local name, in any namespace (``dc:date``)."""
    return next((child.text for child in entry if local_name(child.tag) == name), None)


def read_rss_item(element: Element, sitemap_url: str) -> SitemapPage | None:
    """An RSS 2.0 ``<item>`` as a page whose news holds its title and date (its own
    ``pubDate``, else a ``dc:date``)."""
    link = guid = title = published = None
    guid_is_link = True
    for name, child in _own_children(element):
        if name == "link" and link is None:
            link = child.text
        elif name == "guid" and guid is None:
            guid = child.text
            guid_is_link = (child.get("isPermaLink") or "true").strip().lower() != "false"
        elif name == "title" and title is None:
            title = child.text
        elif name == "pubDate" and published is None:
            published = child.text
    if published is None:
        published = _any_child_text(element, "date")
    url = resolve_url(link, sitemap_url)
    if url is None and guid_is_link:
        url = resolve_url(guid, sitemap_url)
    if url is None:
        return None
    publish_date = normalize_date(published)
    return SitemapPage(
        url=url,
        sitemap_url=sitemap_url,
        last_modified=publish_date,
        news=NewsStory(title=clean_text(title), publish_date=publish_date),
    )


def _text_content(element: Element) -> str | None:
    """The text of an Atom text construct: as written for ``type="text"``; for ``"html"``
    the text the HTML shows (its tags left out, its character references read: RFC 4287
    3.1.1.2; Atom 0.3 ``mode="escaped"`` likewise); the text of the XHTML ``div`` for
    ``type="xhtml"`` (RFC 4287 3.1.1.3; Atom 0.3 ``mode="xml"``): every text below the
    element, in order."""
    if len(element):
        return "".join(element.itertext())
    text = element.text
    if text and (element.get("type") == "html" or element.get("mode") == "escaped"):
        import html  # here: the parse worker and the audit process import it only for such a title

        return html.unescape(_HTML_TAG.sub("", text))  # tags first: an escaped "&lt;" is text
    return text


_HTML_TAG = re.compile(r"<[^<>]*>")


_IANA_RELATIONS = "http://www.iana.org/assignments/relation/"
"""A relation's name written as an IRI in this registry is the same relation (RFC 4287 4.2.7.2)."""


def _is_alternate(rel: str | None) -> bool:
    """Whether an Atom link's ``rel`` is ``alternate`` (absent or empty: the default)."""
    name = (rel or "").strip()
    return not name or name.lower() == "alternate" or name == _IANA_RELATIONS + "alternate"


def read_atom_entry(element: Element, sitemap_url: str) -> SitemapPage | None:
    """An Atom 0.3/1.0 ``<entry>`` as a page whose news holds its title and date, or None
    without a ``rel="alternate"`` link (a link without rel is one, RFC 4287 4.2.7.2).

    Its other links (``self``, ``edit``, ``enclosure``...) are an API document, an edit
    URI, a media file: not its web page; nor is its ``id``, which "Atom Processors MUST
    NOT assume [...] can be dereferenced" (RFC 4287 4.2.6)."""
    href = None
    texts: dict[str, str | None] = {}
    for name, child in _own_children(element):
        if name == "link":
            if href is None and _is_alternate(child.get("rel")):
                href = child.get("href") or child.text
        elif name not in texts:
            texts[name] = _text_content(child)
    url = resolve_url(href, sitemap_url)
    if url is None:
        return None
    published = normalize_date(texts.get("published") or texts.get("issued"))
    updated = normalize_date(texts.get("updated") or texts.get("modified"))
    return SitemapPage(
        url=url,
        sitemap_url=sitemap_url,
        last_modified=updated or published,
        news=NewsStory(title=clean_text(texts.get("title")), publish_date=published or updated),
    )


def _by_root(*dialects: Dialect) -> dict[str, Dialect]:
    return {dialect.root: dialect for dialect in dialects}


DIALECTS: dict[str, Dialect] = _by_root(
    Dialect(NodeKind.XML_URLSET, "urlset", "{*}url", read_url, extract_url),
    Dialect(NodeKind.XML_INDEX, "sitemapindex", "{*}sitemap", read_sitemap_entry, extract_sitemap_entry),
    Dialect(NodeKind.RSS, "rss", "{*}item", read_rss_item),
    Dialect(NodeKind.ATOM, "feed", "{*}entry", read_atom_entry),
)
"""Root element local name → dialect."""

EVERY_LINK_DIALECTS: dict[str, Dialect] = {
    **DIALECTS,
    **_by_root(Dialect(NodeKind.XML_URLSET, "urlset", "{*}url", read_url_every_link, extract_url)),
}
"""The dialects for a reader whose pages keep every ``xhtml:link`` (the drop-in SitemapSpider)."""
