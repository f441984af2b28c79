"""The discovery rules, Scrapy-free, for the ``sitemaps`` spider and the loader alike.

Where a site's sitemaps are looked for, in order: robots.txt, then the well-known
paths (docs/arguments.md, "What the spider reads, and in what order"); which role a
sitemap has; which sub-sitemaps of an index are followed (follow / deny: never
robots.txt's own lines); when a declared sub-sitemap is not fetched (a loop through
its ancestors, or nesting beyond the depth limit).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from sitemap_crawl.kinds import HTTP_PREFIX, ErrorReason
from sitemap_crawl.parsing.fields import usable_url

ROBOTS = "robots"
"""Role of a robots.txt URL: its ``Sitemap:`` lines are followed without follow/deny;
if it fails or is not a robots.txt, it is left out of the tree."""
KNOWN = "known"
"""Role of a well-known path: a failure or a non-sitemap body is quietly left out."""
START = "start"
"""Role of a sitemap URL the user gave (``sitemap_urls``)."""
CHILD = "child"
"""Role of a sitemap declared by robots.txt or by an index."""

LOOP = ErrorReason.LOOP
"""Why a sub-sitemap that is its own ancestor (also through a redirect) is not fetched."""
DEPTH_LIMIT = ErrorReason.DEPTH_LIMIT
"""Why a sub-sitemap nested deeper than the depth limit is not fetched."""
UNREACHABLE_REASONS = frozenset(
    {ErrorReason.DNS_LOOKUP_FAILED, ErrorReason.CONNECTION_REFUSED, ErrorReason.CONNECTION_ERROR, ErrorReason.TIMEOUT}
)
"""Failures of a site's robots.txt that mean the host cannot be reached at all: its
well-known paths would fail the same way, so they are not probed."""
HOST_DOWN_REASONS = frozenset({ErrorReason.DNS_LOOKUP_FAILED, ErrorReason.CONNECTION_REFUSED})
"""The failures that say so of any request to the host, whatever its path (a dropped
connection or a timeout may be one path's): without robots.txt, the first well-known
path failing so makes the site unreachable, and a sitemap request failing so is not
retried (sitemap_crawl.unreachable)."""
ALWAYS = "always"
"""SITEMAP_CRAWL_KNOWN_PATHS_MODE: probe the well-known paths whatever robots.txt says."""
FALLBACK = "fallback"
"""SITEMAP_CRAWL_KNOWN_PATHS_MODE: probe them only when robots.txt declares no sitemap."""
KNOWN_PATHS_MODES = (ALWAYS, FALLBACK)
REFUSAL_WORDS = {"follow": "does not match follow", "deny": "matches deny"}
"""What the log says of a sub-sitemap that :meth:`FollowRules.refusal` turns down."""


def robots_txt_url(homepage: str) -> str:
    """robots.txt of a site, beside its homepage: at the root of a normalised homepage,
    under the path of one kept as given (``normalize_homepage=false``)."""
    return urljoin(homepage, "robots.txt")


def known_path_urls(homepage: str, paths: Iterable[str]) -> list[str]:
    """Absolute URLs of the well-known sitemap paths under ``homepage``, in order, without repeats."""
    urls: list[str] = []
    for path in paths:
        url = urljoin(homepage, path.strip().lstrip("/"))
        if url not in urls:
            urls.append(url)
    return urls


def makes_known_path_url(path: str) -> bool:
    """Whether a well-known path (``sitemap.xml``, ``/maps/a.xml``, or an absolute URL) makes an
    http(s) URL under a site (not ``http://[::1``, ``ftp:...``, a port out of range)."""
    try:
        url = known_path_urls("http://www.example.org/", [path])[0]
    except ValueError:  # an unbalanced [ in a host
        return False
    return usable_url(url) and urlsplit(url).scheme.lower() in ("http", "https")


def is_robots_txt(url: str) -> bool:
    """True for a URL whose path is ``/robots.txt`` (the test Scrapy's SitemapSpider uses too)."""
    return urlsplit(url).path.endswith("/robots.txt")


def is_optional(role: str) -> bool:
    """Whether a sitemap of this role is left out of the tree when it fails or lists nothing."""
    return role in (KNOWN, ROBOTS)


def is_left_out(role: str, error: str | None) -> bool:
    """Whether a sitemap of this role that failed with ``error`` (None: it listed nothing) is
    left out of the tree: an optional one is, unless it went over the size cap (something is
    there, too large to read: the tree says so; a robots.txt whose gzip body inflates past
    the cap too, as one too large on the wire)."""
    if not is_optional(role):
        return False
    return not (error is not None and error.partition(" (")[0] == ErrorReason.SIZE_LIMIT)


@dataclass(frozen=True)
class FollowRules:
    """Which sub-sitemaps of an index are fetched, and how deep indexes nest.

    ``follow``: a sub-sitemap must match one of them (all when None); ``deny``: it must
    match none. robots.txt's ``Sitemap:`` lines are always followed.
    """

    follow: Sequence[re.Pattern[str]] | None = None
    deny: Sequence[re.Pattern[str]] | None = None
    max_depth: int = 10

    def refusal(self, url: str) -> str | None:
        """Why an index's sub-sitemap ``url`` is not followed ("follow" or "deny"), or None."""
        if self.follow is not None and not any(pattern.search(url) for pattern in self.follow):
            return "follow"
        if self.deny is not None and any(pattern.search(url) for pattern in self.deny):
            return "deny"
        return None

    def child_problem(self, url: str, depth: int, ancestors: frozenset[str] | set[str]) -> str | None:
        """Why a declared sub-sitemap at nesting level ``depth`` is not fetched (:data:`LOOP`,
        :data:`DEPTH_LIMIT`), or None."""
        if url in ancestors:
            return LOOP
        if depth > self.max_depth:
            return DEPTH_LIMIT
        return None


def is_server_error(reason: str) -> bool:
    """Whether a failure reason is an HTTP status that says the server could not answer now
    (5xx, 429 Too Many Requests), not that the file is missing (404) or refused (403)."""
    status = reason.removeprefix(HTTP_PREFIX + " ")
    return status != reason and status.isdigit() and (status.startswith("5") or status == "429")
