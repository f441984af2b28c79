"""Big crawls of SitemapSpider against a fast local site: kill -9 in the middle of a
200,000-page crawl and resume with the same JOBDIR; a consumer throttled to a few pages per
second on a 50,000-page sitemap. These are the slow tests of the loader (about 3 minutes
together on 2 cores)."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from sitemap_crawl.loader import STATE_FIELDS, LoaderState, read_saved_state
from tests.support.fixture_server import FixtureServer
from tests.support.sitemaps import urlset
from tests.support.spiders import (
    LEAN_SETTINGS,
    read_lines,
    recording_spider,
    run_spider,
    serve_paged_sitemaps,
    sitemap_spider,
    start_spider,
    wait_for_lines,
)

SITEMAPS = 4
FEED_EXPORTER = "scrapy.extensions.feedexport.FeedExporter"
PER_SITEMAP = int(os.environ.get("SITEMAP_CRAWL_KILL_TEST_PER_SITEMAP", "50000"))
"""4 x 50,000 = the 200,000-page site of the issue (smaller only to try the test quickly)."""
MAX_IN_FLIGHT = 64
SATURATING = {"CONCURRENT_REQUESTS": 8, "CONCURRENT_REQUESTS_PER_DOMAIN": 8}
"""A downloader that fills up before MAX_IN_FLIGHT, so that Scrapy pulls the lazy start
requests without waiting a loop turn for each (on a loaded machine, a localhost crawl is
latency-bound otherwise)."""


def check_state_file(data: dict[str, object], sitemap_urls: list[str], pages: dict[str, set[str]]) -> LoaderState:
    """The persisted state is exactly the documented model (docs/loader.md), and consistent."""
    assert list(data) == list(STATE_FIELDS)
    state = LoaderState.from_dict(data)
    for name in ("pending_sitemap_urls", "processed_sitemap_urls", "current_sitemap_processed_urls"):
        assert isinstance(data[name], list)
    assert isinstance(data["url_queue"], list) and isinstance(data["in_progress"], list)
    assert len(set(data["in_progress"])) == len(data["in_progress"])  # type: ignore[arg-type]
    assert state.total_count == state.handled_count + len(state.url_queue) + len(state.in_progress)
    assert not state.completed
    current = state.in_progress_sitemap_url
    assert current is not None and current in pages
    assert state.current_sitemap_processed_urls <= pages[current]
    assert not (set(state.pending_sitemap_urls) & state.processed_sitemap_urls)
    done = state.processed_sitemap_urls - {sitemap_urls[0]}
    assert list(state.pending_sitemap_urls) == [url for url in sitemap_urls[1:] if url not in done and url != current]
    listed_so_far = state.current_sitemap_processed_urls.union(*(pages[url] for url in done))
    assert set(state.url_queue) | state.in_progress <= listed_so_far
    assert state.handled_count + len(state.url_queue) + len(state.in_progress) == sum(
        len(pages[url]) for url in done
    ) + len(state.current_sitemap_processed_urls)
    return state


@pytest.mark.timeout(1800)
def test_kill_9_in_the_middle_of_200000_pages_then_resume(tmp_path: Path) -> None:
    with FixtureServer(pages="/p/") as site:
        sitemaps = serve_paged_sitemaps(site, [PER_SITEMAP] * SITEMAPS)
        sitemap_urls = [site.url("/index.xml"), *sitemaps]
        pages = {url: set(urls) for url, urls in sitemaps.items()}
        everything = set().union(*pages.values())
        assert len(everything) == SITEMAPS * PER_SITEMAP

        jobdir = tmp_path / "job"
        handled_file = tmp_path / "handled.txt"
        source = recording_spider("big", site.url("/index.xml"), handled_file)
        settings = {
            **LEAN_SETTINGS,
            **SATURATING,
            "JOBDIR": jobdir,
            "SITEMAP_CRAWL_LOADER_MAX_IN_FLIGHT": MAX_IN_FLIGHT,
            "SITEMAP_CRAWL_LOADER_SAVE_INTERVAL": 2,
            "RETRY_TIMES": 5,
        }
        with start_spider(tmp_path / "run1", source, settings=settings, feed=False) as first:
            kill_at = int(PER_SITEMAP * 1.4)  # in the middle of the second sitemap
            reached = wait_for_lines(handled_file, kill_at, first, timeout=600)
            first.kill()
            first.process.wait()
        assert reached >= kill_at, first.log()[-3000:]
        first_run = read_lines(handled_file)
        assert len(first_run) == len(set(first_run))

        # what kill -9 left: the state file is exactly the model and consistent
        snapshot = json.loads((jobdir / "sitemap_loader.json").read_text("utf-8"))
        check_state_file(snapshot, sitemap_urls, pages)
        resumable = read_saved_state(jobdir)
        assert resumable is not None
        check_state_file(resumable.to_dict(), sitemap_urls, pages)
        assert len(resumable.in_progress) <= MAX_IN_FLIGHT
        # the pages the saved state counts as handled (each URL is in one sitemap here)
        queued = resumable.current_sitemap_processed_urls.union(
            *(pages[url] for url in resumable.processed_sitemap_urls if url in pages)
        )
        handled = queued - set(resumable.url_queue) - resumable.in_progress
        assert len(handled) == resumable.handled_count
        assert handled <= set(first_run)  # nothing counted as handled before its callback ran
        # in flight at the kill: processed by the callback, not yet recorded as handled
        in_flight = set(first_run) - handled
        assert len(in_flight) <= MAX_IN_FLIGHT

        second = run_spider(tmp_path / "run2", source, settings=settings, feed=False, timeout=1200)
        assert second.returncode == 0, second.log[-3000:]
        assert "Traceback" not in second.log
        assert "Resuming the sitemap crawl saved in" in second.log
        all_lines = read_lines(handled_file)
        second_run = all_lines[len(first_run) :]
        assert len(second_run) == len(set(second_run))

        # every page handled at least once
        assert set(first_run) | set(second_run) == everything
        # duplicates only among the pages in flight at the kill (and all of those are redone)
        duplicates = set(first_run) & set(second_run)
        assert duplicates == in_flight
        assert len(all_lines) == len(everything) + len(duplicates)
        # the first run's sitemaps were not read again, the one in progress was
        assert site.hits("/s0.xml") == 1 and site.hits("/s1.xml") == 2
        assert site.hits("/s2.xml") == site.hits("/s3.xml") == 1

        final = read_saved_state(jobdir)
        assert final is not None and final.completed
        assert final.handled_count == final.total_count == len(everything)
        assert not final.in_progress and not final.url_queue and not final.pending_sitemap_urls
        assert Counter(all_lines).most_common(1)[0][1] <= 2


@pytest.mark.timeout(600)
def test_a_consumer_throttled_to_a_few_pages_per_second_gets_all_50000(tmp_path: Path) -> None:
    with FixtureServer(pages="/p/") as site:
        urls = [site.url(f"/p/{i}") for i in range(50_000)]
        site["/big.xml"] = urlset(*urls).encode()
        handled_file = tmp_path / "handled.txt"
        source = recording_spider(
            "throttled",
            site.url("/big.xml"),
            handled_file,
            imports="import asyncio, json, time",
            is_async=True,
            members="""
            throttle_until = None
            gate = None
            largest_queue = 0
            largest_in_progress = 0

            def closed(self, reason):
                self.logger.info("largest %s", json.dumps([self.largest_queue, self.largest_in_progress]))
            """,
            parse="""
            if self.throttle_until is None:
                self.throttle_until = time.monotonic() + 8
                self.gate = asyncio.Lock()
            if time.monotonic() < self.throttle_until:
                async with self.gate:  # one page at a time, 4 per second
                    await asyncio.sleep(0.25)
            loader = self.sitemap_loader
            self.largest_queue = max(self.largest_queue, len(loader._queue))
            self.largest_in_progress = max(self.largest_in_progress, loader.in_progress_count)
            """,
        )
        settings = {
            **LEAN_SETTINGS,
            **SATURATING,
            "SITEMAP_CRAWL_LOADER_QUEUE_SIZE": 500,
            "SITEMAP_CRAWL_LOADER_MAX_IN_FLIGHT": 40,
        }
        with start_spider(tmp_path / "run", source, settings=settings, feed=False) as running:
            # while the consumer crawls along, the sitemap has been downloaded once and for all
            assert wait_for_lines(handled_file, 5, running, timeout=60) >= 5
            assert site.hits("/big.xml") == 1
            del site["/big.xml"]  # a second download would now fail
            result = running.wait(500)
        assert result.returncode == 0, result.log[-3000:]
        assert "Traceback" not in result.log
        handled = read_lines(handled_file)
        assert sorted(handled) == sorted(urls)
        assert site.hits("/big.xml") == 1
        largest = json.loads(result.log.split("largest ", 1)[1].split("\n", 1)[0])
        assert largest[0] <= 500 and largest[1] <= 40
        assert result.stats["sitemap_crawl/loader/pages_handled"] == 50_000


def test_a_page_counted_handled_has_its_row_in_the_feed_after_kill_9(tmp_path: Path) -> None:
    # the feed exporter keeps rows in its file's buffer: pages journaled as handled lost
    # their rows at a kill -9, and the restart did not visit them again
    with FixtureServer(pages="/p/") as site:
        (urls,) = serve_paged_sitemaps(site, [3000]).values()
        jobdir = tmp_path / "job"
        source = sitemap_spider("rows", sitemap_urls=[site.url("/index.xml")], parse='yield {"url": response.url}')
        settings = {
            **LEAN_SETTINGS,
            "EXTENSIONS_BASE": {"scrapy.extensions.corestats.CoreStats": 0, FEED_EXPORTER: 0},
            "JOBDIR": jobdir,
            "SITEMAP_CRAWL_LOADER_SAVE_INTERVAL": 3600,  # one snapshot: the journal keeps every page
            "CONCURRENT_REQUESTS": 2,
        }
        journal = jobdir / "sitemap_loader.handled"
        with start_spider(tmp_path / "run1", source, settings=settings) as first:
            reached = wait_for_lines(journal, 300, first, timeout=120)
            first.kill()
            first.process.wait()
        assert reached >= 300, first.log()[-3000:]
        handled = set(read_lines(journal))
        rows = {json.loads(line)["url"] for line in read_lines(tmp_path / "run1" / "items.jsonl")}
        assert handled <= rows, f"{len(handled - rows)} pages handled without their row"
        assert handled <= set(urls)
