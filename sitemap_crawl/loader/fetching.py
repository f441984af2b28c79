"""How a loader downloads a sitemap: any coroutine that follows redirects and returns the body."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class FetchedSitemap:
    """A downloaded sitemap: its URL after redirects and its whole body."""

    url: str
    body: bytes
    redirect_urls: tuple[str, ...] = ()
    """The URLs it was redirected from, in order (Scrapy's ``redirect_urls``)."""


class SitemapFetchError(Exception):
    """A sitemap could not be downloaded; ``reason`` is short ("HTTP 404", "timeout").
    ``after_redirect``: it failed after a redirect (its server answered; the URL it sent the
    download to did not), which does not make a homepage's site unreachable."""

    def __init__(self, reason: str, after_redirect: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.after_redirect = after_redirect


Fetch = Callable[[str], Awaitable[FetchedSitemap]]
"""Downloads one sitemap (following redirects); raises SitemapFetchError when it cannot."""
