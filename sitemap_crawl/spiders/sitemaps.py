"""The ``sitemaps`` spider: find every sitemap of a site and yield its pages.

    scrapy crawl sitemaps -a homepage=https://www.example.org/ -O pages.csv

Discovery order: robots.txt and every sitemap under it, then the well-known
paths (skipping URLs already seen under robots.txt). Each response is sniffed
and streamed through the pure parsers; pages leave in batches (or one item per
page with SITEMAP_CRAWL_BATCH_SIZE=0) and one node item per sitemap feeds the
tree extension.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urljoin

from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.downloadermiddlewares.retry import get_retry_request
from scrapy.exceptions import DontCloseSpider
from scrapy.http import Response
from scrapy.resolver import dnscache
from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings
from twisted.python.failure import Failure

from sitemap_crawl.arguments import (
    SpiderArgumentError,
    install_traceback_filter,
    parse_bool,
    parse_homepage,
    parse_known_paths,
    parse_regex,
    parse_since_arguments,
    parse_sitemap_urls,
)
from sitemap_crawl.discovery import ALWAYS, KNOWN, ROBOTS, FollowRules, SiteDiscovery, Visit
from sitemap_crawl.discovery.since import Since
from sitemap_crawl.downloads import MANY_SITES_HANDLER
from sitemap_crawl.engine_state import is_closing
from sitemap_crawl.extensions.tree import SitemapTreeExtension
from sitemap_crawl.failures import failure_reason, release_causes
from sitemap_crawl.gctuning import GcTuning
from sitemap_crawl.history.store import HistoryError, HistoryStore
from sitemap_crawl.history.tracker import CHANGED, NOT_MODIFIED, UNCHANGED, HistoryTracker, SitemapChanges
from sitemap_crawl.items import NodeReport, PageBatch, SitemapPage, SitemapRef
from sitemap_crawl.kinds import ErrorReason, NodeKind, http_error
from sitemap_crawl.loader.scrapy_fetcher import use_loader_scheduler
from sitemap_crawl.memory import trim
from sitemap_crawl.names import (
    CONDITIONAL_META_KEY,
    HELD_STAT,
    META_KEY,
    NOT_FOLLOWED_STAT,
    REQUESTS_STAT,
    RUN_META_KEY,
    SINCE_PAGES_DROPPED_STAT,
    SINCE_SITEMAPS_SKIPPED_STAT,
    SITES_DONE_STAT,
)
from sitemap_crawl.offload import SitemapReaders
from sitemap_crawl.output_paths import feed_files, shared_file, unwritable_reason
from sitemap_crawl.parsing import INVALID, ROBOTS_TXT
from sitemap_crawl.parsing.fields import same_url_key
from sitemap_crawl.parsing.reader import TEXT, XML_INDEX
from sitemap_crawl.queue.config import parse_queue_url
from sitemap_crawl.settings_reader import SettingsReader
from sitemap_crawl.shards.helpers import ENDED, NODE, PAGES, SITE, HelperProcesses, page_batch
from sitemap_crawl.signals import site_finished, sitemap_failure, sitemap_node, sitemap_response
from sitemap_crawl.sites import HomepageList, HostGate, Shard, host_of
from sitemap_crawl.sites.backlog import SendValve
from sitemap_crawl.spiders.batch_window import BatchTracker, BatchWindow
from sitemap_crawl.spiders.download_counts import DownloadCounts
from sitemap_crawl.spiders.page_order import PageTurns
from sitemap_crawl.wiring import (
    TREE_EXTENSION,
    TREE_EXTENSION_ORDER,
    add_sitemap_crawl_components,
    keep_over_the_runners_copy,
)

if TYPE_CHECKING:
    from sitemap_crawl.queue.worker import QueueWorker

logger = logging.getLogger(__name__)

MANY_SITES_CONCURRENT_REQUESTS = 128
"""CONCURRENT_REQUESTS of a many-site run, in each crawl process (Scrapy's 16 would keep only a few hosts busy),
unless the project set it."""
BACKLOG_MIN = 32
"""The least number of responses a crawl process may hold in processing before it holds
new sitemap requests back (else twice CONCURRENT_REQUESTS)."""
UNUSED_SPIDER_MIDDLEWARES = (
    "scrapy.spidermiddlewares.urllength.UrlLengthMiddleware",
    "scrapy.spidermiddlewares.depth.DepthMiddleware",
    "scrapy.spidermiddlewares.metacopy.MetaCopyDetectionMiddleware",
)
"""Spider middlewares that act only on requests a callback yields: the sitemaps spider's
callbacks yield none (it sends its requests to the engine), so each would only wrap every
callback's output in one more async generator. A project that lists one of them in
SPIDER_MIDDLEWARES still gets it. RefererMiddleware stays: without it Scrapy's redirect
middlewares log a WARNING at every crawl's start."""
ERROR_STATUSES = range(400, 600)
"""HTTP errors the callback takes as they are (``handle_httpstatus_list``) instead of an
HttpError failure: most requests of a many-site run are well-known paths that answer 404,
and the failure path (an exception, a Failure, the errback chain) cost ~10% of its CPU."""
HISTORY_STATUSES = (NOT_MODIFIED, *ERROR_STATUSES)
"""A history run's requests are conditional: 304 Not Modified reaches the callback too."""
HELPERS_URL = "data:,helper%20crawl%20processes"
"""The request whose callback passes on what the helper crawl processes send (the data:
scheme is downloaded in memory: nothing goes out)."""
HELPERS_PRIORITY = 1 << 20
"""Its priority: before any sitemap request."""
TRIM_AFTER_BYTES = 4 << 20
"""Hand free heap memory back to the system once this many body bytes were read since the
last time (after every sitemap, the call cost ~5% of a many-site run's CPU)."""

install_traceback_filter()


class SitemapsSpider(Spider):
    """Map every sitemap of a website and yield the pages they list."""

    name = "sitemaps"
    download_counts: DownloadCounts | None = None
    """Scrapy's downloader/* counts, kept here when the spider turned DOWNLOADER_STATS off."""

    @classmethod
    def update_settings(cls, settings: BaseSettings) -> None:
        super().update_settings(settings)
        add_sitemap_crawl_components(settings)
        keep_over_the_runners_copy(settings, ("EXTENSIONS", "DOWNLOADER_MIDDLEWARES", "FEED_EXPORTERS"))
        # Requests leave in the order they were made (Scrapy's default queues are LIFO,
        # which would probe the known paths and fetch sibling sitemaps backwards); with
        # priority = depth this walks the tree depth-first in document order. A project
        # that chose its own queues keeps them.
        for name, fifo in (
            ("SCHEDULER_MEMORY_QUEUE", "scrapy.squeues.FifoMemoryQueue"),
            ("SCHEDULER_DISK_QUEUE", "scrapy.squeues.PickleFifoDiskQueue"),
        ):
            if (settings.getpriority(name) or 0) <= SETTINGS_PRIORITIES["default"]:
                settings.set(name, fifo, priority="spider")
        # A run maps its sites from the start: its sitemap requests stay out of JOBDIR's disk
        # queue, where Scrapy would resume them in the next run (a project's SCHEDULER is kept).
        use_loader_scheduler(settings)
        # Scrapy starts CONCURRENT_ITEMS (100) asyncio workers for every callback's output;
        # most sitemap callbacks yield one node item (a dead sub-sitemap, a small sitemap)
        # and pages travel in batches, so 16 is plenty and an index of 50,000 dead children
        # costs about a quarter less CPU. (1 would save ~4% more on a many-site run, but then
        # the items of two sitemaps read at once interleave in the feed: not document order.)
        # A project that set it keeps its value.
        if (settings.getpriority("CONCURRENT_ITEMS") or 0) <= SETTINGS_PRIORITIES["default"]:
            settings.set("CONCURRENT_ITEMS", 16, priority="spider")
        # Scrapy stops starting downloads while the responses being parsed hold more than
        # SCRAPER_SLOT_MAX_ACTIVE_SIZE (5 MB) of body: one large sitemap would stop the next
        # ones from downloading (and from being parsed on the other cores) until it is done.
        # The spider bounds the bodies itself (SITEMAP_CRAWL_CONCURRENT_SITEMAPS in flight).
        if (settings.getpriority("SCRAPER_SLOT_MAX_ACTIVE_SIZE") or 0) <= SETTINGS_PRIORITIES["default"]:
            settings.set("SCRAPER_SLOT_MAX_ACTIVE_SIZE", 1 << 40, priority="spider")
        if (settings.getpriority("SPIDER_MIDDLEWARES_BASE") or 0) <= SETTINGS_PRIORITIES["default"]:
            base = settings.getdict("SPIDER_MIDDLEWARES_BASE")
            kept = {name: order for name, order in base.items() if name not in UNUSED_SPIDER_MIDDLEWARES}
            settings.set("SPIDER_MIDDLEWARES_BASE", kept, priority="spider")

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> SitemapsSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.arguments = dict(kwargs)  # a helper crawl process gets the same
        config = SettingsReader(crawler.settings)
        config.check_for(spider.name)  # here: _setup reads them once start() runs, too late for one clean line
        outputs = (
            ("SITEMAP_CRAWL_TREE_FILE", config.tree_file),
            ("SITEMAP_CRAWL_AUDIT_FILE", config.audit_file),
            ("SITEMAP_CRAWL_REPORT_FILE", config.report_file),
        )
        for name, path in outputs:
            problem = unwritable_reason(path) if path else None
            if problem is not None:
                logger.error("Bad setting for the %s spider: %s: %s", spider.name, name, problem)
                raise SpiderArgumentError(f"{name}: {problem}")
        history = ("SITEMAP_CRAWL_HISTORY", config.history_file)
        shared = shared_file([*outputs, history, *feed_files(crawler.settings.getdict("FEEDS"), spider.name)])
        if shared is not None:
            logger.error("Bad setting for the %s spider: %s", spider.name, shared)
            raise SpiderArgumentError(shared)
        spider.known_paths_mode = config.known_paths_mode
        if spider.queue is not None:
            from sitemap_crawl.queue.worker import QueueUnreachableError  # (loaded with the queue)

            try:
                spider.queue.bind(crawler, spider)
            except QueueUnreachableError as exc:
                logger.error("%s", exc)
                raise
            except SpiderArgumentError as exc:
                logger.error("Bad argument for the %s spider: %s", spider.name, exc)
                raise
        if spider.homepages is not None:
            settings = crawler.settings
            if (settings.getpriority("CONCURRENT_REQUESTS") or 0) <= SETTINGS_PRIORITIES["default"]:
                settings.set("CONCURRENT_REQUESTS", MANY_SITES_CONCURRENT_REQUESTS, priority="spider")
            handlers = settings.getdict("DOWNLOAD_HANDLERS")
            for scheme in ("http", "https"):
                if scheme not in handlers:  # a project's own handler is kept
                    handlers[scheme] = MANY_SITES_HANDLER
            settings.set("DOWNLOAD_HANDLERS", handlers, priority="spider")
            if (settings.getpriority("DOWNLOADER_STATS") or 0) <= SETTINGS_PRIORITIES["default"]:
                settings.set("DOWNLOADER_STATS", False, priority="spider")
                spider.download_counts = DownloadCounts()
        history_path = config.history_file
        if history_path:
            store = HistoryStore(history_path)
            try:
                store.open_now()  # once, before the crawl starts
            except HistoryError as exc:
                logger.error("Bad setting for the %s spider: SITEMAP_CRAWL_HISTORY: %s", spider.name, exc)
                raise SpiderArgumentError(str(exc)) from None
            audited = config.audited
            if audited:
                logger.info(
                    "The audit reads every sitemap: the history's requests are not conditional "
                    "(an unchanged sitemap is told by its body)"
                )
            spider.history = HistoryTracker(crawler, store, conditional=not audited, per_site=spider.queue is not None)
            spider.history.connect()
        crawler.signals.connect(spider._on_idle, signal=signals.spider_idle)
        crawler.signals.connect(spider._close_readers, signal=signals.spider_closed)
        if config.gc_tuning:
            crawler.signals.connect(spider._gc_tuning.apply, signal=signals.spider_opened)
            crawler.signals.connect(spider._gc_tuning.undo, signal=signals.spider_closed)
        return spider

    def __init__(
        self,
        homepage: str | None = None,
        homepages_file: str | None = None,
        sitemap_urls: str | list[str] | None = None,
        use_robots: str | bool | None = None,
        use_known_paths: str | bool | None = None,
        extra_known_paths: str | list[str] | None = None,
        normalize_homepage: str | bool | None = None,
        follow: str | None = None,
        deny: str | None = None,
        since: str | None = None,
        since_undated: str | None = None,
        queue: str | None = None,
        queue_wait: str | bool | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        try:
            normalize = parse_bool("normalize_homepage", normalize_homepage, True)
            self.use_robots = parse_bool("use_robots", use_robots, True)
            self.use_known_paths = parse_bool("use_known_paths", use_known_paths, True)
            self.extra_known_paths = parse_known_paths(extra_known_paths)
            self.follow_pattern = parse_regex("follow", follow)
            self.deny_pattern = parse_regex("deny", deny)
            self.start_sitemap_urls = parse_sitemap_urls(sitemap_urls)
            self.since: Since | None = parse_since_arguments(since, since_undated)
            if homepages_file and (homepage or self.start_sitemap_urls):
                raise SpiderArgumentError("homepages_file maps the sites of its file: give no homepage or sitemap_urls")
            if queue and (homepage or self.start_sitemap_urls or homepages_file):
                raise SpiderArgumentError(
                    "queue maps the sites of the queue: give no homepage, homepages_file or sitemap_urls"
                )
            if not homepage and not self.start_sitemap_urls and not homepages_file and not queue:
                raise SpiderArgumentError(
                    "give -a homepage=https://www.example.org/, -a homepages_file=sites.txt, "
                    "-a sitemap_urls=URL[,URL...] or -a queue=redis://host:6379/0"
                )
            wait = parse_bool("queue_wait", queue_wait, False)
            self.queue: QueueWorker | None = None
            if queue:
                from sitemap_crawl.queue.worker import QueueWorker  # here: the Redis client only in queue runs

                self.queue = QueueWorker(parse_queue_url(queue), normalize, wait)
            self.homepage = parse_homepage(homepage, normalize) if homepage else None
            self.homepages: HomepageList | QueueWorker | None = (
                HomepageList.from_file(homepages_file, normalize) if homepages_file else self.queue
            )
            self.worker = self.queue.name if self.queue is not None else ""
            """A queue run's worker name (``%(worker)s`` in feed URIs names a file per worker)."""
        except SpiderArgumentError as exc:
            logger.error("Bad argument for the %s spider: %s", self.name, exc)
            raise
        if not self.start_sitemap_urls and not (self.use_robots or self.use_known_paths or self.extra_known_paths):
            logger.warning("use_robots and use_known_paths are both false: nothing will be fetched")
        self._gc_tuning = GcTuning()
        self.arguments: dict[str, Any] = {}
        self.helpers: HelperProcesses | None = None
        self.history: HistoryTracker | None = None  # SITEMAP_CRAWL_HISTORY, set by from_crawler
        self._dropping: dict[str, list[tuple[Visit, SitemapChanges]]] = {}
        """A history run: by website URL, the changed sitemaps that no longer list some of their
        stored sub-sitemaps; whether those are gone is decided at the site's end."""
        self._sending: set[asyncio.Task[None]] = set()
        self.turns = PageTurns()
        """The sitemaps whose pages wait for those before them in the tree (document order)."""
        self._host_slot_given_back: set[Visit] = set()
        """Sitemaps that gave their host's download slot back while they waited for their turn."""
        self.known_paths_mode = ALWAYS  # SITEMAP_CRAWL_KNOWN_PATHS_MODE, read by from_crawler
        self.run_id = uuid.uuid4().hex
        """Marks this run's sitemap requests (a stopped run's, resumed by Scrapy, are ignored)."""

    @property
    def maps_many_sites(self) -> bool:
        """Whether this run maps a list of sites (a homepages file or a queue): one tree each
        (the tree extension reads it)."""
        return self.homepages is not None

    def _setup(self) -> None:
        config = SettingsReader(self.crawler.settings)
        self._warn_without_tree_extension(config)
        self.limits = config.limits
        self.max_depth = config.max_depth
        self.batch_size = config.batch_size
        self.concurrent_sitemaps = config.concurrent_sitemaps
        self._batches = BatchTracker(self.crawler)
        # use_known_paths=false turns the standard list off; paths asked for by name are still probed
        self.known_paths = (config.known_paths if self.use_known_paths else []) + self.extra_known_paths

        share = self._share(config) if self.homepages is not None else None
        self._readers = SitemapReaders(
            self.limits,
            chunk_size=self.batch_size or 1000,
            workers=config.parse_workers_among(share.count if share is not None else 1),
            worker_min_size=config.parse_worker_min_size,
        )
        self.sitemap_download_maxsize = self.limits.max_size  # SITEMAP_CRAWL_MAX_SIZE or DOWNLOAD_MAXSIZE
        self.rules = FollowRules(
            follow=None if self.follow_pattern is None else [self.follow_pattern],
            deny=None if self.deny_pattern is None else [self.deny_pattern],
            max_depth=self.max_depth,
        )
        self.concurrent_sites = config.concurrent_sites
        if self.homepages is not None and share is not None:
            if config.shard is None:  # the first process of a split run starts the others
                spider_path = f"{type(self).__module__}.{type(self).__qualname__}"
                self.helpers = HelperProcesses(self.crawler, spider_path, self.arguments, share.count)
            self.homepages.shard = share
        backlog_limit = max(BACKLOG_MIN, 2 * self.crawler.settings.getint("CONCURRENT_REQUESTS"))
        self.valve: SendValve[Visit] = SendValve(backlog_limit, self._responses_in_process, self._send)
        self.gate: HostGate[Visit] = HostGate(config.slot_limits, self.valve.submit)
        self._slot_keys: dict[str, deque[str]] = {}
        """The gate's key of each sitemap URL in flight when slots are IP addresses (the DNS
        cache may learn a host's address between its request and its answer)."""
        self.sites: dict[str, SiteDiscovery] = {}
        """The sites being mapped, by website URL."""
        self.sites_done = 0
        self.sitemaps_done = 0
        self.pages_read = 0
        self.requests_sent = 0
        self._body_bytes_since_trim = 0
        self._progress: asyncio.TimerHandle | None = None
        self._taken_over = 0
        """Sites of a helper crawl process that ended early, mapped by this one (taken again)."""
        self._progress_interval = self.crawler.settings.getfloat("LOGSTATS_INTERVAL")
        self._progress_last = (time.monotonic(), 0)

    def _warn_without_tree_extension(self, config: SettingsReader) -> None:
        """A tree file asked for while the project disabled the tree extension (its EXTENSIONS
        entry None) is not written: say so, once, rather than end with no file."""
        if config.tree_file is None or SitemapTreeExtension.kept_elsewhere(self.crawler):
            return
        if SitemapTreeExtension.existing(self.crawler) is None:
            listed = any(
                path in (SitemapTreeExtension, TREE_EXTENSION) for path in self.crawler.settings.getdict("EXTENSIONS")
            )
            logger.warning(
                "SITEMAP_CRAWL_TREE_FILE=%s is not written: the tree extension "
                "(sitemap_crawl.extensions.tree.SitemapTreeExtension) is %s",
                config.tree_file,
                "disabled in EXTENSIONS"
                if listed
                else "not in EXTENSIONS (a setting or another add-on replaced the dict without it: add it back, "
                f"with order {TREE_EXTENSION_ORDER})",
            )

    def _share(self, config: SettingsReader) -> Shard | None:
        """The share of the homepages this crawl process maps: a helper's own, the first of a
        run split across SITEMAP_CRAWL_PROCESSES, or None (all of them, in this process)."""
        if config.shard is not None:
            return config.shard
        count = 1 if self.queue is not None else config.crawl_processes  # a queue worker is one process
        if self.queue is not None and config.crawl_processes > 1 and self.settings.get("SITEMAP_CRAWL_PROCESSES"):
            logger.info("A queue worker is one crawl process (SITEMAP_CRAWL_PROCESSES is not used): start more")
        if count > 1 and type(self).__module__ != "__main__":  # a spider defined in a script has no helpers
            return Shard(0, count)
        return None

    def _open_site(self, homepage: str | None, start_urls: list[str]) -> None:
        """Start mapping one site: from its homepage, or from sitemap URLs."""
        website_url = homepage or urljoin(start_urls[0], "/")
        discovery = SiteDiscovery(
            website_url,
            send=self._gate_visit,
            report=lambda node: self._report_node(website_url, node),
            rules=self.rules,
            concurrency=self.concurrent_sitemaps,
            # sitemap_urls replace the discovery from the homepage (which names the website node)
            homepage=None if start_urls else homepage,
            start_urls=start_urls,
            use_robots=self.use_robots,
            known_paths=self.known_paths,
            known_paths_mode=self.known_paths_mode,
        )
        self.sites[website_url] = discovery
        discovery.start()
        # a site with nothing to fetch is done at once; the caller takes the next one (no recursion)
        self._close_site_if_done(website_url, take_next=False)

    def _open_sites(self) -> bool:
        """Start sites from the homepage list while fewer than SITEMAP_CRAWL_CONCURRENT_SITES
        are being mapped; whether any was started."""
        if self.homepages is None or is_closing(self.crawler):  # (none started while the crawl stops)
            return False
        opened = False
        while len(self.sites) < self.concurrent_sites:
            homepage = next(self._homepage_iterator, None)
            if homepage is None:
                break
            opened = True
            self._open_site(homepage, [])
        return opened

    def _close_site_if_done(self, website_url: str, take_next: bool = True) -> None:
        """A site with nothing left to fetch is finished: its tree is complete (and, with
        ``take_next``, the next homepage of the list takes its place)."""
        discovery = self.sites.get(website_url)
        if discovery is None or not discovery.finish():
            return
        if website_url in self._dropping:  # the callback that ended its last sitemap gives their rows first
            return
        del self.sites[website_url]
        self.sites_done += 1
        self.crawler.stats.inc_value(SITES_DONE_STAT)
        if self.queue is not None:  # site_finished once its pages are in the feed, then acknowledged
            self.queue.site_mapped(website_url, discovery.unreachable)
        else:
            self.crawler.signals.send_catch_log(site_finished, site=website_url, unreachable=discovery.unreachable)
        if take_next:
            self._open_sites()

    async def start(self) -> AsyncIterator[Any]:
        self._setup()
        if self.crawler.settings.get("JOBDIR"):
            logger.info(
                "JOBDIR is set: the %s spider does not resume a stopped run, it maps its sites again "
                "from the start (with SITEMAP_CRAWL_HISTORY, only what changed is exported)",
                self.name,
            )
        if self.queue is not None and not await self.queue.open():
            return
        if self.homepages is not None:
            self._homepage_iterator = iter(self.homepages)
            self._schedule_progress()
            self._open_sites()
            if self.helpers is not None:
                await self.helpers.start()
                yield Request(
                    HELPERS_URL,
                    callback=self._pass_on_helpers,
                    errback=self._helpers_failed,
                    dont_filter=True,
                    priority=HELPERS_PRIORITY,
                    meta={RUN_META_KEY: self.run_id},  # (never resumed from JOBDIR: a run's own)
                )
            homepages = self.homepages
            if isinstance(homepages, HomepageList) and not homepages.usable and not homepages.shard.index:
                # (said once, by the first process of a split run: the others share its file)
                logger.warning("%s lists no usable homepage: nothing to map", homepages.source)
        else:
            self._open_site(self.homepage, self.start_sitemap_urls)
        # sitemap requests are sent by the discovery, in order; start() yields only the
        # request whose callback passes on what the helper crawl processes send

    async def _pass_on_helpers(self, response: Response) -> AsyncIterator[Any]:
        """Callback of the request that stands for the helper crawl processes: what they send,
        as this process's items and signals, until every one has ended. Scrapy closes the
        item pipelines and the feeds only once a callback is done, so the pages of a helper
        stopped with the run (it finishes its sitemaps in flight, as this process does) are
        written too."""
        if self.helpers is None or self._sent_by_another_run(response.meta, response.url):
            return
        async for tag, message in self.helpers.messages():
            for item in self._helper_message(tag, message):
                yield item
        self.helpers.merge_into(self.crawler.stats)

    def _helpers_failed(self, failure: Failure) -> None:
        logger.error("The output of the helper crawl processes cannot be passed on: %s", failure.value)

    def _helper_message(self, tag: str, message: tuple[Any, ...]) -> list[Any]:
        """What a helper crawl process sent, made this process's items and signals."""
        if tag == PAGES:
            batch = page_batch(message)
            self.pages_read += len(batch.pages)
            # (a helper sends batches; this process's feeds may need a page an item: batch_size 0)
            return list(batch.pages) if message[3] is None or not self.batch_size else [batch]
        if tag == NODE:
            _, website_url, node = message
            self._report_node(website_url, node)
        elif tag == SITE:
            _, website_url, unreachable = message[:3]
            self.sites_done += 1
            self.crawler.stats.inc_value(SITES_DONE_STAT)
            self.crawler.signals.send_catch_log(site_finished, site=website_url, unreachable=unreachable)
        elif tag == ENDED:
            self._take_over(message[1])
        return []

    def _take_over(self, shard: Shard) -> None:
        """A helper crawl process ended early (it died, or a signal the run did not send
        stopped it): this process maps the sites of its share that it had not started (those
        it was mapping stay incomplete in the tree)."""
        homepages, helpers = self.homepages, self.helpers
        if not isinstance(homepages, HomepageList) or helpers is None:
            return
        try:
            share = HomepageList.from_file(homepages.source, homepages.normalize, shard)
        except SpiderArgumentError as exc:
            logger.error("The sites of crawl process %s cannot be taken over: %s", shard, exc)
            return
        left = helpers.not_started(shard, share)
        if not left:
            return
        logger.warning("This process maps the %d sites crawl process %s had not started", len(left), shard)
        self._taken_over += len(left)
        self._homepage_iterator = itertools.chain(self._homepage_iterator, left)
        self._open_sites()

    def _schedule_progress(self) -> None:
        if self._progress_interval > 0:
            self._progress = asyncio.get_running_loop().call_later(self._progress_interval, self._log_progress)

    def _log_progress(self, last: bool = False) -> None:
        """Every LOGSTATS_INTERVAL of a many-site run, and at its end: how far it is."""
        now = time.monotonic()
        since, pages_then = self._progress_last
        self._progress_last = (now, self.pages_read)
        rate = (self.pages_read - pages_then) * 60 / max(now - since, 1e-9)
        homepages = self.homepages
        in_flight, interrupted, taken = self.helpers.progress() if self.helpers is not None else (0, 0, 0)
        if last:  # (the run ends: the sites still being mapped here end interrupted in the tree)
            interrupted += len(self.sites)
        else:
            in_flight += len(self.sites)
        logger.info(
            "Sites: %d done, %d in flight, %s%d taken from %s; sitemaps read: %d; pages: %d (%d pages/min)",
            self.sites_done,
            in_flight,
            f"{interrupted} interrupted, " if interrupted else "",
            (homepages.taken if homepages is not None else 0) + taken + self._taken_over,
            homepages.source if homepages is not None else "the arguments",
            self.sitemaps_done,
            self.pages_read,
            rate,
        )
        if not last:
            self._schedule_progress()

    async def _close_readers(self) -> None:
        self.crawler.stats.inc_value(REQUESTS_STAT, getattr(self, "requests_sent", 0))
        if self.download_counts is not None:
            self.download_counts.write(self.crawler.stats, getattr(self, "requests_sent", 0))
        if self.helpers is not None:
            await self.helpers.close()
        progress = getattr(self, "_progress", None)
        if progress is not None:
            progress.cancel()
            self._log_progress(last=True)  # (the numbers the run ends with)
        valve = getattr(self, "valve", None)
        if valve is not None:
            valve.close()
            if valve.times_held:
                self.crawler.stats.set_value(HELD_STAT, valve.times_held)
        readers = getattr(self, "_readers", None)
        if readers is not None:
            await readers.close()
        if self.history is not None:
            await self.history.close()

    def _on_idle(self) -> None:
        """Nothing in flight: finish the sites that are done (probing their well-known paths
        first if that was not done already) and start the next ones."""
        for website_url in list(self.sites):
            if website_url in self._dropping and self.sites[website_url].finish():
                # its last sitemap ended in an error before their rows were given: not committed,
                # the next run exports their changes again
                logger.warning("The sitemaps of %s dropped by a changed index were not checked", website_url)
                del self._dropping[website_url]
            self._close_site_if_done(website_url)
        if self.sites or self._open_sites():
            raise DontCloseSpider

    def _gate_visit(self, visit: Visit) -> None:
        """A sitemap to fetch: sent once its download slot (its host, or with
        CONCURRENT_REQUESTS_PER_IP its host's address) has room (:class:`SlotLimits`)."""
        host = host_of(visit.url)
        if not self.gate.limits.by_ip:
            self.gate.submit(host, visit)
            return
        address = dnscache.get(host)
        if address is not None:
            self._submit_to_slot(address, visit)
            return
        from twisted.internet import reactor  # here: importing it at module level would install one

        resolving = cast(Any, reactor).resolve(host)  # (the stubs type its name wrongly)
        resolving.addCallbacks(
            lambda address: self._submit_to_slot(str(address), visit),
            lambda _failure: self._submit_to_slot(host, visit),  # (the request fails the same way)
        )

    def _submit_to_slot(self, key: str, visit: Visit) -> None:
        self._slot_keys.setdefault(visit.url, deque()).append(key)
        self.gate.submit(key, visit)

    def _slot_key(self, visit: Visit) -> str:
        """The gate's key a sitemap in flight was sent under (forgotten)."""
        keys = self._slot_keys.get(visit.url)
        if not keys:
            return host_of(visit.url)
        key = keys.popleft()
        if not keys:
            del self._slot_keys[visit.url]
        return key

    def _scraper_slot(self) -> Any:
        """Scrapy's scraper slot (the responses being processed), or None outside a crawl."""
        engine = self.crawler.engine
        return engine.scraper.slot if engine is not None else None

    def _responses_in_process(self) -> int:
        """Responses downloaded whose callback output is not yet through the item pipelines
        (those waiting for their turn aside: :mod:`~sitemap_crawl.spiders.page_order`)."""
        slot = self._scraper_slot()
        return len(slot.active) - self.turns.waiting if slot is not None else 0

    def _send(self, visit: Visit) -> None:
        engine = self.crawler.engine
        assert engine is not None
        self.requests_sent += 1
        if self.history is None:
            request = self._request_or_fail(visit)
            if request is not None:
                engine.crawl(request)
            return
        task = asyncio.ensure_future(self._send_conditional(visit))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _send_conditional(self, visit: Visit) -> None:
        """A history run: the request carries the sitemap's stored validators."""
        assert self.history is not None and self.crawler.engine is not None
        try:
            validators = await self.history.request_validators(visit.url)
        except Exception as exc:  # the file went bad during the run: fetch it as a new sitemap
            logger.error("Could not read the history of %s: %s", visit.url, exc)
            validators = None
        request = self._request_or_fail(visit)
        if request is None:
            return
        if validators is not None:
            request.meta[CONDITIONAL_META_KEY] = validators  # (set on the request by ConditionalHeadersMiddleware)
            # Scrapy's HTTP cache keys a request without its headers: a 304 stored for it would
            # answer later requests that are not conditional (runs without the history)
            request.meta["dont_cache"] = True
        self.crawler.engine.crawl(request)

    def _report_node(self, website_url: str, node: NodeReport) -> None:
        """Tell the tree about a node (the sitemap_node signal); count the sitemaps read (the
        tree's nodes done, robots.txt included: a probe the tree leaves out is not one)."""
        if node.finished and node.kind != NodeKind.WEBSITE:
            self.sitemaps_done += 1
        self.crawler.signals.send_catch_log(sitemap_node, node=node, site=website_url)

    def _sitemap_done(self, visit: Visit) -> None:
        """A sitemap in flight is done (parsed or failed): send the next waiting one."""
        if self._body_bytes_since_trim >= TRIM_AFTER_BYTES:
            self._body_bytes_since_trim = 0
            trim()
        if self.history is not None:
            # what was read for its request, if still held (the sitemap failed, was left out
            # after a redirect, or answered 304 unasked): every ending passes here
            self.history.forget(visit.url)
        if visit in self._host_slot_given_back:
            self._host_slot_given_back.discard(visit)
        else:
            self.gate.release(self._slot_key(visit))
        discovery = self.sites.get(visit.site)
        if discovery is not None:
            discovery.done(visit)
            self.turns.wake(visit.site)
            self._close_site_if_done(visit.site)

    def _request_or_fail(self, visit: Visit) -> Request | None:
        """The request for ``visit``; None for a URL Scrapy cannot request (it raises
        ValueError): the sitemap fails as a download would, soon after, so that its site
        still ends (it waited for the sitemap forever, and the crawl with it)."""
        try:
            return self._request(visit)
        except ValueError as exc:
            logger.error("Cannot request the sitemap %s: %s", visit.url, exc)
            asyncio.get_running_loop().call_soon(self._request_failed, visit, exc)
            return None

    def _request_failed(self, visit: Visit, error: ValueError) -> None:
        discovery = self.sites.get(visit.site)
        if discovery is not None:
            discovery.failed(visit, failure_reason(error))
        self._sitemap_done(visit)

    def _request(self, visit: Visit) -> Request:
        return Request(
            visit.url,
            callback=self.read_sitemap,
            errback=self.sitemap_failed,
            dont_filter=True,
            priority=visit.depth,  # deeper first: depth-first, document order (FIFO queues)
            meta={
                META_KEY: visit,
                RUN_META_KEY: self.run_id,
                "download_maxsize": self.sitemap_download_maxsize,
                "download_warnsize": self.sitemap_download_maxsize,
                # a body that breaks off keeps the pages before the break ("truncated")
                "download_fail_on_dataloss": False,
                "handle_httpstatus_list": ERROR_STATUSES if self.history is None else HISTORY_STATUSES,
            },
        )

    async def _changed_rows(self, visit: Visit, changes: SitemapChanges, partial: bool) -> AsyncIterator[Any]:
        """A history run: the rows of a changed sitemap (added, modified, removed); its new
        state is committed once the last one is written, or, if it no longer lists some of its
        stored sub-sitemaps, once the rows of those gone are too (at the site's end)."""
        assert self.history is not None
        rows = await self.history.rows(changes, partial)
        async for output in self._give_rows(visit, changes, rows):
            yield output
        if changes.dropped:
            self._dropping.setdefault(visit.site, []).append((visit, changes))
        else:
            self.history.finish(changes)

    async def _site_end_rows(self, website_url: str) -> AsyncIterator[Any]:
        """A history run: once every sitemap of the site has ended, the removed rows of the
        sitemaps its changed ones dropped that are gone; then the site is finished."""
        discovery = self.sites.get(website_url)
        if discovery is None or not discovery.finish() or website_url not in self._dropping:
            return
        dropping = self._dropping.pop(website_url)
        assert self.history is not None
        try:
            # a sitemap a parent drops but a well-known path still finds is not removed
            known_urls = frozenset(same_url_key(url) for url in discovery.known_urls)  # (as the history keys them)
            removed = await self.history.dropped_rows(
                [changes for _visit, changes in dropping], known_urls.__contains__
            )
            for (visit, changes), rows in zip(dropping, removed, strict=True):
                async for output in self._give_rows(visit, changes, rows):
                    yield output
                self.history.finish(changes)
                after = changes.after  # (read whole: no error)
                discovery.report(visit, after.kind, None, after.page_count, change=CHANGED, changes=changes.rows)
        finally:
            self._close_site_if_done(website_url)

    async def _give_rows(self, visit: Visit, changes: SitemapChanges, rows: list[SitemapPage]) -> AsyncIterator[Any]:
        """Rows of a changed sitemap, kept by ``since``, counted, and given to Scrapy (tracked
        until written)."""
        history = self.history
        assert history is not None
        since = self.since
        if since is not None:  # recorded as seen all the same: since filters what is exported
            kept = [row for row in rows if since.keeps_page(row.last_modified)]
            if len(kept) < len(rows):
                self.crawler.stats.inc_value(SINCE_PAGES_DROPPED_STAT, len(rows) - len(kept))
            rows = kept
        history.exported(changes, rows)
        if self.batch_size:
            for start in range(0, len(rows), self.batch_size):
                batch = PageBatch(visit.url, visit.path, rows[start : start + self.batch_size], visit.site)
                history.track(changes, batch)
                yield batch
        else:
            window = BatchWindow()
            for row in rows:
                history.track(changes, row)
                yield self._batches.track(row, window)
            await window.wait_until_empty()  # (document order: as for the pages of a plain run)

    def _declare_child(
        self,
        discovery: SiteDiscovery,
        visit: Visit,
        kind: str,
        ref: SitemapRef,
        child_index: int,
        lineage: frozenset[str],
    ) -> int:
        """A sub-sitemap ``visit`` (a sitemap of ``kind``) lists, put through follow / deny and
        ``since``: declared (fetched), skipped by ``since`` or not followed. The next child's index."""
        if not discovery.follows(visit, ref.url, kind):
            self.crawler.stats.inc_value(NOT_FOLLOWED_STAT)
            return child_index
        since = self.since
        if since is not None and kind == XML_INDEX and since.skips_sitemap(ref.last_modified):
            discovery.not_fetched(visit, ref.url, child_index, ErrorReason.OLDER_THAN_SINCE)
            self.crawler.stats.inc_value(SINCE_SITEMAPS_SKIPPED_STAT)
        else:
            discovery.declare(visit, ref.url, child_index, lineage)
        return child_index + 1

    def _sent_by_another_run(self, meta: dict[str, Any], url: str) -> bool:
        """Whether a sitemap request is another run's: one that Scrapy resumed from a stopped
        run's JOBDIR (with a project's own SCHEDULER, or a JOBDIR left by an older version). Its
        site is mapped again from the start by this run: the request is ignored."""
        if meta.get(RUN_META_KEY) == self.run_id:
            return False
        logger.debug("Ignored %s: a request of a stopped run, resumed from JOBDIR", url)
        return True

    def sitemap_failed(self, failure: Failure) -> AsyncIterator[Any] | None:
        """Errback: the sitemap could not be downloaded; record why."""
        release_causes(failure)
        request = getattr(failure, "request", None)
        visit: Visit | None = request.meta.get(META_KEY) if request is not None else None
        if request is None or visit is None:
            logger.error("Sitemap request failed without its meta: %s", failure)
            return None
        if self._sent_by_another_run(request.meta, request.url):
            return None
        if self.download_counts is not None:
            self.download_counts.exception(failure.value)
        discovery = self.sites.get(visit.site)
        reason = failure_reason(failure)
        if discovery is not None:
            discovery.failed(visit, reason, after_redirect=bool(request.meta.get("redirect_urls")))
        self.crawler.signals.send_catch_log(sitemap_failure, visit=visit, reason=reason, url=request.url)
        self._sitemap_done(visit)
        return self._site_end_rows(visit.site) if visit.site in self._dropping else None

    async def read_sitemap(self, response: Response) -> AsyncIterator[Any]:
        """Callback for every sitemap and robots.txt response."""
        if self._sent_by_another_run(response.meta, response.url):
            return
        visit = response.meta[META_KEY]
        retry = self._retry_broken_off(response)
        if retry is not None:  # (the visit stays in flight: its request is sent again)
            yield retry
            return
        try:
            async for output in self._read_response(response):
                yield output
        finally:
            discovery = self.sites.get(visit.site)
            if discovery is not None:
                discovery.settle(visit)
            self._sitemap_done(visit)
        if visit.site in self._dropping:
            async for output in self._site_end_rows(visit.site):
                yield output

    async def _take_turn(self, visit: Visit) -> None:
        """Wait, before ``visit``'s body is parsed, for the sitemaps before it in the tree to
        be done, so that its pages go out after theirs (:mod:`sitemap_crawl.spiders.page_order`)."""
        discovery = self.sites.get(visit.site)
        if discovery is None or discovery.is_first(visit):
            return
        self._host_slot_given_back.add(visit)
        self.gate.release(self._slot_key(visit))  # (its download is over: the host's slot goes on)
        discovery.park(visit)  # (and its place among the site's sitemaps in flight)
        # A sitemap before it may never come: the crawl stops (it downloads nothing new), or
        # Scrapy holds new downloads back while the bodies being processed (the waiting ones
        # among them) pass a SCRAPER_SLOT_MAX_ACTIVE_SIZE the project kept: read it then.
        await self.turns.wait(
            visit.site,
            lambda: discovery.is_first(visit) or is_closing(self.crawler) or self._downloads_held_back(),
        )
        discovery.unpark(visit)

    def _downloads_held_back(self) -> bool:
        """Whether Scrapy starts no new download because of the bodies being processed
        (SCRAPER_SLOT_MAX_ACTIVE_SIZE; the spider lifts it unless the project set it)."""
        slot = self._scraper_slot()
        return slot is not None and bool(slot.needs_backout())

    def _retry_broken_off(self, response: Response) -> Request | None:
        """A body that broke off (``dataloss``: the connection closed before its end) is asked
        for again as Scrapy's RetryMiddleware asks again for a failed download (RETRY_TIMES,
        RETRY_ENABLED, ``dont_retry``); None once the retries are spent: its pages before the
        break are read then (``truncated``)."""
        request = response.request
        if (
            "dataloss" not in response.flags
            or request is None
            or request.meta.get("dont_retry")
            or not self.settings.getbool("RETRY_ENABLED")
        ):
            return None
        return get_retry_request(request, spider=self, reason="body broke off", give_up_log_level="DEBUG")

    def _handled(self, response: Response, visit: Visit, left_out: bool = False) -> None:
        """Tell the audit what the crawl does with a response (the sitemap_response signal)."""
        self.crawler.signals.send_catch_log(sitemap_response, response=response, visit=visit, left_out=left_out)

    async def _read_response(self, response: Response) -> AsyncIterator[Any]:
        visit: Visit = response.meta[META_KEY]
        discovery = self.sites[visit.site]
        if self.download_counts is not None:
            self.download_counts.response(response.status)
        if response.status in ERROR_STATUSES:
            self._handled(response, visit)
            discovery.failed(visit, http_error(response.status))
            return
        final_url = response.url
        hops = response.meta.get("redirect_urls", ())
        took_turn = False
        if final_url != visit.url:
            if visit.role == KNOWN:
                # two known paths redirected to one URL: the first in the tree keeps it, not
                # the first to answer (a history run saw its pages move between the two)
                await self._take_turn(visit)
                took_turn = True
            if not discovery.redirected(visit, final_url, hops):
                self._handled(response, visit, left_out=True)
                return
        self._handled(response, visit)
        changes: SitemapChanges | None = None
        if self.history is not None:
            state = self.history.unchanged(visit.url, response)
            if state is not None:  # 304 or the same body: no parse, no export
                lineage = visit.ancestors | {visit.url, final_url}
                child_index = 0
                for ref in self.history.replay(state):  # as if the body had been read
                    child_index = self._declare_child(discovery, visit, state.kind, ref, child_index, lineage)
                discovery.report(visit, state.kind, None, state.page_count, change=UNCHANGED, changes=0)
                return
            if response.status == NOT_MODIFIED:  # never asked for: no stored body to reuse
                discovery.failed(visit, http_error(response.status))
                return
        if not took_turn:
            await self._take_turn(visit)
        is_robots = visit.role == ROBOTS
        body = response.body
        self._body_bytes_since_trim += len(body)
        broken_off = "dataloss" in response.flags
        if broken_off:
            opened: Any = self._readers.inline(body, final_url, is_robots)
            if opened.kind in (TEXT, ROBOTS_TXT) and not body.startswith(b"\x1f\x8b"):
                # the body broke off: its last line may be a URL cut short; keep whole lines only
                opened = self._readers.inline(body[: body.rfind(b"\n") + 1], final_url, is_robots)
        else:
            opened = await self._readers.open(body, final_url, is_robots)
        del body
        async with opened as reader:
            if reader.kind not in (ROBOTS_TXT, XML_INDEX):
                discovery.settle(visit)  # pages only: the known paths need not wait for its end
            if reader.kind == INVALID:
                if visit.left_out(reader.error):
                    logger.debug("%s is not a sitemap (%s); left out", visit.url, reader.detail)
                    return
                logger.warning("Sitemap %s is invalid: %s (%s)", visit.url, reader.error, reader.detail)
                discovery.report(visit, INVALID, reader.error)
                return
            if self.history is not None:
                attempt = self.queue.attempt_of(visit.site) if self.queue is not None else None
                changes = self.history.start(visit.url, visit.site, reader.kind, response, attempt)
            async for output in self._read_entries(discovery, visit, reader, final_url, broken_off, changes):
                yield output

    async def _read_entries(
        self,
        discovery: SiteDiscovery,
        visit: Visit,
        reader: Any,
        final_url: str,
        broken_off: bool = False,
        changes: SitemapChanges | None = None,
    ) -> AsyncIterator[Any]:
        website = visit.site
        attempt = self.queue.attempt_of(website) if self.queue is not None else None
        lineage = visit.ancestors | {visit.url, final_url}
        child_index = 0
        page_count = 0
        batch: list[SitemapPage] = []
        announced = False
        redirected = visit.url != final_url
        since = self.since
        dropped = 0
        window = BatchWindow()  # this sitemap's batches in Scrapy's item processing
        async for entries in reader.chunks():
            if not announced:
                announced = True
                discovery.report(visit, reader.kind, finished=False)
            for entry in entries:
                if type(entry) is SitemapPage:
                    if since is not None and changes is None and not since.keeps_page(entry.last_modified):
                        page_count += 1
                        dropped += 1
                        continue
                    if redirected:
                        entry.sitemap_url = visit.url
                    entry.website = website
                    page_count += 1
                    if changes is not None:
                        changes.add_page(entry)  # (its rows get the attempt: not part of the record)
                        continue
                    entry.attempt = attempt
                    if self.batch_size:
                        batch.append(entry)
                        if len(batch) >= self.batch_size:
                            yield await self._batches.admit(PageBatch(visit.url, visit.path, batch, website), window)
                            batch = []
                    else:
                        yield self._batches.track(entry, window)  # (see the end of this loop)
                else:
                    assert isinstance(entry, SitemapRef)
                    if changes is not None:
                        changes.add_listed(entry)
                    child_index = self._declare_child(discovery, visit, reader.kind, entry, child_index, lineage)
        self.pages_read += page_count
        if dropped:
            self.crawler.stats.inc_value(SINCE_PAGES_DROPPED_STAT, dropped)
        if batch:
            yield await self._batches.admit(PageBatch(visit.url, visit.path, batch, website), window)
        # Scrapy processes the items of several responses at once, in any order: the next
        # sitemap of the site (its turn comes when this one ends) could pass this one's last
        # pages. It ends once they are through the item pipelines (document order)
        await window.wait_until_empty()
        if reader.kind == INVALID:
            # found not to be one while read (a robots.txt that is an HTML page, nothing within
            # the size cap): it failed, and its stored state stays as it was
            changes = None
        if changes is not None:
            async for output in self._changed_rows(visit, changes, bool(reader.error) or broken_off):
                yield output
        if reader.kind == ROBOTS_TXT and not announced:
            # a robots.txt that names no sitemap stays in the tree, with no children
            logger.info("robots.txt %s declares no sitemap", visit.url)
            announced = True
        if visit.optional and (reader.kind == INVALID or not announced) and visit.left_out(reader.error):
            logger.debug("%s declares no URL; left out", visit.url)
            return
        if reader.error:
            logger.warning("Sitemap %s: %s (%s)", visit.url, reader.error, reader.detail)
        elif broken_off:  # (a text sitemap, or a document complete before the cut: the reader saw no error)
            logger.warning("Sitemap %s: %s (the download broke off)", visit.url, ErrorReason.TRUNCATED)
        error = reader.error or (ErrorReason.TRUNCATED if broken_off else None)
        if changes is not None and changes.dropped:
            # reported done at the site's end, with the rows of the sitemaps it dropped that are
            # gone; until then unfinished (a crawl stopped before shows it interrupted)
            discovery.report(visit, reader.kind, error, page_count, False, CHANGED, changes.rows)
        elif changes is not None:
            discovery.report(visit, reader.kind, error, page_count, change=CHANGED, changes=changes.rows)
        else:
            discovery.report(visit, reader.kind, error, page_count)
