"""A bound on the work a crawl process has downloaded but not yet passed on.

The ``sitemaps`` spider turns Scrapy's own brake off (SCRAPER_SLOT_MAX_ACTIVE_SIZE counts
body bytes, and one large sitemap would stop every other download), so nothing slowed
downloads when the item pipelines fell behind: a helper crawl process whose pages wait
for the main process kept downloading, and the responses waiting for their pages to be
passed on piled up (2,273 of them and 300 MiB after two minutes of a 10,000-site run).
:class:`SendValve` holds new sitemap requests back while more than ``limit`` responses
are still being processed, and lets them go, in order, as the backlog drains.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

RETRY_AFTER = 0.002
"""Seconds between two looks at the backlog while requests are held back (10,000 sites with
no delay: 254 s with 20 ms, 177 s with 2 ms; the looks cost nothing measurable)."""


class SendValve(Generic[T]):
    """Sends items to ``send`` while ``backlog()`` is under ``limit``; holds them, in order, otherwise."""

    def __init__(self, limit: int, backlog: Callable[[], int], send: Callable[[T], None]) -> None:
        self.limit = max(1, limit)
        self._backlog = backlog
        self._send = send
        self._held: deque[T] = deque()
        self._timer: asyncio.TimerHandle | None = None
        self.times_held = 0
        """How many items had to wait (for the stats)."""

    @property
    def held(self) -> int:
        """Items waiting for the backlog to drain."""
        return len(self._held)

    def submit(self, item: T) -> None:
        """Send ``item`` now if the backlog allows, else once it has drained."""
        if not self._held and self._backlog() < self.limit:
            self._send(item)
            return
        self._held.append(item)
        self.times_held += 1
        self._schedule()

    def close(self) -> None:
        """Stop looking (the spider is closing); held items are dropped with it."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _schedule(self) -> None:
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(RETRY_AFTER, self._release)

    def _release(self) -> None:
        self._timer = None
        while self._held and self._backlog() < self.limit:
            self._send(self._held.popleft())
        if self._held:
            self._schedule()
