"""The history file: SQLite (the standard library's), used on ONE worker thread of its own.

Every call goes to that thread and returns an awaitable, so the reactor never waits on
the disk. A sitemap's new state (validators, body hash, children, pages) replaces the
old one in one transaction: a run stopped at any moment leaves each sitemap either as
the last run saw it or as this run saw it.

A queue run *stages* the new states of a site's sitemaps (tables ``staged`` and
``staged_pages``) and writes them, in one transaction, once the site is acknowledged
(:meth:`HistoryStore.commit_site`); what a stopped run staged is dropped when the file is
opened next (the site is mapped again, and its changes exported again).

What the store reads is the history *as this run found it*: the first time a run replaces
(or forgets) a sitemap, its earlier state and pages are kept in temporary tables of the
connection (``before_run``, ``before_run_pages``; gone when the file is closed, or when the
process dies), so that each place of a sitemap listed twice is compared with the same
state, whichever place was committed first.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import sqlite3
import zlib
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from sitemap_crawl.items import SitemapRef
from sitemap_crawl.parsing.fields import same_url_key

T = TypeVar("T")

APP = "sitemap_crawl-history"
"""The application marker in the ``meta`` table: a file without it is not a history."""
VERSION = "1"
"""The schema version this code reads and writes (a file of another is refused: there is
no migration). Raise it when the layout of :data:`_HISTORY_TABLES` changes."""

LOCK_WAIT = 5.0
"""Seconds a statement waits for a lock another process holds on the file (SQLite's busy
timeout, as Python's default)."""

_HISTORY_TABLES = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS sitemaps (id INTEGER PRIMARY KEY, url TEXT NOT NULL UNIQUE, etag TEXT, "
    "last_modified TEXT, body_hash TEXT, kind TEXT NOT NULL, page_count INTEGER NOT NULL, children TEXT NOT NULL, "
    "validated_url TEXT)",
    "CREATE TABLE IF NOT EXISTS pages (sitemap_id INTEGER NOT NULL, url TEXT NOT NULL, hash TEXT NOT NULL, "
    "record BLOB NOT NULL, PRIMARY KEY (sitemap_id, url)) WITHOUT ROWID",
)
"""The tables that hold the history: an existing file must have each, with every column
(but those of :data:`_ADDED_COLUMNS`)."""
_ADDED_COLUMNS = {("sitemaps", "validated_url"): "ALTER TABLE sitemaps ADD COLUMN validated_url TEXT"}
"""Columns added after files of this version were written: added to such a file when it is
opened (NULL in its rows: what a NULL means is what those files meant)."""
_STAGING_TABLES = {
    "staged": "CREATE TABLE staged (id INTEGER PRIMARY KEY, site TEXT NOT NULL, state TEXT NOT NULL, "
    "has_pages INTEGER NOT NULL, forget TEXT NOT NULL)",
    "staged_pages": "CREATE TABLE staged_pages (staged_id INTEGER NOT NULL, url TEXT NOT NULL, "
    "hash TEXT NOT NULL, record BLOB NOT NULL, PRIMARY KEY (staged_id, url)) WITHOUT ROWID",
}
"""A queue run's staged states: what a stopped run left there is dropped, so these tables
are made afresh at every open (files written before they existed have none)."""


def _columns(db: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in db.execute("SELECT * FROM pragma_table_info(?)", (table,))]


@functools.cache
def _history_layout() -> dict[str, list[str]]:
    """Table -> its columns, as :data:`_HISTORY_TABLES` makes them."""
    db = sqlite3.connect(":memory:")
    try:
        for statement in _HISTORY_TABLES:
            db.execute(statement)
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {table: _columns(db, table) for table in tables}
    finally:
        db.close()


def _missing_layout(db: sqlite3.Connection) -> list[str]:
    """The tables and columns of the history's layout that ``db`` lacks ("table pages",
    "column sitemaps.id")."""
    missing = []
    for table, columns in _history_layout().items():
        present = set(_columns(db, table))
        if not present:
            missing.append(f"table {table}")
        else:
            missing += [
                f"column {table}.{column}"
                for column in columns
                if column not in present and (table, column) not in _ADDED_COLUMNS
            ]
    return missing


def _add_columns(db: sqlite3.Connection) -> None:
    """Add the :data:`_ADDED_COLUMNS` a file written before them lacks."""
    for (table, column), statement in _ADDED_COLUMNS.items():
        if column not in _columns(db, table):
            db.execute(statement)


_BEFORE_RUN_SCHEMA = (
    # kind NULL: the sitemap was not in the history; pages_kept: its pages were copied
    # (until then they are the ones in ``pages``: only its validators were replaced)
    "CREATE TEMP TABLE before_run (url TEXT PRIMARY KEY, kind TEXT, etag TEXT, last_modified TEXT, "
    "body_hash TEXT, page_count INTEGER, children TEXT, validated_url TEXT, pages_kept INTEGER NOT NULL)",
    "CREATE TEMP TABLE before_run_pages (sitemap TEXT NOT NULL, url TEXT NOT NULL, hash TEXT NOT NULL, "
    "record BLOB NOT NULL, PRIMARY KEY (sitemap, url)) WITHOUT ROWID",
)
"""The state and pages, as this run found them, of the sitemaps it replaced or forgot."""


class HistoryError(Exception):
    """The history file cannot be used (not SQLite, another program's, a newer version)."""


@dataclass(slots=True)
class SitemapState:
    """What the history holds of one sitemap, pages aside."""

    url: str
    """Its URL as the history keys it (:func:`~sitemap_crawl.parsing.fields.same_url_key`)."""
    kind: str
    etag: str | None = None
    last_modified: str | None = None
    body_hash: str | None = None
    page_count: int = 0
    children: list[SitemapRef] = field(default_factory=list)
    """Every sub-sitemap it lists (an index, robots.txt), with its lastmod, whether a run
    followed it or not: an unchanged sitemap's children go through each run's follow /
    deny / since as if its body had been read."""
    validated_url: str | None = None
    """The URL whose answer carried ``etag`` / ``last_modified`` when it is not ``url`` (the
    end of the redirects ``url`` answered with, keyed as ``url`` is): the validators are
    sent to that URL only, as they say nothing of another one."""


def children_json(children: list[SitemapRef]) -> str:
    """The ``children`` column: a URL, or [URL, lastmod] for a child listed with a lastmod."""
    return json.dumps([ref.url if ref.last_modified is None else [ref.url, ref.last_modified] for ref in children])


def children_from_json(text: str) -> list[SitemapRef]:
    """The children a ``children`` column holds (files of earlier versions hold URLs only)."""
    return [SitemapRef(item) if isinstance(item, str) else SitemapRef(item[0], item[1]) for item in json.loads(text)]


def _state_json(state: SitemapState) -> str:
    fields = (state.url, state.kind, state.etag, state.last_modified, state.body_hash, state.page_count)
    return json.dumps([*fields, children_json(state.children), state.validated_url])


def _state_from_json(text: str) -> SitemapState:
    url, kind, etag, last_modified, body_hash, page_count, children, validated_url = json.loads(text)
    return SitemapState(
        url, kind, etag, last_modified, body_hash, page_count, children_from_json(children), validated_url
    )


StoredPages = dict[str, tuple[str, bytes]]
"""Page URL -> (record hash, record JSON) of one sitemap (the file holds the JSON
compressed: compressed and decompressed on the store's thread, off the reactor's)."""


def _key_sitemap_urls(db: sqlite3.Connection) -> None:
    """Key the sitemaps of a file written before they were keyed by :func:`same_url_key` (the
    crawl's one URL for ``café.xml`` and ``caf%C3%A9.xml``), so that they are found again. A
    sitemap stored under both spellings keeps the row of the second."""
    db.create_function("same_url_key", 1, same_url_key, deterministic=True)
    db.execute("UPDATE OR IGNORE sitemaps SET url = same_url_key(url) WHERE url GLOB '*[^ -~]*'")


class HistoryStore:
    """The history file. ``await store.open()`` first; every method runs on the store's thread."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sitemap-history")
        self._db: sqlite3.Connection | None = None

    async def _run(self, function: Callable[..., T], *args: Any) -> T:
        return await asyncio.wrap_future(self._executor.submit(function, *args))

    async def open(self) -> None:
        """Open (or create) the file and check it is a history of this version."""
        await self._run(self._open)

    async def state(self, url: str) -> SitemapState | None:
        """The state of a sitemap as this run found it (what this run commits is not read
        back), or None when it was not in the history."""
        return await self._run(self._state, url)

    async def pages(self, url: str) -> StoredPages:
        """The pages of a sitemap as this run found them."""
        return await self._run(self._pages, url)

    async def listers(self, url: str) -> set[str]:
        """The sitemaps that listed ``url`` among their children when this run found the history."""
        return await self._run(self._listers, url)

    def commit(
        self, state: SitemapState, pages: Iterable[tuple[str, str, bytes]] | None, forget: Iterable[str] = ()
    ) -> Future[None]:
        """Queue the replacement of a sitemap's state, and of its pages when ``pages`` is given
        (url, hash, record), and the removal of the sitemaps ``forget`` names (no longer
        listed); writes happen in the order they were queued."""
        return self._executor.submit(self._commit, state, None if pages is None else list(pages), list(forget))

    def stage(
        self,
        site: str,
        state: SitemapState,
        pages: Iterable[tuple[str, str, bytes]] | None,
        forget: Iterable[str] = (),
    ) -> Future[None]:
        """:meth:`commit`, set aside for ``site`` (a queue run): written by :meth:`commit_site`
        once the site is acknowledged, or dropped (:meth:`drop_site`, or the next open)."""
        return self._executor.submit(self._stage, site, state, None if pages is None else list(pages), list(forget))

    def commit_site(self, site: str) -> Future[None]:
        """Queue the writing of what was staged for ``site``, in the order it was staged, in
        one transaction."""
        return self._executor.submit(self._commit_site, site)

    def drop_site(self, site: str) -> Future[None]:
        """Queue the dropping of what was staged for ``site`` (its attempt was not acknowledged)."""
        return self._executor.submit(self._drop_site, site)

    def open_now(self) -> None:
        """:meth:`open`, waiting for it: once, before the crawl starts (nothing else runs yet)."""
        self._executor.submit(self._open).result()

    async def close(self) -> None:
        """Wait for the writes queued, close the file and the thread."""
        if self._db is not None:
            await self._run(self._close)
        self._executor.shutdown(wait=True)

    # -- on the store's thread -------------------------------------------------------------

    def _open(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)  # (created if missing, its folder too)
        except OSError as exc:
            raise HistoryError(f"{self.path} cannot be created ({exc.strerror or exc})") from None
        try:
            db = sqlite3.connect(self.path, timeout=LOCK_WAIT, isolation_level=None, check_same_thread=False)
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if tables and "meta" not in tables:
                raise HistoryError(f"{self.path} is not a sitemap_crawl history (an SQLite file of another program)")
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("BEGIN IMMEDIATE")  # the write lock now: a lock held elsewhere is waited for
            if tables:
                self._check(db)
                _add_columns(db)
                _key_sitemap_urls(db)
            else:
                for statement in _HISTORY_TABLES:
                    db.execute(statement)
                db.executemany("INSERT INTO meta VALUES (?, ?)", [("app", APP), ("version", VERSION)])
            # staged by a queue run stopped before its sites were acknowledged: mapped again
            for table, statement in _STAGING_TABLES.items():
                db.execute(f"DROP TABLE IF EXISTS {table}")
                db.execute(statement)
            db.execute("COMMIT")
            for statement in _BEFORE_RUN_SCHEMA:
                db.execute(statement)
        except sqlite3.DatabaseError as exc:
            if exc.sqlite_errorcode in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                raise HistoryError(
                    f"{self.path} is in use: another process kept it locked the {LOCK_WAIT:g} s this run "
                    f"waited ({exc}). Is another run using this history file? Wait for it to end, or give "
                    "this run another file"
                ) from None
            raise HistoryError(f"{self.path} is not a usable SQLite file ({exc})") from None
        self._db = db

    def _check(self, db: sqlite3.Connection) -> None:
        """Check that an existing file is a history of this version, with its layout."""
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("app") != APP:
            raise HistoryError(f"{self.path} is not a sitemap_crawl history (an SQLite file of another program)")
        if meta.get("version") != VERSION:
            raise HistoryError(
                f"{self.path} is a history of version {meta.get('version')}; this sitemap_crawl reads {VERSION}"
            )
        missing = _missing_layout(db)
        if missing:
            raise HistoryError(
                f"{self.path} is a history without {', '.join(missing)} (written by an earlier sitemap_crawl, "
                "or damaged): start a new history file (delete it, or name another; the first run with it "
                "exports every page as added)"
            )

    def _state(self, url: str) -> SitemapState | None:
        assert self._db is not None
        columns = "kind, etag, last_modified, body_hash, page_count, children, validated_url"
        row = self._db.execute(f"SELECT {columns} FROM before_run WHERE url = ?", (url,)).fetchone()
        if row is None:
            row = self._db.execute(f"SELECT {columns} FROM sitemaps WHERE url = ?", (url,)).fetchone()
        if row is None or row[0] is None:
            return None
        kind, etag, last_modified, body_hash, page_count, children, validated_url = row
        return SitemapState(
            url, kind, etag, last_modified, body_hash, page_count, children_from_json(children), validated_url
        )

    def _pages(self, url: str) -> StoredPages:
        assert self._db is not None
        kept = self._db.execute("SELECT pages_kept FROM before_run WHERE url = ?", (url,)).fetchone()
        if kept is not None and kept[0]:
            rows = self._db.execute("SELECT url, hash, record FROM before_run_pages WHERE sitemap = ?", (url,))
        else:
            rows = self._db.execute(
                "SELECT pages.url, hash, record FROM pages JOIN sitemaps ON sitemaps.id = sitemap_id "
                "WHERE sitemaps.url = ?",
                (url,),
            )
        return {page: (digest, zlib.decompress(record)) for page, digest, record in rows}

    def _listers(self, url: str) -> set[str]:
        assert self._db is not None
        needle = json.dumps(url.partition("%")[0])[:-1]  # (what every spelling of url starts with)
        rows = self._db.execute(
            "SELECT url, children FROM sitemaps WHERE url NOT IN (SELECT url FROM before_run) "
            "AND instr(children, ?) > 0 UNION ALL "
            "SELECT url, children FROM before_run WHERE kind IS NOT NULL AND instr(children, ?) > 0",
            (needle, needle),
        )
        return {
            lister
            for lister, children in rows
            if any(same_url_key(ref.url) == url for ref in children_from_json(children))
        }

    def _commit(self, state: SitemapState, pages: list[tuple[str, str, bytes]] | None, forget: list[str]) -> None:
        with self._transaction() as db:
            sitemap_id = self._write_state(db, state, forget, pages is not None)
            if pages is not None:
                db.execute("DELETE FROM pages WHERE sitemap_id = ?", (sitemap_id,))
                db.executemany(
                    "INSERT OR REPLACE INTO pages VALUES (?, ?, ?, ?)",
                    [(sitemap_id, url, digest, zlib.compress(record, 1)) for url, digest, record in pages],
                )

    def _stage(
        self, site: str, state: SitemapState, pages: list[tuple[str, str, bytes]] | None, forget: list[str]
    ) -> None:
        with self._transaction() as db:
            (staged_id,) = db.execute(
                "INSERT INTO staged (site, state, has_pages, forget) VALUES (?, ?, ?, ?) RETURNING id",
                (site, _state_json(state), pages is not None, json.dumps(forget)),
            ).fetchone()
            db.executemany(
                "INSERT OR REPLACE INTO staged_pages VALUES (?, ?, ?, ?)",
                [(staged_id, url, digest, zlib.compress(record, 1)) for url, digest, record in pages or ()],
            )

    def _commit_site(self, site: str) -> None:
        with self._transaction() as db:
            staged = db.execute(
                "SELECT id, state, has_pages, forget FROM staged WHERE site = ? ORDER BY id", (site,)
            ).fetchall()
            for staged_id, state, has_pages, forget in staged:
                sitemap_id = self._write_state(db, _state_from_json(state), json.loads(forget), bool(has_pages))
                if has_pages:
                    db.execute("DELETE FROM pages WHERE sitemap_id = ?", (sitemap_id,))
                    db.execute(
                        "INSERT INTO pages SELECT ?, url, hash, record FROM staged_pages WHERE staged_id = ?",
                        (sitemap_id, staged_id),
                    )
            self._delete_staged(db, site)

    def _drop_site(self, site: str) -> None:
        with self._transaction() as db:
            self._delete_staged(db, site)

    @staticmethod
    def _delete_staged(db: sqlite3.Connection, site: str) -> None:
        db.execute("DELETE FROM staged_pages WHERE staged_id IN (SELECT id FROM staged WHERE site = ?)", (site,))
        db.execute("DELETE FROM staged WHERE site = ?", (site,))

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        db = self._db
        assert db is not None
        db.execute("BEGIN")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    @staticmethod
    def _keep_before_run(db: sqlite3.Connection, url: str, with_pages: bool) -> None:
        """Keep what the history holds of ``url`` as this run found it, before the first write
        of this run that changes it (its pages too if ``with_pages``): what the store reads."""
        db.execute(
            "INSERT OR IGNORE INTO before_run SELECT url, kind, etag, last_modified, body_hash, page_count, "
            "children, validated_url, 0 FROM sitemaps WHERE url = ?",
            (url,),
        )
        db.execute("INSERT OR IGNORE INTO before_run (url, pages_kept) VALUES (?, 1)", (url,))  # was not there
        if (
            with_pages
            and db.execute("UPDATE before_run SET pages_kept = 1 WHERE url = ? AND pages_kept = 0", (url,)).rowcount
        ):
            db.execute(
                "INSERT INTO before_run_pages SELECT sitemaps.url, pages.url, hash, record "
                "FROM pages JOIN sitemaps ON sitemaps.id = sitemap_id WHERE sitemaps.url = ?",
                (url,),
            )

    @classmethod
    def _write_state(cls, db: sqlite3.Connection, state: SitemapState, forget: list[str], with_pages: bool) -> int:
        """Forget the sitemaps ``forget`` names, and write ``state`` (its pages aside, which the
        caller replaces when ``with_pages``): its row id."""
        for gone in forget:
            cls._keep_before_run(db, gone, with_pages=True)
            db.execute("DELETE FROM pages WHERE sitemap_id IN (SELECT id FROM sitemaps WHERE url = ?)", (gone,))
            db.execute("DELETE FROM sitemaps WHERE url = ?", (gone,))
        cls._keep_before_run(db, state.url, with_pages)
        (sitemap_id,) = db.execute(
            "INSERT INTO sitemaps (url, etag, last_modified, body_hash, kind, page_count, children, validated_url) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (url) DO UPDATE SET etag = excluded.etag, "
            "last_modified = excluded.last_modified, body_hash = excluded.body_hash, kind = excluded.kind, "
            "page_count = excluded.page_count, children = excluded.children, "
            "validated_url = excluded.validated_url RETURNING id",
            (
                state.url,
                state.etag,
                state.last_modified,
                state.body_hash,
                state.kind,
                state.page_count,
                children_json(state.children),
                state.validated_url,
            ),
        ).fetchone()
        return int(sitemap_id)

    def _close(self) -> None:
        if self._db is not None:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # one file at rest, no large -wal beside it
            self._db.close()
            self._db = None
