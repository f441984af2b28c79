"""The reader of one XML document: its root element, its entries a list at a time, and
whether it broke off (truncated) or is malformed (read again in recover mode)."""

from __future__ import annotations

import codecs
import functools
import re
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from lxml import etree

from sitemap_crawl.items import SitemapPage, SitemapRef
from sitemap_crawl.kinds import ErrorReason, NodeKind, with_detail
from sitemap_crawl.parsing.stream import UTF32_STARTS, StreamError
from sitemap_crawl.parsing.xml.entities import EntryReading
from sitemap_crawl.parsing.xml.feed_entries import read_atom_entry, read_rss_item
from sitemap_crawl.parsing.xml.input import WIDE_STARTS, push_parser_chunks, without_leading_space
from sitemap_crawl.parsing.xml.libxml import (
    EXTRA_CONTENT,
    Element,
    ElementFlood,
    EntryGap,
    RootNeeded,
    XmlProblem,
    checked_error,
    describe_error,
    drain,
    entry_ends,
    entry_events,
    entry_parser,
    error_after_namespace_errors,
    error_kept_back,
    is_namespace_error,
    is_resource_limit,
    local_name,
    parser_options,
    release,
    release_through,
)
from sitemap_crawl.parsing.xml.recover import read_recovering
from sitemap_crawl.parsing.xml.sitemap_entries import (
    extract_sitemap_entry,
    extract_url,
    read_sitemap_entry,
    read_url,
    read_url_every_link,
)

ROOT_SCAN_LIMIT = 1 << 20
"""Bytes of a document read at most to find its root element (a comment or DOCTYPE of
megabytes before it is no sitemap anyone writes)."""
NO_ROOT = f"no root element in the first {ROOT_SCAN_LIMIT >> 20} MiB"


FEED_SIZE = 32 * 1024
"""Bytes fed to lxml at a time: small feeds keep the unreleased part of the tree small (and fast)."""


@dataclass(frozen=True, slots=True)
class Dialect:
    """How one XML root element maps to a tree kind and an entry reader."""

    kind: str
    root: str
    """The root element's local name, lower case (how :func:`find_root_name` gives it)."""
    entry_tag: str
    read_entry: Callable[[Element, str], SitemapPage | SitemapRef | None]
    extract_entry: Callable[[Element, str], Any] | None = None
    """Reads an entry without normalising its fields (see :func:`.sitemap_entries.extract_url`), or None
    when the dialect has no such split; used by the parse worker, which leaves the
    normalising to the crawl process, and by ``SitemapReader.iter_with_texts``."""

    def reader(self, raw: bool) -> Callable[[Element, str], Any]:
        return self.extract_entry if raw and self.extract_entry is not None else self.read_entry


_ROOT_SCAN_STEP = 4096


def find_root_name(chunks: Iterator[bytes]) -> tuple[str | None, str | None, list[bytes]]:
    """Local name of the root element (as written), an error text if none was found, and the chunks read.

    Reads at most about 1 MiB; the chunks read are returned so the caller can
    feed them again to the real parser.
    """
    parser = etree.XMLPullParser(events=("start",), **parser_options(recover=True))
    seen: list[bytes] = []
    size = 0
    try:
        for chunk in push_parser_chunks(chunks):
            seen.append(chunk)
            for start in range(0, len(chunk), _ROOT_SCAN_STEP):
                parser.feed(chunk[start : start + _ROOT_SCAN_STEP])
                for _event, element in parser.read_events():
                    return local_name(_tag(element)), None, seen
            size += len(chunk)
            if size >= ROOT_SCAN_LIMIT:  # (a comment or DOCTYPE of megabytes before it)
                return None, NO_ROOT, seen
        else:
            parser.close()
            for _event, element in parser.read_events():
                return local_name(_tag(element)), None, seen
    except etree.XMLSyntaxError as exc:
        return None, with_detail(ErrorReason.PARSE_ERROR, str(exc)), seen
    except StreamError as exc:
        return None, exc.reason, seen
    return None, None, seen


def _tag(element: Any) -> object:
    return getattr(element, "tag", None)


HOLD_PIECES = 3
"""Pieces for which the entries are held back once a line number looks wrong (see
:func:`_entry_batches`): the error libxml2 kept to itself shows within the next one or two
(measured); a well-formed document with an entry longer than a piece only waits."""


def iter_entry_batches(
    make_chunks: Callable[[], Iterator[bytes]],
    dialect: Dialect,
    sitemap_url: str,
    raw: bool = False,
    root_name: str | None = None,
) -> Iterator[list[Any]]:
    """Pages or sub-sitemap references of one XML document, in document order, a non-empty
    list at a time: the entries of one fed piece (those read after an error, one a list), so
    that a consumer resumes the generator once a piece, not once an entry.

    ``make_chunks`` opens the (decompressed) document as a chunk stream; it is
    called a second time only for a malformed document, which is then read
    again in lxml's recover mode from the entry after the last good one.
    Raises XmlProblem (after yielding every good entry) when the document is
    truncated, over a limit or unreadable past some point. With ``raw``, urlset
    pages come as :func:`.sitemap_entries.extract_url` tuples (see :func:`.sitemap_entries.finish_page`).
    ``root_name``: the root's local name as written (:func:`find_root_name`), if not the dialect's.
    """
    try:
        yield from _entry_batches(make_chunks, dialect, sitemap_url, raw, root_name, root_aware=False)
    except RootNeeded:  # (raised before any entry ended: nothing was given yet)
        yield from _entry_batches(make_chunks, dialect, sitemap_url, raw, root_name, root_aware=True)


def _entry_batches(
    make_chunks: Callable[[], Iterator[bytes]],
    dialect: Dialect,
    sitemap_url: str,
    raw: bool,
    root_name: str | None,
    root_aware: bool,
) -> Iterator[list[Any]]:
    """:func:`iter_entry_batches`, with a parser that reports the root's start (``root_aware``:
    a document with many elements before its first entry ends, see :class:`EntryGap`) or not."""
    make_chunks = functools.partial(without_leading_space, make_chunks)
    produced = 0
    end = InputEnd()
    tail = b""  # the document's last bytes: does it end with its root's end tag?
    closing = False  # the whole body was fed
    root_name = root_name or dialect.root
    strict = entry_parser(dialect.entry_tag, root_name, recover=False, root_aware=root_aware)
    reading = EntryReading(dialect.reader(raw))
    gap = EntryGap(local_name(dialect.entry_tag), root_aware)
    last_line = 0  # the line of the last entry read (per piece)
    lines_fed = 0  # newlines fed so far
    held: list[Any] | None = None  # entries held back for a piece: their line numbers looked wrong
    given = 0  # entries produced before those held back
    pieces = held_at = 0  # pieces fed, and the one whose entries began the hold
    try:
        for chunk in make_chunks():
            end.fed(chunk)
            tail = chunk[-_TAIL_SIZE:] if len(chunk) >= _TAIL_SIZE else (tail + chunk)[-_TAIL_SIZE:]
            for start in range(0, len(chunk), FEED_SIZE):
                piece = chunk[start : start + FEED_SIZE]
                strict.feed(piece)
                lines_before_this = lines_fed
                lines_fed += piece.count(b"\n")
                entries: list[Any] = []
                last = None
                before = produced
                for _event, element in entry_events(strict, gap, root_aware):
                    last = element
                    produced += 1
                    entry = reading.read(element, sitemap_url)
                    if entry is not None:
                        entries.append(entry)
                if last is not None:
                    line = last.sourceline or 0
                    if held is None and (line < last_line or line <= lines_before_this):
                        # libxml2 may read past an error it kept to itself (``&nbsp;``) and give
                        # a later entry, its line wrong (before the piece just fed; an entry that
                        # began there looks the same): held back for HOLD_PIECES pieces, in
                        # which the error shows (recover mode then reads on in order) or not
                        held, given, held_at = [], before, pieces
                    last_line = max(last_line, line)
                    gap.entry_read(last)
                    release_through(last)
                if entries:
                    if held is None:
                        yield entries
                    else:
                        held += entries
                if held is not None and pieces >= held_at + HOLD_PIECES:  # no error since: a false alarm
                    if held:
                        yield held
                    held = None
                pieces += 1
                gap.fed(piece)  # (after: the entries of this piece are given before a flood stops it)
        closing = True  # (only what close() finds can be a cut: a piece fed is parsed as far as it is whole)
        strict.close()
    except StreamError as exc:
        drain(strict)
        if held is not None:
            produced = given
        if _stopped_before_the_cut(strict, end):
            # libxml2 stopped on an error before the body broke off (``&b``: it held the rest
            # unread, waiting for its ";"): recover mode reads on to the cut
            yield from one_a_list(
                read_recovering(make_chunks, dialect, sitemap_url, skip=produced, raw=raw, root_name=root_name)
            )
        elif held:
            yield held  # (no error before the cut: they were good)
        raise XmlProblem(exc.reason, str(exc)) from exc
    except ElementFlood as exc:
        if held:
            yield held
        raise XmlProblem(ErrorReason.PARSE_ERROR, str(exc)) from exc
    except etree.XMLSyntaxError as exc:
        message, position = str(exc), exc.position
        other = error_after_namespace_errors(strict)
        trusted = True  # what the parser built says where the error is
        if other is not None:  # lxml names the first error: say the one that matters
            message, position = describe_error(other), (other.line, other.column)
        elif error_kept_back(message, position) or is_namespace_error(strict):
            # libxml2 kept its error to itself (``&nbsp;``): a parser that builds nothing says it
            # (after such an error it may also say a prefix the root declares is not declared)
            found = checked_error(make_chunks())
            if found is not None:
                trusted = str(found) == message
                message, position = str(found), found.position
            if not trusted:  # what it built past the real error may be out of order (a later
                # entry given before the ones at the error, its line numbers wrong too): recover
                # mode gives every entry again (those given are repeats the per-sitemap dedup drops)
                produced = 0
        # entries completed before the error (in the same feed) are still good, unless the
        # error was not the one the parser said: what it built then may end an entry at the
        # error (recover mode reads them again)
        late: list[Any] = []
        for element in entry_ends(strict, gap):
            if trusted:
                produced += 1
                entry = reading.read(element, sitemap_url)
                if entry is not None:
                    late.append(entry)
            release(element)
        namespace_error = trusted and is_namespace_error(strict)  # (not: another error was the real one)
        stop: ErrorReason | None = None  # an error no recover pass reads past
        if is_resource_limit(message) or (message.startswith(EXTRA_CONTENT) and trusted):
            stop = ErrorReason.PARSE_ERROR  # (junk after the root: every entry was read)
        elif (
            closing
            and not namespace_error
            and "tag mismatch" not in message  # a cut never causes a tag mismatch
            and end.at_end(position)
            and not _closes_root(tail, dialect.root)  # an error near the end of a whole document
        ):
            stop = ErrorReason.TRUNCATED
        if stop is not None:
            for kept in (held or [], late):  # (what was held back was good)
                if kept:
                    yield kept
            raise XmlProblem(stop, message) from exc
        if held is not None:  # recover mode gives those held back (and those after) again, in order
            produced = min(produced, given)
        elif late:
            yield late
        recovered = yield from one_a_list(
            read_recovering(make_chunks, dialect, sitemap_url, skip=produced, raw=raw, root_name=root_name)
        )
        if recovered.stream_error is not None:  # the body also broke off (size limit, cut gzip): say that
            raise XmlProblem(recovered.stream_error.reason, str(recovered.stream_error)) from exc
        if namespace_error and recovered.only_namespace_errors:
            return  # a prefix not declared (xmlns:image left out...): every entry was read
        raise XmlProblem(ErrorReason.PARSE_ERROR, message) from exc
    if held:
        yield held  # (no error showed: a false alarm)
    for element in entry_ends(strict, gap):
        entry = reading.read(element, sitemap_url)
        if entry is not None:
            yield [entry]


def _stopped_before_the_cut(parser: etree.XMLPullParser, end: InputEnd) -> bool:
    """Whether a strict parser whose input broke off (a size limit, a cut gzip stream) had met
    an error before the cut: closed, it names one that is not at the end of what it was fed."""
    try:
        parser.close()
    except etree.XMLSyntaxError as error:
        return not end.at_end(error.position or (0, 0))
    return False


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


_NOT_UTF8_CONTINUATION = bytes(range(0x80)) + bytes(range(0xC0, 0x100))


class InputEnd:
    """Where the input fed to a parser so far ends, as libxml2 counts lines and columns (a
    column in characters): whether an error's position is at that end, where a body that
    broke off makes its error."""

    __slots__ = ("_width", "last_line_length", "lines")

    def __init__(self) -> None:
        self.lines = 1
        self.last_line_length = 0
        self._width: int | None = None  # bytes a character: 2 in UTF-16, 4 in UTF-32, else UTF-8's count

    def fed(self, chunk: bytes) -> None:
        """``chunk`` was fed after the rest."""
        if self._width is None:
            self._width = _char_width(chunk)
        newline = chunk.rfind(b"\n")  # (in UTF-16 a newline's byte is there as well)
        if newline < 0:
            self.last_line_length += _char_count(chunk, self._width)
        else:
            self.lines += chunk.count(b"\n")
            self.last_line_length = _char_count(chunk[newline + 1 :], self._width)

    def at_end(self, position: tuple[int, int]) -> bool:
        """Whether a syntax error (its line and column) sits at the very end of the input (a
        cut document), within ``_END_SLACK`` characters."""
        line, column = position
        return line >= self.lines and column >= self.last_line_length - _END_SLACK


def _char_width(head: bytes) -> int:
    """Bytes a character of a document that starts with ``head``: 4 in UTF-32, 2 in UTF-16
    (by their byte order mark, or the NUL bytes around the first ``<``), else 1 (UTF-8 and
    single-byte encodings: :func:`_char_count` leaves UTF-8's continuation bytes out)."""
    if head.startswith((*UTF32_STARTS, codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return 4
    return 2 if head[:2] in WIDE_STARTS else 1


def _char_count(data: bytes, width: int) -> int:
    """Characters in ``data`` (UTF-8 continuation bytes do not count; UTF-16 is two bytes
    a character, UTF-32 four), so that a cut inside non-ASCII text is still seen at the end."""
    if width > 1:
        return len(data) // width
    return len(data) - len(data.translate(None, _NOT_UTF8_CONTINUATION))


def _closes_root(tail: bytes, root: str) -> bool:
    """Whether a document's last bytes are its root's end tag (then only comments, PIs or
    whitespace): it did not break off, whatever libxml2 found wrong near its end (the
    message does not tell: a raw ``&b`` and a body cut at ``&a`` both give "EntityRef")."""
    markup = tail.replace(b"\x00", b"")  # UTF-16 and UTF-32: the markup is ASCII
    end_tag = rb"</(?:[^\s<>/:]+:)?" + re.escape(root.encode()) + rb"\s*>(?:\s|<!--.*?-->|<\?.*?\?>)*\Z"
    return re.search(end_tag, markup, re.IGNORECASE | re.DOTALL) is not None


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
