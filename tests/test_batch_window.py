"""The spider lets at most BATCHES_PER_SITEMAP page batches of one sitemap into Scrapy's
item processing (spiders/batch_window.py): the window itself, the tracker that closes it
on Scrapy's item signals (or when a batch is freed), and a real crawl through a slow
pipeline."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from scrapy import signals
from scrapy.signalmanager import SignalManager

from sitemap_crawl.items import PageBatch, SitemapPage
from sitemap_crawl.spiders.batch_window import BATCHES_PER_SITEMAP, BatchTracker, BatchWindow
from tests.support.pipelines import MOST_IN_PROCESS_STAT
from tests.support.sitemaps import robots, urlset


def _batch(url: str = "http://example.com/sitemap.xml") -> PageBatch:
    return PageBatch(url, (0,), [SitemapPage("http://example.com/a", url)])


def _tracker() -> tuple[BatchTracker, SignalManager]:
    manager = SignalManager()
    return BatchTracker(SimpleNamespace(signals=manager)), manager  # type: ignore[arg-type]


def test_wait_for_room_returns_at_once_below_the_size() -> None:
    async def scenario() -> None:
        window = BatchWindow(size=2)
        window.opened()
        await asyncio.wait_for(window.wait_for_room(), 1)

    asyncio.run(scenario())


def test_wait_for_room_waits_until_a_batch_is_done() -> None:
    async def scenario() -> list[str]:
        window = BatchWindow(size=2)
        window.opened()
        window.opened()
        events: list[str] = []

        async def producer() -> None:
            await window.wait_for_room()
            events.append("room")

        task = asyncio.create_task(producer())
        await asyncio.sleep(0.01)
        events.append("closing")
        window.closed()
        await asyncio.wait_for(task, 1)
        return events

    assert asyncio.run(scenario()) == ["closing", "room"]


@pytest.mark.parametrize("signal", [signals.item_scraped, signals.item_dropped, signals.item_error])
def test_a_batch_is_done_when_scrapy_signals_it(signal: Any) -> None:
    tracker, manager = _tracker()
    window = BatchWindow()
    batch = tracker.track(_batch(), window)
    assert window.open == 1
    manager.send_catch_log(signal, item=batch, response=None, spider=None, exception=None, failure=None)
    assert window.open == 0
    manager.send_catch_log(signals.item_scraped, item=batch, response=None, spider=None)
    assert window.open == 0  # counted once


def test_a_batch_no_signal_reports_is_done_when_freed() -> None:
    tracker, _ = _tracker()
    window = BatchWindow()
    tracker.track(_batch(), window)  # nobody keeps it
    gc.collect()
    assert window.open == 0


def test_other_items_leave_the_windows_alone() -> None:
    tracker, manager = _tracker()
    window = BatchWindow()
    kept = tracker.track(_batch(), window)
    manager.send_catch_log(signals.item_scraped, item=_batch(), response=None, spider=None)
    manager.send_catch_log(signals.item_scraped, item={"url": "x"}, response=None, spider=None)
    assert window.open == 1
    assert kept.pages


def test_a_large_sitemap_goes_through_a_slow_pipeline_a_few_batches_at_a_time(
    fixture_site: Any, crawl: Any, tmp_path: Path
) -> None:
    pages = [f"/page/{n}" for n in range(3_000)]
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/big.xml"),
            "/big.xml": urlset(*(f"{{base}}{path}" for path in pages)),
        }
    )
    result = crawl(
        {"homepage": site.base, "use_known_paths": False},
        settings={
            "SITEMAP_CRAWL_BATCH_SIZE": 100,
            "ITEM_PIPELINES": {"tests.support.pipelines.SlowBatchPipeline": 500},
            "LOG_LEVEL": "INFO",
        },
    ).assert_ok()
    assert result.urls() == [site.url(path) for path in pages]
    # Scrapy alone would take up to 16 (CONCURRENT_ITEMS) of them at once
    assert result.stats[MOST_IN_PROCESS_STAT] == BATCHES_PER_SITEMAP
