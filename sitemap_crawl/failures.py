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


def failure_reason(failure: Failure | BaseException) -> str:
    """A short reason for the tree: ``HTTP 404``, ``timeout``, ``size limit``..."""
    error = failure.value if isinstance(failure, Failure) else failure
    if isinstance(error, HttpError):
        return f"HTTP {error.response.status}"
    if isinstance(error, DownloadCancelledError):
        return "size limit"
    if isinstance(error, IgnoreRequest):
        message = str(error)
        if "DOWNLOAD_MAXSIZE" in message:
            return "size limit"
        if "max redirections" in message:
            return "redirect limit"
        if "robots.txt" in message:
            return "forbidden by robots.txt"
        if "offsite" in message.lower():
            return "offsite"
        return f"ignored: {message}" if message else "ignored"
    if isinstance(error, _TIMEOUTS):
        return "timeout"
    if isinstance(error, internet_error.DNSLookupError | CannotResolveHostError):
        return "DNS lookup failed"
    if isinstance(error, internet_error.ConnectionRefusedError | DownloadConnectionRefusedError):
        return "connection refused"
    if isinstance(error, _CONNECTION_ERRORS):
        return "connection error"
    return f"download error: {type(error).__name__}"
