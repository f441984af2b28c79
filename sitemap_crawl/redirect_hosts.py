"""A sitemap request that a redirect takes to another host counts at that host.

Scrapy's downloader writes the slot it gave a request into ``meta["download_slot"]``, and
RedirectMiddleware copies the meta into the request it makes for the new URL: so a
redirected request stays in the slot of the host it was redirected FROM, and the host it
goes TO gets no ``CONCURRENT_REQUESTS_PER_DOMAIN`` nor ``DOWNLOAD_DELAY`` for it: ten sites
whose sitemaps redirect to one CDN host sent it ten requests at once. Here a redirected
sitemap request gets the slot of its own host again; and a ``sitemaps`` spider's request
moves its place in the spider's own per-host limit (``HostGate``, which holds where
Scrapy's slots let a burst past) to that host: it gives up its place at the host it leaves,
then waits for one at the host it goes to (holding none while it waits: no two requests
can wait for each other's place).
"""

from __future__ import annotations

from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.utils.httpobj import urlparse_cached

from sitemap_crawl.discovery.site import Visit
from sitemap_crawl.names import HOST_META_KEY, META_KEY, SITEMAP_META_KEY
from sitemap_crawl.sites.hosts import HostGate, HostPermit, host_of

REDIRECT_HOST_MIDDLEWARE_ORDER = 610
"""Its process_request runs after RedirectMiddleware's (600), which does nothing to a request
on its way out; any order would do, since all run before the downloader picks the slot."""
_SLOT = "download_slot"


class RedirectHostMiddleware:
    """Charges a redirected sitemap request to the host it goes to (slot and per-host place)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedirectHostMiddleware:
        return cls(crawler)

    async def process_request(self, request: Request) -> None:
        meta = request.meta
        if not meta.get("redirect_urls"):
            return
        visit = meta.get(META_KEY)
        if not (isinstance(visit, Visit) or meta.get(SITEMAP_META_KEY) is True):
            return
        host = urlparse_cached(request).hostname or ""
        if meta.get(_SLOT) not in (None, host):
            del meta[_SLOT]  # the downloader gives it the slot of its own host
        gate: HostGate[Any] | None = getattr(self.crawler.spider, "gate", None)
        if not isinstance(visit, Visit) or not isinstance(gate, HostGate):
            return
        held = meta.get(HOST_META_KEY) or host_of(visit.url)
        if held == host:
            return
        gate.release(held)
        meta[HOST_META_KEY] = ""  # (holding no place while it waits)
        permit = HostPermit()
        gate.submit(host, permit)
        await permit.granted
        meta[HOST_META_KEY] = host
