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

The state (see docs/loader.md, "Resuming") is exactly
:class:`LoaderState`. Sitemaps are read one at a time: a sitemap body is
downloaded whole, then streamed through :class:`~sitemap_crawl.parsing.SitemapReader`;
the reader's generator is suspended while ``url_queue`` is full and resumed when
pages are handed out, so no download is held open for a slow consumer and at most
``max_buffer_size`` page URLs wait in memory. Waiting is done on asyncio events,
never by polling.

Persistence (``persist_dir``, JOBDIR under Scrapy), all in that directory:

``sitemap_loader.json``
    the state, exactly the documented fields (deques and sets as JSON lists),
    written to a temporary file, fsynced and renamed over the old one: at each
    sitemap boundary, every ``save_interval`` seconds while pages are queued or
    handled, and on close.
``sitemap_loader.handled``
    a journal: one line per page handled since the last snapshot, appended with one
    ``write()`` each, so a ``kill -9`` loses none of them. It is emptied when a
    snapshot is written and replayed on top of the snapshot on restart.
``sitemap_loader.pages.json``
    the page items (lastmod, images, news...) of the URLs in ``url_queue`` and
    ``in_progress`` at the snapshot, so that pages handed out again after a restart
    still carry their item.

On restart: the journal is replayed on the snapshot, ``in_progress`` goes back to
the front of ``url_queue``, and the sitemap that was being read is read again,
skipping ``current_sitemap_processed_urls``. The only pages seen twice are those
that were handed out and not yet handled when the process stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import json
import logging
import os
import re
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy.core.scheduler import Scheduler

from sitemap_crawl.discovery import DECLARED, KNOWN, ROBOTS, is_robots_txt, known_path_urls, robots_txt_url
from sitemap_crawl.items import Alternate, Image, NewsStory, SitemapPage, SitemapRef, Video
from sitemap_crawl.parsing import DEFAULT_LIMITS, INVALID, ROBOTS_TXT, Limits, SitemapReader
from sitemap_crawl.parsing.reader import XML_INDEX

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from twisted.python.failure import Failure

logger = logging.getLogger(__name__)

STATE_FIELDS: tuple[str, ...] = (
    "pending_sitemap_urls",
    "in_progress_sitemap_url",
    "processed_sitemap_urls",
    "current_sitemap_processed_urls",
    "url_queue",
    "in_progress",
    "handled_count",
    "total_count",
    "completed",
)
"""The fields of the persisted state, in the order they are written."""

PAGE_META_KEY = "sitemap_page"
"""Request/response meta key holding the :class:`~sitemap_crawl.items.SitemapPage` of a page request."""
TOKEN_META_KEY = "sitemap_crawl_loader"
"""Request meta key holding the loader's handle of a page request (internal)."""
SITEMAP_META_KEY = "sitemap_crawl_loader_sitemap"
"""Request meta key marking the loader's own sitemap downloads."""

QUEUE_SIZE_SETTING = "SITEMAP_CRAWL_LOADER_QUEUE_SIZE"
MAX_IN_FLIGHT_SETTING = "SITEMAP_CRAWL_LOADER_MAX_IN_FLIGHT"
SAVE_INTERVAL_SETTING = "SITEMAP_CRAWL_LOADER_SAVE_INTERVAL"
LOG_INTERVAL_SETTING = "SITEMAP_CRAWL_LOADER_LOG_INTERVAL"
DEFAULT_QUEUE_SIZE = 1000
DEFAULT_MAX_DEPTH = 10
"""Index levels read below a start URL, robots.txt or known path (SITEMAP_CRAWL_MAX_DEPTH)."""
DEFAULT_SAVE_INTERVAL = 5.0
DEFAULT_LOG_INTERVAL = 60.0
DEFAULT_STATE_NAME = "sitemap_loader"

_PARSE_SLICE = 512
"""Entries read from a sitemap between two returns to the event loop."""
_LEAK_GRACE = 1.0
"""Seconds a quiet engine must stay quiet before outstanding page requests are written off."""
_TIMER_SWEEP_INTERVAL = 10.0
"""Seconds between two chances for Twisted's reactor to drop its cancelled timeouts."""

PatternLike = str | re.Pattern[str]
PageFilter = Callable[[Iterator[SitemapPage], str], Iterable[SitemapPage]]
"""``(pages of one sitemap, its URL) -> the pages to queue`` (may drop, change or add pages)."""
SitemapFilter = Callable[[Iterator[SitemapRef], str], Iterable[SitemapRef | str]]
"""``(sub-sitemaps declared by one index, its URL) -> the sub-sitemaps to read``."""


# -- the state --------------------------------------------------------------------------


@dataclass
class LoaderState:
    """The loader's state, field for field as persisted (see docs/loader.md)."""

    pending_sitemap_urls: deque[str] = field(default_factory=deque)
    in_progress_sitemap_url: str | None = None
    processed_sitemap_urls: set[str] = field(default_factory=set)
    current_sitemap_processed_urls: set[str] = field(default_factory=set)
    url_queue: deque[str] = field(default_factory=deque)
    in_progress: set[str] = field(default_factory=set)
    handled_count: int = 0
    total_count: int = 0
    completed: bool = False

    @property
    def pending_count(self) -> int:
        return self.total_count - self.handled_count

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the documented field names, deques and sets as lists."""
        return {
            "pending_sitemap_urls": list(self.pending_sitemap_urls),
            "in_progress_sitemap_url": self.in_progress_sitemap_url,
            "processed_sitemap_urls": list(self.processed_sitemap_urls),
            "current_sitemap_processed_urls": list(self.current_sitemap_processed_urls),
            "url_queue": list(self.url_queue),
            "in_progress": list(self.in_progress),
            "handled_count": self.handled_count,
            "total_count": self.total_count,
            "completed": self.completed,
        }

    @classmethod
    def from_dict(cls, data: Any) -> LoaderState:
        """Read the JSON form back; ValueError when it is not a loader state."""
        if not isinstance(data, dict) or set(data) != set(STATE_FIELDS):
            found = sorted(data) if isinstance(data, dict) else type(data).__name__
            raise ValueError(f"not a sitemap loader state (found {found})")

        def url_list(name: str) -> list[str]:
            value = data[name]
            if not isinstance(value, list) or not all(isinstance(url, str) for url in value):
                raise ValueError(f"{name} is not a list of URLs")
            return value

        current = data["in_progress_sitemap_url"]
        if current is not None and not isinstance(current, str):
            raise ValueError("in_progress_sitemap_url is not a URL or null")
        counts = data["handled_count"], data["total_count"]
        if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts):
            raise ValueError("handled_count and total_count are not counts")
        if not isinstance(data["completed"], bool):
            raise ValueError("completed is not a boolean")
        return cls(
            pending_sitemap_urls=deque(url_list("pending_sitemap_urls")),
            in_progress_sitemap_url=current,
            processed_sitemap_urls=set(url_list("processed_sitemap_urls")),
            current_sitemap_processed_urls=set(url_list("current_sitemap_processed_urls")),
            url_queue=deque(url_list("url_queue")),
            in_progress=set(url_list("in_progress")),
            handled_count=counts[0],
            total_count=counts[1],
            completed=data["completed"],
        )


def page_from_dict(data: dict[str, Any]) -> SitemapPage:
    """Rebuild a :class:`SitemapPage` from :meth:`SitemapPage.to_dict` output."""
    news = data.get("news")
    return SitemapPage(
        url=data["url"],
        sitemap_url=data.get("sitemap_url") or "",
        priority=float(data.get("priority", 0.5)),
        last_modified=data.get("last_modified"),
        change_frequency=data.get("change_frequency"),
        news=NewsStory(**news) if isinstance(news, dict) else None,
        images=[Image(**image) for image in data.get("images") or ()],
        videos=[Video(**video) for video in data.get("videos") or ()],
        alternates=[Alternate(**alternate) for alternate in data.get("alternates") or ()],
    )


def replay_journal(state: LoaderState, handled_urls: Iterable[str]) -> int:
    """Apply the handled-pages journal written after ``state`` was saved; returns how many
    lines counted. A URL leaves in_progress, else url_queue; a URL in neither was queued
    (from the sitemap being read) and handled after the snapshot."""
    replayed = 0
    for url in handled_urls:
        if url in state.in_progress:
            state.in_progress.discard(url)
        elif url in state.url_queue:
            state.url_queue.remove(url)
        elif state.in_progress_sitemap_url is not None and url not in state.current_sitemap_processed_urls:
            state.current_sitemap_processed_urls.add(url)
            state.total_count += 1
        else:
            continue  # already counted in the snapshot
        state.handled_count += 1
        replayed += 1
    return replayed


def read_saved_state(directory: str | Path, state_name: str = DEFAULT_STATE_NAME) -> LoaderState | None:
    """The state a loader persisting in ``directory`` (JOBDIR) would resume from: the last
    snapshot with the journal of handled pages applied (``in_progress`` still holds the
    pages that were handed out and not handled). None when nothing was saved there."""
    loaded = _StateStore(directory, state_name).load()
    if loaded is None:
        return None
    data, _, journal = loaded
    state = LoaderState.from_dict(data)
    replay_journal(state, journal)
    return state


# -- fetching ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FetchedSitemap:
    """A downloaded sitemap: its URL after redirects and its whole body."""

    url: str
    body: bytes


class SitemapFetchError(Exception):
    """A sitemap could not be downloaded; ``reason`` is short ("HTTP 404", "timeout")."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


Fetch = Callable[[str], Awaitable[FetchedSitemap]]
"""Downloads one sitemap (following redirects); raises SitemapFetchError when it cannot."""


# -- persistence ------------------------------------------------------------------------


def _write_atomically(path: Path, data: bytes) -> None:
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


class _StateStore:
    """The loader's files in one directory (see the module docstring)."""

    def __init__(self, directory: str | Path, name: str) -> None:
        self.directory = Path(directory)
        self.state_path = self.directory / f"{name}.json"
        self.pages_path = self.directory / f"{name}.pages.json"
        self.journal_path = self.directory / f"{name}.handled"
        self._journal_fd: int | None = None

    def load(self) -> tuple[Any, dict[str, Any], list[str]] | None:
        """(state JSON, page items by URL, handled URLs of the journal), or None without a state."""
        if not self.state_path.exists():
            return None
        state = json.loads(self.state_path.read_text("utf-8"))
        pages: dict[str, Any] = {}
        with contextlib.suppress(OSError, ValueError):
            loaded = json.loads(self.pages_path.read_text("utf-8"))
            if isinstance(loaded, dict):
                pages = loaded
        journal: list[str] = []
        with contextlib.suppress(OSError):
            text = self.journal_path.read_bytes().decode("utf-8", "replace")
            # a line without its newline was cut by the kill: it does not count
            journal = [line for line in text.split("\n")[:-1] if line]
        return state, pages, journal

    def set_aside(self, reason: str) -> Path:
        """Move an unreadable state file out of the way (kept for inspection)."""
        target = self.state_path.with_name(f"{self.state_path.name}.unreadable-{int(time.time())}")
        os.replace(self.state_path, target)
        logger.error("Sitemap loader state %s is unreadable (%s); moved to %s", self.state_path, reason, target)
        return target

    def save(self, state: dict[str, Any], pages: dict[str, Any]) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        _write_atomically(self.pages_path, json.dumps(pages, ensure_ascii=False).encode("utf-8"))
        temporary = self.state_path.with_name(self.state_path.name + ".tmp")
        with temporary.open("wb") as handle:
            handle.write(json.dumps(state, ensure_ascii=False).encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        # Empty the journal before the rename: dying in between leaves the previous
        # snapshot and no journal, i.e. pages handled again, never pages lost.
        os.ftruncate(self._journal(), 0)
        os.replace(temporary, self.state_path)

    def _journal(self) -> int:
        if self._journal_fd is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._journal_fd = os.open(self.journal_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        return self._journal_fd

    def record_handled(self, url: str) -> None:
        os.write(self._journal(), url.encode("utf-8") + b"\n")

    def close(self) -> None:
        if self._journal_fd is not None:
            os.close(self._journal_fd)
            self._journal_fd = None


# -- the loader -------------------------------------------------------------------------


@dataclass(slots=True)
class _Entry:
    """A page waiting in url_queue; ``restored`` when it comes from a previous run."""

    page: SitemapPage
    restored: bool = False


def _compile(patterns: Iterable[PatternLike] | PatternLike | None) -> list[re.Pattern[str]] | None:
    if patterns is None:
        return None
    if isinstance(patterns, str | re.Pattern):
        patterns = [patterns]
    return [re.compile(p) if isinstance(p, str) else p for p in patterns]


class SitemapRequestLoader:
    """Hands out the page URLs of a site's sitemaps, a bounded number at a time, resumably.

    Sources: ``sitemap_urls`` (sitemaps or robots.txt URLs) and/or ``homepage``
    (robots.txt, then the well-known paths not already read). ``fetch`` downloads
    one sitemap. Page URLs must match one of ``include`` (if given) and none of
    ``exclude``; sub-sitemaps of an index must match one of ``follow`` (if given)
    and none of ``deny`` (robots.txt ``Sitemap:`` lines are always read).
    ``page_filter`` / ``sitemap_filter`` see each sitemap's entries first and may
    drop, change or add some. Indexes nested deeper than ``max_depth`` levels below a
    start URL, robots.txt or known path are not read (an endless chain of indexes ends
    there). A sitemap URL is read once per crawl; a page URL is
    queued once per sitemap.
    """

    def __init__(
        self,
        sitemap_urls: Iterable[str] = (),
        *,
        fetch: Fetch,
        homepage: str | None = None,
        use_robots: bool = True,
        use_known_paths: bool = True,
        known_paths: Sequence[str] | None = None,
        include: Iterable[PatternLike] | PatternLike | None = None,
        exclude: Iterable[PatternLike] | PatternLike | None = None,
        follow: Iterable[PatternLike] | PatternLike | None = None,
        deny: Iterable[PatternLike] | PatternLike | None = None,
        page_filter: PageFilter | None = None,
        sitemap_filter: SitemapFilter | None = None,
        max_buffer_size: int = DEFAULT_QUEUE_SIZE,
        limits: Limits = DEFAULT_LIMITS,
        max_depth: int = DEFAULT_MAX_DEPTH,
        persist_dir: str | Path | None = None,
        state_name: str = DEFAULT_STATE_NAME,
        save_interval: float = DEFAULT_SAVE_INTERVAL,
        log_interval: float = DEFAULT_LOG_INTERVAL,
    ) -> None:
        if max_buffer_size < 1:
            raise ValueError("max_buffer_size must be at least 1")
        from sitemap_crawl.config import DEFAULT_KNOWN_PATHS

        self._fetch = fetch
        self.start_urls: list[str] = list(dict.fromkeys(str(url).strip() for url in sitemap_urls if str(url).strip()))
        self.homepage = homepage
        self.use_robots = use_robots
        self.known_urls: list[str] = (
            known_path_urls(homepage, DEFAULT_KNOWN_PATHS if known_paths is None else known_paths)
            if homepage and use_known_paths
            else []
        )
        self._known_set = frozenset(self.known_urls)
        self._include = _compile(include)
        self._exclude = _compile(exclude)
        self._follow = _compile(follow)
        self._deny = _compile(deny)
        self._page_filter = page_filter
        self._sitemap_filter = sitemap_filter
        self.max_buffer_size = max_buffer_size
        self._low_water = max_buffer_size // 2
        self.limits = limits
        self.max_depth = max_depth
        self.save_interval = save_interval
        self.log_interval = log_interval
        self._store = _StateStore(persist_dir, state_name) if persist_dir else None

        # the state
        self._pending: deque[str] = deque()
        self._pending_set: set[str] = set()
        # nesting level of the pending sitemaps that an index declared (in memory only: after a
        # restart, the restored ones count as level 0); start URLs, robots.txt, known paths: 0
        self._depths: dict[str, int] = {}
        self._current: str | None = None
        # sets kept as insertion-ordered dicts, so that the saved lists are in a useful order
        self._processed: dict[str, None] = {}
        self._current_processed: dict[str, None] = {}
        self._queue: deque[_Entry] = deque()
        self._in_progress: dict[str, int] = {}  # URL -> times handed out and not handled
        self._in_progress_pages: dict[str, SitemapPage] = {}
        self._in_progress_total = 0
        self._handled = 0
        self._total = 0
        self._completed = False

        # running
        self._opened = False
        self._closed = False
        self._known_added = False
        self._current_restored = False
        self._producer: asyncio.Task[None] | None = None
        self._producer_done = False
        self._ready = asyncio.Event()  # url_queue has a page, or the producer is done
        self._room = asyncio.Event()  # url_queue has room again
        self._handled_event = asyncio.Event()  # a page was handled
        self._last_save = 0.0
        self._last_log = time.monotonic()
        self._sitemaps_read = 0
        self._scrapy: _ScrapyBinding | None = None

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
        return LoaderState(
            pending_sitemap_urls=deque(self._pending),
            in_progress_sitemap_url=self._current,
            processed_sitemap_urls=set(self._processed),
            current_sitemap_processed_urls=set(self._current_processed),
            url_queue=deque(entry.page.url for entry in self._queue),
            in_progress=set(self._in_progress),
            handled_count=self._handled,
            total_count=self._total,
            completed=self._completed,
        )

    def progress(self) -> str:
        """One line: sitemaps done/pending, pages queued/handled."""
        current = 1 if self._current is not None else 0
        return (
            f"sitemaps: {len(self._processed)} done, {current} in progress, {len(self._pending)} pending; "
            f"pages: {self._total} queued, {self._handled} handled, {self._in_progress_total} in progress, "
            f"{len(self._queue)} waiting"
        )

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
        urls = list(self.start_urls)
        if self.homepage and self.use_robots:
            urls.append(robots_txt_url(self.homepage))
        for url in urls:
            self._add_pending(url)
        if not urls and not self.known_urls:
            logger.warning("Sitemap loader: no sitemap URL and no homepage; nothing to crawl")

    def _reset(self) -> None:
        self._pending.clear()
        self._pending_set.clear()
        self._current = None
        self._processed.clear()
        self._current_processed.clear()
        self._queue.clear()
        self._handled = self._total = 0
        self._completed = False

    def _restore(self, data: Any, pages: dict[str, Any], journal: list[str]) -> None:
        state = LoaderState.from_dict(data)
        before = set(state.in_progress)
        replayed = replay_journal(state, journal)
        for url in state.pending_sitemap_urls:
            self._add_pending(url)
        self._current = state.in_progress_sitemap_url
        self._processed = dict.fromkeys(state.processed_sitemap_urls)
        self._current_processed = dict.fromkeys(state.current_sitemap_processed_urls)
        self._handled = state.handled_count
        self._total = state.total_count
        self._completed = state.completed
        queue = list(state.url_queue)
        in_progress = state.in_progress
        # what was handed out and not handled goes back to the front of url_queue
        retried = [url for url in before if url in in_progress]
        for url in [*retried, *queue]:
            self._queue.append(_Entry(self._restored_page(url, pages), restored=True))
        expected_total = self._handled + len(self._queue)
        if self._total != expected_total:
            logger.debug("Sitemap loader: total_count %d adjusted to %d", self._total, expected_total)
            self._total = expected_total
        self._current_restored = self._current is not None
        assert self._store is not None
        logger.info(
            "Resuming the sitemap crawl saved in %s: %d pages handled (%d from the journal), "
            "%d handed out again, %d waiting, %s",
            self._store.state_path,
            self._handled,
            replayed,
            len(retried),
            len(queue),
            f"re-reading {self._current}" if self._current else "no sitemap being read",
        )
        if self._completed and not self._queue:
            logger.info("The sitemap crawl saved in %s is complete; nothing left to do", self._store.state_path)

    def _restored_page(self, url: str, pages: dict[str, Any]) -> SitemapPage:
        data = pages.get(url)
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
        entry = await self._next_entry()
        return None if entry is None else entry.page

    async def _next_entry(self) -> _Entry | None:
        self._ensure_running()
        while not self._queue:
            if self._producer_done:
                return None
            self._ready.clear()
            await self._ready.wait()
        entry = self._queue.popleft()
        if len(self._queue) <= self._low_water:
            self._room.set()
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
        self._in_progress_total -= 1
        self._handled += 1
        if self._store is not None:
            self._store.record_handled(url)
        self._handled_event.set()
        self._maybe_save()
        self._log_progress()
        return True

    async def wait_for_room(self, max_in_progress: int) -> None:
        """Wait until fewer than ``max_in_progress`` pages are in progress."""
        while self._in_progress_total >= max_in_progress:
            self._handled_event.clear()
            await self._handled_event.wait()

    # -- reading sitemaps --------------------------------------------------------------

    def _role(self, url: str) -> str:
        if is_robots_txt(url):
            return ROBOTS
        if url in self._known_set:
            return KNOWN
        return DECLARED

    def _add_pending(self, url: str) -> bool:
        if url in self._processed or url in self._pending_set or url == self._current:
            return False
        self._pending.append(url)
        self._pending_set.add(url)
        return True

    def _next_sitemap(self) -> str | None:
        while True:
            while self._pending:
                url = self._pending.popleft()
                self._pending_set.discard(url)
                if url not in self._processed:
                    return url
            if self.known_urls and not self._known_added:
                self._known_added = True
                for url in self.known_urls:
                    self._add_pending(url)
                continue
            return None

    async def _produce(self) -> None:
        try:
            while True:
                if self._current is None:
                    url = self._next_sitemap()
                    if url is None:
                        break
                    self._current = url
                    self._current_processed = {}
                    self._current_restored = False
                    self._save()
                try:
                    await self._read_sitemap(self._current)
                except asyncio.CancelledError:
                    raise
                except Exception:  # e.g. a failing filter: the other sitemaps are still read
                    logger.exception(
                        "Error while reading the sitemap %s; its remaining entries are skipped", self._current
                    )
                self._processed[self._current] = None
                self._depths.pop(self._current, None)
                self._current = None
                self._current_processed = {}
                self._current_restored = False
                self._sitemaps_read += 1
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

    async def _read_sitemap(self, url: str) -> None:
        role = self._role(url)
        try:
            fetched = await self._fetch(url)
        except SitemapFetchError as exc:
            self._log_unusable(url, role, exc.reason)
            return
        final_url = fetched.url or url
        if final_url != url:
            if final_url in self._processed:
                logger.debug("Sitemap %s redirects to %s, already read", url, final_url)
                return
            self._processed[final_url] = None
        reader = SitemapReader(fetched.body, final_url, is_robots=role == ROBOTS, limits=self.limits)
        if reader.kind == INVALID:
            self._log_unusable(url, role, f"{reader.error} ({reader.detail})")
            return
        if reader.kind in (ROBOTS_TXT, XML_INDEX):
            self._read_index(url, reader, role)
            found = 0
        else:
            found = await self._read_pages(url, final_url, reader)
        if reader.error:
            level = logging.WARNING if role == DECLARED else logging.DEBUG
            logger.log(level, "Sitemap %s: %s (%s)", url, reader.error, reader.detail)
        if reader.kind not in (ROBOTS_TXT, XML_INDEX):
            logger.info("Sitemap %s read: %d pages queued (%s)", url, found, self.progress())

    def _log_unusable(self, url: str, role: str, reason: str) -> None:
        if role == KNOWN:
            logger.debug("Known path %s is not a sitemap: %s", url, reason)
        elif role == ROBOTS:
            logger.info("robots.txt %s unavailable: %s", url, reason)
        else:
            logger.warning("Sitemap %s unusable: %s", url, reason)

    def _read_index(self, url: str, reader: SitemapReader, role: str) -> None:
        refs = (entry for entry in reader if isinstance(entry, SitemapRef))
        depth = self._depths.get(url, 0) + 1
        if depth > self.max_depth:
            logger.warning(
                "Sitemap %s: its sub-sitemaps are nested deeper than %d levels (depth limit); not read",
                url,
                self.max_depth,
            )
            return
        if role == ROBOTS:
            for ref in refs:
                self._add_child(ref.url, depth)
            return
        chosen: Iterable[SitemapRef | str] = self._sitemap_filter(refs, url) if self._sitemap_filter else refs
        for chosen_ref in chosen:
            child = chosen_ref if isinstance(chosen_ref, str) else chosen_ref.url
            if self._follow is not None and not any(p.search(child) for p in self._follow):
                logger.debug("Sub-sitemap %s does not match follow; not read", child)
                continue
            if self._deny is not None and any(p.search(child) for p in self._deny):
                logger.debug("Sub-sitemap %s matches deny; not read", child)
                continue
            self._add_child(child, depth)

    def _add_child(self, url: str, depth: int) -> None:
        if self._add_pending(url):
            self._depths[url] = depth

    async def _read_pages(self, url: str, final_url: str, reader: SitemapReader) -> int:
        def pages() -> Iterator[SitemapPage]:
            for entry in reader:
                if isinstance(entry, SitemapPage):
                    if final_url != url:
                        entry.sitemap_url = url
                    yield entry

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
            self._queue.append(_Entry(page, self._current_restored))
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
        state = {
            "pending_sitemap_urls": list(self._pending),
            "in_progress_sitemap_url": self._current,
            "processed_sitemap_urls": list(self._processed),
            "current_sitemap_processed_urls": list(self._current_processed),
            "url_queue": [entry.page.url for entry in self._queue],
            "in_progress": list(self._in_progress),
            "handled_count": self._handled,
            "total_count": self._total,
            "completed": self._completed,
        }
        pages = {url: page.to_dict() for url, page in self._in_progress_pages.items()}
        for entry in self._queue:
            pages.setdefault(entry.page.url, entry.page.to_dict())
        try:
            self._store.save(state, pages)
        except OSError as exc:
            logger.error("Could not save the sitemap loader state in %s: %s", self._store.directory, exc)

    def _log_progress(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._last_log >= self.log_interval:
            self._last_log = now
            logger.info("Sitemap crawl progress: %s", self.progress())

    # -- Scrapy ------------------------------------------------------------------------

    @classmethod
    def from_crawler(cls, crawler: Crawler, sitemap_urls: Iterable[str] = (), **kwargs: Any) -> SitemapRequestLoader:
        """A loader that downloads sitemaps through Scrapy's downloader (and its middlewares),
        persists in JOBDIR, reads its defaults from the settings and tracks the page requests
        made by :meth:`requests` until they are handled."""
        from scrapy.utils.job import job_dir

        from sitemap_crawl.config import SettingsReader

        settings = crawler.settings
        config = SettingsReader(settings)
        kwargs.setdefault("limits", config.limits)
        kwargs.setdefault("max_depth", config.max_depth)
        kwargs.setdefault("known_paths", config.known_paths)
        kwargs.setdefault("max_buffer_size", settings.getint(QUEUE_SIZE_SETTING, DEFAULT_QUEUE_SIZE))
        kwargs.setdefault("save_interval", settings.getfloat(SAVE_INTERVAL_SETTING, DEFAULT_SAVE_INTERVAL))
        kwargs.setdefault(
            "log_interval",
            settings.getfloat(LOG_INTERVAL_SETTING, settings.getfloat("LOGSTATS_INTERVAL", DEFAULT_LOG_INTERVAL)),
        )
        if "persist_dir" not in kwargs:
            kwargs["persist_dir"] = job_dir(settings)
        scheduler = settings.get("SCHEDULER")
        scheduler_path = scheduler if isinstance(scheduler, str) else f"{scheduler.__module__}.{scheduler.__qualname__}"
        if kwargs["persist_dir"] and scheduler_path != SCHEDULER_PATH:
            logger.info(
                "With JOBDIR, set SCHEDULER = %r so that page requests skip Scrapy's disk queue "
                "(SCHEDULER is %r: they are kept in memory anyway, at a cost per request)",
                SCHEDULER_PATH,
                scheduler_path,
            )
        max_size = kwargs["limits"].max_size
        download_maxsize = settings.getint("DOWNLOAD_MAXSIZE")
        if download_maxsize:
            max_size = min(max_size, download_maxsize)
        kwargs.setdefault("fetch", ScrapySitemapFetcher(crawler, max_size))
        loader = cls(sitemap_urls, **kwargs)
        default_in_flight = max(16, 2 * settings.getint("CONCURRENT_REQUESTS"))
        max_in_flight = max(1, settings.getint(MAX_IN_FLIGHT_SETTING, default_in_flight))
        loader._scrapy = _ScrapyBinding(loader, crawler, max_in_flight)
        return loader

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
                await self.wait_for_room(binding.max_in_flight)
            finally:
                binding.waiting_for_room = False
            entry = await self._next_entry()
            if entry is None:
                return
            request = make_request(entry.page) if make_request is not None else Request(entry.page.url)
            if request is None:
                self.mark_handled(entry.page.url)
                continue
            request, token = binding.instrument(request, entry)
            yield request
            binding.after_start_yield(token)


# -- Scrapy glue --------------------------------------------------------------------------

SCHEDULER_PATH = "sitemap_crawl.loader.SitemapLoaderScheduler"
DEFAULT_SCHEDULER_PATH = "scrapy.core.scheduler.Scheduler"


class SitemapLoaderScheduler(Scheduler):
    """Scrapy's scheduler, except that the page requests of a SitemapRequestLoader always
    stay in memory, never in JOBDIR's ``requests.queue``: the loader's own state persists
    them (and resumes them after a kill -9, which Scrapy's disk queue does not survive).
    There are at most SITEMAP_CRAWL_LOADER_MAX_IN_FLIGHT of them. Every other request
    is scheduled exactly as by Scrapy's scheduler. SitemapSpider uses it unless the
    project has its own SCHEDULER."""

    def _dqpush(self, request: Any) -> bool:
        if TOKEN_META_KEY in request.meta:
            return False  # straight to the memory queue
        return bool(super()._dqpush(request))


class ScrapySitemapFetcher:
    """Downloads a sitemap with ``engine.download_async``: through the downloader middlewares
    (retry, redirect, decompression, robots.txt...), never through the scheduler, the
    duplicate filter or JOBDIR's request queue."""

    def __init__(self, crawler: Crawler, max_size: int) -> None:
        self.crawler = crawler
        self.max_size = max_size

    def _closing(self) -> bool:
        engine = self.crawler.engine
        if engine is None or not engine.running or engine.spider is None:
            return True
        slot = getattr(engine, "_slot", None)
        return slot is None or getattr(slot, "closing", None) is not None

    async def __call__(self, url: str) -> FetchedSitemap:
        from scrapy import Request
        from scrapy.http.request import NO_CALLBACK

        from sitemap_crawl.failures import failure_reason

        if self._closing():
            raise asyncio.CancelledError  # the crawl is ending: leave this sitemap for the next run
        engine = self.crawler.engine
        assert engine is not None
        request = Request(
            url,
            callback=NO_CALLBACK,
            dont_filter=True,
            meta={"download_maxsize": self.max_size, "download_warnsize": self.max_size, SITEMAP_META_KEY: True},
        )
        try:
            response = await engine.download_async(request)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if self._closing():
                raise asyncio.CancelledError from exc
            raise SitemapFetchError(failure_reason(exc)) from exc
        if not 200 <= response.status < 300:
            raise SitemapFetchError(f"HTTP {response.status}")
        return FetchedSitemap(response.url, response.body)


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

    def __init__(self, binding: _ScrapyBinding, callback: Callable[..., Any] | None) -> None:
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

    def __init__(self, binding: _ScrapyBinding, errback: Callable[..., Any] | None) -> None:
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


class _ScrapyBinding:
    """Connects a loader to a crawler: page requests are tracked by a token in their meta
    until their callback output is processed, their errback runs, or they are dropped."""

    def __init__(self, loader: SitemapRequestLoader, crawler: Crawler, max_in_flight: int) -> None:
        from scrapy import signals

        self.loader = loader
        self.crawler = crawler
        self.max_in_flight = max_in_flight
        self.waiting_for_room = False
        self._tokens: dict[int, str] = {}
        self._records: dict[int, _OutputRecord] = {}
        self._wrappers: dict[tuple[type, Any], Any] = {}
        self._counter = itertools.count(1)
        self._awaiting_schedule: int | None = None
        self._schedule_seen = False
        self._quiet_since: tuple[float, frozenset[int]] | None = None
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

    def instrument(self, request: Request, entry: _Entry) -> tuple[Request, int]:
        """Make ``request`` (freshly built for this page) report back: wrapped callback and
        errback, the page item and the token in meta. Changed in place (no copy per page)."""
        token = next(self._counter)
        self._tokens[token] = entry.page.url
        meta = request.meta
        meta.setdefault(PAGE_META_KEY, entry.page)
        meta[TOKEN_META_KEY] = token
        request.callback = self._wrap(request.callback, _TrackedCallback)
        request.errback = self._wrap(request.errback, _TrackedErrback)
        if entry.restored:
            request.dont_filter = True
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
        if url is not None:
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
                yield value
            return
        record = self._records[token] = _OutputRecord(source)
        try:
            async for value in _iterate_output(output):
                if value is not None and not isinstance(value, Request):
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
        if record is not None and record.source is response:
            record.finished += 1
            self._check(token, record)

    def _request_dropped(self, request: Request, **kwargs: Any) -> None:
        if isinstance(request.callback, _TrackedCallback):
            self.finish(request.meta.get(TOKEN_META_KEY))

    def _request_scheduled(self, request: Request, **kwargs: Any) -> None:
        if self._awaiting_schedule is not None and request.meta.get(TOKEN_META_KEY) == self._awaiting_schedule:
            self._schedule_seen = True

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
            stats.set_value("sitemap_crawl/loader/pages_queued", loader.total_count)
            stats.set_value("sitemap_crawl/loader/pages_handled", loader.handled_count)
            stats.set_value("sitemap_crawl/loader/pages_pending", loader.pending_count)
            stats.set_value("sitemap_crawl/loader/sitemaps_read", len(loader._processed))
            stats.set_value("sitemap_crawl/loader/completed", loader.completed)
            if self.written_off:
                stats.set_value("sitemap_crawl/loader/pages_written_off", self.written_off)
