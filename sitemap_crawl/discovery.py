"""Where a site's sitemaps are looked for, in order: robots.txt, then the well-known paths.

Pure helpers (no Scrapy) shared by the resumable loader; the ``sitemaps`` spider
follows the same order (see docs/arguments.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urljoin, urlsplit

ROBOTS = "robots"
"""Role of a robots.txt URL: its ``Sitemap:`` lines are followed without follow/deny."""
KNOWN = "known"
"""Role of a well-known path: a failure or a non-sitemap body is quietly left out."""
DECLARED = "declared"
"""Role of any other sitemap (given by the user or declared by robots.txt or an index)."""


def robots_txt_url(homepage: str) -> str:
    """robots.txt of a site, from its (normalised) homepage."""
    return urljoin(homepage, "/robots.txt")


def known_path_urls(homepage: str, paths: Iterable[str]) -> list[str]:
    """Absolute URLs of the well-known sitemap paths under ``homepage``, in order, without repeats."""
    urls: list[str] = []
    for path in paths:
        url = urljoin(homepage, path.strip().lstrip("/"))
        if url not in urls:
            urls.append(url)
    return urls


def is_robots_txt(url: str) -> bool:
    """True for a URL whose path is ``/robots.txt`` (the test Scrapy's SitemapSpider uses too)."""
    return urlsplit(url).path.endswith("/robots.txt")
