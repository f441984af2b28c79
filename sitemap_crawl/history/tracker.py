"""The spider's side of SITEMAP_CRAWL_HISTORY.

Per sitemap: the stored validators go on the request (``If-None-Match`` /
``If-Modified-Since``); a 304, or a body with the stored hash, means unchanged (no parse,
no export; an index's children are the stored list of every child it lists, put through
this run's follow / deny / since, each followed one checked with its own validators); a
changed sitemap's pages are diffed against the stored ones and only the differences
leave, as :class:`SitemapPage` rows. The sitemap's new state is
committed only once its last row has been written to the feeds (``item_scraped`` of that
row, the feed files flushed), so a run killed halfway leaves a history the next run
trusts, and each change is exported at least once (twice when the kill came after some
of the sitemap's rows reached the feed and before its state was committed). In a queue
run it is staged then, and
written once the server acknowledged the site's attempt (``site_acknowledged``): an
attempt that is not acknowledged (a crash, a site another worker took over) leaves the
history as it was, and the attempt that maps the site again exports the same changes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import logging
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import orjson
from scrapy.crawler import Crawler
from scrapy.http import Response

from sitemap_crawl.codec import page_from_dict
from sitemap_crawl.feed_files import flush_feed_files
from sitemap_crawl.history.conditional import asked_conditionally
from sitemap_crawl.history.diff import REMOVED, diff_pages
from sitemap_crawl.history.store import HistoryStore, SitemapState
from sitemap_crawl.items import SitemapPage, SitemapRef
from sitemap_crawl.names import HISTORY_STATS_PREFIX
from sitemap_crawl.parsing.fields import same_url_key
from sitemap_crawl.signals import site_acknowledged

logger = logging.getLogger(__name__)

NOT_MODIFIED = 304
UNCHANGED = "unchanged"
CHANGED = "changed"
"""A history run's tree: what became of each sitemap read."""


def body_hash(body: bytes) -> str:
    """The hash of a sitemap body (as downloaded, after any Content-Encoding)."""
    return hashlib.blake2b(body, digest_size=16).hexdigest()


def _record_hash(record: bytes) -> str:
    return hashlib.blake2b(record, digest_size=8).hexdigest()


def _changed(page: SitemapPage, change: str, attempt: str | None) -> SitemapPage:
    return dataclasses.replace(page, change=change, attempt=attempt)


def _removed(record: bytes, site: str, attempt: str | None) -> SitemapPage:
    """The row of a page gone from ``site``'s sitemap, from its stored record (which names no
    website: one sitemap may be listed by several sites of a run)."""
    return dataclasses.replace(page_from_dict(orjson.loads(record)), website=site, change=REMOVED, attempt=attempt)


def page_record(page: SitemapPage) -> bytes:
    """What the history stores of a page, and hashes to tell it modified: the page without the
    website that listed it (a sitemap several sites list holds one record a page) nor a
    queue run's attempt (the rows get those), its sitemap's URL in one spelling
    (:func:`same_url_key`: an index that writes ``caf%C3%A9.xml`` where it wrote ``café.xml``
    lists the same sitemap, whose pages are not modified by it)."""
    website, attempt, sitemap_url = page.website, page.attempt, page.sitemap_url
    page.website = page.attempt = None
    page.sitemap_url = same_url_key(sitemap_url)
    try:
        return orjson.dumps(page)
    finally:
        page.website, page.attempt, page.sitemap_url = website, attempt, sitemap_url


@dataclass(slots=True)
class SitemapChanges:
    """One changed sitemap being read: its pages (url -> hash, record), its children."""

    url: str
    site: str
    """The website it belongs to (a queue run commits a site's sitemaps together)."""
    before: SitemapState | None
    after: SitemapState
    attempt: str | None = None
    """A queue run's attempt at the site: every row gets it (removed ones too); the stored
    records never hold one, so a page is not ``modified`` because the attempt is new."""
    pages: dict[str, tuple[str, bytes, SitemapPage]] = field(default_factory=dict)
    rows: int = 0
    """The rows it exported (counted by :meth:`rows_exported`, after ``since``): the tree's
    ``changes``, which ``sitemaps-collect`` counts on."""
    unwritten: int = 0
    """Its rows given to Scrapy and not yet written to the feeds."""
    all_given: bool = False
    """Whether every row has been given to Scrapy."""
    to_commit: list[tuple[str, str, bytes]] | None = None
    """The pages the history will hold for it, once its rows are written (set by ``rows``)."""
    listed: set[str] = field(default_factory=set)
    """The URL of every sub-sitemap it lists, followed or not (an index, robots.txt)."""
    dropped: list[str] = field(default_factory=list)
    """The sub-sitemaps its stored state lists and this reading does not (set by ``rows``):
    whether they are gone is known at the site's end (:meth:`HistoryTracker.dropped_rows`)."""
    forget: list[str] = field(default_factory=list)
    """The sitemaps it dropped that are gone, with the gone ones below them: their pages were
    exported removed, and they leave the history with its new state (set by ``dropped_rows``)."""

    def add_page(self, page: SitemapPage) -> None:
        """A page it lists (without ``attempt``: :meth:`HistoryTracker.rows` gives it)."""
        if page.url not in self.pages:
            record = page_record(page)
            self.pages[page.url] = (_record_hash(record), record, page)

    def rows_exported(self, rows: list[SitemapPage]) -> list[SitemapPage]:
        """``rows`` are (more of) what it exports (``since`` left some out): counted, and returned."""
        self.rows += len(rows)
        return rows

    def add_listed(self, ref: SitemapRef) -> None:
        """A sub-sitemap it lists, whether this run follows it or not (all are stored)."""
        self.listed.add(same_url_key(ref.url))
        self.after.children.append(ref)


class HistoryTracker:
    """Validators, unchanged / changed decisions and commits, for the ``sitemaps`` spider."""

    def __init__(self, crawler: Crawler, store: HistoryStore, conditional: bool = True, per_site: bool = False) -> None:
        self.crawler = crawler
        self.store = store
        self.conditional = conditional
        """Whether requests carry the stored validators (off when the audit needs every body:
        an unchanged sitemap is then told by its body's hash)."""
        self.per_site = per_site
        """A queue run: a sitemap's new state is staged, and written once its site is
        acknowledged (``site_acknowledged``)."""
        self._closed = False
        self._states: dict[str, SitemapState | None] = {}
        """The stored state of each sitemap in flight (read before its request was sent)."""
        self._read: set[str] = set()
        """The sitemap URLs asked for in this run (a sitemap one parent drops may be read
        through another place: it is not removed)."""
        self._listed: set[str] = set()
        """Every sub-sitemap URL that a sitemap read in this run lists (read, or unchanged and
        replayed), followed or not: a sitemap one parent drops and another lists is not removed."""
        self._listings_read: set[str] = set()
        """The sitemaps whose whole listing this run read (unchanged, or changed and read to
        the end): what the history held of their children is superseded by ``_listed``."""
        self._in_flight: Counter[str] = Counter()
        """Requests in flight for each sitemap URL (one URL declared in two indexes is fetched
        for each place): its state is let go when the last one ends."""
        self._commits: dict[int, tuple[Any, SitemapChanges]] = {}
        """id(item given to Scrapy) -> (that item, the changed sitemap whose rows it holds)."""

    def connect(self) -> None:
        """Listen for rows written to the feeds (after the feed exporters: connected later)."""
        from scrapy import signals

        self.crawler.signals.connect(self._item_written, signal=signals.item_scraped)
        self.crawler.signals.connect(self._item_written, signal=signals.item_dropped)
        if self.per_site:
            self.crawler.signals.connect(self._site_acknowledged, signal=site_acknowledged)

    def _inc(self, what: str, count: int = 1) -> None:
        if count:
            self.crawler.stats.inc_value(f"{HISTORY_STATS_PREFIX}/{what}", count)

    def exported(self, changes: SitemapChanges, rows: list[SitemapPage]) -> None:
        """``rows`` of ``changes`` go to the feeds (those ``since`` kept): counted on its tree
        node and, by change, in the stats."""
        changes.rows_exported(rows)
        for change, count in Counter(row.change for row in rows).items():
            self._inc(str(change), count)

    async def request_validators(self, url: str) -> tuple[str, dict[str, str]] | None:
        """Read a sitemap's stored state; the conditional headers its request carries, with the
        URL they are for (:mod:`~sitemap_crawl.history.conditional`), or None."""
        url = same_url_key(url)
        self._in_flight[url] += 1  # (counted first: forget() is called however this ends)
        self._read.add(url)
        state = await self.store.state(url)
        self._states[url] = state
        headers: dict[str, str] = {}
        if self.conditional and state is not None and state.body_hash is not None:
            if state.etag:
                headers["If-None-Match"] = state.etag
            if state.last_modified:
                headers["If-Modified-Since"] = state.last_modified
        if not headers:
            return None
        assert state is not None
        return state.validated_url or url, headers

    def forget(self, url: str) -> None:
        """A request for the sitemap ended (read, failed, or left out after a redirect): the
        state read for it is dropped with the last request for that URL."""
        url = same_url_key(url)
        self._in_flight[url] -= 1
        if self._in_flight[url] <= 0:
            del self._in_flight[url]
            self._states.pop(url, None)

    def unchanged(self, url: str, response: Response) -> SitemapState | None:
        """The stored state when the response says the sitemap did not change (304, or the
        stored body hash), else None."""
        state = self._states.get(same_url_key(url))
        if state is None or state.body_hash is None:
            return None
        if response.status == NOT_MODIFIED:
            if not asked_conditionally(response.request):
                return None  # (a 304 to a request with no validators says nothing: an HTTP error)
            self._inc("not_modified")
            self._inc("unchanged")
            return state
        digest = body_hash(response.body)
        if digest == state.body_hash:
            self._inc("unchanged")
            validators = (*_validators(response), _validated_url(state.url, response))
            if validators != (state.etag, state.last_modified, state.validated_url):
                state.etag, state.last_modified, state.validated_url = validators
                self._submit(self.store.commit(state, None))
            return state
        return None

    def start(self, url: str, site: str, kind: str, response: Response, attempt: str | None = None) -> SitemapChanges:
        """A changed (or new) sitemap of ``site``: collect what it lists (dropped, uncounted,
        if it fails); ``attempt``: a queue run's attempt at the site, which its rows carry."""
        url = same_url_key(url)
        before = self._states.get(url)
        etag, modified = _validators(response)
        after = SitemapState(
            url, kind, etag, modified, body_hash(response.body), validated_url=_validated_url(url, response)
        )
        return SitemapChanges(url, site, before, after, attempt)

    async def rows(self, changes: SitemapChanges, partial: bool) -> list[SitemapPage]:
        """The rows of a changed sitemap, read (not one that failed: its state stays): its
        added and modified pages in the order it lists them, then its removed pages. With
        ``partial`` (a body read only in part) no page is removed, and the next run reads it
        again. The sub-sitemaps it no longer lists are ``changes.dropped``:
        :meth:`dropped_rows` decides at the site's end."""
        self._inc(CHANGED)
        self._listed.update(changes.listed)
        stored = await self.store.pages(changes.url)  # as this run found them, for each place of the sitemap
        current = changes.pages
        diff = diff_pages(
            {url: digest for url, (digest, _record) in stored.items()},
            {url: digest for url, (digest, _record, _page) in current.items()},
            with_removed=not partial,
        )
        attempt = changes.attempt
        rows = [_changed(current[url][2], change, attempt) for url, change in diff.listed]  # (document order)
        rows += [_removed(stored[url][1], changes.site, attempt) for url in diff.removed]
        if not partial:
            self._listings_read.add(changes.url)
            if changes.before is not None:
                stored_children = dict.fromkeys(same_url_key(child.url) for child in changes.before.children)
                changes.dropped = [url for url in stored_children if url not in changes.listed]
        after = changes.after
        after.page_count = len(current)
        pages = [(url, digest, record) for url, (digest, record, _page) in current.items()]
        if partial:
            after.etag = after.last_modified = after.body_hash = None
            pages += [(url, digest, record) for url, (digest, record) in stored.items() if url not in current]
            if changes.before is not None:  # (an index: the children past the break are kept too)
                after.children += [
                    child for child in changes.before.children if same_url_key(child.url) not in changes.listed
                ]
        changes.to_commit = pages
        changes.pages.clear()  # the rows hold what is exported
        return rows

    async def dropped_rows(
        self, dropping: list[SitemapChanges], still_read: Callable[[str], bool]
    ) -> list[list[SitemapPage]]:
        """Every sitemap of the site has been read: which of the sitemaps the changed ones
        ``dropping`` no longer list are gone. One is gone when no sitemap read in this run
        lists it, this run did not read it (nor will: ``still_read``, a well-known path), and
        every sitemap that listed it when the run started lists it no more or is gone too;
        decided once the site's listings are all known, so the order the sitemaps were read
        in does not matter. For each of ``dropping``, the removed rows of the gone sitemaps it
        dropped and of the gone ones below them (it forgets them with its new state)."""
        listers: dict[str, set[str]] = {}
        children: dict[str, list[str]] = {}
        gone: set[str] = set()

        async def consider(url: str) -> None:
            if url not in listers and url not in self._listed and url not in self._read and not still_read(url):
                listers[url] = await self.store.listers(url)

        for changes in dropping:
            for url in changes.dropped:
                await consider(url)
        settled = False
        while not settled:  # until nothing more is gone
            settled = True
            for url, listed_by in list(listers.items()):
                if url in gone or any(
                    lister != url and lister not in gone and lister not in self._listings_read for lister in listed_by
                ):
                    continue
                gone.add(url)
                settled = False
                state = await self.store.state(url)
                children[url] = [child.url for child in state.children] if state is not None else []
                for child in children[url]:
                    await consider(child)
        result = []
        for changes in dropping:
            rows: list[SitemapPage] = []
            below = changes.dropped[::-1]  # depth first, in the order they were listed
            while below:
                url = below.pop()
                if url not in gone or url in changes.forget:
                    continue
                changes.forget.append(url)
                for _digest, record in (await self.store.pages(url)).values():
                    rows.append(_removed(record, changes.site, changes.attempt))
                below += children[url][::-1]
            result.append(rows)
        return result

    def track(self, changes: SitemapChanges, item: Any) -> None:
        """``item`` (a row or a batch of rows of ``changes``) is about to be given to Scrapy."""
        changes.unwritten += 1
        self._commits[id(item)] = (item, changes)

    def finish(self, changes: SitemapChanges) -> None:
        """Every row of ``changes`` was given to Scrapy: commit once all are written (items of
        one callback may be written out of order, CONCURRENT_ITEMS at a time)."""
        changes.all_given = True
        if changes.unwritten == 0:
            self._commit(changes)

    def _item_written(self, item: Any, **_kwargs: Any) -> None:
        pending = self._commits.pop(id(item), None)
        if pending is None or pending[0] is not item:
            return
        changes = pending[1]
        changes.unwritten -= 1
        if changes.all_given and changes.unwritten == 0:
            # after every receiver of this signal (the feed exporters may come after this one)
            asyncio.get_running_loop().call_soon(self._commit, changes)

    def _commit(self, changes: SitemapChanges) -> None:
        if self._closed:
            return
        if self.per_site:  # written once the site is acknowledged (the worker syncs the feeds first)
            self._submit(self.store.stage(changes.site, changes.after, changes.to_commit, changes.forget))
        else:
            flush_feed_files(self.crawler)  # (a kill after this keeps the rows)
            self._submit(self.store.commit(changes.after, changes.to_commit, changes.forget))
        changes.to_commit = None

    def _site_acknowledged(self, site: str, acknowledged: bool, **_kwargs: Any) -> None:
        """A queue run: the server answered the site's acknowledgement. What was staged for it
        is written (acknowledged) or dropped (another attempt holds it: that one exports the
        changes)."""
        if not self._closed:
            self._submit(self.store.commit_site(site) if acknowledged else self.store.drop_site(site))

    @staticmethod
    def _submit(future: Future[None]) -> None:
        future.add_done_callback(_log_failure)

    async def close(self) -> None:
        """Wait for every commit queued (the sitemaps whose rows were not all written are
        not committed: the next run exports their changes)."""
        self._closed = True
        self._commits.clear()
        await self.store.close()

    def replay(self, state: SitemapState) -> list[SitemapRef]:
        """The children an unchanged sitemap lists, as stored: every one, followed last run or
        not (the spider puts them through this run's follow / deny / since)."""
        self._listings_read.add(state.url)
        self._listed.update(same_url_key(child.url) for child in state.children)
        return state.children


def _validators(response: Response) -> tuple[str | None, str | None]:
    etag = response.headers.get(b"ETag")
    modified = response.headers.get(b"Last-Modified")
    return (
        etag.decode("latin-1") if etag else None,
        modified.decode("latin-1") if modified else None,
    )


def _validated_url(url: str, response: Response) -> str | None:
    """The URL the response's validators are for (its own, after redirects), or None when it
    is the sitemap's ``url`` (a key)."""
    answered = same_url_key(response.url)
    return None if answered == url else answered


def _log_failure(future: Future[None]) -> None:
    error = future.exception()
    if error is not None:
        logger.error("Could not write the history: %s", error)
