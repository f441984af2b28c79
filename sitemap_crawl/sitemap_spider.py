"""A drop-in for ``scrapy.spiders.SitemapSpider`` built on :class:`SitemapRequestLoader`.

    from sitemap_crawl import SitemapSpider      # instead of scrapy.spiders

    class Products(SitemapSpider):
        name = "products"
        sitemap_urls = ["https://shop.example/robots.txt"]   # or: homepage = "https://shop.example/"
        sitemap_rules = [(r"/product/", "parse_product")]
        sitemap_follow = [r"products"]

        def parse_product(self, response):
            page = response.meta["sitemap_page"]   # lastmod, images, news... of the page

Same attributes as Scrapy's (sitemap_urls, sitemap_rules, sitemap_follow,
sitemap_alternate_links, sitemap_filter(entries)), plus: ``homepage`` (discovery
through robots.txt and the well-known paths), every sitemap format, the page item
in ``response.meta["sitemap_page"]``, a bounded number of page requests in memory,
resumption with JOBDIR, and progress lines in the log.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import re
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from scrapy import Request, Spider
from scrapy.exceptions import IgnoreRequest
from scrapy.settings import BaseSettings

from sitemap_crawl.arguments import (
    SpiderArgumentError,
    install_traceback_filter,
    parse_bool,
    parse_homepage,
    parse_list,
    parse_since_arguments,
    parse_sitemap_urls,
)
from sitemap_crawl.discovery.rules import FollowRules
from sitemap_crawl.item_adapter import register_page_adapter
from sitemap_crawl.items import SitemapPage, SitemapRef
from sitemap_crawl.loader import (
    DUPES_ONLY_META_KEY,
    PAGE_META_KEY,
    EntryTexts,
    SitemapRequestLoader,
    use_loader_scheduler,
)
from sitemap_crawl.loader.tracking import offsite_middleware
from sitemap_crawl.names import SINCE_PAGES_DROPPED_STAT
from sitemap_crawl.parsing import INVALID, SitemapReader
from sitemap_crawl.parsing.fields import normalize_change_frequency, normalize_date, normalize_priority
from sitemap_crawl.settings_reader import SettingsReader
from sitemap_crawl.wiring import add_audit_extension, add_sitemap_request_middlewares, keep_over_the_runners_copy

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

__all__ = ["SitemapSpider"]

install_traceback_filter()  # a bad -a argument is one error line, not a traceback


class _Entry(dict[str, Any]):
    """A Scrapy-style sitemap entry (loc, lastmod, changefreq, priority, alternate...)
    that remembers the page item or sub-sitemap it was made from."""

    __slots__ = ("source",)

    def __init__(self, source: SitemapPage | SitemapRef, values: dict[str, Any]) -> None:
        super().__init__(values)
        self.source = source


def page_entry(page: SitemapPage, texts: EntryTexts = None) -> _Entry:
    """The dict Scrapy's SitemapSpider would give sitemap_filter() for a page: as Scrapy's
    ``Sitemap`` reads a ``<url>``, a key for each element present, its text as written and
    stripped ("" when empty); ``image``, ``video`` and ``news`` are "" (their children are
    in the page item). ``loc`` and ``alternate`` hold absolute URLs. Without ``texts`` (an
    RSS, Atom or text sitemap): ``loc`` and the page's ``lastmod``."""
    values: dict[str, Any] = {"loc": page.url}
    if texts is None:
        if page.last_modified is not None:
            values["lastmod"] = page.last_modified
    else:
        _mark, _url, priority, lastmod, changefreq, news, images, videos, _links = texts
        if lastmod is not None:
            values["lastmod"] = lastmod.strip()
        if changefreq is not None:
            values["changefreq"] = changefreq.strip()
        if priority is not None:
            values["priority"] = priority.strip()
        for key, element in (("image", images), ("video", videos), ("news", news)):
            if element is not None:
                values[key] = ""
    if page.alternates:
        values["alternate"] = [alternate.href for alternate in page.alternates]
    return _Entry(page, values)


def sitemap_entry(ref: SitemapRef, texts: EntryTexts = None) -> _Entry:
    """The dict Scrapy's SitemapSpider would give sitemap_filter() for a sub-sitemap:
    ``loc`` and, when the element is there, ``lastmod`` as written (stripped)."""
    values: dict[str, Any] = {"loc": ref.url}
    lastmod = ref.last_modified if texts is None else texts[2]
    if lastmod is not None:
        values["lastmod"] = lastmod.strip()
    return _Entry(ref, values)


def _regexes(
    name: str, value: Sequence[re.Pattern[str] | str] | re.Pattern[str], everything: bool
) -> list[re.Pattern[str]]:
    """``sitemap_follow`` / ``sitemap_deny`` compiled: one string (``-a sitemap_deny=archive``,
    or an attribute set to one) is one regex, not one per character; an empty one (``-a
    sitemap_deny=``) is not given: the default, which matches ``everything`` (follow) or
    nothing (deny); a broken one is a :class:`SpiderArgumentError`."""
    if isinstance(value, str) and not value.strip():
        return [re.compile("")] if everything else []
    patterns = [value] if isinstance(value, str | re.Pattern) else value
    try:
        return [_regex(pattern) for pattern in patterns]
    except re.error as exc:
        raise SpiderArgumentError(f"{name}={value!r} is not a valid regular expression: {exc}") from None


def _regex(pattern: re.Pattern[str] | str) -> re.Pattern[str]:
    return re.compile(pattern) if isinstance(pattern, str) else pattern


def _host_regex(allowed_domains: Iterable[str | None]) -> re.Pattern[str] | None:
    """allowed_domains as Scrapy's OffsiteMiddleware reads them (None: every host)."""
    domains = [re.escape(domain) for domain in allowed_domains if domain]
    if not domains:
        return None
    return re.compile(rf"^(.*\.)?({'|'.join(domains)})$")


class SitemapSpider(Spider):
    """Crawl the pages listed by a site's sitemaps; a drop-in for Scrapy's SitemapSpider."""

    sitemap_urls: Sequence[str] = ()
    """Sitemaps (or robots.txt URLs) to start from."""
    homepage: str | None = None
    """A site to discover the sitemaps of: robots.txt, then the well-known paths."""
    homepages: Sequence[str] = ()
    """More sites (or, with ``-a homepages=``, a comma-separated list): each is discovered
    like ``homepage``, one site after another."""
    sitemap_rules: Sequence[tuple[re.Pattern[str] | str, Any]] = [("", "parse")]
    """(regex, callback) pairs: a page goes to the callback of the first regex it matches;
    a page no regex matches is not requested."""
    sitemap_follow: Sequence[re.Pattern[str] | str] = [""]
    """Regexes a sub-sitemap of an index must match (one of them) to be read."""
    sitemap_deny: Sequence[re.Pattern[str] | str] = ()
    """Regexes a sub-sitemap of an index must not match."""
    sitemap_alternate_links: bool = False
    """Also request the hreflang alternates (xhtml:link) of each page."""
    sitemap_use_robots: bool = True
    """With ``homepage``: read robots.txt ``Sitemap:`` lines."""
    sitemap_use_known_paths: bool = True
    """With ``homepage``: probe the well-known sitemap paths (SITEMAP_CRAWL_KNOWN_PATHS)."""
    sitemap_filter_duplicates: bool = False
    """True: page requests go through Scrapy's duplicate filter, as with Scrapy's
    SitemapSpider (a page listed by two sitemaps is requested once, at the cost of one
    fingerprint per page in memory and in JOBDIR/requests.seen). False (default): a
    page URL is requested once per sitemap that lists it, in bounded memory."""

    since: str | None = None
    """Request only the pages whose lastmod is at or after this (``-a since``: ISO 8601, or
    ``7d``, ``12h``...); index children that say they are older are not read."""
    since_undated: str | None = None
    """``keep`` (default) or ``drop`` the pages without a lastmod when ``since`` is given."""

    sitemap_loader: SitemapRequestLoader
    _loader_sources: tuple[list[str], str | None, list[str]] = ([], None, [])
    """sitemap_urls, homepage and homepages when the loader was made."""

    @classmethod
    def update_settings(cls, settings: BaseSettings) -> None:
        super().update_settings(settings)
        add_sitemap_request_middlewares(settings)
        add_audit_extension(settings)  # (only to say that it audits nothing: see docs/audit.md)
        keep_over_the_runners_copy(settings, ("EXTENSIONS", "DOWNLOADER_MIDDLEWARES"))
        register_page_adapter()  # meta["sitemap_page"], yielded as an item, has the feeds' fields
        # Page requests are persisted by the loader: keep them out of JOBDIR's disk queue
        # (a project with its own scheduler keeps it).
        use_loader_scheduler(settings)

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        spider = super().from_crawler(crawler, *args, **kwargs)
        SettingsReader(crawler.settings).check_for(spider.name)
        spider._loader_sources = spider._sources()
        spider.sitemap_loader = spider.make_sitemap_loader(crawler)
        return spider

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._cbs: list[tuple[re.Pattern[str], Any]] = []
        for pattern, callback in self.sitemap_rules:
            if isinstance(callback, str):
                callback = getattr(self, callback)
            self._cbs.append((_regex(pattern), callback))
        try:
            self._follow = _regexes("sitemap_follow", self.sitemap_follow, everything=True)
            self._deny = _regexes("sitemap_deny", self.sitemap_deny, everything=False)
            # -a arguments arrive as strings
            self.sitemap_urls, self.homepage, self.homepages = self._sources()
            self.sitemap_use_robots = parse_bool("sitemap_use_robots", self.sitemap_use_robots, True)
            self.sitemap_use_known_paths = parse_bool("sitemap_use_known_paths", self.sitemap_use_known_paths, True)
            self.sitemap_alternate_links = parse_bool("sitemap_alternate_links", self.sitemap_alternate_links, False)
            self.sitemap_filter_duplicates = parse_bool(
                "sitemap_filter_duplicates", self.sitemap_filter_duplicates, False
            )
            self._since = parse_since_arguments(self.since, self.since_undated)
        except SpiderArgumentError as exc:
            logger.error("Bad argument for the %s spider: %s", self.name, exc)
            raise

    def make_sitemap_loader(self, crawler: Crawler) -> SitemapRequestLoader:
        """The loader behind this spider (override to change its options)."""
        filtered = self._overrides_sitemap_filter()
        return SitemapRequestLoader.from_crawler(
            crawler,
            self.sitemap_urls,
            homepage=self.homepage,
            homepages=self.homepages,
            use_robots=self.sitemap_use_robots,
            use_known_paths=self.sitemap_use_known_paths,
            include=[pattern for pattern, _ in self._cbs],
            follow=self._follow,
            deny=self._deny or None,
            # sitemap_filter() gets the entries' texts as written, as in Scrapy; without one,
            # no dict is made
            page_filter=None if filtered else self._filter_pages,
            page_texts_filter=self._filter_page_entries if filtered else None,
            sitemap_filter=self._since_sitemaps if self._since is not None and not filtered else None,
            sitemap_texts_filter=self._filter_sitemaps if filtered else None,
            every_link=True,  # Scrapy's entry["alternate"]: every xhtml:link href
        )

    def _sources(self) -> tuple[list[str], str | None, list[str]]:
        """sitemap_urls, homepage and homepages as the loader takes them (-a arguments and
        values set by the spider's own code may be strings)."""
        urls = self.sitemap_urls
        homepage = self.homepage
        return (
            parse_sitemap_urls(urls) if urls else [],
            parse_homepage(homepage, True) if homepage else None,
            [parse_homepage(url, True) for url in parse_list(self.homepages)],
        )

    async def start(self) -> AsyncIterator[Any]:
        try:
            sources = self._sources()
        except SpiderArgumentError as exc:
            logger.error("Bad sitemap source for the %s spider: %s", self.name, exc)
            return
        if sources != self._loader_sources:
            # set after the loader was made (in the spider's from_crawler or start(), where
            # Scrapy's SitemapSpider reads them): the loader takes them now
            self.sitemap_urls, self.homepage, self.homepages = sources
            self.sitemap_loader.set_sources(*sources)
        if not self.sitemap_urls and not self.homepage and not self.homepages:
            logger.warning("%s has no sitemap_urls and no homepage: no sitemap to read", self.name)
        async for request in self.sitemap_loader.requests(self._page_request):
            yield request

    def sitemap_filter(self, entries: Iterable[dict[str, Any]]) -> Iterable[dict[str, Any]]:
        """Choose sitemap entries by their attributes (as in Scrapy): entries are dicts
        with ``loc`` and, when known, ``lastmod``, ``changefreq``, ``priority`` and
        ``alternate`` (for pages) or ``loc`` and ``lastmod`` (for sub-sitemaps)."""
        yield from entries

    def _overrides_sitemap_filter(self) -> bool:
        return type(self).sitemap_filter is not SitemapSpider.sitemap_filter

    # -- what the loader calls ---------------------------------------------------------

    def _filter_pages(self, pages: Iterator[SitemapPage], sitemap_url: str) -> Iterator[SitemapPage]:
        """The pages to request, sitemap_filter() not overridden: no entry dicts."""
        dropped: set[str] = set()
        chosen = self._kept_by_since(((page, [link.href for link in page.alternates]) for page in pages), dropped)
        return self._requested(chosen, dropped)

    def _filter_page_entries(
        self, pages: Iterator[tuple[SitemapPage, EntryTexts]], sitemap_url: str
    ) -> Iterator[SitemapPage]:
        """The pages to request: those of the entries sitemap_filter() keeps (it sees what
        ``since`` keeps)."""
        dropped: set[str] = set()
        kept = self._kept_by_since(pages, dropped)
        chosen = (
            (page, entry.get("alternate") or ())
            for entry in self.sitemap_filter(page_entry(page, texts) for page, texts in kept)
            if (page := self._page_of(entry, sitemap_url)) is not None
        )
        return self._requested(chosen, dropped)

    def _kept_by_since(
        self, pairs: Iterator[tuple[SitemapPage, _T]], dropped: set[str]
    ) -> Iterator[tuple[SitemapPage, _T]]:
        """The (page, ...) pairs whose page ``since`` keeps; the URLs of the others go to
        ``dropped`` (with sitemap_alternate_links: not requested as alternates either)."""
        since = self._since
        if since is None:
            yield from pairs
            return
        stats = self.crawler.stats
        for pair in pairs:
            if since.keeps_page(pair[0].last_modified):
                yield pair
                continue
            stats.inc_value(SINCE_PAGES_DROPPED_STAT)
            if self.sitemap_alternate_links:
                dropped.add(pair[0].url)

    def _requested(
        self, chosen: Iterator[tuple[SitemapPage, Iterable[str]]], dropped: set[str] | frozenset[str] = frozenset()
    ) -> Iterator[SitemapPage]:
        """The pages of one sitemap to request (each with its ``alternate`` URLs), but those
        allowed_domains leaves out. With sitemap_alternate_links, the alternates the sitemap
        does not list as entries of their own follow its pages: a page item holding its URL
        only (a listed one is requested once, with its own entry's values, or not at all when
        ``since`` drops it: in ``dropped``; an unlisted one is undated for ``since``)."""
        allowed = self._offsite_policy()
        listed: set[str] = set()
        alternates: dict[str, SitemapPage] = {}  # alternate URL -> the first page that links to it
        for page, hrefs in chosen:
            if any(link.hreflang is None for link in page.alternates):
                # the page item keeps its hreflang alternates only, as in the feeds
                page = dataclasses.replace(page, alternates=[a for a in page.alternates if a.hreflang is not None])
            if self.sitemap_alternate_links:
                listed.add(page.url)
                for href in hrefs:
                    alternates.setdefault(href, page)
            if allowed is None or allowed(page.url):
                yield page
        listed |= dropped  # (filled while ``chosen`` was read)
        since = self._since
        keep_undated = since is None or since.keeps_page(None)
        for href, linking in alternates.items():
            if href not in listed and keep_undated and (allowed is None or allowed(href)):
                yield SitemapPage(href, linking.sitemap_url, website=linking.website)

    def _offsite_policy(self) -> Callable[[str], bool] | None:
        """Whether a listed page may be requested, by the crawl's OffsiteMiddleware as it
        would judge the page's request (a project's subclass with its own ``should_follow``
        included; one left out is logged and counted by it, as if it had dropped the
        request); None when every page may: no ``allowed_domains``, or the middleware
        disabled (Scrapy's spider then requests them all). Outside a running crawl,
        ``allowed_domains`` as that middleware reads them."""
        domains = getattr(self, "allowed_domains", None)
        if not domains:
            return None
        crawler = getattr(self, "crawler", None)
        if crawler is None or crawler.engine is None:
            host = _host_regex(domains)
            return None if host is None else (lambda url: bool(host.search(_hostname(url))))
        offsite = offsite_middleware(crawler)
        if offsite is None:
            return None

        def allowed(url: str) -> bool:
            request = Request(url)
            if offsite.should_follow(request, self):
                return True
            with contextlib.suppress(IgnoreRequest):
                offsite.process_request(request)  # (its DEBUG line and offsite/* stats)
            return False

        return allowed

    @staticmethod
    def _page_of(entry: Any, sitemap_url: str) -> SitemapPage | None:
        if not isinstance(entry, dict) or not entry.get("loc"):
            return None
        source = entry.source if isinstance(entry, _Entry) else None
        if isinstance(source, SitemapPage) and source.url == entry["loc"]:
            return source
        return SitemapPage(  # an entry the filter made or moved: its page item, normalised
            url=str(entry["loc"]),
            sitemap_url=sitemap_url,
            priority=normalize_priority(_text(entry.get("priority"))),
            last_modified=normalize_date(_text(entry.get("lastmod"))),
            change_frequency=normalize_change_frequency(_text(entry.get("changefreq"))),
        )

    def _since_sitemaps(self, refs: Iterator[SitemapRef], sitemap_url: str) -> Iterator[SitemapRef]:
        """The sub-sitemaps of an index to read: those ``since`` does not skip."""
        since = self._since
        return refs if since is None else (ref for ref in refs if not since.skips_sitemap(ref.last_modified))

    def _filter_sitemaps(self, refs: Iterator[tuple[SitemapRef, EntryTexts]], sitemap_url: str) -> Iterator[str]:
        since = self._since
        if since is not None:
            refs = ((ref, texts) for ref, texts in refs if not since.skips_sitemap(ref.last_modified))
        for entry in self.sitemap_filter(sitemap_entry(ref, texts) for ref, texts in refs):
            if isinstance(entry, dict) and entry.get("loc"):
                yield str(entry["loc"])

    def _parse_sitemap(self, response: Response) -> Iterator[Request]:
        """Scrapy's SitemapSpider callback, for a spider whose own ``start()`` asks for a
        sitemap or robots.txt with ``callback=self._parse_sitemap`` (to give it headers,
        cookies or meta): read as Scrapy's spider reads it, outside the loader (not resumed
        from JOBDIR; pages and sub-sitemaps through Scrapy's duplicate filter), with every
        format, ``sitemap_rules``, ``sitemap_follow``, ``sitemap_filter`` and alternate links."""
        url = response.url
        is_robots = url.endswith("/robots.txt")
        reader = SitemapReader(response.body, url, is_robots=is_robots, limits=self.sitemap_loader.limits)
        if reader.kind == INVALID:
            logger.warning("Ignoring invalid sitemap: %s (%s)", url, reader.error)
            return
        entries = list(reader.iter_with_texts())  # (one sitemap, as Scrapy's spider holds its body)
        refs = [(entry, texts) for entry, texts in entries if isinstance(entry, SitemapRef)]
        pages = [(entry, texts) for entry, texts in entries if isinstance(entry, SitemapPage)]
        filtered = self._overrides_sitemap_filter()
        if is_robots:  # (its Sitemap: lines are neither filtered nor followed by rule, as in Scrapy)
            for ref, _texts in refs:
                yield Request(ref.url, callback=self._parse_sitemap)
        elif refs:
            follow = FollowRules(follow=self._follow, deny=self._deny or None)
            children = (
                self._filter_sitemaps(iter(refs), url)
                if filtered
                else (ref.url for ref in self._since_sitemaps((ref for ref, _texts in refs), url))
            )
            for child in children:
                if follow.refusal(child) is None:
                    yield Request(child, callback=self._parse_sitemap)
        chosen = (
            self._filter_page_entries(iter(pages), url)
            if filtered
            else self._filter_pages((page for page, _texts in pages), url)
        )
        for page in chosen:
            callback = self._callback_for(page.url)
            if callback is not None:
                yield Request(page.url, callback=callback, meta={PAGE_META_KEY: page})

    def _callback_for(self, url: str) -> Any:
        for pattern, callback in self._cbs:
            if pattern.search(url):
                return callback
        return None

    def _page_request(self, page: SitemapPage) -> Request | None:
        callback = self._callback_for(page.url)
        if callback is None:
            return None  # no rule for it (rules changed since the run that queued it)
        if self.sitemap_filter_duplicates:
            return Request(page.url, callback=callback, meta={PAGE_META_KEY: page})
        # dont_filter skips the duplicate filter only: allowed_domains still applies to redirects
        return Request(
            page.url, callback=callback, meta={PAGE_META_KEY: page, DUPES_ONLY_META_KEY: True}, dont_filter=True
        )


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _hostname(url: str) -> str:
    return urlsplit(url).hostname or ""
