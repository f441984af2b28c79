"""Politeness per download slot: at most N requests in flight to one host (or one IP), the
rest waiting.

Scrapy's CONCURRENT_REQUESTS_PER_DOMAIN is not a hard bound when many requests for one
host reach the downloader at once (Scrapy 2.19 starts every queued download of a slot in
one pass: 40 requests handed over together were seen 16 to 23 at a time by the server,
with a limit of 8); the ``sitemaps`` spider holds its sitemap requests here until the
slot has room. Slots are what Scrapy's downloader makes of its settings (:class:`SlotLimits`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar
from urllib.parse import urlsplit

T = TypeVar("T")


class SlotLimits:
    """Requests one download slot may have in flight, as Scrapy's downloader reads its
    settings: ``DOWNLOAD_SLOTS[key]["concurrency"]``, else CONCURRENT_REQUESTS_PER_IP when
    set (the slots are then IP addresses: :attr:`by_ip`), else CONCURRENT_REQUESTS_PER_DOMAIN
    (the slots are host names)."""

    __slots__ = ("_concurrency", "per_domain", "per_ip")

    def __init__(self, per_domain: int, per_ip: int = 0, slots: Mapping[str, Any] | None = None) -> None:
        self.per_domain = max(1, per_domain)
        self.per_ip = max(0, per_ip)
        self._concurrency = {
            key: _whole_number(slot["concurrency"])
            for key, slot in (slots or {}).items()
            if isinstance(slot, Mapping) and "concurrency" in slot
        }

    @classmethod
    def from_settings(cls, settings: Any) -> SlotLimits:
        return cls(
            settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN"),
            settings.getint("CONCURRENT_REQUESTS_PER_IP"),
            settings.getdict("DOWNLOAD_SLOTS"),
        )

    @property
    def by_ip(self) -> bool:
        """Whether Scrapy keys its slots by the IP address a host resolves to."""
        return self.per_ip > 0

    def of(self, key: str) -> int:
        """The bound of slot ``key`` (a host name, or an IP address with :attr:`by_ip`)."""
        return self._concurrency.get(key) or self.per_ip or self.per_domain


def _whole_number(value: object) -> int:
    """A slot concurrency as Scrapy's downloader can use it: a whole number, 1 or more (a
    string failed every download of the slot, 0 or less held them for ever); ValueError."""
    if type(value) is not int or value < 1:
        raise ValueError(f"not a whole number of 1 or more: {value!r}")
    return value


def host_of(url: str) -> str:
    """The host name of a URL, lower-cased (what Scrapy keys its download slots by)."""
    return (urlsplit(url).hostname or "").lower()


class HostGate(Generic[T]):
    """Sends items to ``send`` with at most ``limits.of(key)`` in flight per slot key (a host
    name or an IP address), in order per key."""

    def __init__(self, limits: SlotLimits, send: Callable[[T], None]) -> None:
        self.limits = limits
        self._send = send
        self._in_flight: dict[str, int] = {}
        self._waiting: dict[str, deque[T]] = {}
        self.most_in_flight = 0
        """The largest number in flight to one host so far (for tests and stats)."""

    def submit(self, host: str, item: T) -> None:
        """Send ``item`` now if ``host`` has room, else when it has."""
        if self._in_flight.get(host, 0) < self.limits.of(host) and host not in self._waiting:
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
