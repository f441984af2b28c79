"""The tree extension: rebuilds the sitemap tree from node reports, counts pages.

Node reports arrive by the ``sitemap_node`` signal (reports yielded as items by a
spider of your own are taken too); pages and page batches are counted as they
leave the item pipelines (``item_scraped``, ``item_dropped``, ``item_error``) and
go on to the feeds untouched. When the spider closes, the tree is written to
SITEMAP_CRAWL_TREE_FILE (if set), the stats get the counts and the log ends with a
text rendering of the tree.

One instance per crawler (:meth:`SitemapTreeExtension.for_crawler`): the former
``sitemap_crawl.pipelines.SitemapTreePipeline`` shares it, so listing both in the
settings does everything once.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import weakref
from pathlib import Path
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler

from sitemap_crawl.items import NodeReport, PageBatch, SitemapPage
from sitemap_crawl.names import ERRORS_STAT, PAGES_STAT, SITEMAPS_STAT
from sitemap_crawl.settings_reader import SettingsReader
from sitemap_crawl.signals import sitemap_node
from sitemap_crawl.tree import SitemapTree

TREE_LOGGER = "sitemap_crawl.pipelines"
"""The logger of the tree's log lines: the name they had when the tree was a pipeline."""
logger = logging.getLogger(TREE_LOGGER)

_INSTANCES: weakref.WeakKeyDictionary[Crawler, SitemapTreeExtension] = weakref.WeakKeyDictionary()


class SitemapTreeExtension:
    """Collects :class:`~sitemap_crawl.items.NodeReport` reports into a :class:`SitemapTree`."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        config = SettingsReader(crawler.settings)
        self.tree_file = config.tree_file
        self.tree_log_lines = config.tree_log_lines
        self.tree = SitemapTree()
        self.pages = 0
        self.nodes_seen = 0
        self._closed = False
        self._summary: tuple[Any, ...] | None = None
        crawler.signals.connect(self.record_node, signal=sitemap_node)
        crawler.signals.connect(self._item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(self.count_pages, signal=signals.item_dropped)
        crawler.signals.connect(self.count_pages, signal=signals.item_error)
        crawler.signals.connect(self.close_spider, signal=signals.spider_closed)
        crawler.signals.connect(self._log_summary, signal=signals.engine_stopped)

    @classmethod
    def for_crawler(cls, crawler: Crawler) -> SitemapTreeExtension:
        """The crawler's one tree extension, made on first use."""
        extension = _INSTANCES.get(crawler)
        if extension is None:
            extension = _INSTANCES[crawler] = cls(crawler)
        return extension

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SitemapTreeExtension:
        return cls.for_crawler(crawler)

    def count_pages(self, item: Any) -> None:
        """Count the pages of an item that left the item pipelines (dropped ones too)."""
        if isinstance(item, PageBatch):
            count = len(item.pages)
            self.pages += count
            self.tree.add_pages(item.node_path, count)
            self.stats.inc_value(PAGES_STAT, count)
        elif isinstance(item, SitemapPage):
            self.pages += 1
            self.stats.inc_value(PAGES_STAT)

    def _item_scraped(self, item: Any) -> None:
        if isinstance(item, NodeReport):  # a spider of your own may still yield reports as items
            self.record_node(item)
        else:
            self.count_pages(item)

    def record_node(self, node: NodeReport) -> None:
        """Place one node report in the tree (the ``sitemap_node`` signal handler)."""
        self.nodes_seen += 1
        self.tree.report(node.path, node.url, node.kind, node.error, node.page_count, node.finished)

    def close_spider(self) -> None:
        """Write the tree file and the stats, and prepare the closing log lines (once)."""
        if self._closed or not self.nodes_seen:
            return
        self._closed = True
        self.tree.close()
        counts = self.tree.counts()
        for kind, count in counts["by_kind"].items():
            self.stats.set_value(f"{SITEMAPS_STAT}/{kind}", count)
        for reason, count in counts["by_error"].items():
            self.stats.set_value(f"{ERRORS_STAT}/{reason}", count)
        self.stats.set_value(SITEMAPS_STAT, sum(counts["by_kind"].values()))
        if self.tree_file:
            write_json_atomically(Path(self.tree_file), self.tree.to_dict())
            logger.info("Sitemap tree written to %s", self.tree_file)
        kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(counts["by_kind"].items())) or "none"
        errors = ", ".join(f"{count} {reason}" for reason, count in sorted(counts["by_error"].items())) or "none"
        self._summary = (
            "Sitemap tree:\n%s\nSitemaps: %s. Problems: %s. Pages: %d.",
            self.tree.render(self.tree_log_lines),
            kinds,
            errors,
            self.pages,
        )
        if self.crawler.engine is None:  # not a running crawl (e.g. a unit test): log it now
            self._log_summary()

    def _log_summary(self) -> None:
        """The tree and the counts, as the last lines of the crawl's log (after Scrapy's stats dump)."""
        if self._summary is not None:
            summary, self._summary = self._summary, None
            logger.info(*summary)


def write_json_atomically(path: Path, data: Any) -> None:
    """Write JSON to ``path`` through a temporary file and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            json.dump(data, stream, ensure_ascii=False, indent=1)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
