"""Knowing when a page request is handled: its callback's output fully through the item
pipelines, its errback run, or the request dropped; and the page requests of ``start()``."""

from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from sitemap_crawl.feed_files import flush_feed_files
from sitemap_crawl.items import SitemapPage
from sitemap_crawl.names import (
    DUPES_ONLY_META_KEY,
    LOADER_COMPLETED_STAT,
    LOADER_PAGES_HANDLED_STAT,
    LOADER_PAGES_PENDING_STAT,
    LOADER_PAGES_QUEUED_STAT,
    LOADER_PAGES_WRITTEN_OFF_STAT,
    LOADER_SITEMAPS_READ_STAT,
    PAGE_META_KEY,
    TOKEN_META_KEY,
)

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from twisted.python.failure import Failure
from sitemap_crawl.loader.core import QueuedPage, SitemapRequestLoader

logger = logging.getLogger(__name__)

_LEAK_GRACE = 1.0
"""Seconds a quiet engine must stay quiet before outstanding page requests are written off."""
_TIMER_SWEEP_INTERVAL = 10.0
"""Seconds between two chances for Twisted's reactor to drop its cancelled timeouts."""


@dataclass(slots=True)
class _OutputRecord:
    """A page callback's output on its way through Scrapy."""

    source: Any  # the Response (or errback Failure) the output belongs to
    items: int = 0  # items yielded so far
    finished: int = 0  # items that left the item pipelines (scraped, dropped or failed)
    exhausted: bool = False


async def _iterate_output(output: Any) -> AsyncIterator[Any]:
    """What Scrapy's iterate_spider_output accepts: None, one object, an iterable, an async
    iterable, a coroutine or a Deferred of those."""
    from scrapy.utils.misc import arg_to_iter
    from twisted.internet.defer import Deferred

    if isinstance(output, Deferred):
        from scrapy.utils.defer import maybe_deferred_to_future

        output = await maybe_deferred_to_future(output)
    elif inspect.isawaitable(output):
        output = await output
    if hasattr(output, "__aiter__"):
        async for value in output:
            yield value
    else:
        for value in arg_to_iter(output):
            yield value


class _TrackedCallback:
    """The callback of a page request: calls the real one, then tells the loader when
    the output has been fully processed (every item through the pipelines)."""

    def __init__(self, binding: ScrapyBinding, callback: Callable[..., Any] | None) -> None:
        self.binding = binding
        self.callback = callback
        name = getattr(callback, "__name__", None) or "parse"
        self.__name__ = name  # Scrapy names callbacks in some messages

    def __call__(self, response: Any, **kwargs: Any) -> Any:
        token = response.meta.get(TOKEN_META_KEY)
        callback = self.callback
        if callback is None:
            spider = self.binding.crawler.spider
            assert spider is not None
            callback = spider._parse
        try:
            output = callback(response, **kwargs)
        except BaseException:
            self.binding.finish(token)
            raise
        return self.binding.track_output(token, response, output)

    def __repr__(self) -> str:
        return f"<sitemap page callback {self.__name__}>"


class _TrackedErrback:
    """The errback of a page request: the request failed for good (retries exhausted,
    ignored, HTTP error status): the page counts as handled."""

    def __init__(self, binding: ScrapyBinding, errback: Callable[..., Any] | None) -> None:
        self.binding = binding
        self.errback = errback
        self.__name__ = getattr(errback, "__name__", None) or "errback"

    def __call__(self, failure: Failure) -> Any:
        request = getattr(failure, "request", None)
        token = request.meta.get(TOKEN_META_KEY) if request is not None else None
        if self.errback is None:
            self.binding.finish(token)
            return failure  # as if there were no errback: Scrapy logs the error itself
        try:
            output = self.errback(failure)
        except BaseException:
            self.binding.finish(token)
            raise
        from twisted.python.failure import Failure

        if output is None or isinstance(output, Failure):
            self.binding.finish(token)
            return output
        return self.binding.track_output(token, failure, output)

    def __repr__(self) -> str:
        return f"<sitemap page errback {self.__name__}>"


def _same_source(source: Any, response: Any) -> bool:
    """Whether an item Scrapy tells of (``response``: what it came from) is of the output
    recorded from ``source``: the same response or failure, or, for an errback's items, the
    response whose failure (an HTTP error status) the errback was given: the same request."""
    if source is response:
        return True
    request = getattr(source, "request", None)
    return request is not None and request is getattr(response, "request", None)


def _as_follow_up(request: Request, source: Any) -> Request:
    """A request a page's callback yields is one of the spider's own, also when it copies the
    page request (``response.request.replace(url=...)``, ``meta=response.meta``): the loader's
    marks come off it (its token, the wrapped callback and errback, and the ``dont_filter``
    the loader set to skip the duplicate filter only). With them it was taken for the page:
    kept out of JOBDIR's queue (lost on a stop) and past the duplicate filter (a page that
    links to itself was fetched without end). The page request itself, yielded again, is
    copied first (it keeps its marks: its items are still counted to it)."""
    if TOKEN_META_KEY not in request.meta:
        return request
    if request is getattr(source, "request", None):
        request = request.replace()
    meta = request.meta
    del meta[TOKEN_META_KEY]
    if meta.pop(DUPES_ONLY_META_KEY, False):
        request.dont_filter = False
    if isinstance(request.callback, _TrackedCallback):
        request.callback = request.callback.callback
    if isinstance(request.errback, _TrackedErrback):
        request.errback = request.errback.errback
    return request


def _sweep_cancelled_timers() -> None:
    """Let Twisted's reactor drop the timeouts that were cancelled.

    Every request arms a DOWNLOAD_TIMEOUT call (and every pooled connection an idle
    timeout) and cancels it when done. The reactor keeps cancelled calls in its heap
    until it next runs its timed calls, which under the asyncio reactor only happens
    when the earliest of them is due: with a steady stream of requests that is several
    minutes of them, ~0.5 kB a request (100 MB at 1,000 pages/s). Running the reactor's
    own ``runUntilCurrent()`` (which runs nothing that is not due, then compacts the
    heap once more than half of it is cancelled) keeps that flat. Called from the top
    of the event loop, never from inside the reactor's own timer processing.
    """
    from twisted.internet import reactor

    run_until_current = getattr(reactor, "runUntilCurrent", None)
    if run_until_current is not None:
        run_until_current()


class ScrapyBinding:
    """Connects a loader to a crawler: page requests are tracked by a token in their meta
    until their callback output is processed, their errback runs, or they are dropped."""

    def __init__(self, loader: SitemapRequestLoader, crawler: Crawler, max_in_flight: int) -> None:
        from scrapy import signals

        self.loader = loader
        self.crawler = crawler
        self.max_in_flight = max_in_flight
        self.waiting_for_room = False
        self._tokens: dict[int, str] = {}
        self._unfiltered: set[int] = set()
        """Tokens of the restored pages sent past the duplicate filter (``sitemap_filter_duplicates``):
        each is recorded in it once scheduled, so that a later copy of the page is filtered."""
        self._records: dict[int, _OutputRecord] = {}
        self._wrappers: dict[tuple[type, Any], Any] = {}
        self._counter = itertools.count(1)
        self._awaiting_schedule: int | None = None
        self._schedule_seen = False
        self._quiet_since: tuple[float, frozenset[int]] | None = None
        self._offsite: Any = None  # Scrapy's OffsiteMiddleware, once looked up (False: not enabled)
        self._referer_middleware: Any = None  # Scrapy's RefererMiddleware, once looked up (False: not enabled)
        self._referrers: dict[tuple[str, str], str | None] = {}
        """The Referer of a page request by (its sitemap, its origin) under the default policy:
        a W3C policy looks at the target's origin only (about 10 µs a URL pair saved)."""
        self._last_timer_sweep = time.monotonic()
        self.written_off = 0
        connect = crawler.signals.connect
        connect(self._item_done, signal=signals.item_scraped)
        connect(self._item_done, signal=signals.item_dropped)
        connect(self._item_done, signal=signals.item_error)
        connect(self._request_dropped, signal=signals.request_dropped)
        connect(self._request_scheduled, signal=signals.request_scheduled)
        connect(self._scheduler_empty, signal=signals.scheduler_empty)
        connect(self._spider_idle, signal=signals.spider_idle)
        connect(self._spider_closed, signal=signals.spider_closed)

    # -- requests ----------------------------------------------------------------------

    def instrument(self, request: Request, entry: QueuedPage) -> tuple[Request, int]:
        """Make ``request`` (freshly built for this page) report back: wrapped callback and
        errback, the page item and the token in meta; and give it what Scrapy gives a link
        found in a sitemap: its depth and the sitemap as Referer (unless the request has
        them). Changed in place (no copy per page)."""
        token = next(self._counter)
        page = entry.page
        self._tokens[token] = page.url
        meta = request.meta
        meta.setdefault(PAGE_META_KEY, page)
        meta[TOKEN_META_KEY] = token
        meta.setdefault("depth", entry.depth)
        if page.sitemap_url:
            referrer = self._referrer(page.sitemap_url, request)
            if referrer is not None:
                request.headers.setdefault("Referer", referrer)
        request.callback = self._wrap(request.callback, _TrackedCallback)
        request.errback = self._wrap(request.errback, _TrackedErrback)
        if entry.restored and not request.dont_filter:
            request.dont_filter = True
            meta[DUPES_ONLY_META_KEY] = True
            self._unfiltered.add(token)
        self._awaiting_schedule = token
        self._schedule_seen = False
        return request, token

    def _wrap(self, function: Any, kind: type[_TrackedCallback] | type[_TrackedErrback]) -> Any:
        if isinstance(function, kind):
            return function
        wrapped = self._wrappers.get((kind, function))
        if wrapped is None:
            wrapped = self._wrappers[(kind, function)] = kind(self, function)
        return wrapped

    def after_start_yield(self, token: int) -> None:
        """Back in start(): the request reached the scheduler, or a start middleware dropped it."""
        if self._awaiting_schedule == token and not self._schedule_seen and token in self._tokens:
            logger.debug("Page request %s was dropped before the scheduler", self._tokens[token])
            self.finish(token)
        self._awaiting_schedule = None

    def finish(self, token: int | None) -> None:
        """The page request ``token`` is handled (once; later calls do nothing)."""
        if token is None:
            return
        url = self._tokens.pop(token, None)
        self._records.pop(token, None)
        self._unfiltered.discard(token)
        if url is not None:
            # its rows in the feed files first: a kill -9 after the journal line keeps them
            flush_feed_files(self.crawler)
            self.loader.mark_handled(url)
            now = time.monotonic()
            if now - self._last_timer_sweep >= _TIMER_SWEEP_INTERVAL:
                self._last_timer_sweep = now
                asyncio.get_running_loop().call_soon(_sweep_cancelled_timers)

    async def track_output(self, token: int | None, source: Any, output: Any) -> AsyncIterator[Any]:
        """Pass a callback's output on, counting its items; the page is handled when the
        output is exhausted and every item has left the item pipelines."""
        from scrapy import Request

        if token is None or token not in self._tokens:
            async for value in _iterate_output(output):
                yield _as_follow_up(value, source) if isinstance(value, Request) else value
            return
        record = self._records[token] = _OutputRecord(source)
        try:
            async for value in _iterate_output(output):
                if isinstance(value, Request):
                    value = _as_follow_up(value, source)
                elif value is not None:
                    record.items += 1
                yield value
        finally:
            record.exhausted = True
            self._check(token, record)

    def _check(self, token: int, record: _OutputRecord) -> None:
        if record.exhausted and record.finished >= record.items and self._records.get(token) is record:
            self.finish(token)

    # -- signals -----------------------------------------------------------------------

    @staticmethod
    def _token_of(source: Any) -> Any:
        request = getattr(source, "request", None)
        meta = getattr(request, "meta", None)
        return meta.get(TOKEN_META_KEY) if isinstance(meta, dict) else None

    def _item_done(self, item: Any = None, response: Any = None, **kwargs: Any) -> None:
        if response is None or not self._records:
            return
        token = self._token_of(response)
        record = self._records.get(token) if token is not None else None
        if record is not None and _same_source(record.source, response):
            record.finished += 1
            # after every receiver of this signal: the feed exporters write the item in theirs
            asyncio.get_running_loop().call_soon(self._check, token, record)

    def _request_dropped(self, request: Request, **kwargs: Any) -> None:
        if isinstance(request.callback, _TrackedCallback):
            self.finish(request.meta.get(TOKEN_META_KEY))

    def _request_scheduled(self, request: Request, **kwargs: Any) -> None:
        meta = request.meta
        token = meta.get(TOKEN_META_KEY)
        if token is None:
            return
        if token == self._awaiting_schedule:
            self._schedule_seen = True
        if token in self._unfiltered:
            self._unfiltered.discard(token)
            self._record_as_seen(request)
        if token in self._tokens and not meta.get("allow_offsite"):
            self._check_offsite(request, token)

    def _record_as_seen(self, request: Request) -> None:
        """A restored page goes past the duplicate filter (the stopped run may have recorded it
        without handling it); its fingerprint is recorded now, so that a later copy of it (in a
        sitemap read after the restart) is filtered as Scrapy's spider would filter it."""
        engine = self.crawler.engine
        duplicate_filter = getattr(engine.scheduler, "df", None) if engine is not None else None
        if duplicate_filter is not None:
            duplicate_filter.request_seen(request)

    def _check_offsite(self, request: Request, token: int) -> None:
        """A page request (or its redirect) that allowed_domains leaves out is handled now:
        Scrapy's OffsiteMiddleware drops it at this signal, without a request_dropped one.
        A ``dont_filter`` that is there to skip the duplicate filter only does not let it
        through (Scrapy's spider has none): it is filtered here, as the middleware would."""
        if not getattr(self.crawler.spider, "allowed_domains", None):
            return  # every host is allowed: nothing to filter
        dupes_only = request.meta.get(DUPES_ONLY_META_KEY, False)
        if request.dont_filter and not dupes_only:
            return  # the spider's own dont_filter: Scrapy lets it through
        offsite = self._offsite_middleware()
        if offsite is None or offsite.should_follow(request, self.crawler.spider):
            return
        self.finish(token)
        if request.dont_filter:
            # its check, log line and stats; raises IgnoreRequest, which drops the request
            offsite.process_request(request.replace(dont_filter=False))

    def _referrer(self, sitemap_url: str, request: Request) -> str | None:
        """The Referer Scrapy's RefererMiddleware gives a link found in ``sitemap_url`` (None
        when it gives none, or is not enabled: REFERER_ENABLED): the request's own
        ``referrer_policy`` meta, else the default policy (REFERRER_POLICY), cached."""
        if self._referer_middleware is None:
            from scrapy.spidermiddlewares.referer import RefererMiddleware

            engine: Any = self.crawler.engine
            self._referer_middleware = _middleware(
                engine.scraper.spidermw.middlewares if engine is not None else (), RefererMiddleware
            )
        middleware = self._referer_middleware
        if not middleware:
            return None
        if "referrer_policy" in request.meta:
            return cast("str | None", middleware.policy(sitemap_url, request).referrer(sitemap_url, request.url))
        url = request.url
        end = url.find("/", url.find("//") + 2)
        key = (sitemap_url, url if end < 0 else url[:end])  # (the page's scheme://host:port)
        if key not in self._referrers:
            if len(self._referrers) >= _REFERRERS_KEPT:
                self._referrers.clear()
            self._referrers[key] = middleware.default_policy().referrer(sitemap_url, url)
        return self._referrers[key]

    def _offsite_middleware(self) -> Any:
        """Scrapy's OffsiteMiddleware among the downloader middlewares, or None (looked up once)."""
        if self._offsite is None:
            self._offsite = offsite_middleware(self.crawler) or False
        return self._offsite or None

    def _engine_quiet(self) -> bool:
        """Nothing downloading, being scraped or scheduled (start() aside)."""
        engine: Any = self.crawler.engine
        try:
            scheduler = engine.scheduler
            return (
                not engine.downloader.active
                and engine.scraper.slot.is_idle()
                and scheduler is not None
                and not scheduler.has_pending_requests()
            )
        except AttributeError:
            return False

    def _scheduler_empty(self, **kwargs: Any) -> None:
        """start() waits for handled pages while the engine has nothing left to do: page
        requests vanished without an outcome (a middleware swallowed them). Written off
        once the engine has stayed quiet for a moment, so that the crawl cannot hang."""
        if not (self.waiting_for_room and self._tokens and self._engine_quiet()):
            self._quiet_since = None
            return
        now = time.monotonic()
        if self._quiet_since is None:
            self._quiet_since = (now, frozenset(self._tokens))
            return
        since, suspects = self._quiet_since
        if now - since >= _LEAK_GRACE:
            self._quiet_since = None
            self._write_off(suspects & self._tokens.keys())

    def _spider_idle(self, **kwargs: Any) -> None:
        self._write_off(set(self._tokens))
        self.loader.save()

    def _write_off(self, tokens: Iterable[int]) -> None:
        tokens = sorted(tokens)
        if not tokens:
            return
        self.written_off += len(tokens)
        logger.warning(
            "%d page requests ended without a callback, errback or drop signal (e.g. %s); counted as handled",
            len(tokens),
            self._tokens.get(tokens[0]),
        )
        for token in tokens:
            self.finish(token)

    def _spider_closed(self, **kwargs: Any) -> None:
        loader = self.loader
        loader.close()
        stats = self.crawler.stats
        if stats is not None:
            stats.set_value(LOADER_PAGES_QUEUED_STAT, loader.total_count)
            stats.set_value(LOADER_PAGES_HANDLED_STAT, loader.handled_count)
            stats.set_value(LOADER_PAGES_PENDING_STAT, loader.pending_count)
            stats.set_value(LOADER_SITEMAPS_READ_STAT, loader.processed_sitemap_count)
            stats.set_value(LOADER_COMPLETED_STAT, loader.completed)
            if self.written_off:
                stats.set_value(LOADER_PAGES_WRITTEN_OFF_STAT, self.written_off)


async def page_requests(
    loader: SitemapRequestLoader,
    binding: ScrapyBinding,
    make_request: Callable[[SitemapPage], Request | None] | None,
) -> AsyncIterator[Request]:
    """See :meth:`SitemapRequestLoader.requests`."""
    from scrapy import Request
    from scrapy.utils.asyncio import is_asyncio_available

    if not is_asyncio_available():
        raise RuntimeError(
            "SitemapRequestLoader needs Scrapy's asyncio reactor "
            "(TWISTED_REACTOR = 'twisted.internet.asyncioreactor.AsyncioSelectorReactor', the default)"
        )

    while True:
        binding.waiting_for_room = True
        try:
            await loader.wait_for_room(binding.max_in_flight)
        finally:
            binding.waiting_for_room = False
        entry = await loader.next_queued()
        if entry is None:
            return
        request = make_request(entry.page) if make_request is not None else Request(entry.page.url)
        if request is None:
            loader.mark_handled(entry.page.url)
            continue
        request, token = binding.instrument(request, entry)
        yield request
        binding.after_start_yield(token)


_REFERRERS_KEPT = 4096
"""(sitemap, origin) pairs whose Referer is kept (then the cache starts again)."""


def offsite_middleware(crawler: Crawler) -> Any:
    """The crawl's enabled OffsiteMiddleware (Scrapy's downloader middleware), or None."""
    from scrapy.downloadermiddlewares.offsite import OffsiteMiddleware

    engine: Any = crawler.engine
    middlewares = engine.downloader.middleware.middlewares if engine is not None else ()
    return _middleware(middlewares, OffsiteMiddleware) or None


def _middleware(middlewares: Any, kind: type) -> Any:
    """The first of ``middlewares`` that is a ``kind``, or False when none is (so enabled)."""
    return next((middleware for middleware in middlewares if isinstance(middleware, kind)), False)
