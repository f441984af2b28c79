"""A malformed document read again in lxml's recover mode, the stray ``&`` and ``<`` that
generators leave in text escaped first so that the entries keep their exact values."""

from __future__ import annotations

import codecs
import contextlib
import itertools
import re
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lxml import etree

from sitemap_crawl.kinds import ErrorReason
from sitemap_crawl.parsing.stream import StreamError
from sitemap_crawl.parsing.xml.balance import INTERNAL_SUBSET_END, SECTION_ENDS, TagBalancer
from sitemap_crawl.parsing.xml.entities import EntryReading
from sitemap_crawl.parsing.xml.input import (
    DECLARATION_MAX,
    WIDE_STARTS,
    declared_encoding,
    is_utf8,
    wide_declaration,
)
from sitemap_crawl.parsing.xml.libxml import (
    Element,
    ElementFlood,
    EntryGap,
    RootNeeded,
    XmlProblem,
    entry_ends,
    entry_events,
    entry_parser,
    first_error,
    local_name,
    release,
)

if TYPE_CHECKING:
    from sitemap_crawl.parsing.xml.document import Dialect


@dataclass(frozen=True, slots=True)
class Recovered:
    """How a read in recover mode went."""

    stream_error: StreamError | None
    """What stopped the input early (a size limit, a broken gzip stream), if anything."""
    only_namespace_errors: bool
    """libxml2 found nothing wrong but namespace errors (such as a prefix not declared),
    which it reads past without losing anything."""


def read_recovering(
    make_chunks: Callable[[], Iterator[bytes]],
    dialect: Dialect,
    sitemap_url: str,
    skip: int,
    raw: bool = False,
    root_name: str | None = None,
) -> Generator[Any, None, Recovered]:
    """Read a malformed document again in recover mode, skipping ``skip`` entries.

    Unescaped ``&`` and ``<`` in text are escaped first (see :func:`_repair_markup`),
    so such entries keep their exact values. An entry that lxml closes only because
    the input ran out (the document ends inside it) is not given: its values may be cut.
    """
    try:
        return (yield from _recovering(make_chunks, dialect, sitemap_url, skip, raw, root_name, root_aware=False))
    except RootNeeded:  # (raised before any entry ended: nothing was given yet)
        return (yield from _recovering(make_chunks, dialect, sitemap_url, skip, raw, root_name, root_aware=True))


def _recovering(
    make_chunks: Callable[[], Iterator[bytes]],
    dialect: Dialect,
    sitemap_url: str,
    skip: int,
    raw: bool,
    root_name: str | None,
    root_aware: bool,
) -> Generator[Any, None, Recovered]:
    """:func:`read_recovering`, with a parser that reports the root's start or not (see EntryGap)."""
    parser = entry_parser(dialect.entry_tag, root_name or dialect.root, recover=True, root_aware=root_aware)
    reading = EntryReading(dialect.reader(raw))
    gap = EntryGap(local_name(dialect.entry_tag), root_aware=root_aware)
    seen = 0
    stream_error: StreamError | None = None
    ends_cleanly = True
    balancer = TagBalancer()
    try:
        for chunk in balancer.mend(_repair_markup(_escape_bytes_not_utf8(make_chunks()))):
            stripped = chunk.rstrip(_TAIL_SPACE)
            if stripped:
                ends_cleanly = stripped.endswith(b">")
            for start in range(0, len(chunk), RECOVER_FEED_SIZE):
                piece = chunk[start : start + RECOVER_FEED_SIZE]
                parser.feed(piece)
                last = None
                for _event, element in entry_events(parser, gap, root_aware):
                    seen += 1
                    if seen > skip:
                        entry = reading.read(element, sitemap_url)
                        if entry is not None:
                            yield entry
                    release(element)
                    last = element
                if last is not None:
                    gap.entry_read(last)
                gap.fed(piece)
    except StreamError as exc:
        stream_error = exc
    except ElementFlood as exc:
        raise XmlProblem(ErrorReason.PARSE_ERROR, str(exc)) from exc
    with contextlib.suppress(etree.XMLSyntaxError):
        parser.close()
    if stream_error is None:
        held: Element | None = None  # the last element may be one the cut left open
        for element in entry_ends(parser, gap):
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
    nothing_else = first_error(parser.feed_error_log, namespace=False) is None and not balancer.mended
    return Recovered(stream_error, nothing_else and ends_cleanly)


_TAIL_SPACE = b" \t\r\n\x00"
RECOVER_FEED_SIZE = 256 * 1024
"""Bytes fed to the recover parser at a time (what it builds is looked at between feeds)."""


_MAYBE_SURROGATE = rb"&#(?:x0*([dD][89a-fA-F][0-9a-fA-F]{2})|0*(5[5-7][0-9]{3}));"
"""A character reference that may name a surrogate (hexadecimal or decimal: groups 1 and 2;
:func:`_reference_value` says which character it names)."""
_MARKUP_FIX = re.compile(
    _MAYBE_SURROGATE + rb"|&(?:(amp|lt|gt|quot|apos);|(?!#[0-9]{1,8};|#x[0-9a-fA-F]{1,8};))|<(?![A-Za-z_:/!?\x80-\xff])"
)
"""What the repair rewrites: a reference that may name a surrogate, one of the five predefined
entities (group 3), an ``&`` that begins no reference, a ``<`` that begins no markup."""
_SURROGATE_REFERENCE = re.compile(_MAYBE_SURROGATE)
"""The second reference of what may be a surrogate pair."""
_SURROGATES = range(0xD800, 0xE000)
_LOW_SURROGATES = range(0xDC00, 0xE000)


_CHARACTER_REFERENCES = {b"amp": b"&#38;", b"lt": b"&#60;", b"gt": b"&#62;", b"quot": b"&#34;", b"apos": b"&#39;"}


_VERBATIM_START = re.compile(rb"<!\[CDATA\[|<!--|<\?|<!DOCTYPE[^>\[]*\[")
"""Where a section the repair leaves as it is begins: CDATA, a comment, a processing
instruction, a DOCTYPE's internal subset (whose texts may mention ``<![CDATA[`` or ``<!--``
without beginning one)."""


_REPAIR_LOOKAHEAD = 32
"""Bytes held back after each piece repaired, so that a reference (or a pair of them) that
begins in it is seen whole."""


_BYTE_NOT_UTF8 = re.compile("[\udc80-\udcff]")
"""A byte that is not UTF-8, as the ``surrogateescape`` error handler decodes it."""


def _escape_bytes_not_utf8(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """In a UTF-8 document (so declared, or by default), each byte that is not UTF-8 as ``%XX``.

    Recover mode reads such a byte as U+FFFD: a URL ``caf\ufffd`` that names no page. ``%E9``
    is the byte the server meant, as a text sitemap's URL keeps it. A document in another
    encoding, or whose XML declaration does not end in its first KiB, passes unchanged.
    Chunks that are UTF-8 pass as they are (a character cut at a chunk's end goes with the
    next); only a chunk with a byte that is not is decoded and written again."""
    head = b""
    cut: StreamError | None = None  # (the stream broke off before the head was whole: what came is read)
    try:
        for chunk in chunks:
            head += chunk
            if len(head) >= DECLARATION_MAX:
                break
    except StreamError as exc:
        cut, chunks = exc, iter(())
    if not head:
        pass
    elif not _utf8_document(head):
        yield head
        yield from chunks
    else:
        yield from _escaped_chunks(itertools.chain((head,), chunks))
    if cut is not None:
        raise cut


def _escaped_chunks(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """The chunks of a UTF-8 document, each byte that is not UTF-8 as ``%XX``."""
    check = codecs.getincrementaldecoder("utf-8")()
    held = b""  # the start of a character that a chunk's end cut (not given yet)
    for chunk in chunks:
        try:
            check.decode(chunk)
        except UnicodeDecodeError:
            escaping = codecs.getincrementaldecoder("utf-8")("surrogateescape")
            text = escaping.decode(held + chunk)
            held = escaping.getstate()[0]
            check = codecs.getincrementaldecoder("utf-8")()
            check.setstate((held, 0))
            yield _escaped(text)
            continue
        now_held = check.getstate()[0]
        data = held + chunk if held else chunk
        yield data[: len(data) - len(now_held)] if now_held else data
        held = now_held
    if held:
        yield _escaped(held.decode("utf-8", "surrogateescape"))


def _utf8_document(head: bytes) -> bool:
    """Whether a document whose first bytes are ``head`` is UTF-8: by its byte order mark, or
    its XML declaration (ended in ``head``), or by default (none)."""
    text = head[:DECLARATION_MAX].removeprefix(codecs.BOM_UTF8).lstrip(b" \t\r\n")  # (however it came cut)
    if text.startswith(b"<?xml") and b"?>" not in text:
        return False  # (a declaration longer than that: not known, left alone)
    return is_utf8(wide_declaration(head) or declared_encoding(head))


def _escaped(text: str) -> bytes:
    if _BYTE_NOT_UTF8.search(text) is not None:
        text = _BYTE_NOT_UTF8.sub(lambda byte: f"%{ord(byte[0]) - 0xDC00:02X}", text)
    return text.encode("utf-8")


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
    section = _Section()
    pending = b""
    first = True
    try:
        for chunk in chunks:
            if first:
                first = False
                if chunk[:2] in WIDE_STARTS:
                    yield chunk
                    yield from chunks
                    return
            data = pending + chunk
            limit = len(data) - _REPAIR_LOOKAHEAD
            if limit <= 0:
                pending = data
                continue
            repaired, consumed = _escape_markup(data, limit, section)
            pending = data[consumed:]
            yield repaired
    except StreamError:
        if pending:  # the body broke off: the bytes held back were still read
            yield _escape_markup(pending, len(pending), section)[0]
        raise
    if pending:
        yield _escape_markup(pending, len(pending), section)[0]


def _reference_value(match: re.Match[bytes]) -> int:
    hexadecimal, decimal = match.group(1, 2)
    return int(hexadecimal, 16) if hexadecimal is not None else int(decimal)


def _surrogate_pair(data: bytes, match: re.Match[bytes]) -> tuple[bytes, int]:
    """The reference ``match`` found, as libxml2 can read it, and where the data after it
    begins. Generators that write UTF-16 code units (``&#xD83D;&#xDE00;`` for U+1F600) name
    surrogates, which XML forbids: libxml2 reads on in recover mode but keeps bytes that are
    no UTF-8, and the entries after it were lost. A pair becomes the character it encodes,
    a lone surrogate U+FFFD; a reference to any other character is left as it is."""
    value = _reference_value(match)
    if value not in _SURROGATES:
        return match.group(0), match.end()
    if value < _LOW_SURROGATES.start:
        low = _SURROGATE_REFERENCE.match(data, match.end())
        if low is not None and (low_value := _reference_value(low)) in _LOW_SURROGATES:
            character = 0x10000 + ((value - 0xD800) << 10) + (low_value - 0xDC00)
            return b"&#x%X;" % character, low.end()
    return b"&#xFFFD;", match.end()


class _Section:
    """The section the repair leaves as it is (CDATA, a comment...) that it is inside, if any."""

    __slots__ = ("closer", "size")

    def __init__(self) -> None:
        self.closer: bytes | None = None
        """What ends it (None: outside any)."""
        self.size = 0
        """Its bytes given so far."""

    def give(self, pieces: list[bytes], text: bytes) -> None:
        """Its ``text``, but past MAX_SECTION bytes: libxml2 gives up on a longer one (its 10 MB
        limit) and recover mode read on from inside it (a CDATA's ``]]>`` became a loc ``]>``,
        the page after it lost); cut, the section ends where it should."""
        room = MAX_SECTION - self.size
        if room > 0:
            pieces.append(text[:room])
        self.size += len(text)


MAX_SECTION = 9_000_000
"""Bytes of a CDATA section, comment or processing instruction given to the recover parser
(libxml2's limit: 10,000,000)."""


def _escape_markup(data: bytes, limit: int, section: _Section) -> tuple[bytes, int]:
    """``data`` repaired from its start to at least ``limit`` (the bytes after it serve
    as lookahead), and how far it went; ``section`` says whether it starts (and ends) inside
    a CDATA section or comment."""
    pieces: list[bytes] = []
    position = 0
    while position < limit:
        if section.closer is not None:
            closer = section.closer
            end = data.find(closer, position)
            if end < 0 or end >= limit:
                section.give(pieces, data[position:limit])
                position = limit
                break
            section.give(pieces, data[position:end])
            pieces.append(closer)
            position, section.closer = end + len(closer), None
            continue
        verbatim = _VERBATIM_START.search(data, position, limit + _REPAIR_LOOKAHEAD)
        start = verbatim.start() if verbatim is not None else -1
        stop = limit if start < 0 or start >= limit else start
        last = position
        for match in _MARKUP_FIX.finditer(data, position, min(len(data), stop + _REPAIR_LOOKAHEAD)):
            if match.start() >= stop:
                break
            if match.start() < last:
                continue  # (the second of a surrogate pair, already written)
            pieces.append(data[last : match.start()])
            last = match.end()
            hexadecimal, decimal, name = match.group(1, 2, 3)
            if hexadecimal is not None or decimal is not None:
                reference, last = _surrogate_pair(data, match)
                pieces.append(reference)
            elif name is not None:
                pieces.append(_CHARACTER_REFERENCES[name])
            else:
                pieces.append(b"&#38;" if data[match.start()] == 0x26 else b"&#60;")
        pieces.append(data[last:stop])
        position = max(stop, last)  # a reference that began before ``stop`` may end after it
        if stop == start and verbatim is not None:
            pieces.append(verbatim.group(0))
            position = verbatim.end()
            section.closer = SECTION_ENDS.get(verbatim.group(0), INTERNAL_SUBSET_END)
            section.size = 0
    return b"".join(pieces), position
