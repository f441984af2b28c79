"""Garbage-collector tuning for crawls that create millions of short-lived page objects.

Python's cyclic collector runs a full collection whenever enough objects have
survived, scanning every live object of Scrapy and of the pages in flight.
Measured on 200,000 pages this costs about a third of the crawl's CPU time.
Page objects hold no reference cycles, so collecting less often is safe: the
objects alive at spider start are frozen out of collections and the young
generation threshold is raised while the spider runs; both are undone at close.
"""

from __future__ import annotations

import gc

from sitemap_crawl.memory import tune_malloc

_THRESHOLDS = (50_000, 20, 10)


class GcTuning:
    """Apply on spider open, undo on spider close (idempotent)."""

    def __init__(self) -> None:
        self._saved: tuple[int, int, int] | None = None

    def apply(self) -> None:
        if self._saved is not None:
            return
        self._saved = gc.get_threshold()
        tune_malloc()
        gc.freeze()
        gc.set_threshold(*(max(mine, theirs) for mine, theirs in zip(_THRESHOLDS, self._saved, strict=True)))

    def undo(self) -> None:
        if self._saved is None:
            return
        gc.set_threshold(*self._saved)
        gc.unfreeze()
        self._saved = None
