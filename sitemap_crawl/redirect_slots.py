"""A sitemap request that a redirect takes to another host goes through that host's download slot.

Scrapy's downloader writes the slot it gave a request into ``meta["download_slot"]``, and
RedirectMiddleware copies the meta into the request it makes for the new URL: so a
redirected request stays in the slot of the host it was redirected FROM, and the host it
goes TO gets neither ``DOWNLOAD_DELAY`` nor ``CONCURRENT_REQUESTS_PER_DOMAIN`` for it: ten
sites whose sitemaps redirect to one CDN host sent it ten requests at once, unspaced. Here
a redirected sitemap request gets the slot of its own host again. (That slot's concurrency
is Scrapy's, which lets a burst past; the spider's own per-host hold covers the host a
sitemap is asked at first. Holding a redirected request there too, waiting inside the
downloader for a place, deadlocked the crawl: the places were held by requests the
downloader had no room to take. See docs/arguments.md.)
"""

from __future__ import annotations

from scrapy import Request
from scrapy.utils.httpobj import urlparse_cached

from sitemap_crawl.discovery.site import is_sitemap_meta

REDIRECT_SLOT_MIDDLEWARE_ORDER = 590
"""Any order would do: every process_request runs before the downloader picks the slot."""
_SLOT = "download_slot"


class RedirectSlotMiddleware:
    """Drops the slot a redirected sitemap request inherited from the URL it was redirected from."""

    def process_request(self, request: Request) -> None:
        meta = request.meta
        if _SLOT not in meta or not meta.get("redirect_urls"):
            return
        if not is_sitemap_meta(meta):
            return
        if meta[_SLOT] != (urlparse_cached(request).hostname or ""):
            del meta[_SLOT]  # the downloader gives it the slot of its own host
