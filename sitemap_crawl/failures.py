"""Turn a failed sitemap request into the short reason the tree records."""

from __future__ import annotations

from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    IgnoreRequest,
    ResponseDataLossError,
)
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.internet import error as internet_error
from twisted.python.failure import Failure
from twisted.web._newclient import ResponseFailed, ResponseNeverReceived

from sitemap_crawl.kinds import DOWNLOAD_ERROR_PREFIX, IGNORED_PREFIX, UNDECODABLE_BODY, ErrorReason, http_error

_TIMEOUTS = (internet_error.TimeoutError, TimeoutError, DownloadTimeoutError)
_CONNECTION_ERRORS = (
    internet_error.ConnectionRefusedError,
    internet_error.ConnectError,
    internet_error.ConnectionLost,
    internet_error.ConnectionDone,
    ResponseNeverReceived,
    ResponseFailed,
    ConnectionError,
    DownloadFailedError,
    ResponseDataLossError,  # Scrapy >= 2.14 wraps download errors in its own types
)


_DECODERS = frozenset({"zlib", "gzip", "brotli", "brotlicffi", "zstandard", "zstd", "compression", "backports"})
"""The modules whose errors Scrapy's HttpCompressionMiddleware lets through when a body is
not what its Content-Encoding says (``backports``: ``backports.zstd`` before Python 3.14)."""


def release_causes(failure: Failure | BaseException) -> None:
    """Drop the tracebacks of the exceptions behind a failed request's error (its cause, and
    the cause's cause...), so that the frames they hold are freed with them.

    Scrapy's HttpCompressionMiddleware raises IgnoreRequest ``from`` the error that stopped a
    body inflating past DOWNLOAD_MAXSIZE; that error's traceback holds the decompression's
    frame, and so the body inflated so far (up to the cap, 100 MiB by default). A Twisted
    Failure is in reference cycles with its frames, which only the cyclic collector frees,
    and the crawl runs it seldom (:mod:`sitemap_crawl.gctuning`): each such body stayed in
    memory for most of the crawl (6 of them: 700 MB peak)."""
    error: BaseException | None = failure.value if isinstance(failure, Failure) else failure
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        behind = error.__cause__ or error.__context__
        if behind is not None and id(behind) not in seen:
            behind.__traceback__ = None
        error = behind


def failure_reason(failure: Failure | BaseException) -> str:
    """A short reason for the tree: ``HTTP 404``, ``timeout``, ``size limit``..."""
    error = failure.value if isinstance(failure, Failure) else failure
    if isinstance(error, HttpError):
        return http_error(error.response.status)
    if isinstance(error, DownloadCancelledError):
        return ErrorReason.SIZE_LIMIT
    if isinstance(error, IgnoreRequest):
        message = str(error)
        if "DOWNLOAD_MAXSIZE" in message:
            return ErrorReason.SIZE_LIMIT
        if "max redirections" in message:
            return ErrorReason.REDIRECT_LIMIT
        if "robots.txt" in message:
            return ErrorReason.FORBIDDEN_BY_ROBOTS_TXT
        if "offsite" in message.lower():
            return ErrorReason.OFFSITE
        return f"{IGNORED_PREFIX}{message}" if message else ErrorReason.IGNORED
    if isinstance(error, _TIMEOUTS):
        return ErrorReason.TIMEOUT
    if isinstance(error, internet_error.DNSLookupError | CannotResolveHostError):
        return ErrorReason.DNS_LOOKUP_FAILED
    if isinstance(error, internet_error.ConnectionRefusedError | DownloadConnectionRefusedError):
        return ErrorReason.CONNECTION_REFUSED
    if isinstance(error, _CONNECTION_ERRORS):
        return ErrorReason.CONNECTION_ERROR
    kind = type(error)
    if kind.__module__.split(".")[0].lstrip("_") in _DECODERS:  # (zlib.error, brotli.error: "error" alone said nothing)
        name = f"{kind.__module__}.{kind.__name__}"
        return f"{DOWNLOAD_ERROR_PREFIX}{UNDECODABLE_BODY} ({name})"
    return f"{DOWNLOAD_ERROR_PREFIX}{kind.__name__}"
