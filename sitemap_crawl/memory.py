"""glibc malloc tuning: give the memory of large sitemap bodies back to the system.

By default glibc raises its mmap threshold each time a large block is freed, so
after the first sitemap body (tens of MB) is released, the next ones are carved
out of the heap, which fragments and does not shrink: the crawl's RSS ratchets
up with every large sitemap. Pinning the threshold keeps large bodies in their
own mappings (returned to the system when freed), and a trim after each
sitemap hands back the heap's free tail. Measured on a 1,000,000-page site:
peak RSS 374 MB without, 313 MB with the threshold alone. Nothing happens on
a C library other than glibc.
"""

from __future__ import annotations

import ctypes
import sys
from functools import lru_cache
from typing import Any

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 128 * 1024
TRIM_THRESHOLD = 1024 * 1024
_GLIBC = "libc.so.6"
"""glibc's C library, opened by name: ``ctypes.util.find_library`` imports subprocess and runs
``ldconfig -p`` (2 MiB and a child process in every process that tunes malloc)."""


@lru_cache(maxsize=1)
def _libc() -> Any | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(_GLIBC)
    except OSError:  # not glibc's name (musl): whatever the system calls its C library
        from ctypes.util import find_library  # imports subprocess, runs ldconfig: only when needed

        try:
            libc = ctypes.CDLL(find_library("c"))
        except OSError:
            return None
    try:
        libc.mallopt  # noqa: B018 - glibc only
        libc.malloc_trim  # noqa: B018
    except AttributeError:
        return None
    return libc


def tune_malloc() -> bool:
    """Pin glibc's mmap and trim thresholds; False where that is not possible."""
    libc = _libc()
    if libc is None:
        return False
    pinned_mmap = bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))
    pinned_trim = bool(libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return pinned_mmap and pinned_trim


def trim() -> None:
    """Give free heap memory back to the system (cheap; a no-op without glibc)."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
