"""The ``sitemaps`` spider: find every sitemap of a site and yield its pages.

    scrapy crawl sitemaps -a homepage=https://www.example.org/ -O pages.csv

Discovery order: robots.txt and every sitemap under it, then the well-known
paths (skipping URLs already seen under robots.txt). Each response is sniffed
and streamed through the pure parsers; pages leave in batches (or one item per
page with SITEMAP_CRAWL_BATCH_SIZE=0) and one node item per sitemap feeds the
tree pipeline.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider
from scrapy.http import Response
from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings
from twisted.python.failure import Failure

from sitemap_crawl.arguments import (
    SpiderArgumentError,
    install_traceback_filter,
    parse_bool,
    parse_homepage,
    parse_list,
    parse_regex,
    parse_sitemap_urls,
)
from sitemap_crawl.failures import failure_reason
from sitemap_crawl.gctuning import GcTuning
from sitemap_crawl.items import PageBatch, SitemapNodeItem, SitemapPage, SitemapRef
from sitemap_crawl.kinds import ErrorReason, NodeKind
from sitemap_crawl.memory import trim
from sitemap_crawl.names import META_KEY, NOT_FOLLOWED_STAT
from sitemap_crawl.offload import SitemapReaders
from sitemap_crawl.parsing import INVALID, ROBOTS_TXT
from sitemap_crawl.parsing.reader import TEXT, XML_INDEX
from sitemap_crawl.settings_reader import SettingsReader
from sitemap_crawl.signals import sitemap_node
from sitemap_crawl.wiring import add_sitemap_crawl_components

logger = logging.getLogger(__name__)

WEBSITE = NodeKind.WEBSITE

install_traceback_filter()


@dataclass(frozen=True, slots=True)
class Visit:
    """One place of a sitemap in the tree, carried in request meta."""

    url: str
    path: tuple[int, ...]
    depth: int
    ancestors: frozenset[str]
    role: str  # "robots", "known", "start" or "child"

    @property
    def under_robots(self) -> bool:
        return self.path[:1] == (0,) and self.role != "start"


class SitemapsSpider(Spider):
    """Map every sitemap of a website and yield the pages they list."""

    name = "sitemaps"

    @classmethod
    def update_settings(cls, settings: BaseSettings) -> None:
        super().update_settings(settings)
        add_sitemap_crawl_components(settings, priority="spider")
        # Requests leave in the order they were made (Scrapy's default queues are LIFO,
        # which would probe the known paths and fetch sibling sitemaps backwards); with
        # priority = depth this walks the tree depth-first in document order. A project
        # that chose its own queues keeps them.
        for name, fifo in (
            ("SCHEDULER_MEMORY_QUEUE", "scrapy.squeues.FifoMemoryQueue"),
            ("SCHEDULER_DISK_QUEUE", "scrapy.squeues.PickleFifoDiskQueue"),
        ):
            if (settings.getpriority(name) or 0) <= SETTINGS_PRIORITIES["default"]:
                settings.set(name, fifo, priority="spider")
        # Scrapy starts CONCURRENT_ITEMS (100) asyncio workers for every callback's output;
        # most sitemap callbacks yield one node item (a dead sub-sitemap, a small sitemap)
        # and pages travel in batches, so 16 is plenty and an index of 50,000 dead children
        # costs about a quarter less CPU. A project that set it keeps its value.
        if (settings.getpriority("CONCURRENT_ITEMS") or 0) <= SETTINGS_PRIORITIES["default"]:
            settings.set("CONCURRENT_ITEMS", 16, priority="spider")
        # Scrapy stops starting downloads while the responses being parsed hold more than
        # SCRAPER_SLOT_MAX_ACTIVE_SIZE (5 MB) of body: one large sitemap would stop the next
        # ones from downloading (and from being parsed on the other cores) until it is done.
        # The spider bounds the bodies itself (SITEMAP_CRAWL_CONCURRENT_SITEMAPS in flight).
        if (settings.getpriority("SCRAPER_SLOT_MAX_ACTIVE_SIZE") or 0) <= SETTINGS_PRIORITIES["default"]:
            settings.set("SCRAPER_SLOT_MAX_ACTIVE_SIZE", 1 << 40, priority="spider")

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> SitemapsSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider._on_idle, signal=signals.spider_idle)
        crawler.signals.connect(spider._close_readers, signal=signals.spider_closed)
        if crawler.settings.getbool("SITEMAP_CRAWL_GC_TUNING", True):
            crawler.signals.connect(spider._gc_tuning.apply, signal=signals.spider_opened)
            crawler.signals.connect(spider._gc_tuning.undo, signal=signals.spider_closed)
        return spider

    def __init__(
        self,
        homepage: str | None = None,
        sitemap_urls: str | list[str] | None = None,
        use_robots: str | bool | None = None,
        use_known_paths: str | bool | None = None,
        extra_known_paths: str | list[str] | None = None,
        normalize_homepage: str | bool | None = None,
        follow: str | None = None,
        deny: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        try:
            normalize = parse_bool("normalize_homepage", normalize_homepage, True)
            self.use_robots = parse_bool("use_robots", use_robots, True)
            self.use_known_paths = parse_bool("use_known_paths", use_known_paths, True)
            self.extra_known_paths = parse_list(extra_known_paths)
            self.follow_pattern = parse_regex("follow", follow)
            self.deny_pattern = parse_regex("deny", deny)
            self.start_sitemap_urls = parse_sitemap_urls(sitemap_urls)
            if not homepage and not self.start_sitemap_urls:
                raise SpiderArgumentError("give -a homepage=https://www.example.org/ or -a sitemap_urls=URL[,URL...]")
            self.homepage = parse_homepage(homepage, normalize) if homepage else None
        except SpiderArgumentError as exc:
            logger.error("Bad argument for the %s spider: %s", self.name, exc)
            raise
        self._known_paths_sent = False
        # sitemaps requested that may still declare sub-sitemaps (by tree path): while any is
        # left, the set of sitemaps under robots.txt is not final and known paths must wait
        self._unsettled: set[tuple[int, ...]] = set()
        self._seen_under_robots: set[str] = set()
        self._in_flight = 0
        self._waiting: deque[Visit] = deque()
        if not self.start_sitemap_urls and not (self.use_robots or self.use_known_paths or self.extra_known_paths):
            logger.warning("use_robots and use_known_paths are both false: nothing will be fetched")
        self._gc_tuning = GcTuning()

    def _setup(self) -> None:
        config = SettingsReader(self.crawler.settings)
        self.limits = config.limits
        self.max_depth = config.max_depth
        self.batch_size = config.batch_size
        self.concurrent_sitemaps = config.concurrent_sitemaps
        # use_known_paths=false turns the standard list off; paths asked for by name are still probed
        self.known_paths = (config.known_paths if self.use_known_paths else []) + self.extra_known_paths
        self._readers = SitemapReaders(
            self.limits,
            chunk_size=self.batch_size or 1000,
            workers=config.parse_workers,
            worker_min_size=config.parse_worker_min_size,
        )
        self.sitemap_download_maxsize = self.limits.max_size  # SITEMAP_CRAWL_MAX_SIZE or DOWNLOAD_MAXSIZE

    @property
    def website_url(self) -> str:
        if self.homepage:
            return self.homepage
        return urljoin(self.start_sitemap_urls[0], "/")

    async def start(self) -> AsyncIterator[Any]:
        self._setup()
        self.crawler.signals.send_catch_log(
            sitemap_node, node=SitemapNodeItem(path=(), url=self.website_url, kind=WEBSITE, finished=True)
        )
        if self.start_sitemap_urls:
            for index, url in enumerate(self.start_sitemap_urls):
                role = "robots" if url.rstrip("/").endswith("/robots.txt") else "start"
                self._submit(Visit(url, (index,), 0, frozenset(), role))
            self._known_paths_sent = True
            return
        assert self.homepage is not None
        if self.use_robots:
            self._submit(Visit(urljoin(self.homepage, "robots.txt"), (0,), 0, frozenset(), "robots"))
        if not self.known_paths:
            self._known_paths_sent = True
        return
        yield  # start() stays an async generator; sitemap requests are sent by _submit, in order

    async def _close_readers(self) -> None:
        readers = getattr(self, "_readers", None)
        if readers is not None:
            await readers.close()

    def _on_idle(self) -> None:
        """When robots.txt and its sitemaps are done, probe the well-known paths (if that
        was not done already, as soon as every sitemap under robots.txt was known)."""
        if self._send_known_paths():
            raise DontCloseSpider

    def _settle(self, visit: Visit) -> None:
        """``visit`` will declare no more sub-sitemaps (it failed, is not an index, or was read)."""
        self._unsettled.discard(visit.path)
        if not self._unsettled and not self._waiting and not self._known_paths_sent:
            # Every sitemap under robots.txt has been requested and none can declare more:
            # the known paths can be probed now, while the last sitemaps are still parsed.
            self._send_known_paths()

    def _send_known_paths(self) -> bool:
        """Queue the well-known paths not seen under robots.txt, once; whether any was queued."""
        if self._known_paths_sent:
            return False
        self._known_paths_sent = True
        assert self.homepage is not None
        sent = 0
        for index, path in enumerate(self.known_paths, start=1):
            url = urljoin(self.homepage, path.lstrip("/"))
            if url in self._seen_under_robots:
                logger.debug("Known path %s already seen under robots.txt; skipped", url)
                continue
            self._submit(Visit(url, (index,), 0, frozenset(), "known"))
            sent += 1
        logger.info("Probing %d well-known sitemap paths of %s", sent, self.homepage)
        return sent > 0

    def _submit(self, visit: Visit) -> None:
        """Queue a sitemap; it is requested once fewer than SITEMAP_CRAWL_CONCURRENT_SITEMAPS are in flight.

        Waiting sitemaps are kept as small Visits, not Requests, and leave in the
        order they were declared: a site whose index lists thousands of large
        sitemaps never holds more than a few bodies in memory.
        """
        if visit.under_robots:
            self._seen_under_robots.add(visit.url)
        self._waiting.append(visit)
        self._pump()

    def _pump(self) -> None:
        engine = self.crawler.engine
        assert engine is not None
        while self._waiting and self._in_flight < self.concurrent_sitemaps:
            self._in_flight += 1
            visit = self._waiting.popleft()
            if not self._known_paths_sent:
                self._unsettled.add(visit.path)
            engine.crawl(self._request(visit))

    def _sitemap_done(self) -> None:
        """A sitemap in flight is done (parsed or failed): send the next waiting one."""
        trim()
        self._in_flight -= 1
        self._pump()

    def _request(self, visit: Visit) -> Request:
        return Request(
            visit.url,
            callback=self.parse_sitemap,
            errback=self.sitemap_failed,
            dont_filter=True,
            priority=visit.depth,  # deeper first: depth-first, document order (FIFO queues)
            meta={
                META_KEY: visit,
                "download_maxsize": self.sitemap_download_maxsize,
                "download_warnsize": self.sitemap_download_maxsize,
                # a body that breaks off keeps the pages before the break ("truncated")
                "download_fail_on_dataloss": False,
            },
        )

    def _report(
        self, visit: Visit, kind: str, error: str | None = None, page_count: int = 0, finished: bool = True
    ) -> None:
        """Tell the tree pipeline about a node (the sitemap_node signal)."""
        node = SitemapNodeItem(
            path=visit.path, url=visit.url, kind=kind, error=error, page_count=page_count, finished=finished
        )
        self.crawler.signals.send_catch_log(sitemap_node, node=node)

    def sitemap_failed(self, failure: Failure) -> None:
        """Errback: the sitemap could not be downloaded; record why."""
        self._sitemap_done()
        request = getattr(failure, "request", None)
        visit: Visit | None = request.meta.get(META_KEY) if request is not None else None
        if visit is None:
            logger.error("Sitemap request failed without its meta: %s", failure)
            return
        self._settle(visit)
        reason = failure_reason(failure)
        if visit.role == "known":
            logger.debug("Known path %s not found: %s", visit.url, reason)
            return
        if visit.role == "robots":
            logger.info("robots.txt %s unavailable (%s); left out of the tree", visit.url, reason)
            return
        logger.warning("Sitemap %s failed: %s", visit.url, reason)
        self._report(visit, INVALID, reason)

    async def parse_sitemap(self, response: Response) -> AsyncIterator[Any]:
        """Callback for every sitemap and robots.txt response."""
        try:
            async for output in self._parse_sitemap(response):
                yield output
        finally:
            self._settle(response.meta[META_KEY])
            self._sitemap_done()

    async def _parse_sitemap(self, response: Response) -> AsyncIterator[Any]:
        visit: Visit = response.meta[META_KEY]
        final_url = response.url
        if final_url != visit.url:
            logger.debug("Sitemap %s redirected to %s", visit.url, final_url)
            if visit.role == "known" and final_url in self._seen_under_robots:
                logger.debug("Known path %s leads to %s, already seen under robots.txt", visit.url, final_url)
                return
            if final_url in visit.ancestors:
                logger.warning("Sitemap %s redirects to its ancestor %s: loop", visit.url, final_url)
                self._report(visit, INVALID, ErrorReason.LOOP)
                return
            if visit.under_robots:
                self._seen_under_robots.add(final_url)
        is_robots = visit.role == "robots"
        body = response.body
        broken_off = "dataloss" in response.flags
        if broken_off:
            opened: Any = self._readers.inline(body, final_url, is_robots)
            if opened.kind in (TEXT, ROBOTS_TXT) and not body.startswith(b"\x1f\x8b"):
                # the body broke off: its last line may be a URL cut short; keep whole lines only
                opened = self._readers.inline(body[: body.rfind(b"\n") + 1], final_url, is_robots)
        else:
            opened = await self._readers.open(body, final_url, is_robots)
        del body
        optional = visit.role in ("known", "robots")
        async with opened as reader:
            if reader.kind not in (ROBOTS_TXT, XML_INDEX):
                self._settle(visit)  # pages only: the known paths need not wait for its end
            if reader.kind == INVALID:
                if optional:
                    logger.debug("%s is not a sitemap (%s); left out", visit.url, reader.detail)
                    return
                logger.warning("Sitemap %s is invalid: %s (%s)", visit.url, reader.error, reader.detail)
                self._report(visit, INVALID, reader.error)
                return
            async for output in self._read_entries(visit, reader, final_url, optional, broken_off):
                yield output

    async def _read_entries(
        self, visit: Visit, reader: Any, final_url: str, optional: bool, broken_off: bool = False
    ) -> AsyncIterator[Any]:
        lineage = visit.ancestors | {visit.url, final_url}
        child_index = 0
        page_count = 0
        batch: list[SitemapPage] = []
        announced = False
        redirected = visit.url != final_url
        async for entries in reader.chunks():
            if not announced:
                announced = True
                self._report(visit, reader.kind, finished=False)
            for entry in entries:
                if type(entry) is SitemapPage:
                    if redirected:
                        entry.sitemap_url = visit.url
                    page_count += 1
                    if self.batch_size:
                        batch.append(entry)
                        if len(batch) >= self.batch_size:
                            yield PageBatch(visit.url, visit.path, batch)
                            batch = []
                    else:
                        yield entry
                else:
                    assert isinstance(entry, SitemapRef)
                    if not self._should_follow(entry.url, reader.kind):
                        continue
                    child = Visit(entry.url, (*visit.path, child_index), visit.depth + 1, lineage, "child")
                    child_index += 1
                    self._visit_child(child)
        if batch:
            yield PageBatch(visit.url, visit.path, batch)
        if reader.kind == ROBOTS_TXT and not announced:
            # a robots.txt that names no sitemap stays in the tree, with no children
            logger.info("robots.txt %s declares no sitemap", visit.url)
            announced = True
        if optional and (reader.kind == INVALID or not announced):
            logger.debug("%s declares no URL; left out", visit.url)
            return
        if reader.error:
            logger.warning("Sitemap %s: %s (%s)", visit.url, reader.error, reader.detail)
        error = reader.error or (ErrorReason.TRUNCATED if broken_off else None)
        self._report(visit, reader.kind, error, page_count)

    def _should_follow(self, url: str, parent_kind: str) -> bool:
        if parent_kind == ROBOTS_TXT:
            return True
        if self.follow_pattern is not None and not self.follow_pattern.search(url):
            logger.debug("Sub-sitemap %s does not match follow; not fetched", url)
            self.crawler.stats.inc_value(NOT_FOLLOWED_STAT)
            return False
        if self.deny_pattern is not None and self.deny_pattern.search(url):
            logger.debug("Sub-sitemap %s matches deny; not fetched", url)
            self.crawler.stats.inc_value(NOT_FOLLOWED_STAT)
            return False
        return True

    def _visit_child(self, child: Visit) -> None:
        if child.url in child.ancestors:
            logger.warning("Sitemap %s is its own ancestor: loop", child.url)
            self._report(child, INVALID, ErrorReason.LOOP)
        elif child.depth > self.max_depth:
            logger.warning("Sitemap %s is nested deeper than %d levels: depth limit", child.url, self.max_depth)
            self._report(child, INVALID, ErrorReason.DEPTH_LIMIT)
        else:
            self._submit(child)
