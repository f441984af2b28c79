"""A site's pages go out in the tree's document order.

A site's sitemaps are downloaded and parsed several at a time
(``SITEMAP_CRAWL_CONCURRENT_SITEMAPS``), and their answers come in any order: the pages of
a small sitemap listed second came out before those of the first. So a downloaded sitemap
waits, before its body is parsed, until no sitemap of its site that comes before it in the
tree is still waiting or in flight (:meth:`SiteDiscovery.is_first
<sitemap_crawl.discovery.site.SiteDiscovery.is_first>`); it is then parsed and yields its
pages while the ones after it wait in turn (downloaded, not parsed), and it ends, giving the
next its turn, once its last pages are through the item pipelines (Scrapy processes the
items of several responses at once: with many sites, the next sitemap's first batch passed
this one's last). Rows inside one
sitemap were always in document order. A site's sitemaps are so parsed one after the
other; the crawl process, which exports every page, was the bound of a site's speed
already (one parse worker keeps up with it).

Why nothing stalls:

* a waiting sitemap holds its body (not parsed: no parse worker, no batch) and gives its
  place among the site's sitemaps in flight back (:meth:`SiteDiscovery.park
  <sitemap_crawl.discovery.site.SiteDiscovery.park>`), so that the sitemaps before it are
  not fetched fewer at a time; at most as many wait so, so a site holds at most twice the
  bodies it did;
* the site's discovery sends its waiting sitemaps in tree order (a heap by place), and the
  first one not sent yet may always go when it comes before every sitemap waiting for its
  turn: the first sitemap of the site is always on its way;
* a crawl that is stopping (Ctrl-C, a ``CLOSESPIDER_*`` limit) downloads nothing new, so
  the sitemaps still waiting then are parsed as they are (a stopped run's last pages may
  be out of order; none is lost); so are they while Scrapy holds new downloads back
  because of the bodies being processed, waiting ones included (a
  ``SCRAPER_SLOT_MAX_ACTIVE_SIZE`` the project set: the spider lifts it otherwise);
* a waiting sitemap gives its host's download slot back (another site's first sitemap on
  the same host may need it), and the valve that holds sends back while many responses
  are being processed does not count waiting ones (:attr:`PageTurns.waiting`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

RECHECK_AFTER = 1.0
"""Seconds after which a waiting sitemap looks again without being woken (a safety net: it
is woken whenever a sitemap of its site is done)."""


class PageTurns:
    """The sitemaps waiting for their turn to yield pages, by site."""

    def __init__(self) -> None:
        self._waiters: dict[str, list[asyncio.Future[None]]] = {}
        self.waiting = 0
        """Sitemaps waiting now (their responses are not being processed meanwhile)."""

    async def wait(self, site: str, is_first: Callable[[], bool]) -> None:
        """Return once ``is_first()`` holds (checked again each time ``site`` is woken)."""
        loop = asyncio.get_running_loop()
        self.waiting += 1
        try:
            while not is_first():
                woken: asyncio.Future[None] = loop.create_future()
                self._waiters.setdefault(site, []).append(woken)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(woken, RECHECK_AFTER)
        finally:
            self.waiting -= 1

    def wake(self, site: str) -> None:
        """A sitemap of ``site`` is done: its waiting sitemaps look again."""
        for woken in self._waiters.pop(site, ()):
            if not woken.done():
                woken.set_result(None)
