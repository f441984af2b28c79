"""The tree pipeline: rebuilds the sitemap tree from node items, counts pages.

Node reports arrive by the ``sitemap_node`` signal (node items yielded by a
spider of your own are taken too, and stop here); pages and page batches go on
to the feeds. When the crawl closes, the tree is written to
SITEMAP_CRAWL_TREE_FILE (if set), the stats get the counts and the log ends
with a text rendering of the tree.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem

from sitemap_crawl.items import PageBatch, SitemapNodeItem, SitemapPage
from sitemap_crawl.settings_reader import SettingsReader
from sitemap_crawl.signals import sitemap_node
from sitemap_crawl.tree import SitemapTree

logger = logging.getLogger(__name__)

STATS_PREFIX = "sitemap_crawl"


class SitemapTreePipeline:
    """Collects SitemapNodeItem reports into a :class:`SitemapTree`."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        config = SettingsReader(crawler.settings)
        self.tree_file = config.tree_file
        self.tree_log_lines = config.tree_log_lines
        self.tree = SitemapTree()
        self.pages = 0
        self.nodes_seen = 0
        self._summary: tuple[Any, ...] | None = None
        crawler.signals.connect(self._log_summary, signal=signals.engine_stopped)
        crawler.signals.connect(self.record_node, signal=sitemap_node)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SitemapTreePipeline:
        return cls(crawler)

    def process_item(self, item: Any) -> Any:
        if isinstance(item, PageBatch):
            count = len(item.pages)
            self.pages += count
            self.tree.add_pages(item.node_path, count)
            self.stats.inc_value(f"{STATS_PREFIX}/pages", count)
            return item
        if isinstance(item, SitemapPage):
            self.pages += 1
            self.stats.inc_value(f"{STATS_PREFIX}/pages")
            return item
        if isinstance(item, SitemapNodeItem):  # a spider of your own may still yield reports as items
            self.record_node(item)
            raise DropItem("sitemap tree node (kept in the tree, not in feeds)", log_level="DEBUG")
        return item

    def record_node(self, node: SitemapNodeItem) -> None:
        """Place one node report in the tree (the ``sitemap_node`` signal handler)."""
        self.nodes_seen += 1
        self.tree.report(node.path, node.url, node.kind, node.error, node.page_count, node.finished)

    def close_spider(self) -> None:
        if not self.nodes_seen:
            return
        self.tree.close()
        counts = self.tree.counts()
        for kind, count in counts["by_kind"].items():
            self.stats.set_value(f"{STATS_PREFIX}/sitemaps/{kind}", count)
        for reason, count in counts["by_error"].items():
            self.stats.set_value(f"{STATS_PREFIX}/errors/{reason}", count)
        self.stats.set_value(f"{STATS_PREFIX}/sitemaps", sum(counts["by_kind"].values()))
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
