"""SitemapRequestLoader: the pages a site's sitemaps list, as a bounded, resumable stream.

    loader = SitemapRequestLoader(["https://shop.example/sitemap.xml"], fetch=my_fetch)
    while (page := await loader.fetch_next_page()) is not None:
        ...                          # visit page.url
        loader.mark_handled(page.url)

or, inside Scrapy (what :class:`sitemap_crawl.SitemapSpider` does)::

    class MySpider(scrapy.Spider):
        async def start(self):
            loader = SitemapRequestLoader.from_crawler(self.crawler, homepage="https://shop.example/")
            async for request in loader.requests(lambda page: Request(page.url, self.parse)):
                yield request

This module is the asyncio core: the state is exactly
:class:`~sitemap_crawl.loader.state.LoaderState` (docs/loader.md). Sitemaps are read
one at a time: a sitemap body is downloaded whole, then streamed through
:class:`~sitemap_crawl.parsing.SitemapReader`; the reader's generator is suspended
while ``url_queue`` is full and resumed when pages are handed out, so no download is
held open for a slow consumer and at most ``max_buffer_size`` page URLs wait in
memory. Waiting is done on asyncio events, never by polling. Persistence is
:mod:`sitemap_crawl.loader.store`; Scrapy is met in
:mod:`sitemap_crawl.loader.scrapy_fetcher` and :mod:`sitemap_crawl.loader.tracking`.

On restart: the journal is replayed on the snapshot, ``in_progress`` goes back to
the front of ``url_queue``, and the sitemap that was being read is read again,
skipping ``current_sitemap_processed_urls``. The only pages seen twice are those
that were handed out and not yet handled when the process stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sitemap_crawl import default_settings
from sitemap_crawl.codec import page_from_dict
from sitemap_crawl.discovery import ALWAYS, KNOWN_PATHS_MODES, ROBOTS, FollowRules, SiteDiscovery, Visit
from sitemap_crawl.items import SitemapPage, SitemapRef
from sitemap_crawl.loader.fetching import Fetch, SitemapFetchError
from sitemap_crawl.loader.state import LoaderState, replay_journal, state_to_json
from sitemap_crawl.loader.store import DEFAULT_STATE_NAME, StateStore
from sitemap_crawl.parsing import DEFAULT_LIMITS, INVALID, ROBOTS_TXT, Limits, SitemapReader
from sitemap_crawl.parsing.reader import XML_INDEX

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from sitemap_crawl.loader.tracking import ScrapyBinding

logger = logging.getLogger(__name__)

DEFAULT_QUEUE_SIZE = default_settings.SITEMAP_CRAWL_LOADER_QUEUE_SIZE
"""Page URLs waiting in url_queue at most (SITEMAP_CRAWL_LOADER_QUEUE_SIZE)."""
DEFAULT_MAX_DEPTH = default_settings.SITEMAP_CRAWL_MAX_DEPTH
"""Index levels read below a start URL, robots.txt or known path (SITEMAP_CRAWL_MAX_DEPTH)."""
DEFAULT_SAVE_INTERVAL = default_settings.SITEMAP_CRAWL_LOADER_SAVE_INTERVAL
DEFAULT_LOG_INTERVAL = default_settings.LOADER_LOG_INTERVAL

_PARSE_SLICE = 512
"""Entries read from a sitemap between two returns to the event loop."""

PatternLike = str | re.Pattern[str]
PageFilter = Callable[[Iterator[SitemapPage], str], Iterable[SitemapPage]]
"""``(pages of one sitemap, its URL) -> the pages to queue`` (may drop, change or add pages)."""
SitemapFilter = Callable[[Iterator[SitemapRef], str], Iterable[SitemapRef | str]]
"""``(sub-sitemaps declared by one index, its URL) -> the sub-sitemaps to read``."""
EntryTexts = tuple[Any, ...] | None
"""The texts an entry was read from, as written: its ``SitemapReader.iter_raw`` tuple
(urlset pages and index entries), None for RSS, Atom and text sitemaps."""
PageTextsFilter = Callable[[Iterator[tuple[SitemapPage, EntryTexts]], str], Iterable[SitemapPage]]
"""A :data:`PageFilter` that sees each page with its :data:`EntryTexts`."""
SitemapTextsFilter = Callable[[Iterator[tuple[SitemapRef, EntryTexts]], str], Iterable[SitemapRef | str]]
"""A :data:`SitemapFilter` that sees each sub-sitemap with its :data:`EntryTexts`."""


@dataclass(slots=True)
class QueuedPage:
    """A page waiting in url_queue; ``restored`` when it comes from a previous run."""

    page: SitemapPage
    restored: bool = False
    depth: int = 1
    """Its request's depth as Scrapy counts it: its sitemap's nesting level + 1 (a start URL,
    robots.txt or a known path is level 0, a sitemap robots.txt names level 1); 1 for a page
    handed out again after a restart (levels count from 0 again then)."""


def _drop_first_item(pages: dict[str, Any], url: str) -> None:
    """A saved copy of ``url`` was handled (the journal says so): its item, the first of the
    URL's list in the pages file (in the order the copies are handed out again), goes with it."""
    items = pages.get(url)
    if isinstance(items, list) and items:
        del items[0]


def _compile(patterns: Iterable[PatternLike] | PatternLike | None) -> list[re.Pattern[str]] | None:
    if patterns is None:
        return None
    if isinstance(patterns, str | re.Pattern):
        patterns = [patterns]
    return [re.compile(p) if isinstance(p, str) else p for p in patterns]


class SitemapRequestLoader:
    """Hands out the page URLs of a site's sitemaps, a bounded number at a time, resumably.

    Sources: ``sitemap_urls`` (sitemaps or robots.txt URLs) and/or ``homepage``
    (robots.txt, then the well-known paths not already read); ``homepages`` adds more
    sites, mapped one after another in the order given (each site once; a sitemap URL
    is read once per crawl whichever site lists it). ``fetch`` downloads
    one sitemap. Page URLs must match one of ``include`` (if given) and none of
    ``exclude``; sub-sitemaps of an index must match one of ``follow`` (if given)
    and none of ``deny`` (robots.txt ``Sitemap:`` lines are always read).
    ``page_filter`` / ``sitemap_filter`` see each sitemap's entries first and may
    drop, change or add some; ``page_texts_filter`` / ``sitemap_texts_filter`` instead also
    see the texts each entry was read from (:data:`EntryTexts`). Indexes nested deeper than ``max_depth`` levels below a
    start URL, robots.txt or known path are not read (an endless chain of indexes ends
    there); with ``depth_limit`` (Scrapy's DEPTH_LIMIT), a sitemap whose pages would be
    deeper than that (see :attr:`QueuedPage.depth`) is not read. A sitemap URL is read once
    per crawl; a page URL is
    queued once per sitemap. With ``every_link``, pages' ``alternates`` hold every
    ``xhtml:link`` with an href, not only the hreflang alternates (Scrapy's meaning).
    """

    def __init__(
        self,
        sitemap_urls: Iterable[str] = (),
        *,
        fetch: Fetch,
        homepage: str | None = None,
        homepages: Iterable[str] = (),
        use_robots: bool = True,
        use_known_paths: bool = True,
        known_paths: Sequence[str] | None = None,
        known_paths_mode: str = ALWAYS,
        include: Iterable[PatternLike] | PatternLike | None = None,
        exclude: Iterable[PatternLike] | PatternLike | None = None,
        follow: Iterable[PatternLike] | PatternLike | None = None,
        deny: Iterable[PatternLike] | PatternLike | None = None,
        page_filter: PageFilter | None = None,
        sitemap_filter: SitemapFilter | None = None,
        page_texts_filter: PageTextsFilter | None = None,
        sitemap_texts_filter: SitemapTextsFilter | None = None,
        max_buffer_size: int = DEFAULT_QUEUE_SIZE,
        limits: Limits = DEFAULT_LIMITS,
        every_link: bool = False,
        max_depth: int = DEFAULT_MAX_DEPTH,
        depth_limit: int = 0,
        persist_dir: str | Path | None = None,
        state_name: str = DEFAULT_STATE_NAME,
        save_interval: float = DEFAULT_SAVE_INTERVAL,
        log_interval: float = DEFAULT_LOG_INTERVAL,
    ) -> None:
        if max_buffer_size < 1:
            raise ValueError("max_buffer_size must be at least 1")
        if page_filter is not None and page_texts_filter is not None:
            raise ValueError("give page_filter or page_texts_filter, not both")
        if sitemap_filter is not None and sitemap_texts_filter is not None:
            raise ValueError("give sitemap_filter or sitemap_texts_filter, not both")
        from sitemap_crawl.default_settings import DEFAULT_KNOWN_PATHS

        self._fetch = fetch
        self.start_urls: list[str] = []
        self.homepages: list[str] = []
        """Every site to map, in order; the first one (``homepage``) is mapped with ``sitemap_urls``."""
        self.homepage: str | None = None
        self.use_robots = use_robots
        self._known_paths: list[str] = (
            list(DEFAULT_KNOWN_PATHS if known_paths is None else known_paths) if use_known_paths else []
        )
        if known_paths_mode not in KNOWN_PATHS_MODES:
            raise ValueError(f"known_paths_mode must be one of {KNOWN_PATHS_MODES}, not {known_paths_mode!r}")
        self.known_paths_mode = known_paths_mode
        self._include = _compile(include)
        self._exclude = _compile(exclude)
        self._rules = FollowRules(follow=_compile(follow), deny=_compile(deny), max_depth=max_depth)
        self._page_filter = page_filter
        self._sitemap_filter = sitemap_filter
        self._page_texts_filter = page_texts_filter
        self._sitemap_texts_filter = sitemap_texts_filter
        self.max_buffer_size = max_buffer_size
        self._low_water = max_buffer_size // 2
        self.limits = limits
        self.every_link = every_link
        self.max_depth = max_depth
        self.depth_limit = depth_limit
        self.save_interval = save_interval
        self.log_interval = log_interval
        self._store = StateStore(persist_dir, state_name) if persist_dir else None
        self._journal_failed = False
        """The last write to the journal failed (its ERROR line is written once, until one succeeds)."""
        self._save_failed = False
        """The last snapshot could not be saved (its ERROR line is written once, until one is)."""

        # the state: which sitemaps wait, are read or being read is the discovery's (one
        # sitemap at a time, each URL once per crawl); the pages are the loader's
        self._next: deque[Visit] = deque()  # what the discovery sent: the next sitemap to read
        self._site_index = 0  # the site being mapped: self.homepages[self._site_index]
        self._opened = False
        self.set_sources(sitemap_urls, homepage, homepages)  # (the discovery of the first site)
        self._current: Visit | None = None
        # a set kept as an insertion-ordered dict, so that the saved list is in a useful order
        self._current_processed: dict[str, None] = {}
        self._queue: deque[QueuedPage] = deque()
        self._held: dict[str, deque[QueuedPage]] = {}
        """Pages whose URL (listed by another sitemap too) is in progress: they are handed out
        once that copy is handled, so that in_progress, a set of URLs, says every copy."""
        self._in_progress: dict[str, int] = {}  # URL -> times handed out and not handled
        self._in_progress_pages: dict[str, SitemapPage] = {}
        self._in_progress_total = 0
        self._handled = 0
        self._total = 0
        self._completed = False

        # running
        self._closed = False
        self._current_restored = False
        self._producer: asyncio.Task[None] | None = None
        self._producer_done = False
        self._ready = asyncio.Event()  # url_queue has a page, or the producer is done
        self._room = asyncio.Event()  # url_queue has room again
        self._handled_event = asyncio.Event()  # a page was handled
        self._last_save = 0.0
        self._last_log = time.monotonic()
        self._scrapy: ScrapyBinding | None = None

    def set_sources(
        self, sitemap_urls: Iterable[str] = (), homepage: str | None = None, homepages: Iterable[str] = ()
    ) -> None:
        """Replace the sources given at construction (as :class:`SitemapRequestLoader` takes
        them), before the loader is first used (a spider that sets ``sitemap_urls`` in its own
        ``from_crawler`` or ``start()``). A state saved in ``persist_dir`` still wins."""
        if self._opened:
            raise RuntimeError("the loader is already in use: its sources can no longer change")
        self.start_urls = list(dict.fromkeys(str(url).strip() for url in sitemap_urls if str(url).strip()))
        self.homepages = list(
            dict.fromkeys(url for url in ([homepage] if homepage else []) + [str(h).strip() for h in homepages] if url)
        )
        self.homepage = self.homepages[0] if self.homepages else None
        self._discovery = self._new_discovery()

    def _new_discovery(self, read_urls: dict[str, None] | None = None) -> SiteDiscovery:
        """The discovery of the site at ``_site_index`` (the start URLs go with the first);
        ``read_urls``: the sitemaps the sites before it read (each is read once per crawl)."""
        self._next.clear()
        homepage = self.homepages[self._site_index] if self.homepages else None
        discovery = SiteDiscovery(
            homepage or "",
            send=self._next.append,
            rules=self._rules,
            homepage=homepage,
            start_urls=self.start_urls if self._site_index == 0 else (),
            use_robots=self.use_robots,
            known_paths=self._known_paths if homepage else (),
            known_paths_mode=self.known_paths_mode,
            once_per_crawl=True,
        )
        if read_urls:
            discovery.read_urls = read_urls
        return discovery

    @property
    def _sites_waiting(self) -> list[str]:
        """The homepages of the sites not started yet (saved in pending_sitemap_urls)."""
        return self.homepages[self._site_index + 1 :]

    def _next_site(self) -> bool:
        """The current site is done: start the next one, if any is left."""
        if self._site_index + 1 >= len(self.homepages):
            return False
        self._site_index += 1
        self._discovery = self._new_discovery(self._discovery.read_urls)
        homepage = self.homepages[self._site_index]
        logger.info("Sitemap loader: site %d of %d, %s", self._site_index + 1, len(self.homepages), homepage)
        self._discovery.start()
        return True

    @property
    def known_urls(self) -> list[str]:
        """The well-known path URLs probed after the other sitemaps."""
        return self._discovery.known_urls

    @property
    def _current_url(self) -> str | None:
        return None if self._current is None else self._current.url

    def _processed_urls(self) -> dict[str, None]:
        """Sitemap URLs fully read (and URLs redirects led to), in order: read_urls but the current one."""
        current = self._current_url
        return {url: None for url in self._discovery.read_urls if url != current}

    # -- counts ------------------------------------------------------------------------

    @property
    def total_count(self) -> int:
        """Pages queued in all (once per sitemap that lists them)."""
        return self._total

    @property
    def handled_count(self) -> int:
        return self._handled

    @property
    def pending_count(self) -> int:
        """Pages queued and not handled yet (waiting in url_queue or in progress)."""
        return self._total - self._handled

    @property
    def in_progress_count(self) -> int:
        return self._in_progress_total

    @property
    def completed(self) -> bool:
        """Every sitemap has been fully read."""
        return self._completed

    def is_empty(self) -> bool:
        """Nothing to hand out now (url_queue is empty)."""
        return not self._queue

    def is_finished(self) -> bool:
        """Every sitemap read and every page handed out has been handled."""
        return self._producer_done and not self._queue and not self._in_progress_total and self._completed

    @property
    def state(self) -> LoaderState:
        """A copy of the current state."""
        values: dict[str, Any] = {
            name: set(value) if isinstance(value, dict) else value for name, value in self._state_values().items()
        }
        return LoaderState(**values)

    def _state_values(self) -> dict[str, Any]:
        """The state's fields by name, as fresh containers (the ordered sets as dicts)."""
        return {
            "pending_sitemap_urls": deque(visit.url for visit in self._next)
            + deque(self._discovery.waiting_urls)
            + deque(self._sites_waiting),
            "in_progress_sitemap_url": self._current_url,
            "processed_sitemap_urls": self._processed_urls(),
            "current_sitemap_processed_urls": dict(self._current_processed),
            "url_queue": deque(entry.page.url for entry in self._waiting()),
            "in_progress": dict.fromkeys(self._in_progress),
            "handled_count": self._handled,
            "total_count": self._total,
            "completed": self._completed,
        }

    @property
    def processed_sitemap_count(self) -> int:
        """Sitemaps fully read (processed_sitemap_urls)."""
        return len(self._discovery.read_urls) - (self._current is not None)

    def progress(self) -> str:
        """One line: sitemaps done/pending, pages queued/handled."""
        current = 1 if self._current is not None else 0
        pending = len(self._next) + len(self._discovery.waiting_urls) + len(self._sites_waiting)
        site = (
            f"site {self._site_index + 1} of {len(self.homepages)} ({self.homepages[self._site_index]}); "
            if len(self.homepages) > 1
            else ""
        )
        return (
            f"{site}sitemaps: {self.processed_sitemap_count} done, {current} in progress, {pending} pending; "
            f"pages: {self._total} queued, {self._handled} handled, {self._in_progress_total} in progress, "
            f"{len(self._queue) + self._held_count()} waiting"
        )

    def _waiting(self) -> Iterator[QueuedPage]:
        """The pages of url_queue: those held back (their URL in progress) first."""
        for held in self._held.values():
            yield from held
        yield from self._queue

    def _held_count(self) -> int:
        return sum(map(len, self._held.values()))

    def _take_held(self, url: str) -> QueuedPage:
        """The first copy of ``url`` held back (its entry goes with its last copy)."""
        held = self._held[url]
        entry = held.popleft()
        if not held:
            del self._held[url]
        return entry

    # -- life cycle --------------------------------------------------------------------

    def open(self) -> None:
        """Load the persisted state (if any) or set up the sources. Called on first use."""
        if self._opened:
            return
        self._opened = True
        loaded = None
        if self._store is not None:
            try:
                loaded = self._store.load()
            except (OSError, ValueError) as exc:
                self._store.set_aside(str(exc))
        if loaded is not None:
            try:
                self._restore(*loaded)
            except (ValueError, TypeError, KeyError) as exc:
                assert self._store is not None
                self._store.set_aside(str(exc))
                self._reset()
                self._start_fresh()
        else:
            self._start_fresh()
        self._save()

    def _start_fresh(self) -> None:
        self._discovery.start()
        if not self._next and not self.known_urls:
            if self.homepages:  # (a homepage with both of its sources switched off)
                logger.warning(
                    "Sitemap loader: use_robots and use_known_paths are both false and no sitemap URL"
                    " was given: nothing will be fetched"
                )
            else:
                logger.warning("Sitemap loader: no sitemap URL and no homepage; nothing to crawl")

    def _reset(self) -> None:
        self._site_index = 0
        self._discovery = self._new_discovery()
        self._current = None
        self._current_processed.clear()
        self._queue.clear()
        self._held.clear()
        self._handled = self._total = 0
        self._completed = False

    def _restore(self, data: Any, pages: dict[str, Any], journal: list[str], seen: list[str]) -> None:
        state = LoaderState.from_dict(data)
        before = set(state.in_progress)
        replayed = replay_journal(state, journal, lambda url: _drop_first_item(pages, url))
        current = state.in_progress_sitemap_url
        # the sitemap that was being read is read first again (skipping its pages already queued)
        waiting = [current, *state.pending_sitemap_urls] if current is not None else list(state.pending_sitemap_urls)
        # sites not started yet wait as their homepages, at the end; the site before the
        # first of them is the one that was being mapped
        sites = set(self.homepages)
        not_started = [url for url in waiting if url in sites]
        if not_started:
            self._site_index = max(0, self.homepages.index(not_started[0]) - 1)
        else:
            self._site_index = max(0, len(self.homepages) - 1)
        self._discovery = self._new_discovery()
        self._discovery.resume(
            [url for url in waiting if url not in sites], read=data["processed_sitemap_urls"], seen_under_robots=seen
        )
        self._current_processed = dict.fromkeys(state.current_sitemap_processed_urls)
        self._handled = state.handled_count
        self._total = state.total_count
        self._completed = state.completed
        queue = list(state.url_queue)
        in_progress = state.in_progress
        # what was handed out and not handled goes back to the front of url_queue
        retried = [url for url in before if url in in_progress]
        for url in [*retried, *queue]:
            self._queue.append(QueuedPage(self._restored_page(url, pages), restored=True))

        expected_total = self._handled + len(self._queue)
        if self._total != expected_total:
            logger.debug("Sitemap loader: total_count %d adjusted to %d", self._total, expected_total)
            self._total = expected_total
        self._current_restored = current is not None
        assert self._store is not None
        logger.info(
            "Resuming the sitemap crawl saved in %s: %d pages handled (%d from the journal), "
            "%d handed out again, %d waiting, %s",
            self._store.state_path,
            self._handled,
            replayed,
            len(retried),
            len(queue),
            f"re-reading {current}" if current else "no sitemap being read",
        )
        if self._completed and not self._queue:
            logger.info("The sitemap crawl saved in %s is complete; nothing left to do", self._store.state_path)

    def _restored_page(self, url: str, pages: dict[str, Any]) -> SitemapPage:
        """The saved page item of the next copy of ``url`` to hand out (the pages file has a
        list for each URL, one item a copy, in the order they are handed out again; an older
        file has one item a URL)."""
        data = pages.get(url)
        if isinstance(data, list):
            data = data.pop(0) if len(data) > 1 else data[0] if data else None
        if isinstance(data, dict):
            with contextlib.suppress(KeyError, TypeError, ValueError):
                return page_from_dict(data)
        return SitemapPage(url=url, sitemap_url="")

    def _ensure_running(self) -> None:
        self.open()
        if self._producer is None and not self._closed:
            self._producer = asyncio.ensure_future(self._produce())

    def close(self) -> None:
        """Stop reading sitemaps and save the state (the loader cannot be reused)."""
        if self._closed:
            return
        self._closed = True
        if self._producer is not None and not self._producer.done():
            self._producer.cancel()
        self._producer_done = True
        self._ready.set()
        if self._opened:
            self._save()
            self._log_progress(force=True)
        if self._store is not None:
            self._store.close()

    # -- handing out -------------------------------------------------------------------

    async def fetch_next_page(self) -> SitemapPage | None:
        """The next page to visit (now in progress), or None when every sitemap is read."""
        entry = await self.next_queued()
        return None if entry is None else entry.page

    async def next_queued(self) -> QueuedPage | None:
        """The next queued page, now in progress (None when every sitemap is read)."""
        self._ensure_running()
        entry: QueuedPage | None = None
        while entry is None:
            if self._queue:
                entry = self._queue.popleft()
                if len(self._queue) <= self._low_water:
                    self._room.set()
                if entry.page.url in self._in_progress:  # its other copy is in progress: it waits
                    self._held.setdefault(entry.page.url, deque()).append(entry)
                    entry = None
            elif self._producer_done:
                if not self._held:
                    return None
                # nothing else is left: a copy held back goes now, so that a consumer that
                # marks its pages handled later (in batches) is never kept waiting for good
                entry = self._take_held(next(iter(self._held)))
            else:
                self._ready.clear()
                await self._ready.wait()  # (a page held back is released by mark_handled)
        url = entry.page.url
        self._in_progress[url] = self._in_progress.get(url, 0) + 1
        self._in_progress_pages[url] = entry.page
        self._in_progress_total += 1
        return entry

    def mark_handled(self, url: str) -> bool:
        """The page ``url`` has been handled (processed, or failed for good); False if it was not in progress."""
        count = self._in_progress.get(url)
        if count is None:
            logger.debug("Sitemap loader: %s was not in progress", url)
            return False
        if count > 1:
            self._in_progress[url] = count - 1
        else:
            del self._in_progress[url]
            self._in_progress_pages.pop(url, None)
            if url in self._held:  # the next copy of this URL may go now, first
                self._queue.appendleft(self._take_held(url))
                self._ready.set()
        self._in_progress_total -= 1
        self._handled += 1
        if self._store is not None:
            self._record_handled(url)
        self._handled_event.set()
        self._maybe_save()
        self._log_progress()
        return True

    def _record_handled(self, url: str) -> None:
        """The journal's line for ``url``; a journal that cannot be written (a full disk) is one
        ERROR line, and the crawl goes on: after a crash the pages it left out are visited again."""
        assert self._store is not None
        try:
            self._store.record_handled(url)
        except OSError as exc:
            if not self._journal_failed:
                self._journal_failed = True
                logger.error(
                    "Could not write the sitemap loader's journal in %s (%s): pages handled from now on are "
                    "visited again after a crash, until a state snapshot is saved",
                    self._store.directory,
                    exc.strerror or exc,
                )
            return
        self._journal_failed = False

    async def wait_for_room(self, max_in_progress: int) -> None:
        """Wait until fewer than ``max_in_progress`` pages are in progress."""
        while self._in_progress_total >= max_in_progress:
            self._handled_event.clear()
            await self._handled_event.wait()

    # -- reading sitemaps --------------------------------------------------------------

    async def _produce(self) -> None:
        try:
            while True:
                if not self._next:
                    self._discovery.idle()  # the well-known paths, once the rest is read
                if not self._next and not self._next_site():
                    break
                if not self._next:
                    continue
                visit = self._current = self._next.popleft()
                if not self._current_restored:
                    self._current_processed = {}
                self._save()
                try:
                    await self._read_sitemap(visit)
                except asyncio.CancelledError:
                    raise
                except Exception:  # e.g. a failing filter: the other sitemaps are still read
                    logger.exception("Error while reading the sitemap %s; its remaining entries are skipped", visit.url)
                self._current = None
                self._current_processed = {}
                self._current_restored = False
                self._discovery.settle(visit)
                self._discovery.done(visit)
            self._completed = True
            logger.info("Sitemap loader: every sitemap read (%s)", self.progress())
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("Sitemap loader stopped reading sitemaps (%s)", self.progress())
        finally:
            self._producer_done = True
            self._ready.set()
            if not self._closed:
                self._save()

    async def _read_sitemap(self, visit: Visit) -> None:
        url = visit.url
        if self.depth_limit and visit.depth >= self.depth_limit:
            # its pages (and its sub-sitemaps' pages) would be deeper than the limit
            logger.debug("Sitemap %s not read: its pages would be deeper than %d", url, self.depth_limit)
            return
        try:
            fetched = await self._fetch(url)
        except SitemapFetchError as exc:
            self._discovery.failed(visit, exc.reason, after_redirect=exc.after_redirect)
            return
        final_url = fetched.url or url
        if final_url != url and not self._discovery.redirected(visit, final_url, fetched.redirect_urls):
            return
        reader = SitemapReader(
            fetched.body, final_url, is_robots=visit.role == ROBOTS, limits=self.limits, every_link=self.every_link
        )
        if reader.kind == INVALID:
            self._discovery.failed(visit, f"{reader.error} ({reader.detail})")
            return
        if reader.kind in (ROBOTS_TXT, XML_INDEX):
            self._read_index(visit, final_url, reader)
            found = 0
        else:
            found = await self._read_pages(url, final_url, reader, visit.site or None, visit.depth + 1)
        if reader.error:
            level = logging.DEBUG if visit.left_out(reader.error) else logging.WARNING  # (over the size cap: said)
            logger.log(level, "Sitemap %s: %s (%s)", url, reader.error, reader.detail)
        if reader.kind not in (ROBOTS_TXT, XML_INDEX):
            logger.info("Sitemap %s read: %d pages queued (%s)", url, found, self.progress())

    def _read_index(self, visit: Visit, final_url: str, reader: SitemapReader) -> None:
        lineage = visit.ancestors | {visit.url, final_url}
        listed = self._discovery.listed  # (before a filter: a child it leaves out was listed all the same)
        refs = (entry for entry in reader if isinstance(entry, SitemapRef) and listed(visit, entry.url))
        chosen: Iterable[SitemapRef | str] = refs
        if reader.kind == ROBOTS_TXT:
            pass  # robots.txt's Sitemap: lines are not filtered
        elif self._sitemap_texts_filter is not None:
            with_texts = (
                (entry, texts)
                for entry, texts in reader.iter_with_texts()
                if isinstance(entry, SitemapRef) and listed(visit, entry.url)
            )
            chosen = self._sitemap_texts_filter(with_texts, visit.url)
        elif self._sitemap_filter is not None:
            chosen = self._sitemap_filter(refs, visit.url)
        for index, chosen_ref in enumerate(chosen):
            child = chosen_ref if isinstance(chosen_ref, str) else chosen_ref.url
            if self._discovery.follows(visit, child, reader.kind):
                self._discovery.declare(visit, child, index, lineage)

    async def _read_pages(
        self, url: str, final_url: str, reader: SitemapReader, website: str | None, depth: int
    ) -> int:
        """Queue the pages of a sitemap; ``website``: the homepage of the site being mapped
        (None for start sitemap URLs without a homepage); ``depth``: their requests' depth."""

        def place(page: SitemapPage) -> None:
            if final_url != url:
                page.sitemap_url = url
            page.website = website

        def pages() -> Iterator[SitemapPage]:
            for entry in reader:
                if isinstance(entry, SitemapPage):
                    place(entry)
                    yield entry

        def pages_with_texts() -> Iterator[tuple[SitemapPage, EntryTexts]]:
            for entry, texts in reader.iter_with_texts():
                if isinstance(entry, SitemapPage):
                    place(entry)
                    yield entry, texts

        chosen: Iterable[SitemapPage]
        if self._page_texts_filter is not None:
            chosen = self._page_texts_filter(pages_with_texts(), url)
        else:
            chosen = self._page_filter(pages(), url) if self._page_filter else pages()
        queued = 0
        since_yield = 0
        for page in chosen:
            since_yield += 1
            if since_yield >= _PARSE_SLICE:
                since_yield = 0
                await asyncio.sleep(0)  # a turn for the rest of the event loop, not a poll
            if not self._accepts(page.url) or page.url in self._current_processed:
                continue
            while len(self._queue) >= self.max_buffer_size:
                since_yield = 0
                self._room.clear()
                await self._room.wait()
            self._current_processed[page.url] = None
            self._queue.append(QueuedPage(page, self._current_restored, depth))
            self._total += 1
            queued += 1
            self._ready.set()
            self._maybe_save()
        return queued

    def _accepts(self, url: str) -> bool:
        if self._include is not None and not any(p.search(url) for p in self._include):
            return False
        return not (self._exclude is not None and any(p.search(url) for p in self._exclude))

    # -- saving and reporting ----------------------------------------------------------

    def _maybe_save(self) -> None:
        if self._store is not None and time.monotonic() - self._last_save >= self.save_interval:
            self._save()

    def save(self) -> None:
        """Write the state now (no-op without a persist_dir)."""
        self._save()

    def _save(self) -> None:
        if self._store is None or not self._opened:
            return
        self._last_save = time.monotonic()
        state = state_to_json(self._state_values())
        # one item for each copy, in the order they would be handed out again on a restart:
        # the copy in progress, then those of url_queue
        pages: dict[str, list[dict[str, Any]]] = {
            url: [page.to_dict()] for url, page in self._in_progress_pages.items()
        }
        for entry in self._waiting():
            pages.setdefault(entry.page.url, []).append(entry.page.to_dict())
        try:
            self._store.save(state, pages, self._discovery.seen_under_robots())
        except OSError as exc:
            if not self._save_failed:  # (once, until a snapshot is saved again)
                self._save_failed = True
                logger.error(
                    "Could not save the sitemap loader state in %s: %s (the last snapshot saved stays in "
                    "place; after a crash, the pages handled since it may be visited again)",
                    self._store.directory,
                    exc,
                )
            return
        if self._save_failed:
            self._save_failed = False
            logger.info("The sitemap loader state is saved in %s again", self._store.directory)

    def _log_progress(self, force: bool = False) -> None:
        """A progress line every ``log_interval`` seconds (none when it is 0 or less, as
        ``LOGSTATS_INTERVAL=0`` turns Scrapy's off), and one when ``force``d (at the end)."""
        now = time.monotonic()
        if force or (self.log_interval > 0 and now - self._last_log >= self.log_interval):
            self._last_log = now
            logger.info("Sitemap crawl progress: %s", self.progress())

    # -- Scrapy ------------------------------------------------------------------------

    @classmethod
    def from_crawler(cls, crawler: Crawler, sitemap_urls: Iterable[str] = (), **kwargs: Any) -> SitemapRequestLoader:
        """A loader that downloads sitemaps through Scrapy's downloader (and its middlewares),
        persists in JOBDIR, reads its defaults from the settings and tracks the page requests
        made by :meth:`requests` until they are handled."""
        from sitemap_crawl.loader.scrapy_fetcher import loader_from_crawler

        return loader_from_crawler(cls, crawler, sitemap_urls, kwargs)

    def attach(self, binding: ScrapyBinding) -> None:
        """Connect this loader to a crawler (done by :meth:`from_crawler`)."""
        self._scrapy = binding

    async def requests(
        self, make_request: Callable[[SitemapPage], Request | None] | None = None
    ) -> AsyncIterator[Request]:
        """Page requests for Spider.start(), at most SITEMAP_CRAWL_LOADER_MAX_IN_FLIGHT unhandled at once.

        ``make_request(page)`` builds the request of a page (default: ``Request(page.url)``,
        handled by the spider's ``parse``); None skips the page. The loader wraps the
        callback and errback to learn when the page is handled, puts the page item in
        ``meta["sitemap_page"]``, and sends pages handed out again after a restart with
        ``dont_filter=True`` (the previous run may have recorded them in JOBDIR's
        ``requests.seen``). Needs a loader made by :meth:`from_crawler`.
        """
        binding = self._scrapy
        if binding is None:
            raise RuntimeError("SitemapRequestLoader.requests() needs a loader made with from_crawler()")
        from sitemap_crawl.loader.tracking import page_requests

        async for request in page_requests(self, binding, make_request):
            yield request
