"""The former tree pipeline, kept for projects that list it in ITEM_PIPELINES.

The tree is now :class:`~sitemap_crawl.extensions.tree.SitemapTreeExtension`, which
the add-on and the ``sitemaps`` spider enable through EXTENSIONS. A project that
lists ``sitemap_crawl.pipelines.SitemapTreePipeline`` gets the same tree, stats and
log: the pipeline uses the crawler's one extension (starting it when EXTENSIONS does
not list it), so both listed do everything once. It also drops the node reports a
spider of your own yields as items, so that they never reach the feeds.
"""

from __future__ import annotations

from typing import Any

from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem

from sitemap_crawl.extensions.tree import SitemapTreeExtension
from sitemap_crawl.items import NodeReport
from sitemap_crawl.names import STATS_PREFIX

__all__ = ["STATS_PREFIX", "SitemapTreePipeline"]


class SitemapTreePipeline:
    """ITEM_PIPELINES entry standing for the crawler's :class:`SitemapTreeExtension`."""

    def __init__(self, crawler: Crawler) -> None:
        self.extension = SitemapTreeExtension.for_crawler(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SitemapTreePipeline:
        return cls(crawler)

    @property
    def tree(self) -> Any:
        return self.extension.tree

    @property
    def pages(self) -> int:
        return self.extension.pages

    def process_item(self, item: Any) -> Any:
        if isinstance(item, NodeReport):  # a spider of your own may still yield reports as items
            self.extension.record_node(item)
            raise DropItem("sitemap tree node (kept in the tree, not in feeds)", log_level="DEBUG")
        return item

    def record_node(self, node: NodeReport) -> None:
        """Place one node report in the tree."""
        self.extension.record_node(node)

    def close_spider(self) -> None:
        self.extension.close_spider()
