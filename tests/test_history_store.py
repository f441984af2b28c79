"""The history's pure diff and its SQLite store (on its own thread)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from sitemap_crawl.history import HistoryError, HistoryStore, SitemapState, diff_pages
from sitemap_crawl.history import store as store_module
from sitemap_crawl.items import SitemapRef


def test_diff_pages() -> None:
    stored = {"a": "1", "b": "2", "c": "3"}
    current = {"d": "4", "b": "9", "a": "1"}

    diff = diff_pages(stored, current)

    assert (diff.added, diff.modified, diff.removed) == (["d"], ["b"], ["c"])
    assert len(diff) == 3
    assert diff_pages(stored, current, with_removed=False).removed == []
    assert len(diff_pages(stored, dict(stored))) == 0
    assert diff_pages({}, current).added == ["d", "b", "a"]


def test_store_round_trip_and_replace(tmp_path: Path) -> None:
    async def scenario() -> None:
        store = HistoryStore(tmp_path / "h.sqlite")
        await store.open()
        assert await store.state("http://x/s.xml") is None
        children = [SitemapRef("http://x/a.xml"), SitemapRef("http://x/b.xml", "2024-05-01")]
        state = SitemapState("http://x/s.xml", "xml_index", '"e"', "Mon", "h1", 0, children)
        await asyncio.wrap_future(store.commit(state, [("http://x/p", "d1", b"{}"), ("http://x/q", "d2", b"[]")]))
        assert await store.state("http://x/s.xml") == state
        assert await store.pages("http://x/s.xml") == {"http://x/p": ("d1", b"{}"), "http://x/q": ("d2", b"[]")}
        await asyncio.wrap_future(store.commit(state, [("http://x/r", "d3", b"1")]))
        assert list(await store.pages("http://x/s.xml")) == ["http://x/r"]
        state.etag = '"f"'
        await asyncio.wrap_future(store.commit(state, None))  # validators only: the pages stay
        assert list(await store.pages("http://x/s.xml")) == ["http://x/r"]
        assert (await store.state("http://x/s.xml")).etag == '"f"'  # type: ignore[union-attr]
        assert await store.listed_by_another("http://x/b.xml", "http://x/other.xml")
        assert not await store.listed_by_another("http://x/b.xml", "http://x/s.xml")
        await store.close()


def test_children_of_earlier_files_are_read_as_urls(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    created = HistoryStore(path)
    created.open_now()
    asyncio.run(created.close())
    with sqlite3.connect(path) as db:
        db.execute(
            "INSERT INTO sitemaps (url, kind, page_count, children) VALUES (?, ?, ?, ?)",
            ("http://x/s.xml", "xml_index", 0, '["http://x/a.xml"]'),
        )

    async def scenario() -> None:
        store = HistoryStore(path)
        await store.open()
        state = await store.state("http://x/s.xml")
        assert state is not None and state.children == [SitemapRef("http://x/a.xml")]
        await store.close()

    asyncio.run(scenario())

    asyncio.run(scenario())


def test_the_store_works_on_one_thread_of_its_own(tmp_path: Path) -> None:
    seen: set[str] = set()

    async def scenario() -> None:
        store = HistoryStore(tmp_path / "h.sqlite")
        await store.open()
        for _ in range(5):
            seen.add(await store._run(lambda: threading.current_thread().name))
        await store.close()

    asyncio.run(scenario())
    assert len(seen) == 1 and next(iter(seen)).startswith("sitemap-history")
    assert threading.current_thread().name not in seen


def test_foreign_and_corrupt_files_are_refused(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE meta (key TEXT, value TEXT)")
        db.execute("INSERT INTO meta VALUES ('app', 'something else')")
    corrupt = tmp_path / "corrupt.sqlite"
    corrupt.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
    for path, says in ((foreign, "not a sitemap_crawl history"), (corrupt, "not a usable SQLite file")):
        store = HistoryStore(path)
        with pytest.raises(HistoryError, match=says):
            store.open_now()
        asyncio.run(store.close())


def test_a_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    store = HistoryStore(path)
    store.open_now()
    asyncio.run(store.close())
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'version'")
    again = HistoryStore(path)
    with pytest.raises(HistoryError, match="version 99"):
        again.open_now()
    asyncio.run(again.close())


def first_layout_history(path: Path) -> Path:
    """A history file of the first layout (tables keyed by URL), version 1 as today's."""
    statements = (
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        "INSERT INTO meta VALUES ('app', 'sitemap_crawl-history'), ('version', '1')",
        "CREATE TABLE sitemaps (url TEXT PRIMARY KEY, etag TEXT, last_modified TEXT, body_hash TEXT, "
        "kind TEXT NOT NULL, page_count INTEGER NOT NULL, children TEXT NOT NULL)",
        "CREATE TABLE pages (sitemap_url TEXT NOT NULL, url TEXT NOT NULL, hash TEXT NOT NULL, "
        "record BLOB NOT NULL, PRIMARY KEY (sitemap_url, url)) WITHOUT ROWID",
    )
    with sqlite3.connect(path) as db:
        for statement in statements:
            db.execute(statement)
    return path


def _history(path: Path, *statements: str) -> Path:
    """A history file made by this code, then changed by ``statements``."""
    store = HistoryStore(path)
    store.open_now()
    asyncio.run(store.close())
    with sqlite3.connect(path) as db:
        for statement in statements:
            db.execute(statement)
    return path


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (first_layout_history, "without column sitemaps.id, column pages.sitemap_id"),
        (
            lambda path: _history(path, "ALTER TABLE sitemaps DROP COLUMN body_hash"),
            "without column sitemaps.body_hash",
        ),
        (lambda path: _history(path, "DROP TABLE pages"), "without table pages"),
    ],
)
def test_a_history_without_a_table_or_column_of_the_layout_is_refused(
    tmp_path: Path, make: Callable[[Path], Path], says: str
) -> None:
    store = HistoryStore(make(tmp_path / "h.sqlite"))
    with pytest.raises(HistoryError, match=f"{says} .*start a new history file"):
        store.open_now()
    asyncio.run(store.close())


def test_a_history_written_before_the_staging_tables_gets_them(tmp_path: Path) -> None:
    path = _history(tmp_path / "h.sqlite", "DROP TABLE staged", "DROP TABLE staged_pages")
    store = HistoryStore(path)
    store.open_now()
    asyncio.run(store.close())
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM staged JOIN staged_pages ON staged_id = id").fetchone() == (0,)


def test_a_history_another_process_holds_locked_is_said_to_be_in_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "LOCK_WAIT", 0.05, raising=False)
    path = _history(tmp_path / "h.sqlite")
    other_run = sqlite3.connect(path, isolation_level=None)
    other_run.execute("BEGIN EXCLUSIVE")
    store = HistoryStore(path)
    started = time.monotonic()
    with pytest.raises(HistoryError, match=r"is in use: another process kept it locked .*another run"):
        store.open_now()
    assert time.monotonic() - started >= 0.05  # it waited for the lock
    asyncio.run(store.close())
    other_run.close()


def test_a_queue_run_stages_a_sites_states_until_it_is_acknowledged(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"

    async def scenario() -> None:
        store = HistoryStore(path)
        await store.open()
        old = SitemapState("http://x/old.xml", "xml_urlset", page_count=1)
        await asyncio.wrap_future(store.commit(old, [("http://x/o", "d0", b"{}")]))
        index = SitemapState("http://x/i.xml", "xml_index", body_hash="h", children=[SitemapRef("http://x/s.xml")])
        urlset = SitemapState("http://x/s.xml", "xml_urlset", body_hash="h", page_count=1)
        store.stage("http://x/", index, None, forget=["http://x/old.xml"])
        store.stage("http://x/", urlset, [("http://x/p", "d1", b'{"a": 1}')])
        store.stage("http://y/", SitemapState("http://y/s.xml", "xml_urlset"), [])
        assert await store.state("http://x/s.xml") is None  # staged: not written yet
        await asyncio.wrap_future(store.commit_site("http://x/"))
        assert await store.state("http://x/i.xml") == index
        assert await store.pages("http://x/s.xml") == {"http://x/p": ("d1", b'{"a": 1}')}
        assert await store.state("http://x/old.xml") is None  # forgotten
        await asyncio.wrap_future(store.drop_site("http://x/"))  # nothing left: no change
        assert await store.state("http://x/s.xml") == urlset
        store.stage("http://z/", SitemapState("http://z/s.xml", "xml_urlset"), [("http://z/p", "d", b"{}")])
        await asyncio.wrap_future(store.drop_site("http://z/"))  # another attempt holds the site
        await asyncio.wrap_future(store.commit_site("http://z/"))
        assert await store.state("http://z/s.xml") is None
        await store.close()

    asyncio.run(scenario())
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT site FROM staged").fetchall() == [("http://y/",)]  # a stopped run's
    reopened = HistoryStore(path)
    reopened.open_now()  # drops what a stopped run staged: that site is mapped again
    asyncio.run(reopened.close())
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM staged").fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM staged_pages").fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM sitemaps WHERE url = 'http://y/s.xml'").fetchone() == (0,)
