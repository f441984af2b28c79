"""The garbage-collector tuning a crawl applies while it runs, shared by the crawls of one process."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from sitemap_crawl.gctuning import GcTuning


@pytest.fixture
def thresholds() -> Iterator[tuple[int, int, int]]:
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield gc.get_threshold()
    gc.set_threshold(*before)


def test_applied_while_open_and_undone_at_close(thresholds: tuple[int, int, int]) -> None:
    tuning = GcTuning()
    tuning.apply()
    tuning.apply()  # idempotent
    assert gc.get_threshold()[0] == 50_000
    tuning.undo()
    tuning.undo()
    assert gc.get_threshold() == thresholds


def test_two_crawls_of_one_process_share_it_until_the_last_closes(thresholds: tuple[int, int, int]) -> None:
    # the second saved the first's tuned values and restored them; the first undid it under the second
    first, second = GcTuning(), GcTuning()
    first.apply()
    second.apply()
    first.undo()
    assert gc.get_threshold()[0] == 50_000  # the second still runs
    second.undo()
    assert gc.get_threshold() == thresholds
