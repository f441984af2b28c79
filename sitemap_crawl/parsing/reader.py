"""One entry point for every sitemap body: sniff it, then stream its entries."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from sitemap_crawl.items import SitemapPage, SitemapRef
from sitemap_crawl.parsing import robots, text
from sitemap_crawl.parsing.stream import BodyFormat, StreamError, decoded_stream
from sitemap_crawl.parsing.xml import DIALECTS, Dialect, XmlProblem, find_root_name, iter_entries

ROBOTS_TXT = "robots_txt"
TEXT = "text"
INVALID = "invalid"
NOT_A_SITEMAP = "not a sitemap"

DEFAULT_MAX_SIZE = 100 * 1024 * 1024
PROTOCOL_MAX_CHILDREN = 50_000


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


class SitemapReader:
    """Streaming reader of one fetched body (sitemap or robots.txt).

    ``kind`` is known once the reader is made (a tree kind: ``xml_urlset``,
    ``xml_index``, ``rss``, ``atom``, ``text``, ``robots_txt`` or ``invalid``).
    Iterating yields pages (urlset, RSS, Atom, text) or sub-sitemap references
    (index, robots.txt) in document order, each page or reference only once.
    After iteration ``error`` says why the body was not read to its end (or why
    it is invalid) and ``kind`` may have become ``invalid`` (a text body with no
    URL at all). ``detail`` has the parser's own words for the log.
    """

    def __init__(self, body: bytes, url: str, *, is_robots: bool = False, limits: Limits = DEFAULT_LIMITS):
        self.url = url
        self.limits = limits
        self.body = body
        self.error: str | None = None
        self.detail: str | None = None
        self.entry_count = 0
        self._format, self._head, _ = decoded_stream(body, limits.max_size, limits.max_gzip_layers)
        self._dialect: Dialect | None = None
        if is_robots:
            self.kind = ROBOTS_TXT
        elif self._format is BodyFormat.XML:
            self.kind = self._sniff_xml()
        elif self._format is BodyFormat.TEXT:
            self.kind = TEXT
        else:
            self.kind = INVALID
            self.error = NOT_A_SITEMAP
            self.detail = "empty body" if self._format is BodyFormat.EMPTY else "undecodable body"

    def _chunks(self) -> Iterator[bytes]:
        return decoded_stream(self.body, self.limits.max_size, self.limits.max_gzip_layers)[2]

    def _sniff_xml(self) -> str:
        root, problem, _ = find_root_name(self._chunks())
        if root is not None and root in DIALECTS:
            self._dialect = DIALECTS[root]
            return self._dialect.kind
        if root is not None:
            self.error, self.detail = NOT_A_SITEMAP, f"root element <{root}>"
        elif problem is not None and problem.startswith("size limit"):
            self.error, self.detail = "size limit", "no root element within the size cap"
        else:
            self.error, self.detail = "parse error", problem or "no root element"
        return INVALID

    def __iter__(self) -> Iterator[SitemapPage | SitemapRef]:
        if self.kind == INVALID:
            return
        if self.kind == ROBOTS_TXT:
            entries: Iterator[SitemapPage | SitemapRef] = self._robots_entries()
        elif self.kind == TEXT:
            entries = self._text_entries()
        else:
            entries = self._xml_entries()
        seen: set[str] = set()
        is_index = self.kind in (ROBOTS_TXT, "xml_index")
        for entry in entries:
            if entry.url in seen:
                continue
            seen.add(entry.url)
            if is_index and self.entry_count >= self.limits.max_index_children:
                self.error = "size limit"
                self.detail = f"more than {self.limits.max_index_children} sub-sitemaps; the rest is ignored"
                return
            self.entry_count += 1
            yield entry
        if self.kind == TEXT and self.entry_count == 0 and self.error is None:
            self.kind, self.error, self.detail = INVALID, NOT_A_SITEMAP, "no URL line"

    def _xml_entries(self) -> Iterator[SitemapPage | SitemapRef]:
        assert self._dialect is not None
        try:
            yield from iter_entries(self._chunks, self._dialect, self.url)
        except XmlProblem as problem:
            self.error = problem.reason
            self.detail = problem.detail

    def _text_entries(self) -> Iterator[SitemapPage]:
        try:
            for line in text.iter_lines(self._chunks(), self.limits.max_line_length):
                if line is None:
                    self.error = "parse error"
                    self.detail = f"skipped a line longer than {self.limits.max_line_length} bytes"
                    continue
                page = text.page_from_line(line, self.url)
                if page is not None:
                    yield page
        except StreamError as exc:
            self.error, self.detail = exc.reason, str(exc)

    def _robots_entries(self) -> Iterator[SitemapRef]:
        chunks: list[bytes] = []
        try:
            chunks.extend(self._chunks())
        except StreamError as exc:
            self.error, self.detail = exc.reason, str(exc)
        content = robots.decode_robots(b"".join(chunks))
        if robots.looks_like_html(content):
            self.kind, self.error, self.detail = INVALID, NOT_A_SITEMAP, "robots.txt is an HTML page"
            return
        for url in robots.sitemap_urls_from_robots(content, self.url):
            yield SitemapRef(url=url)


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
