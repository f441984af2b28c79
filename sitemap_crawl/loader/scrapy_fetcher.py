"""The loader inside Scrapy: sitemaps downloaded by Scrapy's downloader, page requests kept
out of JOBDIR's disk queue, and a loader made from a crawler's settings."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from scrapy.core.scheduler import Scheduler

from sitemap_crawl.loader.core import DEFAULT_LOG_INTERVAL, DEFAULT_QUEUE_SIZE, DEFAULT_SAVE_INTERVAL
from sitemap_crawl.loader.fetching import FetchedSitemap, SitemapFetchError

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from sitemap_crawl.loader.core import SitemapRequestLoader

logger = logging.getLogger(__name__)

PAGE_META_KEY = "sitemap_page"
"""Request/response meta key holding the :class:`~sitemap_crawl.items.SitemapPage` of a page request."""
TOKEN_META_KEY = "sitemap_crawl_loader"
"""Request meta key holding the loader's handle of a page request (internal)."""
SITEMAP_META_KEY = "sitemap_crawl_loader_sitemap"
"""Request meta key marking the loader's own sitemap downloads."""

QUEUE_SIZE_SETTING = "SITEMAP_CRAWL_LOADER_QUEUE_SIZE"
MAX_IN_FLIGHT_SETTING = "SITEMAP_CRAWL_LOADER_MAX_IN_FLIGHT"
SAVE_INTERVAL_SETTING = "SITEMAP_CRAWL_LOADER_SAVE_INTERVAL"
LOG_INTERVAL_SETTING = "SITEMAP_CRAWL_LOADER_LOG_INTERVAL"

SCHEDULER_PATH = "sitemap_crawl.loader.SitemapLoaderScheduler"
DEFAULT_SCHEDULER_PATH = "scrapy.core.scheduler.Scheduler"


class SitemapLoaderScheduler(Scheduler):
    """Scrapy's scheduler, except that the page requests of a SitemapRequestLoader always
    stay in memory, never in JOBDIR's ``requests.queue``: the loader's own state persists
    them (and resumes them after a kill -9, which Scrapy's disk queue does not survive).
    There are at most SITEMAP_CRAWL_LOADER_MAX_IN_FLIGHT of them. Every other request
    is scheduled exactly as by Scrapy's scheduler. SitemapSpider uses it unless the
    project has its own SCHEDULER."""

    def _dqpush(self, request: Any) -> bool:
        if TOKEN_META_KEY in request.meta:
            return False  # straight to the memory queue
        return bool(super()._dqpush(request))


class ScrapySitemapFetcher:
    """Downloads a sitemap with ``engine.download_async``: through the downloader middlewares
    (retry, redirect, decompression, robots.txt...), never through the scheduler, the
    duplicate filter or JOBDIR's request queue."""

    def __init__(self, crawler: Crawler, max_size: int) -> None:
        self.crawler = crawler
        self.max_size = max_size

    def _closing(self) -> bool:
        engine = self.crawler.engine
        if engine is None or not engine.running or engine.spider is None:
            return True
        slot = getattr(engine, "_slot", None)
        return slot is None or getattr(slot, "closing", None) is not None

    async def __call__(self, url: str) -> FetchedSitemap:
        from scrapy import Request
        from scrapy.http.request import NO_CALLBACK

        from sitemap_crawl.failures import failure_reason

        if self._closing():
            raise asyncio.CancelledError  # the crawl is ending: leave this sitemap for the next run
        engine = self.crawler.engine
        assert engine is not None
        request = Request(
            url,
            callback=NO_CALLBACK,
            dont_filter=True,
            meta={"download_maxsize": self.max_size, "download_warnsize": self.max_size, SITEMAP_META_KEY: True},
        )
        try:
            response = await engine.download_async(request)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if self._closing():
                raise asyncio.CancelledError from exc
            raise SitemapFetchError(failure_reason(exc)) from exc
        if not 200 <= response.status < 300:
            raise SitemapFetchError(f"HTTP {response.status}")
        return FetchedSitemap(response.url, response.body)


def loader_from_crawler(
    cls: type[SitemapRequestLoader], crawler: Crawler, sitemap_urls: Any, kwargs: dict[str, Any]
) -> SitemapRequestLoader:
    """See :meth:`SitemapRequestLoader.from_crawler`."""
    from scrapy.utils.job import job_dir

    from sitemap_crawl.config import SettingsReader
    from sitemap_crawl.loader.tracking import ScrapyBinding

    settings = crawler.settings
    config = SettingsReader(settings)
    kwargs.setdefault("limits", config.limits)
    kwargs.setdefault("max_depth", config.max_depth)
    kwargs.setdefault("known_paths", config.known_paths)
    kwargs.setdefault("known_paths_mode", str(settings.get("SITEMAP_CRAWL_KNOWN_PATHS_MODE") or "always").lower())
    kwargs.setdefault("max_buffer_size", settings.getint(QUEUE_SIZE_SETTING, DEFAULT_QUEUE_SIZE))
    kwargs.setdefault("save_interval", settings.getfloat(SAVE_INTERVAL_SETTING, DEFAULT_SAVE_INTERVAL))
    kwargs.setdefault(
        "log_interval",
        settings.getfloat(LOG_INTERVAL_SETTING, settings.getfloat("LOGSTATS_INTERVAL", DEFAULT_LOG_INTERVAL)),
    )
    if "persist_dir" not in kwargs:
        kwargs["persist_dir"] = job_dir(settings)
    scheduler = settings.get("SCHEDULER")
    scheduler_path = scheduler if isinstance(scheduler, str) else f"{scheduler.__module__}.{scheduler.__qualname__}"
    if kwargs["persist_dir"] and scheduler_path != SCHEDULER_PATH:
        logger.info(
            "With JOBDIR, set SCHEDULER = %r so that page requests skip Scrapy's disk queue "
            "(SCHEDULER is %r: they are kept in memory anyway, at a cost per request)",
            SCHEDULER_PATH,
            scheduler_path,
        )
    kwargs.setdefault("fetch", ScrapySitemapFetcher(crawler, kwargs["limits"].max_size))
    loader = cls(sitemap_urls, **kwargs)
    default_in_flight = max(16, 2 * settings.getint("CONCURRENT_REQUESTS"))
    max_in_flight = max(1, settings.getint(MAX_IN_FLIGHT_SETTING, default_in_flight))
    loader.attach(ScrapyBinding(loader, crawler, max_in_flight))
    return loader
