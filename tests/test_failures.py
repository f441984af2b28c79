"""The short reasons the tree records for a failed sitemap request."""

from __future__ import annotations

import gzip
import weakref
import zlib

import pytest
from scrapy.exceptions import IgnoreRequest
from twisted.python.failure import Failure

from sitemap_crawl.failures import failure_reason, release_causes
from sitemap_crawl.kinds import is_download_failure

NOT_ITS_ENCODING = "download error: the body is not what its Content-Encoding says"


@pytest.mark.parametrize(
    ("error", "named"),
    [
        (zlib.error("Error -3 while decompressing data"), "zlib.error"),  # (was "download error: error")
        (gzip.BadGzipFile("Not a gzipped file"), "gzip.BadGzipFile"),
    ],
)
def test_a_body_that_is_not_its_content_encoding_says_so(error: Exception, named: str) -> None:
    assert failure_reason(error) == f"{NOT_ITS_ENCODING} ({named})"


def test_a_zstd_body_that_is_not_zstd_says_so() -> None:
    # (Scrapy's zstd comes from backports.zstd before Python 3.14: it was "download error: ZstdError")
    zstd = pytest.importorskip("backports.zstd", reason="no backports.zstd (Python 3.14 has compression.zstd)")
    assert (
        failure_reason(zstd.ZstdError("Unknown frame descriptor")) == f"{NOT_ITS_ENCODING} (backports.zstd.ZstdError)"
    )


def test_another_error_is_named_by_its_type() -> None:
    assert failure_reason(ValueError("odd")) == "download error: ValueError"


@pytest.mark.parametrize(
    ("reason", "failed"),
    [
        ("timeout", True),
        ("redirect limit", True),
        ("connection refused", True),
        ("download error: SSLError", True),
        ("download error: the body is not what its Content-Encoding says (zlib.error)", False),  # gzip-mislabelled
        ("HTTP 404", False),  # http-error
        ("offsite", False),
        ("forbidden by robots.txt", False),
        ("size limit", True),  # (a body over the cap, dropped unread)
    ],
)
def test_which_node_reasons_are_a_failed_download(reason: str, failed: bool) -> None:
    assert is_download_failure(reason) is failed


class _Inflated:
    """Stands for a body inflated so far (weakly referable)."""


def _inflate_past_the_limit(held: list[weakref.ref[_Inflated]]) -> None:
    inflated = _Inflated()
    held.append(weakref.ref(inflated))
    raise ValueError("past DOWNLOAD_MAXSIZE")


def _ignored_because_too_large(held: list[weakref.ref[_Inflated]]) -> None:
    try:
        _inflate_past_the_limit(held)
    except ValueError as exc:
        raise IgnoreRequest("exceeded DOWNLOAD_MAXSIZE during decompression") from exc


@pytest.mark.parametrize("wrapped", [False, True], ids=["exception", "failure"])
def test_what_a_failed_inflating_held_is_freed_once_released(wrapped: bool) -> None:
    held: list[weakref.ref[_Inflated]] = []
    try:
        _ignored_because_too_large(held)
    except IgnoreRequest as exc:
        error = Failure(exc) if wrapped else exc
    assert held[0]() is not None  # (the cause's frame still holds it)

    release_causes(error)

    assert held[0]() is None
    assert failure_reason(error) == "size limit"
