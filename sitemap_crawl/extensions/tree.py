"""The tree extension: rebuilds the sitemap tree from node reports, counts pages.

Node reports arrive by the ``sitemap_node`` signal, with the site they belong to
(reports yielded as items by a spider of your own are taken too); pages and page
batches are counted as they leave the item pipelines (``item_scraped``,
``item_dropped``, ``item_error``) and go on to the feeds untouched. A site's tree is
complete when the ``site_finished`` signal says so: it is written to
SITEMAP_CRAWL_TREE_FILE (see :mod:`sitemap_crawl.tree_file`) and counted. When the
spider closes, the stats get the counts and the log ends with a text rendering of
the tree (a single site) or a summary by outcome (many sites).

One instance per crawler (:meth:`SitemapTreeExtension.for_crawler`): the former
``sitemap_crawl.pipelines.SitemapTreePipeline`` shares it, so listing both in the
settings does everything once.
"""

from __future__ import annotations

import logging
import weakref
from collections import Counter
from collections.abc import Callable
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.reactor import is_reactor_installed

from sitemap_crawl.items import NodeReport, PageBatch, SitemapPage
from sitemap_crawl.kinds import NodeKind
from sitemap_crawl.names import (
    ERRORS_STAT,
    ITEM_SCRAPED_COUNT_STAT,
    PAGES_STAT,
    SITEMAPS_STAT,
    SITES_STAT,
    TREE_FILE_FAILED_STAT,
)
from sitemap_crawl.settings_reader import SettingsReader
from sitemap_crawl.signals import site_finished, site_tree, sitemap_node
from sitemap_crawl.tree import SitemapTree
from sitemap_crawl.tree_file import TreeFile

TREE_LOGGER = "sitemap_crawl.pipelines"
"""The logger of the tree's log lines: the name they had when the tree was a pipeline."""
logger = logging.getLogger(TREE_LOGGER)

_INSTANCES: weakref.WeakKeyDictionary[Crawler, SitemapTreeExtension] = weakref.WeakKeyDictionary()


class SitemapTreeExtension:
    """Collects :class:`~sitemap_crawl.items.NodeReport` reports into one :class:`SitemapTree`
    per site being mapped; a finished site's tree is written to the tree file and dropped."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        config = SettingsReader(crawler.settings)
        self.tree_log_lines = config.tree_log_lines
        self.tree_file = TreeFile(config.tree_file, many_sites=False) if config.tree_file else None
        self.tree_file_failure: str | None = None
        """Why the tree file could not be written ("path: reason"), after a write to it failed."""
        self.trees: dict[str, SitemapTree] = {}
        """The trees of the sites being mapped, by website URL."""
        self.many_sites = False
        """Whether the spider maps a list of sites (known when it opens)."""
        self.pages = 0
        self.nodes_seen = 0
        self.sites_finished = 0
        self.outcomes: Counter[str] = Counter()
        self.kinds: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self._last_tree: SitemapTree | None = None
        self._closed = False
        self._summary: tuple[Any, ...] | None = None
        self._shutdown_trigger: Any = None
        crawler.signals.connect(self._spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.record_node, signal=sitemap_node)
        crawler.signals.connect(self.finish_site, signal=site_finished)
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
    def existing(cls, crawler: Crawler) -> SitemapTreeExtension | None:
        """The crawler's tree extension if it has one (made by EXTENSIONS or the tree pipeline;
        None when the project switched it off): unlike :meth:`for_crawler`, never made here."""
        return _INSTANCES.get(crawler)

    @staticmethod
    def kept_elsewhere(crawler: Crawler) -> bool:
        """Whether this crawl's trees are kept by another process (a helper crawl process: the
        main process keeps them), so that it has no tree extension of its own."""
        return crawler.settings.get("SITEMAP_CRAWL_SHARD_FD") is not None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SitemapTreeExtension:
        if cls.kept_elsewhere(crawler):
            raise NotConfigured
        return cls.for_crawler(crawler)

    @property
    def tree(self) -> SitemapTree | None:
        """The tree of a single-site run (the one being built, or the last one finished)."""
        return next(iter(self.trees.values()), None) or self._last_tree

    def _spider_opened(self, spider: Any = None) -> None:
        # (the sitemaps spider's; the drop-in SitemapSpider's homepages is another thing)
        self.many_sites = bool(getattr(spider, "maps_many_sites", False))
        if self.stats.get_value(PAGES_STAT) is None:
            self.stats.set_value(PAGES_STAT, 0)  # (a crawl that finds no page says 0, not nothing)
        if self.tree_file is not None:
            self.tree_file.many_sites = self.many_sites  # a many-site .json file: one array of trees
            self.tree_file.append = getattr(spider, "queue", None) is not None  # a worker keeps its past lines
        if is_reactor_installed():
            self._shutdown_trigger = _reactor().addSystemEventTrigger("before", "shutdown", self._forced_shutdown)

    def _forced_shutdown(self) -> None:
        """The reactor stops before the spider closed: a second Ctrl-C (Scrapy's "unclean
        shutdown") sends no spider_closed. The tree file is written all the same."""
        self._shutdown_trigger = None
        if not self._closed:
            self.close_spider()
            self._log_summary()

    def count_pages(self, item: Any) -> None:
        """Count the pages of an item that left the item pipelines (dropped ones too)."""
        if isinstance(item, PageBatch):
            count = len(item.pages)
            self.pages += count
            tree = self.trees.get(item.website) if item.website is not None else self._only_tree()
            if tree is not None:
                tree.add_pages(item.node_path, count)
            self.stats.inc_value(PAGES_STAT, count)
        elif isinstance(item, SitemapPage):
            self.pages += 1
            self.stats.inc_value(PAGES_STAT)

    def _only_tree(self) -> SitemapTree | None:
        return next(iter(self.trees.values())) if len(self.trees) == 1 else None

    def _item_scraped(self, item: Any) -> None:
        if isinstance(item, NodeReport):  # a spider of your own may still yield reports as items
            self.record_node(item)
            return
        if isinstance(item, PageBatch) and len(item.pages) > 1:
            # Scrapy counted the batch as one item; item_scraped_count counts the rows it holds
            self.stats.inc_value(ITEM_SCRAPED_COUNT_STAT, len(item.pages) - 1)
        self.count_pages(item)

    def record_node(self, node: NodeReport, site: str | None = None) -> None:
        """Place one node report in its site's tree (the ``sitemap_node`` signal handler)."""
        self.nodes_seen += 1
        key = site if site is not None else ""
        tree = self.trees.get(key)
        if tree is None:
            tree = self.trees[key] = SitemapTree()
        tree.report(
            node.path, node.url, node.kind, node.error, node.page_count, node.finished, node.change, node.changes
        )

    def finish_site(self, site: str, unreachable: str | None = None, attempt: str | None = None) -> None:
        """A site has nothing left to fetch (the ``site_finished`` signal): count it and write
        its tree (a line of a .jsonl tree file is appended at once; a queue run's line names
        the ``attempt`` that completed it)."""
        tree = self.trees.pop(site, None)
        if tree is not None:
            self._close_tree(site, tree, unreachable, attempt)

    def _close_tree(
        self, site: str, tree: SitemapTree, unreachable: str | None, attempt: str | None = None, stopped: bool = False
    ) -> None:
        tree.close(stopped)
        self.crawler.signals.send_catch_log(site_tree, site=site, tree=tree)
        counts = tree.counts()
        self.kinds.update(counts["by_kind"])
        self.errors.update(counts["by_error"])
        self.sites_finished += 1
        self.outcomes[INTERRUPTED if stopped else _outcome(counts, unreachable)] += 1
        if self.tree_file is not None:
            data = tree.to_dict()
            if attempt is not None:
                data["attempt"] = attempt
            self._write_tree_file(self.tree_file.add, data)
        self._last_tree = tree

    def _write_tree_file(self, write: Callable[..., None], *args: Any) -> bool:
        """Write to the tree file; when that fails (a full disk), say so once and write no more:
        the crawl goes on, and the log's summary still shows the tree."""
        try:
            write(*args)
        except OSError as exc:
            assert self.tree_file is not None
            reason = exc.strerror or str(exc)
            logger.error(
                "The sitemap tree file %s could not be written (%s): no more is written to it",
                self.tree_file.path,
                reason,
            )
            self.stats.set_value(TREE_FILE_FAILED_STAT, 1)
            self.tree_file_failure = f"{self.tree_file.path}: {reason}"
            self.tree_file.abandon()
            self.tree_file = None
            return False
        return True

    def close_spider(self) -> None:
        """Write the tree file and the stats, and prepare the closing log lines (once)."""
        if self._shutdown_trigger is not None:
            _reactor().removeSystemEventTrigger(self._shutdown_trigger)
            self._shutdown_trigger = None
        if self._closed or not (self.nodes_seen or self.many_sites):  # (a many-site run writes [] for none)
            return
        self._closed = True
        for site, tree in list(self.trees.items()):  # sites stopped before they were finished
            self._close_tree(site, tree, None, stopped=True)
        self.trees.clear()
        for kind, count in self.kinds.items():
            self.stats.set_value(f"{SITEMAPS_STAT}/{kind}", count)
        for reason, count in self.errors.items():
            self.stats.set_value(f"{ERRORS_STAT}/{reason}", count)
        self.stats.set_value(SITEMAPS_STAT, sum(self.kinds.values()))
        if self.tree_file is not None and self._write_tree_file(self.tree_file.close):
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
            for name in OUTCOMES:
                self.stats.set_value(f"{SITES_STAT}/{name.replace(' ', '_')}", self.outcomes[name])
            outcomes = ", ".join(f"{self.outcomes[name]} {name}" for name in OUTCOMES if self.outcomes[name])
            self._summary = (
                "Sites: %d mapped (%s). Sitemaps: %s. Problems: %s. Pages: %d.",
                self.sites_finished,
                outcomes or "none",
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


def _reactor() -> Any:
    """The installed Twisted reactor (typed loosely: its interface's stubs confuse mypy)."""
    from twisted.internet import reactor

    return reactor


INTERRUPTED = "interrupted"
"""The outcome of a site the run stopped before it was finished (Ctrl-C, a ``CLOSESPIDER_*``
limit, its crawl process gone): not mapped, not a site "with errors"."""
OUTCOMES = ("with sitemaps", "without sitemaps", "unreachable", "with errors", INTERRUPTED)
"""How a site's mapping ended, as the many-site summary and the stats count them."""


def _outcome(counts: dict[str, Any], unreachable: str | None) -> str:
    if unreachable is not None:
        return "unreachable"
    if counts["by_error"]:
        return "with errors"
    found = sum(
        count for kind, count in counts["by_kind"].items() if kind not in (NodeKind.ROBOTS_TXT, NodeKind.INVALID)
    )
    return "with sitemaps" if found else "without sitemaps"
