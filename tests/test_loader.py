"""SitemapRequestLoader on its own (pure asyncio, a fake fetch): state model, streaming,
backpressure, filters, discovery, persistence and resumption."""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from sitemap_crawl import SitemapPage, SitemapRequestLoader
from sitemap_crawl.atomic_file import write_atomically
from sitemap_crawl.loader import (
    STATE_FIELDS,
    FetchedSitemap,
    LoaderState,
    SitemapFetchError,
    read_saved_state,
    store,
)
from sitemap_crawl.parsing import Limits
from tests.support import atom, gzip_bytes, robots, rss, sitemapindex, text_sitemap, urlset
from tests.support.disk import file_size_limit

BASE = "https://site.test"


class FakeWeb:
    """url -> body (str/bytes), a redirect ("-> url") or an HTTP error (int)."""

    def __init__(self, routes: Mapping[str, str | bytes | int]) -> None:
        self.routes = dict(routes)
        self.fetched: Counter[str] = Counter()

    async def __call__(self, url: str) -> FetchedSitemap:
        self.fetched[url] += 1
        await asyncio.sleep(0)
        final = url
        value = self.routes.get(url, 404)
        while isinstance(value, str) and value.startswith("-> "):
            final = value[3:]
            value = self.routes.get(final, 404)
        if isinstance(value, int):
            raise SitemapFetchError(f"HTTP {value}")
        body = value.replace("{base}", BASE).encode() if isinstance(value, str) else value
        return FetchedSitemap(final, body)


def pages(prefix: str, count: int, start: int = 0) -> list[str]:
    return [f"{BASE}/{prefix}/{i}" for i in range(start, start + count)]


async def drain(loader: SitemapRequestLoader, handle: bool = True) -> list[SitemapPage]:
    got = []
    while (page := await loader.fetch_next_page()) is not None:
        got.append(page)
        if handle:
            loader.mark_handled(page.url)
    return got


def run(coro_fn: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(coro_fn())  # type: ignore[arg-type]


# -- the state model ----------------------------------------------------------------------


def test_index_and_urlsets_in_order_with_counts_and_state() -> None:
    web = FakeWeb(
        {
            f"{BASE}/index.xml": sitemapindex("{base}/a.xml", "{base}/b.xml", "{base}/a.xml"),
            f"{BASE}/a.xml": urlset(*pages("a", 3), "{base}/a/0"),
            f"{BASE}/b.xml": urlset(*pages("b", 2), *pages("a", 1)),
        }
    )

    async def main() -> None:
        loader = SitemapRequestLoader([f"{BASE}/index.xml"], fetch=web)
        state = loader.state
        assert isinstance(state, LoaderState)
        assert list(state.to_dict()) == list(STATE_FIELDS)
        got = await drain(loader)
        # a page URL is queued once per sitemap: a/0 again from b.xml
        assert [p.url for p in got] == [*pages("a", 3), *pages("b", 2), *pages("a", 1)]
        assert got[0].sitemap_url == f"{BASE}/a.xml"
        assert (loader.total_count, loader.handled_count, loader.pending_count) == (6, 6, 0)
        assert loader.completed and loader.is_finished()
        state = loader.state
        assert state.processed_sitemap_urls == {f"{BASE}/index.xml", f"{BASE}/a.xml", f"{BASE}/b.xml"}
        assert not state.pending_sitemap_urls and state.in_progress_sitemap_url is None
        assert not state.url_queue and not state.in_progress and state.completed
        loader.close()

    run(main)
    assert web.fetched == Counter({f"{BASE}/index.xml": 1, f"{BASE}/a.xml": 1, f"{BASE}/b.xml": 1})


def test_sources_can_change_until_the_loader_is_used() -> None:
    web = FakeWeb({f"{BASE}/a.xml": urlset(*pages("a", 2)), f"{BASE}/b.xml": urlset(*pages("b", 1))})

    async def main() -> None:
        loader = SitemapRequestLoader([f"{BASE}/a.xml"], fetch=web)
        loader.set_sources([f"{BASE}/b.xml", f"{BASE}/b.xml"])
        assert loader.start_urls == [f"{BASE}/b.xml"]
        assert [p.url for p in await drain(loader)] == pages("b", 1)
        with pytest.raises(RuntimeError, match="already in use"):
            loader.set_sources([f"{BASE}/a.xml"])
        loader.close()

    run(main)
    assert web.fetched == Counter({f"{BASE}/b.xml": 1})


def test_counts_while_running_and_in_progress_until_handled() -> None:
    web = FakeWeb({f"{BASE}/s.xml": urlset(*pages("p", 5))})

    async def main() -> None:
        loader = SitemapRequestLoader([f"{BASE}/s.xml"], fetch=web)
        first = await loader.fetch_next_page()
        second = await loader.fetch_next_page()
        assert first is not None and second is not None
        state = loader.state
        assert state.in_progress == {first.url, second.url}
        assert state.in_progress_sitemap_url is None or state.in_progress_sitemap_url == f"{BASE}/s.xml"
        assert loader.in_progress_count == 2 and loader.handled_count == 0
        assert loader.mark_handled(second.url) is True
        assert loader.mark_handled(second.url) is False  # not in progress any more
        assert loader.state.in_progress == {first.url}
        assert loader.handled_count == 1
        rest = await drain(loader)
        assert len(rest) == 3
        assert not loader.is_finished()  # first is still in progress
        loader.mark_handled(first.url)
        assert loader.is_finished()
        loader.close()

    run(main)


def test_every_format_reaches_the_queue() -> None:
    web = FakeWeb(
        {
            f"{BASE}/robots.txt": robots(
                "{base}/index.xml.gz", "{base}/feed.rss", "{base}/atom.xml", "{base}/list.txt"
            ),
            f"{BASE}/index.xml.gz": gzip_bytes(sitemapindex(f"{BASE}/news.xml")),
            f"{BASE}/news.xml": urlset(
                {"loc": f"{BASE}/n/1", "lastmod": "2024-05-01T10:00:00+02:00", "priority": 0.9},
            ),
            f"{BASE}/feed.rss": rss({"link": "{base}/r/1", "title": "R1", "pubDate": "Wed, 01 May 2024 10:00:00 GMT"}),
            f"{BASE}/atom.xml": atom({"link": "{base}/t/1", "title": "T1", "updated": "2024-05-01T10:00:00Z"}),
            f"{BASE}/list.txt": text_sitemap(f"{BASE}/x/1", f"{BASE}/x/2"),
        }
    )

    async def main() -> None:
        loader = SitemapRequestLoader([f"{BASE}/robots.txt"], fetch=web)
        got = {p.url: p for p in await drain(loader)}
        assert set(got) == {f"{BASE}/n/1", f"{BASE}/r/1", f"{BASE}/t/1", f"{BASE}/x/1", f"{BASE}/x/2"}
        assert got[f"{BASE}/n/1"].last_modified == "2024-05-01T10:00:00+02:00"
        assert got[f"{BASE}/n/1"].priority == 0.9
        assert got[f"{BASE}/r/1"].news is not None and got[f"{BASE}/r/1"].news.title == "R1"
        loader.close()

    run(main)


# -- streaming and backpressure ------------------------------------------------------------


def test_bounded_queue_pauses_the_parser_without_refetching() -> None:
    urls = pages("p", 5000)
    web = FakeWeb({f"{BASE}/big.xml": urlset(*urls)})

    async def main() -> None:
        loader = SitemapRequestLoader([f"{BASE}/big.xml"], fetch=web, max_buffer_size=50)
        first = await loader.fetch_next_page()
        assert first is not None
        for _ in range(20):  # give the producer every chance to run ahead
            await asyncio.sleep(0)
        # the reader is suspended: no more than the buffer was taken from the sitemap
        assert loader.total_count <= 51
        assert len(loader.state.url_queue) <= 50
        assert loader.state.in_progress_sitemap_url == f"{BASE}/big.xml"
        loader.mark_handled(first.url)
        seen = [first.url]
        longest = 0
        while (page := await loader.fetch_next_page()) is not None:
            longest = max(longest, len(loader.state.url_queue) if len(seen) % 500 == 0 else 0)
            seen.append(page.url)
            loader.mark_handled(page.url)
        assert seen == urls
        assert longest <= 50
        loader.close()

    run(main)
    assert web.fetched[f"{BASE}/big.xml"] == 1


def test_a_slow_consumer_gets_every_page_of_50000() -> None:
    """The consumer is far slower than the download: nothing is lost, the sitemap is
    downloaded once, the queue never exceeds its bound, and the producer waits on an event."""
    urls = pages("p", 50_000)
    web = FakeWeb({f"{BASE}/big.xml": urlset(*urls)})
    sizes: list[int] = []

    async def main() -> None:
        loader = SitemapRequestLoader([f"{BASE}/big.xml"], fetch=web, max_buffer_size=200)
        got: list[str] = []
        count = 0
        while (page := await loader.fetch_next_page()) is not None:
            count += 1
            if count <= 12:
                await asyncio.sleep(0.25)  # a few pages per second at first
                assert web.fetched[f"{BASE}/big.xml"] == 1
            elif count % 7 == 0:
                await asyncio.sleep(0)
            sizes.append(len(loader._queue))
            got.append(page.url)
            loader.mark_handled(page.url)
        assert got == urls
        assert loader.handled_count == loader.total_count == 50_000
        loader.close()

    run(main)
    assert max(sizes) <= 200
    assert web.fetched[f"{BASE}/big.xml"] == 1


def test_waiting_is_on_events_not_polling(monkeypatch: pytest.MonkeyPatch) -> None:
    """While the queue is full and nobody consumes, the producer does not wake up."""
    web = FakeWeb({f"{BASE}/big.xml": urlset(*pages("p", 1000))})
    timed_sleeps: list[float] = []
    real_sleep = asyncio.sleep

    async def counting_sleep(delay: float, *args: Any) -> Any:
        if delay:
            timed_sleeps.append(delay)
        return await real_sleep(delay, *args)

    async def main() -> None:
        loader = SitemapRequestLoader([f"{BASE}/big.xml"], fetch=web, max_buffer_size=10)
        page = await loader.fetch_next_page()
        assert page is not None
        monkeypatch.setattr(asyncio, "sleep", counting_sleep)
        total_before = loader.total_count
        await real_sleep(0.3)
        assert loader.total_count == total_before
        producer = loader._producer
        assert producer is not None and not producer.done()
        monkeypatch.setattr(asyncio, "sleep", real_sleep)
        await drain(loader)
        loader.close()

    run(main)
    assert timed_sleeps == []


# -- filters and discovery -----------------------------------------------------------------


def test_include_exclude_follow_deny() -> None:
    web = FakeWeb(
        {
            f"{BASE}/robots.txt": robots("{base}/index.xml", "{base}/skipped-by-nothing.xml"),
            f"{BASE}/index.xml": sitemapindex("{base}/products.xml", "{base}/blog.xml", "{base}/products-old.xml"),
            f"{BASE}/products.xml": urlset("{base}/product/1", "{base}/product/2", "{base}/about"),
            f"{BASE}/products-old.xml": urlset("{base}/product/9"),
            f"{BASE}/blog.xml": urlset("{base}/blog/1"),
            f"{BASE}/skipped-by-nothing.xml": urlset("{base}/product/3", "{base}/product/3/print"),
        }
    )

    async def main() -> None:
        loader = SitemapRequestLoader(
            [f"{BASE}/robots.txt"],
            fetch=web,
            include=[r"/product/"],
            exclude=r"/print$",
            follow=[r"products"],
            deny=[r"-old"],
        )
        got = [p.url for p in await drain(loader)]
        # robots.txt lines are read whatever follow says; index children must match follow, not
        # deny; the sitemaps are read in the tree's order (the index's child before the second line)
        assert got == [f"{BASE}/product/1", f"{BASE}/product/2", f"{BASE}/product/3"]
        loader.close()

    run(main)
    assert f"{BASE}/blog.xml" not in web.fetched and f"{BASE}/products-old.xml" not in web.fetched


def test_page_and_sitemap_filters_see_each_sitemap() -> None:
    web = FakeWeb(
        {
            f"{BASE}/index.xml": sitemapindex("{base}/a.xml", "{base}/b.xml"),
            f"{BASE}/a.xml": urlset(
                {"loc": f"{BASE}/old", "lastmod": "2001-01-01"}, {"loc": f"{BASE}/new", "lastmod": "2024-01-01"}
            ),
            f"{BASE}/b.xml": urlset(f"{BASE}/b"),
        }
    )
    calls: list[str] = []

    def page_filter(items: Any, sitemap_url: str) -> Any:
        calls.append(sitemap_url)
        return (p for p in items if (p.last_modified or "9999") >= "2005")

    def sitemap_filter(refs: Any, sitemap_url: str) -> Any:
        return [ref for ref in refs if not ref.url.endswith("/b.xml")]

    async def main() -> None:
        loader = SitemapRequestLoader(
            [f"{BASE}/index.xml"], fetch=web, page_filter=page_filter, sitemap_filter=sitemap_filter
        )
        assert [p.url for p in await drain(loader)] == [f"{BASE}/new"]
        loader.close()

    run(main)
    assert calls == [f"{BASE}/a.xml"]


def test_homepage_discovery_robots_then_known_paths_skipping_what_was_read() -> None:
    web = FakeWeb(
        {
            f"{BASE}/robots.txt": robots("{base}/sitemap_index.xml"),
            f"{BASE}/sitemap_index.xml": sitemapindex("{base}/sitemap.xml"),
            f"{BASE}/sitemap.xml": urlset("{base}/from-robots"),
            f"{BASE}/sitemap-news.xml": urlset("{base}/news/1"),
            f"{BASE}/sitemap": "<html><body>a page, not a sitemap</body></html>",
            f"{BASE}/.sitemap.xml": "-> " + f"{BASE}/sitemap.xml",  # redirects to a sitemap already read
        }
    )

    async def main() -> None:
        loader = SitemapRequestLoader(fetch=web, homepage=f"{BASE}/")
        pages = await drain(loader)
        assert [p.url for p in pages] == [f"{BASE}/from-robots", f"{BASE}/news/1"]
        assert {p.website for p in pages} == {f"{BASE}/"}  # the page item's website (it was None)
        assert loader.completed
        loader.close()

    run(main)
    order = list(web.fetched)
    assert order[:3] == [f"{BASE}/robots.txt", f"{BASE}/sitemap_index.xml", f"{BASE}/sitemap.xml"]
    assert web.fetched[f"{BASE}/sitemap.xml"] == 1  # not probed again as a known path
    assert web.fetched[f"{BASE}/sitemap_index.xml"] == 1
    assert f"{BASE}/sitemap.xml.gz" in web.fetched  # the other known paths are probed (404 here)


def test_failures_do_not_stop_the_rest(caplog: pytest.LogCaptureFixture) -> None:
    web = FakeWeb(
        {
            f"{BASE}/index.xml": sitemapindex("{base}/gone.xml", "{base}/broken.xml", "{base}/ok.xml"),
            f"{BASE}/gone.xml": 500,
            f"{BASE}/broken.xml": b"\x00\x01 not a sitemap \xff",
            f"{BASE}/ok.xml": urlset("{base}/ok"),
        }
    )

    async def main() -> None:
        loader = SitemapRequestLoader([f"{BASE}/index.xml"], fetch=web)
        assert [p.url for p in await drain(loader)] == [f"{BASE}/ok"]
        assert loader.completed
        loader.close()

    with caplog.at_level("INFO", logger="sitemap_crawl.loader"):
        run(main)
    assert any("gone.xml unusable: HTTP 500" in r.getMessage() for r in caplog.records)


def test_a_gzip_robots_txt_past_the_size_cap_is_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    # it inflates past the cap before its Sitemap: line: that was said at DEBUG only
    body = gzip_bytes("# filler\n" * 500 + robots("{base}/s.xml"))
    web = FakeWeb({f"{BASE}/robots.txt": body, f"{BASE}/s.xml": urlset("{base}/a")})

    async def main() -> None:
        loader = SitemapRequestLoader([f"{BASE}/robots.txt"], fetch=web, limits=Limits(max_size=1000))
        assert await drain(loader) == []
        loader.close()

    with caplog.at_level("INFO", logger="sitemap_crawl"):
        run(main)
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert [message for message in warned if "robots.txt" in message and "size limit" in message], warned


@pytest.mark.parametrize(
    ("sources", "said"),
    [
        ({"homepage": f"{BASE}/", "use_robots": False, "use_known_paths": False}, "use_robots and use_known_paths"),
        ({}, "no sitemap URL and no homepage"),
    ],
    ids=["homepage-without-its-sources", "nothing-given"],
)
def test_a_loader_with_nothing_to_fetch_says_why(
    caplog: pytest.LogCaptureFixture, sources: dict[str, Any], said: str
) -> None:
    # a homepage with robots.txt and the known paths off was "no homepage" too
    async def main() -> None:
        loader = SitemapRequestLoader(fetch=FakeWeb({}), **sources)
        assert await drain(loader) == []
        loader.close()

    with caplog.at_level("INFO", logger="sitemap_crawl"):
        run(main)
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 1 and said in warned[0], warned


class EndlessIndexes:
    """/i/N.xml is an index listing /i/N+1.xml and one urlset /p/N.xml: an endless chain."""

    def __init__(self) -> None:
        self.fetched: list[str] = []

    async def __call__(self, url: str) -> FetchedSitemap:
        self.fetched.append(url)
        await asyncio.sleep(0)
        if len(self.fetched) > 100:  # without a limit the test ends here, and fails
            raise SitemapFetchError("the chain went on")
        kind, number = url.rsplit("/", 2)[-2], int(url.rsplit("/", 1)[-1].removesuffix(".xml"))
        if kind == "i":
            body = sitemapindex(f"{BASE}/i/{number + 1}.xml", f"{BASE}/p/{number}.xml")
        else:
            body = urlset(f"{BASE}/page/{number}")
        return FetchedSitemap(url, body.encode())


@pytest.mark.parametrize("max_depth", [0, 3, 10])
def test_an_endless_chain_of_indexes_stops_at_the_depth_limit(max_depth: int, caplog: pytest.LogCaptureFixture) -> None:
    web = EndlessIndexes()

    async def main() -> list[str]:
        loader = SitemapRequestLoader([f"{BASE}/i/0.xml"], fetch=web, max_depth=max_depth)
        got = [page.url for page in await drain(loader)]
        assert loader.completed
        loader.close()
        return got

    with caplog.at_level("WARNING", logger="sitemap_crawl.loader"):
        got = run(main)
    # the start index is level 0; what level d declares is level d + 1, read while <= max_depth
    indexes = [url for url in web.fetched if "/i/" in url]
    assert indexes == [f"{BASE}/i/{n}.xml" for n in range(max_depth + 1)]
    # in the tree's order: each index lists the next one first, so the deepest page comes first
    assert got == [f"{BASE}/page/{n}" for n in reversed(range(max_depth))]
    assert any("depth limit" in record.getMessage() for record in caplog.records)


def test_the_depth_limit_comes_from_the_settings() -> None:
    from scrapy.utils.test import get_crawler

    from sitemap_crawl.loader import DEFAULT_MAX_DEPTH

    crawler = get_crawler(settings_dict={"SITEMAP_CRAWL_MAX_DEPTH": 4})
    loader = SitemapRequestLoader.from_crawler(crawler, [f"{BASE}/i/0.xml"], fetch=EndlessIndexes())
    assert loader.max_depth == 4
    assert SitemapRequestLoader([], fetch=EndlessIndexes()).max_depth == DEFAULT_MAX_DEPTH == 10


def test_a_loader_made_with_the_history_setting_says_it_writes_none(caplog: pytest.LogCaptureFixture) -> None:
    # a spider of one's own with the loader: the setting was ignored without a word
    from scrapy.utils.test import get_crawler

    crawler = get_crawler(settings_dict={"SITEMAP_CRAWL_HISTORY": "history.sqlite"})
    with caplog.at_level("WARNING"):
        SitemapRequestLoader.from_crawler(crawler, [f"{BASE}/i/0.xml"], fetch=EndlessIndexes())
    assert [record.getMessage().split(":")[0] for record in caplog.records] == ["SITEMAP_CRAWL_HISTORY"]


# -- persistence ----------------------------------------------------------------------------


def make_site(sitemaps: int = 3, per: int = 400) -> tuple[FakeWeb, list[str]]:
    routes: dict[str, str | bytes | int] = {
        f"{BASE}/index.xml": sitemapindex(*(f"{BASE}/s{i}.xml" for i in range(sitemaps)))
    }
    everything: list[str] = []
    for i in range(sitemaps):
        urls = pages(f"s{i}", per)
        routes[f"{BASE}/s{i}.xml"] = urlset(*urls)
        everything += urls
    return FakeWeb(routes), everything


def test_state_file_has_exactly_the_model(tmp_path: Path) -> None:
    web, everything = make_site()

    async def main() -> None:
        loader = SitemapRequestLoader([f"{BASE}/index.xml"], fetch=web, persist_dir=tmp_path, max_buffer_size=30)
        for _ in range(500):
            page = await loader.fetch_next_page()
            assert page is not None
            if not page.url.endswith("7"):
                loader.mark_handled(page.url)
        loader.save()
        data = json.loads((tmp_path / "sitemap_loader.json").read_text())
        assert list(data) == list(STATE_FIELDS)
        assert data["in_progress_sitemap_url"] == f"{BASE}/s1.xml"
        assert data["processed_sitemap_urls"] == [f"{BASE}/index.xml", f"{BASE}/s0.xml"]
        assert (
            data["current_sitemap_processed_urls"]
            == everything[400 : 400 + len(data["current_sitemap_processed_urls"])]
        )
        assert data["pending_sitemap_urls"] == [f"{BASE}/s2.xml"]
        assert set(data["in_progress"]) == {u for u in everything[:500] if u.endswith("7")}
        assert data["total_count"] == data["handled_count"] + len(data["url_queue"]) + len(data["in_progress"])
        assert set(data["url_queue"]) <= set(data["current_sitemap_processed_urls"]) | set(everything[:400])
        assert data["completed"] is False
        again = LoaderState.from_dict(data).to_dict()
        assert {k: sorted(v) if isinstance(v, list) else v for k, v in again.items()} == {
            k: sorted(v) if isinstance(v, list) else v for k, v in data.items()
        }
        assert not list(tmp_path.glob("*.tmp"))
        loader.close()

    run(main)


def crash_copy(src: Path, dst: Path) -> None:
    """What a kill -9 leaves behind: the files as they are (no close)."""
    shutil.copytree(src, dst)


def test_resume_after_a_crash_loses_nothing_and_repeats_only_in_progress(tmp_path: Path) -> None:
    web, everything = make_site(sitemaps=3, per=400)
    live, crashed = tmp_path / "live", tmp_path / "crashed"
    handled_first: list[str] = []
    in_flight: set[str] = set()

    async def first_run() -> None:
        loader = SitemapRequestLoader(
            [f"{BASE}/index.xml"], fetch=web, persist_dir=live, max_buffer_size=25, save_interval=3600
        )
        for _ in range(650):  # into the second sitemap
            page = await loader.fetch_next_page()
            assert page is not None
            if len(in_flight) < 8 and page.url.endswith(("3", "5")):
                in_flight.add(page.url)  # handed out, never handled
            else:
                loader.mark_handled(page.url)
                handled_first.append(page.url)
        crash_copy(live, crashed)  # the process dies here: no close(), no final save
        loader.close()

    run(first_run)
    saved = read_saved_state(crashed)
    assert saved is not None
    assert saved.in_progress == in_flight  # the journal brought the handled ones back
    assert saved.handled_count == len(handled_first)

    second: list[str] = []

    async def second_run() -> None:
        loader = SitemapRequestLoader([f"{BASE}/index.xml"], fetch=web, persist_dir=crashed, max_buffer_size=25)
        loader.open()
        restored = loader.state
        assert restored.in_progress == set()
        assert set(list(restored.url_queue)[: len(in_flight)]) == in_flight  # back at the front
        second.extend(p.url for p in await drain(loader))
        assert loader.completed and loader.is_finished()
        assert loader.handled_count == loader.total_count == len(everything)
        loader.close()

    run(second_run)
    assert set(handled_first) | set(second) == set(everything)
    assert set(handled_first) & set(second) == set()  # handled pages never come back
    assert set(second) >= in_flight
    assert len(second) == len(set(second))
    final = read_saved_state(crashed)
    assert final is not None and final.completed and not final.in_progress and not final.url_queue


def resume_after_50_pages(web: FakeWeb, tmp_path: Path, **options: Any) -> list[str]:
    """Read the site of ``homepage`` BASE with a loader persisted in tmp_path, crash after 50
    pages handled (a copy of its files), and restart from the copy: the pages it gives then."""
    live, crashed = tmp_path / "live", tmp_path / "crashed"

    def loader(directory: Path) -> SitemapRequestLoader:
        return SitemapRequestLoader(
            fetch=web, homepage=f"{BASE}/", persist_dir=directory, max_buffer_size=10, save_interval=0, **options
        )

    async def first_run() -> None:
        first = loader(live)
        for _ in range(50):
            page = await first.fetch_next_page()
            assert page is not None
            first.mark_handled(page.url)
        crash_copy(live, crashed)
        first.close()

    async def second_run() -> list[str]:
        second = loader(crashed)
        urls = [page.url for page in await drain(second)]
        assert second.completed
        second.close()
        return urls

    run(first_run)
    return list(run(second_run))


def test_a_child_under_robots_left_out_is_still_seen_after_a_restart(tmp_path: Path) -> None:
    # the saved state holds what was read, not what robots.txt led to and was left out: the
    # resumed crawl read such a child as a well-known path and queued the pages it was kept from
    web = FakeWeb(
        {
            f"{BASE}/robots.txt": robots("{base}/index.xml"),
            f"{BASE}/index.xml": sitemapindex("{base}/sitemap_news.xml", "{base}/keep.xml"),
            f"{BASE}/sitemap_news.xml": urlset("{base}/left-out"),
            f"{BASE}/keep.xml": urlset(*pages("keep", 200)),
        }
    )

    def sitemap_filter(refs: Any, _sitemap_url: str) -> Any:
        return (ref for ref in refs if "news" not in ref.url)

    resumed = resume_after_50_pages(web, tmp_path, sitemap_filter=sitemap_filter)  # (50 pages: into keep.xml)

    assert sorted(resumed) == sorted(pages("keep", 200)[50:])
    assert web.fetched[f"{BASE}/sitemap_news.xml"] == 0


def test_a_restart_in_fallback_mode_does_not_probe_the_known_paths(tmp_path: Path) -> None:
    # the count of what robots.txt declared was not saved: after a restart robots.txt
    # seemed to declare nothing, every well-known path was probed and its pages queued
    web = FakeWeb(
        {
            f"{BASE}/robots.txt": robots("{base}/keep.xml"),
            f"{BASE}/keep.xml": urlset(*pages("keep", 200)),
            f"{BASE}/sitemap.xml": urlset("{base}/only-at-a-known-path"),
        }
    )

    resumed = resume_after_50_pages(web, tmp_path, known_paths_mode="fallback")

    assert sorted(resumed) == sorted(pages("keep", 200)[50:])
    assert web.fetched[f"{BASE}/sitemap.xml"] == 0


def test_a_journal_that_cannot_be_written_is_said_once_and_the_loader_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # a full disk: the journal write raised out of mark_handled (in a Scrapy crawl, from a
    # callback: no page was handed out again, and the crawl hung)
    web, everything = make_site(sitemaps=2, per=300)

    async def main() -> list[str]:
        loader = SitemapRequestLoader([f"{BASE}/index.xml"], fetch=web, persist_dir=tmp_path, max_buffer_size=20)
        got = [page.url for page in await drain(loader)]
        loader.close()
        return got

    with file_size_limit(4096):  # the journal and the snapshots past 4 KiB cannot be written
        got = run(main)
    assert got == everything
    journal = [record for record in caplog.records if "sitemap loader's journal" in record.getMessage()]
    assert len(journal) == 1 and journal[0].levelname == "ERROR"
    assert "File too large" in journal[0].getMessage()
    snapshots = [
        record for record in caplog.records if "Could not save the sitemap loader state" in record.getMessage()
    ]
    assert len(snapshots) == 1  # (it was one a snapshot: each sitemap's end, every few seconds)


def test_a_log_interval_of_0_logs_the_last_progress_line_only(caplog: pytest.LogCaptureFixture) -> None:
    # LOGSTATS_INTERVAL=0 (Scrapy's stats line off) gave one progress line a page
    web, everything = make_site(sitemaps=2, per=50)

    async def main() -> None:
        loader = SitemapRequestLoader([f"{BASE}/index.xml"], fetch=web, log_interval=0)
        assert len(await drain(loader)) == len(everything)
        loader.close()

    with caplog.at_level(logging.INFO):
        run(main)
    assert sum("Sitemap crawl progress" in record.getMessage() for record in caplog.records) == 1


def test_resume_rereads_the_current_sitemap_skipping_what_was_queued(tmp_path: Path) -> None:
    web, everything = make_site(sitemaps=2, per=300)

    async def first_run() -> None:
        loader = SitemapRequestLoader([f"{BASE}/index.xml"], fetch=web, persist_dir=tmp_path, max_buffer_size=20)
        for _ in range(100):
            page = await loader.fetch_next_page()
            assert page is not None
            loader.mark_handled(page.url)
        loader.close()  # a clean stop (Ctrl-C)

    run(first_run)
    data = json.loads((tmp_path / "sitemap_loader.json").read_text())
    assert data["in_progress_sitemap_url"] == f"{BASE}/s0.xml"
    assert data["handled_count"] == 100 and not data["in_progress"]
    assert len(data["current_sitemap_processed_urls"]) == 100 + len(data["url_queue"])
    fetched_before = web.fetched[f"{BASE}/s0.xml"]

    async def second_run() -> list[str]:
        loader = SitemapRequestLoader([f"{BASE}/index.xml"], fetch=web, persist_dir=tmp_path, max_buffer_size=20)
        got = [p.url for p in await drain(loader)]
        loader.close()
        return got

    second = run(second_run)
    assert web.fetched[f"{BASE}/s0.xml"] == fetched_before + 1
    assert second == everything[100:]


def test_restored_pages_keep_their_item_and_come_out_marked(tmp_path: Path) -> None:
    web = FakeWeb(
        {
            f"{BASE}/s.xml": urlset(
                *({"loc": f"{BASE}/p/{i}", "lastmod": "2024-02-03", "priority": 0.7} for i in range(50))
            )
        }
    )

    async def first_run() -> None:
        loader = SitemapRequestLoader([f"{BASE}/s.xml"], fetch=web, persist_dir=tmp_path, max_buffer_size=10)
        for _ in range(5):
            await loader.fetch_next_page()  # in progress, not handled
        loader.close()

    run(first_run)

    async def second_run() -> None:
        loader = SitemapRequestLoader([f"{BASE}/s.xml"], fetch=web, persist_dir=tmp_path, max_buffer_size=10)
        entry = await loader.next_queued()
        assert entry is not None and entry.restored
        assert entry.page.last_modified == "2024-02-03" and entry.page.priority == 0.7
        assert entry.page.sitemap_url == f"{BASE}/s.xml"
        rest = await drain(loader)
        loader.mark_handled(entry.page.url)
        assert 1 + len(rest) == 50
        loader.close()

    run(second_run)


def test_a_page_of_two_sitemaps_is_in_progress_once_at_a_time_and_both_copies_survive_a_restart(
    tmp_path: Path,
) -> None:
    # in_progress is a set of URLs: two copies of one URL in progress at once were saved as
    # one, and the page items by URL as one (the restart lost a copy, and total_count)
    shared = f"{BASE}/shared"
    web = FakeWeb(
        {
            f"{BASE}/a.xml": urlset({"loc": shared, "priority": 0.1}, {"loc": f"{BASE}/a1"}),
            f"{BASE}/b.xml": urlset({"loc": shared, "priority": 0.9}, {"loc": f"{BASE}/b1"}, {"loc": f"{BASE}/b2"}),
        }
    )
    sitemaps = [f"{BASE}/a.xml", f"{BASE}/b.xml"]

    async def first_run() -> None:
        loader = SitemapRequestLoader(sitemaps, fetch=web, persist_dir=tmp_path)
        handed = [await loader.fetch_next_page() for _ in range(4)]
        # b.xml's copy of the shared page waits while a.xml's is in progress
        assert [(page.url, page.sitemap_url) for page in handed if page] == [
            (shared, f"{BASE}/a.xml"),
            (f"{BASE}/a1", f"{BASE}/a.xml"),
            (f"{BASE}/b1", f"{BASE}/b.xml"),
            (f"{BASE}/b2", f"{BASE}/b.xml"),
        ]
        state = loader.state
        assert state.in_progress == {shared, f"{BASE}/a1", f"{BASE}/b1", f"{BASE}/b2"}
        assert list(state.url_queue) == [shared] and state.total_count == 5
        loader.mark_handled(f"{BASE}/a1")
        loader.close()  # stopped with a.xml's copy in progress, b.xml's waiting

    run(first_run)

    async def second_run() -> None:
        loader = SitemapRequestLoader(sitemaps, fetch=web, persist_dir=tmp_path)
        got = await drain(loader)
        assert sorted((page.url, page.sitemap_url, page.priority) for page in got) == [
            (f"{BASE}/b1", f"{BASE}/b.xml", 0.5),
            (f"{BASE}/b2", f"{BASE}/b.xml", 0.5),
            (shared, f"{BASE}/a.xml", 0.1),
            (shared, f"{BASE}/b.xml", 0.9),
        ]
        assert (loader.handled_count, loader.total_count, loader.completed) == (5, 5, True)
        loader.close()

    run(second_run)


@pytest.mark.parametrize("in_a_save", [False, True], ids=["kill", "kill-between-pages-and-state"])
def test_after_a_crash_each_copy_of_a_page_of_two_sitemaps_keeps_its_own_item(
    tmp_path: Path, in_a_save: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the journal took a handled URL out of in_progress / url_queue but left its copy's item
    # first in the pages file: the other sitemap's copy came back with the handled copy's item.
    # And a kill inside a save, the new pages file written and the state not yet, resumed the
    # previous state with the new snapshot's items.
    web = FakeWeb(
        {
            f"{BASE}/a.xml": urlset(*({"loc": url, "priority": 0.1} for url in pages("p", 6))),
            f"{BASE}/b.xml": urlset(*({"loc": url, "priority": 0.9} for url in pages("p", 6))),
        }
    )
    sitemaps = [f"{BASE}/a.xml", f"{BASE}/b.xml"]
    live, crashed = tmp_path / "live", tmp_path / "crashed"
    handed: list[tuple[str, str]] = []

    async def first_run() -> None:
        loader = SitemapRequestLoader(sitemaps, fetch=web, persist_dir=live, save_interval=3600)
        for _ in range(5):
            page = await loader.fetch_next_page()
            assert page is not None
            handed.append((page.url, page.sitemap_url))
        while not loader.completed:
            await asyncio.sleep(0)  # the snapshot: a's p/0..4 in progress, a's p/5 and b's copies waiting
        for url in pages("p", 3):
            loader.mark_handled(url)  # a's copies, out of in_progress
        for _ in range(4):
            page = await loader.fetch_next_page()
            assert page is not None
            handed.append((page.url, page.sitemap_url))
        loader.mark_handled(f"{BASE}/p/1")  # b's copy, out of url_queue
        if in_a_save:

            def write(path: Path, data: bytes, before_replace: Callable[[], None] | None = None) -> None:
                if path.name == "sitemap_loader.json" and not crashed.exists():
                    crash_copy(live, crashed)  # the pages file written, the state not yet
                write_atomically(path, data, before_replace)

            monkeypatch.setattr(store, "write_atomically", write)
            loader.save()
        else:
            crash_copy(live, crashed)
        loader.close()

    run(first_run)
    handled = {(url, f"{BASE}/a.xml") for url in pages("p", 3)} | {(f"{BASE}/p/1", f"{BASE}/b.xml")}
    assert handled <= set(handed)

    async def second_run() -> list[tuple[str, str, float]]:
        loader = SitemapRequestLoader(sitemaps, fetch=web, persist_dir=crashed)
        got = await drain(loader)
        loader.close()
        return sorted((page.url, page.sitemap_url, page.priority) for page in got)

    expected = {(url, sitemap) for url in pages("p", 6) for sitemap in sitemaps} - handled
    assert run(second_run) == sorted(
        (url, sitemap, 0.1 if sitemap.endswith("a.xml") else 0.9) for url, sitemap in expected
    )


def test_a_consumer_that_marks_pages_later_gets_every_copy_without_waiting() -> None:
    # the copy held back goes once nothing else is left, not only once its twin is handled
    shared = f"{BASE}/shared"
    web = FakeWeb({f"{BASE}/a.xml": urlset(shared), f"{BASE}/b.xml": urlset(shared)})

    async def main() -> None:
        loader = SitemapRequestLoader([f"{BASE}/a.xml", f"{BASE}/b.xml"], fetch=web)
        got = await asyncio.wait_for(drain(loader, handle=False), 5)
        assert [page.sitemap_url for page in got] == [f"{BASE}/a.xml", f"{BASE}/b.xml"]
        loader.close()

    run(main)


def test_a_completed_job_does_nothing_on_restart(tmp_path: Path) -> None:
    web, _ = make_site(sitemaps=1, per=10)

    async def once() -> int:
        loader = SitemapRequestLoader([f"{BASE}/index.xml"], fetch=web, persist_dir=tmp_path)
        count = len(await drain(loader))
        loader.close()
        return count

    assert run(once) == 10
    assert run(once) == 0
    assert web.fetched[f"{BASE}/s0.xml"] == 1


def test_an_unreadable_state_is_set_aside(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    web, _ = make_site(sitemaps=1, per=10)
    (tmp_path / "sitemap_loader.json").write_text('{"url_queue": [1, 2]}')

    async def main() -> None:
        loader = SitemapRequestLoader([f"{BASE}/index.xml"], fetch=web, persist_dir=tmp_path)
        assert len(await drain(loader)) == 10
        loader.close()

    run(main)
    assert list(tmp_path.glob("sitemap_loader.json.unreadable-*"))
    assert any("unreadable" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    "data",
    [
        [],
        {"url_queue": []},
        {**{key: [] for key in STATE_FIELDS}, "handled_count": -1},
        {
            **{key: [] for key in STATE_FIELDS},
            "in_progress_sitemap_url": None,
            "handled_count": 0,
            "total_count": 0,
            "completed": "no",
        },
    ],
)
def test_state_validation(data: Any) -> None:
    with pytest.raises(ValueError):
        LoaderState.from_dict(data)


def test_an_error_in_one_sitemap_does_not_stop_the_others(caplog: pytest.LogCaptureFixture) -> None:
    web = FakeWeb(
        {
            f"{BASE}/index.xml": sitemapindex("{base}/bad.xml", "{base}/good.xml"),
            f"{BASE}/bad.xml": urlset("{base}/bad/1", "{base}/bad/2"),
            f"{BASE}/good.xml": urlset("{base}/good/1"),
        }
    )

    def page_filter(items: Any, sitemap_url: str) -> Any:
        for page in items:
            if page.url.endswith("/bad/2"):
                raise ValueError("a bug in a filter")
            yield page

    async def main() -> None:
        loader = SitemapRequestLoader([f"{BASE}/index.xml"], fetch=web, page_filter=page_filter)
        assert [p.url for p in await drain(loader)] == [f"{BASE}/bad/1", f"{BASE}/good/1"]
        assert loader.completed
        loader.close()

    run(main)
    assert any("Error while reading the sitemap" in r.getMessage() for r in caplog.records)


# -- several homepages ------------------------------------------------------------------------


def three_sites() -> tuple[FakeWeb, dict[str, list[str]]]:
    """a.test, b.test, c.test: robots.txt -> a urlset each; b's robots.txt also names a's
    sitemap (read once per crawl); c has no robots.txt, only /sitemap.xml."""
    routes: dict[str, str | bytes | int] = {}
    expected: dict[str, list[str]] = {}
    for name, count in (("a", 120), ("b", 80)):
        urls = [f"https://{name}.test/p/{i}" for i in range(count)]
        routes[f"https://{name}.test/map.xml"] = urlset(*urls)
        expected[name] = urls
    routes["https://a.test/robots.txt"] = robots("https://a.test/map.xml")
    routes["https://b.test/robots.txt"] = robots("https://b.test/map.xml", "https://a.test/map.xml")
    expected["c"] = [f"https://c.test/q/{i}" for i in range(50)]
    routes["https://c.test/sitemap.xml"] = urlset(*expected["c"])
    return FakeWeb(routes), expected


HOMEPAGES = ["https://a.test/", "https://b.test/", "https://c.test/"]


def test_several_homepages_are_mapped_one_after_another() -> None:
    web, expected = three_sites()

    async def main() -> list[str]:
        loader = SitemapRequestLoader(fetch=web, homepage=HOMEPAGES[0], homepages=[*HOMEPAGES[1:], HOMEPAGES[0]])
        assert loader.homepages == HOMEPAGES  # each site once
        got = [p.url for p in await drain(loader)]
        assert loader.completed and loader.handled_count == loader.total_count == len(got)
        loader.close()
        return got

    got = run(main)
    assert got == expected["a"] + expected["b"] + expected["c"]  # site by site, in order
    assert web.fetched["https://a.test/map.xml"] == 1  # b's robots.txt names it again: read once
    fetched = list(web.fetched)
    # each site's robots.txt and well-known paths come before the next site's
    assert fetched.index("https://a.test/sitemap.xml") < fetched.index("https://b.test/robots.txt")
    assert fetched.index("https://b.test/sitemap.xml") < fetched.index("https://c.test/robots.txt")


def test_sites_not_started_wait_in_the_state_as_their_homepages(tmp_path: Path) -> None:
    web, expected = three_sites()
    handled: list[str] = []

    async def first_run() -> None:
        loader = SitemapRequestLoader(
            fetch=web, homepages=HOMEPAGES, persist_dir=tmp_path, max_buffer_size=10, save_interval=3600
        )
        for _ in range(150):  # into b's urlset
            page = await loader.fetch_next_page()
            assert page is not None
            loader.mark_handled(page.url)
            handled.append(page.url)
        loader.save()
        state = loader.state
        assert state.in_progress_sitemap_url == "https://b.test/map.xml"
        assert list(state.pending_sitemap_urls) == ["https://c.test/"]  # c has not started
        assert "https://a.test/map.xml" in state.processed_sitemap_urls
        crash_copy(tmp_path, tmp_path.parent / "crashed")  # a kill -9 here
        loader.close()

    run(first_run)

    async def second_run() -> list[str]:
        loader = SitemapRequestLoader(fetch=web, homepages=HOMEPAGES, persist_dir=tmp_path.parent / "crashed")
        loader.open()
        assert loader.progress().startswith("site 2 of 3 (https://b.test/); ")
        got = [p.url for p in await drain(loader)]
        assert loader.completed
        loader.close()
        return got

    fetched_a = web.fetched["https://a.test/map.xml"]
    second = run(second_run)
    everything = expected["a"] + expected["b"] + expected["c"]
    assert handled + second == everything  # nothing lost, nothing twice
    assert web.fetched["https://a.test/map.xml"] == fetched_a  # the finished site is not read again
    assert web.fetched["https://c.test/sitemap.xml"] == 1
    # b was being mapped: it goes on (its robots.txt is not read again, its known paths are probed once)
    assert web.fetched["https://b.test/robots.txt"] == 1 and web.fetched["https://b.test/sitemap.xml"] == 1
