"""One entry point for every sitemap body: sniff it, then stream its entries."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from sitemap_crawl.default_settings import SITEMAP_CRAWL_MAX_INDEX_CHILDREN, SITEMAP_CRAWL_MAX_SIZE
from sitemap_crawl.items import SitemapPage, SitemapRef
from sitemap_crawl.kinds import ErrorReason, NodeKind, with_detail
from sitemap_crawl.parsing import robots, text
from sitemap_crawl.parsing.fields import same_url_key
from sitemap_crawl.parsing.hashset import HashSet, url_hashes
from sitemap_crawl.parsing.stream import Body, BodyFormat, FileBody, StreamError, decoded_stream, leading_text
from sitemap_crawl.parsing.xml.document import (
    DIALECTS,
    EVERY_LINK_DIALECTS,
    Dialect,
    find_root_name,
    iter_entry_batches,
    one_a_list,
)
from sitemap_crawl.parsing.xml.libxml import ELEMENT_FLOOD, XmlProblem, is_resource_limit
from sitemap_crawl.parsing.xml.recover import read_recovering
from sitemap_crawl.parsing.xml.sitemap_entries import finish_entry

ROBOTS_TXT = NodeKind.ROBOTS_TXT
TEXT = NodeKind.TEXT
XML_INDEX = NodeKind.XML_INDEX
INVALID = NodeKind.INVALID
NOT_A_SITEMAP = ErrorReason.NOT_A_SITEMAP
SIZE_LIMIT = ErrorReason.SIZE_LIMIT
PARSE_ERROR = ErrorReason.PARSE_ERROR
"""Short names of the kinds and reasons the reader gives (:mod:`sitemap_crawl.kinds`)."""

DEFAULT_MAX_SIZE = SITEMAP_CRAWL_MAX_SIZE
PROTOCOL_MAX_CHILDREN = SITEMAP_CRAWL_MAX_INDEX_CHILDREN


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds applied to one sitemap body."""

    max_size: int = DEFAULT_MAX_SIZE
    """Decompressed bytes read from one body; the rest is cut with error "size limit"."""
    max_index_children: int = PROTOCOL_MAX_CHILDREN
    """Sub-sitemaps taken from one index (or robots.txt); the protocol allows 50,000."""
    max_line_length: int = text.MAX_LINE_LENGTH
    """Longest text-sitemap line considered; longer lines are skipped and reported."""
    max_gzip_layers: int = 3
    """Nested gzip layers undone (gzip inside gzip happens on misconfigured servers)."""


DEFAULT_LIMITS = Limits()

_LINE_MEMO_BYTES = 4 << 20
"""Text-sitemap lines remembered to skip repeats cheaply (about this many bytes)."""
_LXML_VALUE_ERRORS = (ValueError, LookupError)
"""What lxml raises besides syntax errors on hostile bytes: reading a name or text that
recover mode kept as invalid UTF-8 (``&#xD800;``) raises UnicodeDecodeError; an unknown
encoding, LookupError. The entries before are kept and the node gets "parse error"."""


_LIST_SIZE = 1024
"""Entries of a text sitemap or robots.txt taken at a time (an XML document's come a fed piece
at a time)."""


def in_lists(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    """``items`` in lists of ``size`` (the last one shorter), read as they are needed."""
    source = iter(items)
    while batch := list(itertools.islice(source, size)):
        yield batch


class SitemapReader:
    """Streaming reader of one fetched body (sitemap or robots.txt).

    ``kind`` is known once the reader is made (a tree kind: ``xml_urlset``,
    ``xml_index``, ``rss``, ``atom``, ``text``, ``robots_txt`` or ``invalid``).
    Iterating yields pages (urlset, RSS, Atom, text) or sub-sitemap references
    (index, robots.txt) in document order, each page or reference only once.
    After iteration ``error`` says why the body was not read to its end (or why
    it is invalid) and ``kind`` may have become ``invalid`` (a text body with no
    URL at all). ``detail`` has the parser's own words for the log.
    With ``every_link``, a page's ``alternates`` hold every ``xhtml:link`` that has
    an href, not only the hreflang alternates (Scrapy's meaning of ``alternate``).
    """

    def __init__(
        self,
        body: Body,
        url: str,
        *,
        is_robots: bool = False,
        limits: Limits = DEFAULT_LIMITS,
        every_link: bool = False,
    ):
        if not isinstance(body, bytes | bytearray | memoryview | FileBody):
            raise TypeError(f"a sitemap's body is bytes (as downloaded), not {type(body).__name__}")
        self.url = url
        self.every_link = every_link
        self.limits = limits
        self.body = body
        self.error: str | None = None
        self.detail: str | None = None
        self.entry_count = 0
        self._format, self._head, _ = decoded_stream(body, limits.max_size, limits.max_gzip_layers)
        self._dialect: Dialect | None = None
        self._root_name: str | None = None
        """The root element's local name as written (the XML reader's filter needs it)."""
        if is_robots:
            self.kind: str = ROBOTS_TXT
        elif self._format is BodyFormat.XML:
            self.kind = self._sniff_xml()
        elif self._format is BodyFormat.TEXT:
            self.kind = TEXT
        else:
            self.kind = INVALID
            self.error = NOT_A_SITEMAP
            self.detail = "empty body" if self._format is BodyFormat.EMPTY else "undecodable body"
            if self._format is BodyFormat.EMPTY:
                # no byte came out because the gzip stream is corrupt or cut: say so
                try:
                    for _chunk in self._chunks():
                        pass
                except StreamError as exc:
                    self.error = exc.reason if exc.reason == SIZE_LIMIT else PARSE_ERROR
                    self.detail = str(exc)

    def _chunks(self) -> Iterator[bytes]:
        return decoded_stream(self.body, self.limits.max_size, self.limits.max_gzip_layers)[2]

    def _sniff_xml(self) -> str:
        try:
            self._root_name, problem, _ = find_root_name(self._chunks())
        except _LXML_VALUE_ERRORS as exc:
            self._root_name, problem = None, f"{type(exc).__name__}: {exc}"
        root = self._root_name  # (XML names are case-sensitive: <URLSET> is no urlset)
        dialects = EVERY_LINK_DIALECTS if self.every_link else DIALECTS
        if root is not None and root in dialects:
            self._dialect = dialects[root]
            return self._dialect.kind
        if root is not None:
            self.error, self.detail = NOT_A_SITEMAP, f"root element <{root}>"
        elif leading_text(self._head).lower().startswith(("<!doctype html", "<html")):
            # HTML that lxml cannot read as XML at all (lower-case doctype, unquoted attributes)
            self.error, self.detail = NOT_A_SITEMAP, "an HTML page"
        elif problem is not None and problem.startswith(SIZE_LIMIT):
            self.error, self.detail = SIZE_LIMIT, "no root element within the size cap"
        else:
            self.error, self.detail = PARSE_ERROR, problem or "no root element"
        return INVALID

    def __iter__(self) -> Iterator[SitemapPage | SitemapRef]:
        return self._entries(raw=False)

    def iter_raw(self) -> Iterator[Any]:
        """Like iterating, but urlset pages and index entries come as
        :func:`~sitemap_crawl.parsing.xml.sitemap_entries.extract_url` / ``extract_sitemap_entry`` tuples, their
        fields not yet normalised (:func:`~sitemap_crawl.parsing.xml.sitemap_entries.finish_entry` does that):
        the parse worker leaves that part to the crawl process."""
        return self._entries(raw=True)

    def iter_with_texts(self) -> Iterator[tuple[SitemapPage | SitemapRef, tuple[Any, ...] | None]]:
        """Like iterating, each entry paired with the texts it was read from: its
        :meth:`iter_raw` tuple for urlset pages and index entries, None for the other kinds
        (RSS, Atom, text, robots.txt). Costs what iterating costs."""
        every_link = self.every_link
        url = self.url
        for entry in self._entries(raw=True):
            if type(entry) is tuple:
                yield finish_entry(entry, url, every_link), entry
            else:
                yield entry, None

    def iter_raw_batches(self) -> Iterator[list[Any]]:
        """:meth:`iter_raw` a list at a time (the entries of one piece of the document):
        what the parse worker reads, resumed once a list rather than once an entry."""
        return self._entry_batches(raw=True)

    def _entries(self, raw: bool) -> Iterator[Any]:
        for batch in self._entry_batches(raw):
            yield from batch

    def _entry_batches(self, raw: bool) -> Iterator[list[Any]]:
        if self.kind == INVALID:
            return
        if self.kind == ROBOTS_TXT:
            batches: Iterator[list[Any]] = in_lists(self._robots_entries(), _LIST_SIZE)
        elif self.kind == TEXT:
            batches = in_lists(self._text_entries(), _LIST_SIZE)
        else:
            batches = self._xml_entry_batches(raw)
        seen = HashSet(initial_slots=16)  # hashes, not strings: see parsing/hashset.py
        is_index = self.kind in (ROBOTS_TXT, XML_INDEX)
        max_children = self.limits.max_index_children
        for batch in batches:
            urls = [entry[1] if type(entry) is tuple else entry.url for entry in batch]
            # a page written two ways is one (same_url_key; isascii: the hot path); a sub-sitemap
            # is compared as written here, by the discovery once follow/deny have chosen
            if not is_index:
                urls = [url if url.isascii() else same_url_key(url) for url in urls]
            held = seen.add_many(url_hashes(urls))  # (a URL twice in one batch: its second is held)
            if held:
                repeated = set(held)
                batch = [entry for position, entry in enumerate(batch) if position not in repeated]
                if not batch:
                    continue
            if is_index and self.entry_count + len(batch) > max_children:
                room = max_children - self.entry_count
                if room > 0:
                    self.entry_count += room
                    yield batch[:room]
                self.error = SIZE_LIMIT
                self.detail = f"more than {max_children} sub-sitemaps; the rest is ignored"
                return
            self.entry_count += len(batch)
            yield batch
        if self.entry_count == 0 and self.error == SIZE_LIMIT:
            # nothing was read before the cap: an invalid node, not an empty sitemap
            self.kind = INVALID
        elif self.kind == TEXT and self.entry_count == 0:
            if self.error is not None:
                self.detail = f"no URL line ({self.error}: {self.detail})"
            else:
                self.detail = "no URL line"
            self.kind, self.error = INVALID, NOT_A_SITEMAP

    def _xml_entry_batches(self, raw: bool) -> Iterator[list[Any]]:
        assert self._dialect is not None
        try:
            yield from self._xml_entry_batches_or_problem(raw)
        except _LXML_VALUE_ERRORS as exc:
            self.error, self.detail = PARSE_ERROR, f"{type(exc).__name__}: {exc}"

    def _xml_entry_batches_or_problem(self, raw: bool) -> Iterator[list[Any]]:
        assert self._dialect is not None
        try:
            yield from iter_entry_batches(self._chunks, self._dialect, self.url, raw, self._root_name)
        except XmlProblem as problem:
            self.error = problem.reason
            self.detail = problem.detail
            if problem.reason == PARSE_ERROR:
                limit = _resource_limit_name(problem.detail)
                if limit is not None:
                    self.error = with_detail(PARSE_ERROR, limit)
                if is_resource_limit(problem.detail):
                    # One of libxml2's limits (a text node over 10 MB, nesting deeper than
                    # 256...) stopped the strict parser, which may drop the good entries it
                    # had parsed just before. Read again in recover mode: the entries already
                    # given are skipped by __iter__ (same URL), and recover mode sometimes
                    # reads on past the problem.
                    yield from one_a_list(
                        read_recovering(
                            self._chunks, self._dialect, self.url, skip=0, raw=raw, root_name=self._root_name
                        )
                    )

    def _text_entries(self) -> Iterator[SitemapPage]:
        # Lines already handled are skipped before any work: a gzip bomb of one line
        # repeated millions of times costs a set lookup per line. The memo of lines
        # stops growing after _LINE_MEMO_BYTES, so it stays small.
        handled: set[bytes] = set()
        memo_bytes = 0
        try:
            for line in text.iter_lines(text.utf8_chunks(self._chunks(), self._head), self.limits.max_line_length):
                if line is None:
                    self.error = PARSE_ERROR
                    self.detail = f"skipped a line longer than {self.limits.max_line_length} bytes"
                    continue
                if line in handled:
                    continue
                if memo_bytes < _LINE_MEMO_BYTES:
                    handled.add(line)
                    memo_bytes += len(line) + 64
                page = text.page_from_line(line, self.url)
                if page is not None:
                    yield page
        except StreamError as exc:
            self.error, self.detail = exc.reason, str(exc)

    def _robots_entries(self) -> Iterator[SitemapRef]:
        # Streamed line by line: a robots.txt of tens of MB (or one 50 MB line) costs no
        # more memory than its body; lines over max_line_length are skipped.
        if self._format is BodyFormat.EMPTY:
            return
        head = robots.decode_robots(self._head)
        if robots.looks_like_html(head):
            self.kind, self.error, self.detail = INVALID, NOT_A_SITEMAP, "robots.txt is an HTML page"
            return
        if robots.looks_like_binary(head):
            self.kind, self.error, self.detail = INVALID, NOT_A_SITEMAP, "robots.txt is not text"
            return
        try:
            lines = robots.iter_robots_lines(self._chunks(), self.limits.max_line_length)
            for url in robots.iter_sitemap_urls(lines, self.url):
                yield SitemapRef(url=url)
        except StreamError as exc:
            self.error, self.detail = exc.reason, str(exc)


_RESOURCE_LIMITS = (
    ("text node too long", "text node over 10 MB"),
    ("excessive depth", "elements nested deeper than 256"),
    ("amplification", "entity expansion"),
    ("buffer size limit", "markup over 10 MB"),
    ("too big found", "markup over 10 MB"),  # (a comment, CDATA section or processing instruction)
    ("resource limit", "resource limit"),
    (ELEMENT_FLOOD, ELEMENT_FLOOD),  # (ours: see EntryGap)
)


def _resource_limit_name(message: str) -> str | None:
    """A short name for a libxml2 limit message (None for an ordinary syntax error)."""
    lowered = message.lower()
    for needle, name in _RESOURCE_LIMITS:
        if needle in lowered:
            return name
    return None


@dataclass(slots=True)
class ParsedSitemap:
    """A whole sitemap read at once: see :func:`parse_sitemap`."""

    url: str
    kind: str
    pages: list[SitemapPage] = field(default_factory=list)
    sub_sitemaps: list[str] = field(default_factory=list)
    error: str | None = None


def parse_sitemap(body: bytes, url: str, *, is_robots: bool = False, limits: Limits = DEFAULT_LIMITS) -> ParsedSitemap:
    """Parse one sitemap (or robots.txt) body with the spider's sniffing and limits.

    Returns its tree kind, its pages (the items the spider yields), the URLs of
    the sub-sitemaps it declares and the error the spider would record for it.
    Nothing is fetched.
    """
    reader = SitemapReader(body, url, is_robots=is_robots, limits=limits)
    result = ParsedSitemap(url=url, kind=reader.kind)
    for entry in reader:
        if isinstance(entry, SitemapPage):
            result.pages.append(entry)
        else:
            result.sub_sitemaps.append(entry.url)
    result.kind = reader.kind
    result.error = reader.error
    return result
