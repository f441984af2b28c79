"""Item pipelines and feed item filters that tests put into a real crawl (by import path in
ITEM_PIPELINES, or as a feed's ``item_filter``)."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from itemadapter import ItemAdapter
from scrapy.crawler import Crawler

from sitemap_crawl.items import PageBatch

MOST_IN_PROCESS_STAT = "test/most_batches_of_one_sitemap_in_process"


class SlowBatchPipeline:
    """Takes 5 ms over each page batch and records, in the stats, the most batches of one
    sitemap it held at once (what the spider lets into Scrapy's item processing)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.in_process: Counter[str] = Counter()
        self.most = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SlowBatchPipeline:
        return cls(crawler)

    async def process_item(self, item: Any) -> Any:
        if not isinstance(item, PageBatch):
            return item
        self.in_process[item.sitemap_url] += 1
        self.most = max(self.most, self.in_process[item.sitemap_url])
        assert self.crawler.stats is not None
        self.crawler.stats.set_value(MOST_IN_PROCESS_STAT, self.most)
        await asyncio.sleep(0.005)
        self.in_process[item.sitemap_url] -= 1
        return item


class NewsOnly:
    """A feed's ``item_filter``: only the items that have news."""

    def __init__(self, feed_options: dict[str, Any]) -> None:
        self.feed_options = feed_options

    def accepts(self, item: Any) -> bool:
        return ItemAdapter(item).get("news") is not None
