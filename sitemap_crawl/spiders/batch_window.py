"""At most a few page batches of one sitemap in Scrapy's item processing at a time.

Scrapy takes a callback's output ahead of its item pipelines: up to three times
``CONCURRENT_ITEMS`` items of one response at once (a queue of twice that, and that many
workers), so a 50,000-page sitemap read in the crawl process had 48 batches, 12,000
pages, waiting between the parser and the feed; with several large sitemaps being read,
tens of thousands of pages (and the arenas they leave behind). The ``sitemaps`` spider
waits, before it yields a sitemap's next batch, until fewer than
:data:`BATCHES_PER_SITEMAP` of that sitemap's batches are still being processed.

A batch is done when Scrapy signals it scraped, dropped or failed it, or, should a
middleware swallow it without a signal, when it is freed.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import TypeVar

from scrapy import signals
from scrapy.crawler import Crawler

from sitemap_crawl.items import PageBatch, SitemapPage

Tracked = TypeVar("Tracked", PageBatch, SitemapPage)

BATCHES_PER_SITEMAP = 2
"""Batches of one sitemap being processed at once (each ``SITEMAP_CRAWL_BATCH_SIZE`` pages)."""


class BatchWindow:
    """The batches of one sitemap still being processed, and a wait for room."""

    def __init__(self, size: int = BATCHES_PER_SITEMAP) -> None:
        self.size = size
        self.open = 0
        self._room: asyncio.Event | None = None

    async def wait_for_room(self) -> None:
        """Return once fewer than ``size`` batches of this sitemap are being processed."""
        await self._wait_below(self.size)

    async def wait_until_empty(self) -> None:
        """Return once none of this sitemap's batches (or pages) is being processed."""
        await self._wait_below(1)

    async def _wait_below(self, limit: int) -> None:
        while self.open >= limit:
            if self._room is None:
                self._room = asyncio.Event()
            self._room.clear()
            await self._room.wait()

    def opened(self) -> None:
        """One more batch is being processed."""
        self.open += 1

    def closed(self) -> None:
        """A batch is done."""
        self.open -= 1
        if self._room is not None:
            self._room.set()


class BatchTracker:
    """Watches Scrapy's item signals for the batches the spider yields."""

    def __init__(self, crawler: Crawler) -> None:
        self._open: dict[int, weakref.finalize[[int, BatchWindow], PageBatch | SitemapPage]] = {}
        for signal in (signals.item_scraped, signals.item_dropped, signals.item_error):
            crawler.signals.connect(self._done, signal=signal)

    async def admit(self, batch: PageBatch, window: BatchWindow) -> PageBatch:
        """Wait for room in ``window``, then :meth:`track` ``batch``; returns it (to yield)."""
        await window.wait_for_room()
        return self.track(batch, window)

    def track(self, batch: Tracked, window: BatchWindow) -> Tracked:
        """Count ``batch`` (or a page yielded on its own) in ``window`` until it is done;
        returns it."""
        key = id(batch)
        window.opened()
        self._open[key] = weakref.finalize(batch, self._release, key, window)
        return batch

    def _done(self, item: object) -> None:
        if type(item) is PageBatch or type(item) is SitemapPage:
            finalizer = self._open.get(id(item))
            if finalizer is not None:
                finalizer()  # runs _release once; the finalizer is then dead

    def _release(self, key: int, window: BatchWindow) -> None:
        self._open.pop(key, None)
        window.closed()
