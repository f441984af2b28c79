"""The tree pipeline: rebuilds the sitemap tree from node items, counts pages.

Node reports arrive by the ``sitemap_node`` signal (node items yielded by a
spider of your own are taken too, and stop here); pages and page batches go on
to the feeds. When the crawl closes, the tree is written to
SITEMAP_CRAWL_TREE_FILE (if set), the stats get the counts and the log ends
with a text rendering of the tree.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem

from sitemap_crawl.config import SettingsReader
from sitemap_crawl.items import PageBatch, SitemapNodeItem, SitemapPage
from sitemap_crawl.signals import site_finished, sitemap_node
from sitemap_crawl.tree import SitemapTree
from sitemap_crawl.tree_file import TreeFile

logger = logging.getLogger(__name__)

STATS_PREFIX = "sitemap_crawl"


class SitemapTreePipeline:
    """Collects node reports into one :class:`SitemapTree` per site being mapped."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        config = SettingsReader(crawler.settings)
        self.tree_log_lines = config.tree_log_lines
        self.tree_file: TreeFile | None = None
        if config.tree_file:
            self.tree_file = TreeFile(config.tree_file, many_sites=False)
        self.trees: dict[str, SitemapTree] = {}
        """The trees of the sites being mapped, by website URL (a finished one is written and dropped)."""
        self.pages = 0
        self.nodes_seen = 0
        self.sites_finished = 0
        self.outcomes: Counter[str] = Counter()
        self.kinds: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self._last_tree: SitemapTree | None = None
        self.many_sites = False
        """Whether the spider maps a list of sites (set when it opens)."""
        self._summary: tuple[Any, ...] | None = None
        crawler.signals.connect(self._log_summary, signal=signals.engine_stopped)
        crawler.signals.connect(self._spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.record_node, signal=sitemap_node)
        crawler.signals.connect(self.finish_site, signal=site_finished)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SitemapTreePipeline:
        return cls(crawler)

    def _spider_opened(self, spider: Any = None) -> None:
        self.many_sites = getattr(spider, "homepages", None) is not None
        if self.tree_file is not None:
            self.tree_file.many_sites = self.many_sites  # a many-site run: one JSON array of trees

    def process_item(self, item: Any) -> Any:
        if isinstance(item, PageBatch):
            count = len(item.pages)
            self.pages += count
            tree = self._tree(item.website)
            if tree is not None:
                tree.add_pages(item.node_path, count)
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

    def _tree(self, site: str | None) -> SitemapTree | None:
        if site is None:
            return next(iter(self.trees.values()), None) if len(self.trees) == 1 else None
        return self.trees.get(site)

    def record_node(self, node: SitemapNodeItem, site: str | None = None) -> None:
        """Place one node report in its site's tree (the ``sitemap_node`` signal handler)."""
        self.nodes_seen += 1
        key = site if site is not None else ""
        tree = self.trees.get(key)
        if tree is None:
            tree = self.trees[key] = SitemapTree()
        tree.report(node.path, node.url, node.kind, node.error, node.page_count, node.finished)

    def finish_site(self, site: str, unreachable: str | None = None) -> None:
        """A site is finished (the ``site_finished`` signal): count it, write its tree."""
        tree = self.trees.pop(site, None)
        if tree is not None:
            self._close_tree(tree, unreachable)

    def _close_tree(self, tree: SitemapTree, unreachable: str | None) -> None:
        tree.close()
        counts = tree.counts()
        self.kinds.update(counts["by_kind"])
        self.errors.update(counts["by_error"])
        self.sites_finished += 1
        self.outcomes[_outcome(counts, unreachable)] += 1
        if self.tree_file is not None:
            self.tree_file.add(tree.to_dict())
        self._last_tree = tree

    def close_spider(self) -> None:
        for tree in list(self.trees.values()):  # sites stopped before they were finished
            self._close_tree(tree, None)
        self.trees.clear()
        if not self.sites_finished:
            return
        for kind, count in self.kinds.items():
            self.stats.set_value(f"{STATS_PREFIX}/sitemaps/{kind}", count)
        for reason, count in self.errors.items():
            self.stats.set_value(f"{STATS_PREFIX}/errors/{reason}", count)
        self.stats.set_value(f"{STATS_PREFIX}/sitemaps", sum(self.kinds.values()))
        if self.tree_file is not None:
            self.tree_file.close()
            logger.info("Sitemap tree%s written to %s", "s" if self.many_sites else "", self.tree_file.path)
        kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(self.kinds.items())) or "none"
        errors = ", ".join(f"{count} {reason}" for reason, count in sorted(self.errors.items())) or "none"
        if not self.many_sites and self.sites_finished == 1 and self._last_tree is not None:
            self._summary = (
                "Sitemap tree:\n%s\nSitemaps: %s. Problems: %s. Pages: %d.",
                self._last_tree.render(self.tree_log_lines),
                kinds,
                errors,
                self.pages,
            )
        else:
            outcomes = ", ".join(f"{self.outcomes[name]} {name}" for name in OUTCOMES if self.outcomes[name])
            for name in OUTCOMES:
                self.stats.set_value(f"{STATS_PREFIX}/sites/{name.replace(' ', '_')}", self.outcomes[name])
            self._summary = (
                "Sites: %d mapped (%s). Sitemaps: %s. Problems: %s. Pages: %d.",
                self.sites_finished,
                outcomes or "none",
                kinds,
                errors,
                self.pages,
            )
        self._last_tree = None
        if self.crawler.engine is None:  # not a running crawl (e.g. a unit test): log it now
            self._log_summary()

    def _log_summary(self) -> None:
        """The tree and the counts, as the last lines of the crawl's log (after Scrapy's stats dump)."""
        if self._summary is not None:
            summary, self._summary = self._summary, None
            logger.info(*summary)


OUTCOMES = ("with sitemaps", "without sitemaps", "unreachable", "with errors")
"""How a site's mapping ended, as the many-site summary counts them."""


def _outcome(counts: dict[str, Any], unreachable: str | None) -> str:
    if unreachable is not None:
        return "unreachable"
    sitemaps = sum(count for kind, count in counts["by_kind"].items() if kind not in ("robots_txt", "invalid"))
    if counts["by_error"]:
        return "with errors"
    return "with sitemaps" if sitemaps else "without sitemaps"
