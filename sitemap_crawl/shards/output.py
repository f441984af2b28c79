"""The item pipeline of a helper crawl process: everything goes to the main process.

Page batches (and single pages) are written to the pipe as page tuples, tree reports
and finished sites as they are signalled, and the helper's counters when it closes.
Writing never blocks the helper's event loop: the pipeline waits for the pipe to drain
when more than :data:`HIGH_WATER` bytes are queued, which slows the helper down to the
pace at which the main process takes its pages.
"""

from __future__ import annotations

import asyncio
import logging
import os
from numbers import Number
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from sitemap_crawl.codec import page_to_tuple
from sitemap_crawl.items import NodeReport, PageBatch, SitemapPage
from sitemap_crawl.parsing.worker_protocol import encode_frame
from sitemap_crawl.shards.protocol import NODE, PAGES, SITE, STATS
from sitemap_crawl.signals import site_finished, sitemap_node

logger = logging.getLogger(__name__)

HIGH_WATER = 1 << 20
"""Bytes queued for the pipe above which a page batch waits for it to drain."""
NOT_MERGED_STATS = (
    "item_scraped_count",
    "item_dropped_count",
    "item_dropped_reasons_count/",
    "sitemap_crawl/pages",
    "sitemap_crawl/sites_done",
    "sitemap_crawl/sitemaps",
    "sitemap_crawl/errors",
    "memusage/",
    "elapsed_time_seconds",
    "responses_per_minute",
    "items_per_minute",
)
"""Counters of a helper (name prefixes) the main process does not add to its own: the items,
pages, sitemaps and sites it counts itself from what the helpers send, and the figures that
are not sums (memory, time, rates). Every other number is added (downloads, retries, the HTTP
cache, robots.txt, the duplicate filter, a project's own counters...)."""
MAX_STATS = ("request_depth_max",)
"""Figures of a helper that are a maximum: the main process keeps the largest."""


def helper_stats(stats: dict[str, Any]) -> dict[str, Number]:
    """The figures a helper sends the main process at its end (see :data:`NOT_MERGED_STATS`)."""
    return {
        name: value
        for name, value in stats.items()
        if isinstance(value, Number) and not isinstance(value, bool) and not name.startswith(NOT_MERGED_STATS)
    }


class ShardOutput:
    """Sends a helper's pages, tree reports and finished sites to the main process."""

    def __init__(self, crawler: Crawler, fd: int) -> None:
        self.crawler = crawler
        self.fd = fd
        self._writer: asyncio.StreamWriter | None = None
        self._pending: list[bytes] = []
        self._orphaned = False
        crawler.signals.connect(self._open, signal=signals.spider_opened)
        crawler.signals.connect(self._node, signal=sitemap_node)
        crawler.signals.connect(self._site, signal=site_finished)
        crawler.signals.connect(self._close, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ShardOutput:
        fd = crawler.settings.get("SITEMAP_CRAWL_SHARD_FD")
        if fd is None:
            raise NotConfigured  # not a helper crawl process
        return cls(crawler, int(fd))

    async def _open(self) -> None:
        loop = asyncio.get_running_loop()
        pipe = os.fdopen(self.fd, "wb", buffering=0)
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, pipe)
        self._writer = asyncio.StreamWriter(transport, protocol, None, loop)
        for frame in self._pending:
            self._writer.write(frame)
        self._pending.clear()

    def _send(self, message: Any) -> None:
        frame = encode_frame(message)
        writer = self._writer
        if writer is None:
            self._pending.append(frame)
        elif writer.transport.is_closing():
            self._main_gone()
        else:
            writer.write(frame)

    async def process_item(self, item: Any) -> Any:
        if isinstance(item, PageBatch):
            self._send((PAGES, item.website, item.sitemap_url, item.node_path, [page_to_tuple(p) for p in item.pages]))
        elif isinstance(item, SitemapPage):
            self._send((PAGES, item.website, item.sitemap_url, None, [page_to_tuple(item)]))
        else:
            logger.warning("A helper crawl process cannot pass on %s items; dropped", type(item).__name__)
            return item
        writer = self._writer
        if writer is not None and writer.transport.get_write_buffer_size() > HIGH_WATER:
            try:
                await writer.drain()
            except ConnectionError:
                self._main_gone()
        return item

    def _main_gone(self) -> None:
        if not self._orphaned:  # the main process is gone: nobody takes what this one maps
            self._orphaned = True
            logger.error("The main crawl process is gone; this helper stops")
            self.crawler.stop()

    def _node(self, node: NodeReport, site: str) -> None:
        self._send((NODE, site, node))

    def _site(self, site: str, unreachable: str | None) -> None:
        spider = self.crawler.spider
        in_flight = len(getattr(spider, "sites", ()))
        homepages = getattr(spider, "homepages", None)
        self._send((SITE, site, unreachable, in_flight, homepages.taken if homepages is not None else 0))

    async def _close(self) -> None:
        self._send((STATS, helper_stats(self.crawler.stats.get_stats())))
        if self._writer is not None:
            # drain() waits only while more than the transport's high-water mark (64 KiB) is
            # queued: what is below it would be lost when the loop stops after this signal (a
            # main process slow to read lost a helper's last pages, its site's end and stats)
            self._writer.transport.set_write_buffer_limits(high=0)
            try:
                await self._writer.drain()
            except ConnectionError:  # the main process is gone (killed): nobody to tell
                self._main_gone()
            self._writer.close()
