"""The HTTP download handler of a many-site run: Scrapy's, with idle connections closed
sooner.

Scrapy keeps up to CONCURRENT_REQUESTS_PER_DOMAIN idle keep-alive connections per host
for Twisted's default of 240 s. A many-site run talks to each host for a few seconds
and moves on: over 10,000 sites that is tens of thousands of idle sockets, which runs
the crawl (and the servers' side) out of file descriptors. Here an idle connection is
closed after ``SITEMAP_CRAWL_IDLE_CONNECTION_TIMEOUT`` seconds; one still in use is not
affected.
"""

from __future__ import annotations

import logging

from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
from scrapy.crawler import Crawler

from sitemap_crawl.settings_reader import SettingsReader

logger = logging.getLogger(__name__)

MANY_SITES_HANDLER = "sitemap_crawl.downloads.ManySitesDownloadHandler"


class ManySitesDownloadHandler(HTTP11DownloadHandler):
    """Scrapy's HTTP/1.1 handler whose idle connections close after a short timeout."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        timeout = SettingsReader(crawler.settings).idle_connection_timeout
        pool = getattr(self, "_pool", None)
        if pool is None or not hasattr(pool, "cachedConnectionTimeout"):  # pragma: no cover - another Scrapy
            logger.warning("Cannot shorten the idle connection timeout with this Scrapy version")
            return
        pool.cachedConnectionTimeout = timeout
