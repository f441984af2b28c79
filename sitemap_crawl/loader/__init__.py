"""The resumable SitemapRequestLoader, by job:

* :mod:`~sitemap_crawl.loader.state`: the state model (the documented fields) and its JSON form;
* :mod:`~sitemap_crawl.loader.store`: persistence (snapshot, journal, the one atomic write);
* :mod:`~sitemap_crawl.loader.fetching`: what a fetch function is;
* :mod:`~sitemap_crawl.loader.core`: the asyncio core (reading sitemaps, handing out pages);
* :mod:`~sitemap_crawl.loader.scrapy_fetcher`: sitemaps through Scrapy's downloader, the scheduler;
* :mod:`~sitemap_crawl.loader.tracking`: when a page request is handled (callback tracking).
"""

from sitemap_crawl.codec import page_from_dict
from sitemap_crawl.loader.core import (
    DEFAULT_LOG_INTERVAL,
    DEFAULT_MAX_DEPTH,
    DEFAULT_QUEUE_SIZE,
    DEFAULT_SAVE_INTERVAL,
    EntryTexts,
    PageFilter,
    PageTextsFilter,
    PatternLike,
    QueuedPage,
    SitemapFilter,
    SitemapRequestLoader,
    SitemapTextsFilter,
)
from sitemap_crawl.loader.fetching import Fetch, FetchedSitemap, SitemapFetchError
from sitemap_crawl.loader.scrapy_fetcher import (
    DEFAULT_SCHEDULER_PATH,
    SCHEDULER_PATH,
    ScrapySitemapFetcher,
    SitemapLoaderScheduler,
    use_loader_scheduler,
)
from sitemap_crawl.loader.state import STATE_FIELDS, LoaderState, replay_journal
from sitemap_crawl.loader.store import DEFAULT_STATE_NAME, StateStore, read_saved_state
from sitemap_crawl.names import DUPES_ONLY_META_KEY, PAGE_META_KEY, SITEMAP_META_KEY, TOKEN_META_KEY

__all__ = [
    "DEFAULT_LOG_INTERVAL",
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_QUEUE_SIZE",
    "DEFAULT_SAVE_INTERVAL",
    "DEFAULT_SCHEDULER_PATH",
    "DEFAULT_STATE_NAME",
    "DUPES_ONLY_META_KEY",
    "PAGE_META_KEY",
    "SCHEDULER_PATH",
    "SITEMAP_META_KEY",
    "STATE_FIELDS",
    "TOKEN_META_KEY",
    "EntryTexts",
    "Fetch",
    "FetchedSitemap",
    "LoaderState",
    "PageFilter",
    "PageTextsFilter",
    "PatternLike",
    "QueuedPage",
    "ScrapySitemapFetcher",
    "SitemapFetchError",
    "SitemapFilter",
    "SitemapLoaderScheduler",
    "SitemapRequestLoader",
    "SitemapTextsFilter",
    "StateStore",
    "page_from_dict",
    "read_saved_state",
    "replay_journal",
    "use_loader_scheduler",
]
