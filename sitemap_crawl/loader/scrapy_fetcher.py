"""The loader inside Scrapy: sitemaps downloaded by Scrapy's downloader, page requests (and the
``sitemaps`` spider's sitemap requests) kept out of JOBDIR's disk queue, and a loader made from
a crawler's settings."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from scrapy.core.scheduler import Scheduler
from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings

from sitemap_crawl.loader.fetching import FetchedSitemap, SitemapFetchError
from sitemap_crawl.names import DOWNLOAD_META_KEY, META_KEY, RUN_META_KEY, SITEMAP_META_KEY, TOKEN_META_KEY

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from sitemap_crawl.loader.core import SitemapRequestLoader

logger = logging.getLogger(__name__)


SCHEDULER_PATH = "sitemap_crawl.loader.SitemapLoaderScheduler"
DEFAULT_SCHEDULER_PATH = "scrapy.core.scheduler.Scheduler"


class SitemapLoaderScheduler(Scheduler):
    """Scrapy's scheduler, except that the page requests of a SitemapRequestLoader and the
    requests of a ``sitemaps`` spider's run (``RUN_META_KEY``) always stay in memory, never in JOBDIR's
    ``requests.queue``. The loader's own state persists its page requests (and resumes them
    after a kill -9, which Scrapy's disk queue does not survive); there are at most
    SITEMAP_CRAWL_LOADER_MAX_IN_FLIGHT of them. The ``sitemaps`` spider does not resume: a
    run maps its sites again from the start, so a stopped run's sitemap requests are of no
    use to the next one (and the spider bounds how many wait). Every other request is
    scheduled exactly as by Scrapy's scheduler. Both spiders use it unless the project has
    its own SCHEDULER (:func:`use_loader_scheduler`)."""

    _disk_turn = False
    """Whether the disk queue is asked first for the next request (every other time)."""

    def _dqpush(self, request: Any) -> bool:
        if TOKEN_META_KEY in request.meta or RUN_META_KEY in request.meta:
            return False  # straight to the memory queue
        return bool(super()._dqpush(request))

    def next_request(self) -> Any:
        """The next request, from the memory and the disk queue in turn when both hold some.
        Scrapy's scheduler empties the memory queue first; with JOBDIR the loader's page
        requests are there and their callbacks' follow-up requests on disk, which then
        waited until every page of the sitemaps was visited (Scrapy's own SitemapSpider,
        every request on disk, visits them as they come)."""
        self._disk_turn = not self._disk_turn
        if self._disk_turn and self.dqs is not None:
            request = self._dqpop()
            if request is not None:  # (counted as Scrapy's scheduler counts it)
                assert self.stats is not None
                self.stats.inc_value("scheduler/dequeued/disk")
                self.stats.inc_value("scheduler/dequeued")
                return request
        return super().next_request()  # (memory first; the disk queue was just found empty)

    def _dqpop(self) -> Any:
        """The next request of the disk queue; a sitemap request found there is a stopped run's
        (left by an older version, which kept them on disk): dropped before it is downloaded."""
        while (request := super()._dqpop()) is not None:
            if META_KEY not in request.meta:
                return request
            logger.debug("Dropped %s: a sitemap request of a stopped run, from JOBDIR", request.url)
        return None


def use_loader_scheduler(settings: BaseSettings) -> None:
    """Schedule with :class:`SitemapLoaderScheduler`, unless the project chose its own SCHEDULER.

    Set just above Scrapy's default: a spider's ``update_settings`` runs before the add-ons
    are loaded, and an add-on's SCHEDULER (at ``addon`` priority) was replaced by it."""
    if settings.get("SCHEDULER") in (DEFAULT_SCHEDULER_PATH, Scheduler):
        settings.set("SCHEDULER", SCHEDULER_PATH, priority=SETTINGS_PRIORITIES["default"] + 1)


class _Download:
    """What the fetcher learns of one download while Scrapy makes it."""

    __slots__ = ("redirected",)

    def __init__(self) -> None:
        self.redirected = False


class ScrapySitemapFetcher:
    """Downloads a sitemap with ``engine.download_async``: through the downloader middlewares
    (retry, redirect, decompression, robots.txt, allowed_domains...), never through the
    scheduler, the duplicate filter or JOBDIR's request queue."""

    def __init__(self, crawler: Crawler, max_size: int) -> None:
        from scrapy import signals

        self.crawler = crawler
        self.max_size = max_size
        crawler.signals.connect(self._reached_downloader, signal=signals.request_reached_downloader)

    @staticmethod
    def _reached_downloader(request: Any, **_kwargs: Any) -> None:
        """Note on the download's record that it was redirected (the redirect's request
        shares its meta's values with the one the fetcher made)."""
        record = request.meta.get(DOWNLOAD_META_KEY)
        if isinstance(record, _Download) and request.meta.get("redirect_urls"):
            record.redirected = True

    def _closing(self) -> bool:
        engine = self.crawler.engine
        if engine is None or not engine.running or engine.spider is None:
            return True
        slot = getattr(engine, "_slot", None)
        return slot is None or getattr(slot, "closing", None) is not None

    async def __call__(self, url: str) -> FetchedSitemap:
        from scrapy import Request
        from scrapy.http.request import NO_CALLBACK

        from sitemap_crawl.failures import failure_reason, release_causes

        if self._closing():
            raise asyncio.CancelledError  # the crawl is ending: leave this sitemap for the next run
        engine = self.crawler.engine
        assert engine is not None
        record = _Download()
        request = Request(
            url,
            callback=NO_CALLBACK,  # (no dont_filter: OffsiteMiddleware leaves out off-site sitemaps)
            meta={
                "download_maxsize": self.max_size,
                "download_warnsize": self.max_size,
                SITEMAP_META_KEY: True,
                DOWNLOAD_META_KEY: record,
            },
        )
        try:
            response = await engine.download_async(request)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if self._closing():
                raise asyncio.CancelledError from exc
            release_causes(exc)
            raise SitemapFetchError(failure_reason(exc), after_redirect=record.redirected) from exc
        if not 200 <= response.status < 300:
            raise SitemapFetchError(f"HTTP {response.status}")
        final_request = response.request
        hops = final_request.meta.get("redirect_urls", ()) if final_request is not None else ()
        return FetchedSitemap(response.url, response.body, tuple(hops))


def loader_from_crawler(
    cls: type[SitemapRequestLoader], crawler: Crawler, sitemap_urls: Any, kwargs: dict[str, Any]
) -> SitemapRequestLoader:
    """See :meth:`SitemapRequestLoader.from_crawler`."""
    from scrapy.utils.job import job_dir

    from sitemap_crawl.loader.tracking import ScrapyBinding
    from sitemap_crawl.settings_reader import SettingsReader

    settings = crawler.settings
    config = SettingsReader(settings)
    if config.history_file:
        logger.warning(
            "SITEMAP_CRAWL_HISTORY: the history is the sitemaps spider's; a crawl with the sitemap loader "
            "(SitemapSpider, SitemapRequestLoader) requests every page its sitemaps list (JOBDIR makes it "
            "resumable, docs/loader.md) and writes no history"
        )
    kwargs.setdefault("limits", config.limits)
    kwargs.setdefault("max_depth", config.max_depth)
    kwargs.setdefault("depth_limit", config.depth_limit)
    kwargs.setdefault("known_paths", config.known_paths)
    kwargs.setdefault("known_paths_mode", config.known_paths_mode)
    kwargs.setdefault("max_buffer_size", config.loader_queue_size)
    kwargs.setdefault("save_interval", config.loader_save_interval)
    kwargs.setdefault("log_interval", config.loader_log_interval)
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
    loader.attach(ScrapyBinding(loader, crawler, config.loader_max_in_flight))
    return loader
