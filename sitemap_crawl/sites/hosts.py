"""Politeness per host: at most N requests in flight to one host name, the rest waiting.

Scrapy's CONCURRENT_REQUESTS_PER_DOMAIN is not a hard bound when many requests for one
host reach the downloader at once (Scrapy 2.19 starts every queued download of a slot in
one pass: 40 requests handed over together were seen 16 to 23 at a time by the server,
with a limit of 8); the ``sitemaps`` spider holds its sitemap requests here until the
host has room.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar
from urllib.parse import urlsplit

T = TypeVar("T")


def host_of(url: str) -> str:
    """The host name of a URL, lower-cased (what Scrapy keys its download slots by)."""
    return (urlsplit(url).hostname or "").lower()


class HostGate(Generic[T]):
    """Sends items to ``send`` with at most ``per_host`` in flight per host, in order per host."""

    def __init__(self, per_host: int, send: Callable[[T], None]) -> None:
        self.per_host = max(1, per_host)
        self._send = send
        self._in_flight: dict[str, int] = {}
        self._waiting: dict[str, deque[T]] = {}
        self.most_in_flight = 0
        """The largest number in flight to one host so far (for tests and stats)."""

    def submit(self, host: str, item: T) -> None:
        """Send ``item`` now if ``host`` has room, else when it has."""
        if self._in_flight.get(host, 0) < self.per_host and host not in self._waiting:
            self._start(host, item)
        else:
            self._waiting.setdefault(host, deque()).append(item)

    def release(self, host: str) -> None:
        """One item of ``host`` is done: the next waiting one of that host goes."""
        left = self._in_flight.get(host, 0) - 1
        if left > 0:
            self._in_flight[host] = left
        else:
            self._in_flight.pop(host, None)
        waiting = self._waiting.get(host)
        if waiting:
            item = waiting.popleft()
            if not waiting:
                del self._waiting[host]
            self._start(host, item)

    def in_flight(self, host: str) -> int:
        return self._in_flight.get(host, 0)

    def _start(self, host: str, item: T) -> None:
        count = self._in_flight.get(host, 0) + 1
        self._in_flight[host] = count
        self.most_in_flight = max(self.most_in_flight, count)
        self._send(item)
