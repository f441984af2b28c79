"""The history's pure diff and its SQLite store (on its own thread)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from sitemap_crawl.history import HistoryError, HistoryStore, SitemapState, diff_pages
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
