"""How a loader downloads a sitemap: any coroutine that follows redirects and returns the body."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class FetchedSitemap:
    """A downloaded sitemap: its URL after redirects and its whole body."""

    url: str
    body: bytes


class SitemapFetchError(Exception):
    """A sitemap could not be downloaded; ``reason`` is short ("HTTP 404", "timeout")."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


Fetch = Callable[[str], Awaitable[FetchedSitemap]]
"""Downloads one sitemap (following redirects); raises SitemapFetchError when it cannot."""
