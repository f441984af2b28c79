"""The history's pure diff and its SQLite store (on its own thread)."""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable
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
    assert diff.listed == [("d", "added"), ("b", "modified")]  # (the new listing's order)
    assert len(diff) == 3
    assert diff_pages(stored, current, with_removed=False).removed == []
    assert len(diff_pages(stored, dict(stored))) == 0
    assert diff_pages({}, current).added == ["d", "b", "a"]


def _in_a_run(path: Path, scenario: Callable[[HistoryStore], Awaitable[None]]) -> None:
    """``scenario`` with the store of one run (opened, then closed)."""

    async def run() -> None:
        store = HistoryStore(path)
        await store.open()
        try:
            await scenario(store)
        finally:
            await store.close()

    asyncio.run(run())


def test_store_round_trip_and_replace(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    url = "http://x/s.xml"
    children = [SitemapRef("http://x/a.xml"), SitemapRef("http://x/b.xml", "2024-05-01")]
    state = SitemapState(url, "xml_index", '"e"', "Mon", "h1", 0, children)

    async def first(store: HistoryStore) -> None:
        assert await store.state(url) is None
        await asyncio.wrap_future(store.commit(state, [("http://x/p", "d1", b"{}"), ("http://x/q", "d2", b"[]")]))

    async def second(store: HistoryStore) -> None:
        assert await store.state(url) == state
        assert await store.pages(url) == {"http://x/p": ("d1", b"{}"), "http://x/q": ("d2", b"[]")}
        assert await store.listers("http://x/b.xml") == {url}
        assert await store.listers("http://x/c.xml") == set()
        await asyncio.wrap_future(store.commit(state, [("http://x/r", "d3", b"1")]))

    async def third(store: HistoryStore) -> None:
        assert list(await store.pages(url)) == ["http://x/r"]
        await asyncio.wrap_future(store.commit(dataclasses.replace(state, etag='"f"'), None))  # validators only

    async def fourth(store: HistoryStore) -> None:
        assert list(await store.pages(url)) == ["http://x/r"]  # the pages stay
        assert (await store.state(url)).etag == '"f"'  # type: ignore[union-attr]

    for scenario in (first, second, third, fourth):
        _in_a_run(path, scenario)


def test_a_run_reads_the_history_as_it_found_it(tmp_path: Path) -> None:
    # a sitemap listed by two indexes: the place read after the other's commit was compared
    # with that commit (no change), not with what the run started from
    path = tmp_path / "h.sqlite"
    index = SitemapState("http://x/i.xml", "xml_index", body_hash="i1", children=[SitemapRef("http://x/s.xml")])
    urlset = SitemapState("http://x/s.xml", "xml_urlset", '"s1"', body_hash="s1", page_count=1)
    found = {"http://x/p": ("d1", b"{}")}

    async def first(store: HistoryStore) -> None:
        await asyncio.wrap_future(store.commit(index, None))
        await asyncio.wrap_future(store.commit(urlset, [("http://x/p", "d1", b"{}")]))

    async def second(store: HistoryStore) -> None:
        new = SitemapState("http://x/new.xml", "xml_urlset", body_hash="n1")
        await asyncio.wrap_future(store.commit(new, [("http://x/n", "d", b"{}")]))
        assert await store.state(new.url) is None and await store.pages(new.url) == {}  # new in this run
        await asyncio.wrap_future(store.commit(dataclasses.replace(urlset, etag='"s2"'), None))  # validators only
        assert (await store.state(urlset.url)) == urlset and await store.pages(urlset.url) == found
        changed = dataclasses.replace(urlset, etag='"s3"', body_hash="s3", page_count=2)
        await asyncio.wrap_future(store.commit(changed, [("http://x/p", "d2", b"[]"), ("http://x/q", "d3", b"1")]))
        await asyncio.wrap_future(store.commit(changed, [("http://x/p", "d2", b"[]"), ("http://x/q", "d3", b"1")]))
        assert await store.state(urlset.url) == urlset and await store.pages(urlset.url) == found
        await asyncio.wrap_future(store.commit(dataclasses.replace(index, children=[]), None, forget=[urlset.url]))
        assert await store.state(urlset.url) == urlset and await store.pages(urlset.url) == found  # forgotten
        assert await store.listers(urlset.url) == {index.url}  # as the index listed it

    async def third(store: HistoryStore) -> None:
        assert await store.state(urlset.url) is None and await store.pages(urlset.url) == {}
        assert (await store.state("http://x/new.xml")) is not None
        assert await store.listers(urlset.url) == set()

    for scenario in (first, second, third):
        _in_a_run(path, scenario)


def test_children_of_earlier_files_are_read_as_urls(tmp_path: Path) -> None:
    path = _history(
        tmp_path / "h.sqlite",
        "INSERT INTO sitemaps (url, kind, page_count, children)"
        " VALUES ('http://x/s.xml', 'xml_index', 0, '[\"http://x/a.xml\"]')",
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


def test_a_history_in_folders_not_made_yet_is_created_with_them(tmp_path: Path) -> None:
    # "not a usable SQLite file (unable to open database file)": there was no file at all
    path = tmp_path / "new" / "folders" / "h.sqlite"
    store = HistoryStore(path)
    store.open_now()
    asyncio.run(store.close())
    assert path.is_file()
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    store = HistoryStore(blocked / "h.sqlite")
    with pytest.raises(HistoryError, match="cannot be created"):
        store.open_now()
    asyncio.run(store.close())


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
    path = _history(tmp_path / "h.sqlite", "UPDATE meta SET value = '99' WHERE key = 'version'")
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


def test_a_history_written_before_validated_urls_gets_the_column_and_keeps_its_states(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    state = SitemapState("http://x/s.xml", "xml_urlset", '"e"', "Mon", "h1", 1)
    _in_a_run(path, lambda store: asyncio.wrap_future(store.commit(state, [("http://x/p", "d", b"{}")])))
    with sqlite3.connect(path) as db:
        db.execute("ALTER TABLE sitemaps DROP COLUMN validated_url")
    moved = dataclasses.replace(state, validated_url="https://x/s.xml")

    async def reopened(store: HistoryStore) -> None:
        assert await store.state(state.url) == state  # (validated by its own URL, as then)
        await asyncio.wrap_future(store.commit(moved, None))

    async def again(store: HistoryStore) -> None:
        assert await store.state(state.url) == moved

    _in_a_run(path, reopened)
    _in_a_run(path, again)


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
    index = SitemapState("http://x/i.xml", "xml_index", body_hash="h", children=[SitemapRef("http://x/s.xml")])
    urlset = SitemapState("http://x/s.xml", "xml_urlset", body_hash="h", page_count=1)

    async def first(store: HistoryStore) -> None:
        old = SitemapState("http://x/old.xml", "xml_urlset", page_count=1)
        await asyncio.wrap_future(store.commit(old, [("http://x/o", "d0", b"{}")]))

    async def second(store: HistoryStore) -> None:
        store.stage("http://x/", index, None, forget=["http://x/old.xml"])
        store.stage("http://x/", urlset, [("http://x/p", "d1", b'{"a": 1}')])
        store.stage("http://y/", SitemapState("http://y/s.xml", "xml_urlset"), [])
        await asyncio.wrap_future(store.commit_site("http://x/"))
        await asyncio.wrap_future(store.drop_site("http://x/"))  # nothing left: no change
        store.stage("http://z/", SitemapState("http://z/s.xml", "xml_urlset"), [("http://z/p", "d", b"{}")])
        await asyncio.wrap_future(store.drop_site("http://z/"))  # another attempt holds the site
        await asyncio.wrap_future(store.commit_site("http://z/"))

    async def third(store: HistoryStore) -> None:
        assert await store.state("http://x/i.xml") == index
        assert await store.state("http://x/s.xml") == urlset
        assert await store.pages("http://x/s.xml") == {"http://x/p": ("d1", b'{"a": 1}')}
        assert await store.state("http://x/old.xml") is None  # forgotten
        assert await store.state("http://z/s.xml") is None

    _in_a_run(path, first)
    _in_a_run(path, second)
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT site FROM staged").fetchall() == [("http://y/",)]  # a stopped run's
    _in_a_run(path, third)  # the open drops what a stopped run staged: that site is mapped again
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM staged").fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM staged_pages").fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM sitemaps WHERE url = 'http://y/s.xml'").fetchone() == (0,)
