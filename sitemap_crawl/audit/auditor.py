"""The audit of a site's sitemaps: runs every check on each body and keeps the per-site state.

Pure: it is given bodies (bytes), URLs and facts; it fetches nothing and imports no Scrapy.
"""

from __future__ import annotations

import gzip
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from urllib.parse import urljoin

from sitemap_crawl.audit import rules
from sitemap_crawl.audit.discovery import check_robots
from sitemap_crawl.audit.finding import Finding
from sitemap_crawl.audit.hashset import HashSet, url_hash
from sitemap_crawl.audit.location import SitemapPlace, check_url
from sitemap_crawl.audit.rules import Rule
from sitemap_crawl.audit.scan import INDEX, SITEMAP_NAMESPACE, URLSET, SitemapFacts, is_utf8, scan
from sitemap_crawl.audit.values import check_entry, check_lastmod
from sitemap_crawl.parsing.stream import GZIP_MAGIC

SITE_PAGE_LIMIT = 5_000_000
"""Pages remembered per site for ``duplicate-across-sitemaps`` (8 to 16 bytes each)."""

_FEEDS = ("rss", "feed")


class SiteAudit:
    """The audit of one website: feed it each sitemap body; it yields findings.

    ``counts`` holds the findings by rule id.
    """

    def __init__(self, website: str | None, now: datetime | None = None, page_limit: int = SITE_PAGE_LIMIT) -> None:
        self.website = website
        self.now = now or datetime.now(UTC)
        self.counts: Counter[str] = Counter()
        self._site_pages = HashSet(page_limit)
        self.months: Counter[str] = Counter()
        """Pages by lastmod month (``YYYY-MM``), for the report."""
        self.sitemap_pages: dict[str, int] = {}
        """Entries of each sitemap read (pages of a urlset, children of an index)."""
        self.declared: set[str] = set()
        """The sitemap URLs robots.txt declares (absolute)."""
        self.parents: dict[str, str] = {}
        """The index that listed each child sitemap (for ``nested-index``)."""
        self.kinds: dict[str, str] = {}
        """The root element of each sitemap read (``urlset``, ``sitemapindex``...)."""

    def finding(self, rule: Rule, sitemap_url: str, url: str | None, detail: str) -> Finding:
        """A finding of this site (counted)."""
        self.counts[rule.id] += 1
        return Finding(self.website, sitemap_url, url, rule.id, rule.severity.value, detail)

    def audit_sitemap(
        self,
        body: bytes,
        sitemap_url: str,
        *,
        parent_url: str | None = None,
        cross_hosts: frozenset[str] = frozenset(),
    ) -> Iterator[Finding]:
        """Every finding of one sitemap body (an XML urlset or index, a text sitemap, a feed).

        ``parent_url`` is the index that listed it, if one did (read before it).
        """
        facts = SitemapFacts()
        place = SitemapPlace(sitemap_url)
        in_sitemap = HashSet(2 * rules.MAX_URLS)
        news = 0
        for entry in scan(body, facts):
            loc = entry.loc
            if loc is None:
                continue
            for rule, detail in check_url(loc, place, cross_hosts):
                yield self.finding(rule, sitemap_url, loc, detail)
            if facts.root == URLSET:
                yield from self._duplicates(loc, sitemap_url, in_sitemap)
                for rule, detail in check_entry(entry, self.now):
                    yield self.finding(rule, sitemap_url, loc, detail)
                news += bool(entry.news_dates)
                if entry.lastmod and len(entry.lastmod) >= 7 and entry.lastmod[4] == "-":
                    self.months[entry.lastmod[:7]] += 1
            elif facts.root == INDEX:
                self.parents.setdefault(urljoin(sitemap_url, loc), sitemap_url)
            if facts.root == INDEX and entry.lastmod is not None:
                for rule, detail in check_lastmod(entry.lastmod, self.now):
                    yield self.finding(rule, sitemap_url, loc, detail)
        if facts.root is None and facts.error is None:
            yield from self._text_sitemap(body, sitemap_url, place, cross_hosts)
            return
        self.kinds[sitemap_url] = facts.root or ""
        self.sitemap_pages[sitemap_url] = facts.entry_count
        yield from self._document(facts, sitemap_url, news)
        parent_url = parent_url or self.parents.get(sitemap_url)
        if parent_url is not None and facts.root == INDEX and self.kinds.get(parent_url) == INDEX:
            yield self.finding(rules.NESTED_INDEX, parent_url, sitemap_url, "a sitemap index listed by an index")

    def audit_robots(self, body: bytes, robots_url: str) -> Iterator[Finding]:
        """The discovery findings of a robots.txt body (its Sitemap: lines)."""
        for rule, url, detail in check_robots(body, robots_url, self.declared):
            yield self.finding(rule, robots_url, url, detail)

    def _duplicates(self, loc: str, sitemap_url: str, in_sitemap: HashSet) -> Iterator[Finding]:
        key = url_hash(loc)
        if in_sitemap.add(key):
            yield self.finding(rules.DUPLICATE_IN_SITEMAP, sitemap_url, loc, "listed again in this sitemap")
        elif self._site_pages.add(key):
            yield self.finding(
                rules.DUPLICATE_ACROSS_SITEMAPS, sitemap_url, loc, "also listed by another sitemap of the site"
            )

    def _document(self, facts: SitemapFacts, sitemap_url: str, news: int) -> Iterator[Finding]:
        if not is_utf8(facts.encoding):
            yield self.finding(rules.NOT_UTF8, sitemap_url, None, f"encoding {facts.encoding}")
        if facts.bad_utf8 is not None:
            yield self.finding(rules.NOT_UTF8, sitemap_url, None, f"byte {facts.bad_utf8:,} is not UTF-8")
            if facts.error is not None and "encoding" in facts.error:
                return  # lxml stopped on the same byte: the document is not otherwise broken
        if facts.error is not None:
            rule = rules.UNESCAPED_ENTITY if "EntityRef" in facts.error else rules.INVALID_DOCUMENT
            yield self.finding(rule, sitemap_url, None, facts.error[:300])
        if facts.size > rules.MAX_BYTES:
            yield self.finding(rules.TOO_LARGE, sitemap_url, None, f"more than {facts.size:,} bytes uncompressed")
        if facts.root in _FEEDS:
            return
        if facts.root not in (URLSET, INDEX):
            if facts.error is None:
                yield self.finding(rules.INVALID_DOCUMENT, sitemap_url, None, f"root element <{facts.root}>")
            return
        if facts.namespace != SITEMAP_NAMESPACE:
            yield self.finding(rules.BAD_NAMESPACE, sitemap_url, None, f"namespace {facts.namespace!r}")
        if facts.entry_count == 0 and facts.error is None:
            yield self.finding(rules.EMPTY_SITEMAP, sitemap_url, None, f"<{facts.root}> with no entry")
        if facts.root == URLSET and facts.entry_count > rules.MAX_URLS:
            yield self.finding(rules.TOO_MANY_URLS, sitemap_url, None, f"{facts.entry_count:,} URLs")
        if facts.root == INDEX and facts.entry_count > rules.MAX_URLS:
            yield self.finding(rules.TOO_MANY_CHILDREN, sitemap_url, None, f"{facts.entry_count:,} sitemaps")
        if news > rules.MAX_NEWS_URLS:
            yield self.finding(rules.TOO_MANY_NEWS, sitemap_url, None, f"{news:,} news URLs")

    def _text_sitemap(
        self, body: bytes, sitemap_url: str, place: SitemapPlace, cross_hosts: frozenset[str]
    ) -> Iterator[Finding]:
        """A text sitemap: one URL a line (only the location and duplicate rules apply)."""
        self.kinds[sitemap_url] = "text"
        in_sitemap = HashSet(2 * rules.MAX_URLS)
        count = 0
        text = gzip.decompress(body) if body.startswith(GZIP_MAGIC) else body
        try:
            decoded = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield self.finding(rules.NOT_UTF8, sitemap_url, None, f"byte {exc.start:,} is not UTF-8")
            decoded = text.decode("utf-8", "replace")
        for line in decoded.splitlines():
            loc = line.strip()
            if not loc:
                continue
            count += 1
            for rule, detail in check_url(loc, place, cross_hosts):
                yield self.finding(rule, sitemap_url, loc, detail)
            yield from self._duplicates(loc, sitemap_url, in_sitemap)
        if count > rules.MAX_URLS:
            yield self.finding(rules.TOO_MANY_URLS, sitemap_url, None, f"{count:,} URLs")
