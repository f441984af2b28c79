"""The words of the sitemap tree: node kinds and error reasons.

String-valued enums: a member is a ``str`` equal to its value, so the tree file,
the stats keys and the log read exactly as plain strings would. Pure: no Scrapy.
"""

from __future__ import annotations

from enum import StrEnum


class NodeKind(StrEnum):
    """What a node of the tree is."""

    WEBSITE = "website"
    ROBOTS_TXT = "robots_txt"
    XML_INDEX = "xml_index"
    XML_URLSET = "xml_urlset"
    RSS = "rss"
    ATOM = "atom"
    TEXT = "text"
    INVALID = "invalid"


class ErrorReason(StrEnum):
    """Why a sitemap was not read to its end (or is invalid); the tree's ``error`` and the
    ``sitemap_crawl/errors/<reason>`` stats. Some reasons carry more after them (see the
    ``*_PREFIX`` constants); a parse error may say which limit it hit (``parse error: ...``)."""

    TRUNCATED = "truncated"
    SIZE_LIMIT = "size limit"
    LOOP = "loop"
    DEPTH_LIMIT = "depth limit"
    NOT_A_SITEMAP = "not a sitemap"
    PARSE_ERROR = "parse error"
    INTERRUPTED = "interrupted"
    TIMEOUT = "timeout"
    REDIRECT_LIMIT = "redirect limit"
    FORBIDDEN_BY_ROBOTS_TXT = "forbidden by robots.txt"
    OFFSITE = "offsite"
    IGNORED = "ignored"
    DNS_LOOKUP_FAILED = "DNS lookup failed"
    CONNECTION_REFUSED = "connection refused"
    CONNECTION_ERROR = "connection error"
    OLDER_THAN_SINCE = "older than since"
    """Of an index child not fetched: its own lastmod is before ``-a since``."""
    UNREACHABLE = "unreachable"
    """Of a website node: its robots.txt could not be reached at all (``unreachable: <why>``)."""


HTTP_PREFIX = "HTTP"
"""``HTTP <status>``: the server answered with an error status."""
IGNORED_PREFIX = f"{ErrorReason.IGNORED}: "
"""``ignored: <message>``: a downloader middleware dropped the request, saying why."""
DOWNLOAD_FAILURES = frozenset(
    {
        ErrorReason.TIMEOUT,
        ErrorReason.REDIRECT_LIMIT,
        ErrorReason.DNS_LOOKUP_FAILED,
        ErrorReason.CONNECTION_REFUSED,
        ErrorReason.CONNECTION_ERROR,
        ErrorReason.SIZE_LIMIT,
    }
)
"""Reasons of a download that brought no answer to read (besides ``download error: ...``; a
``size limit``: a body over DOWNLOAD_MAXSIZE or the size cap, dropped unread)."""
DOWNLOAD_ERROR_PREFIX = "download error: "
"""``download error: <exception type>``: any other download failure (a body that is not what its
Content-Encoding says: ``download error: the body is not what its Content-Encoding says (zlib.error)``)."""


UNDECODABLE_BODY = "the body is not what its Content-Encoding says"
"""The ``download error: ...`` of a body its Content-Encoding does not describe."""


def is_download_failure(reason: str) -> bool:
    """Whether a node's reason says its download brought no answer to read (no HTTP error, no
    body that its Content-Encoding does not describe)."""
    if reason.startswith(DOWNLOAD_ERROR_PREFIX):
        return not reason.startswith(DOWNLOAD_ERROR_PREFIX + UNDECODABLE_BODY)
    return reason in DOWNLOAD_FAILURES


def http_error(status: int) -> str:
    """The reason of an HTTP error status: ``HTTP 404``."""
    return f"{HTTP_PREFIX} {status}"


def with_detail(reason: ErrorReason, detail: str) -> str:
    """A reason and what it says more: ``parse error: entity expansion``."""
    return f"{reason}: {detail}"
