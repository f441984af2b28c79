"""A disk that fills up, for tests of what a failed write leaves: writes past a size fail."""

from __future__ import annotations

import contextlib
import resource
import signal
from collections.abc import Iterator


@contextlib.contextmanager
def file_size_limit(size: int) -> Iterator[None]:
    """Writes past ``size`` bytes of a file fail (EFBIG), as on a disk that fills up: a write
    that crosses the limit writes its first bytes, then fails. For this process only."""
    previous = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, previous[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, previous)
        signal.signal(signal.SIGXFSZ, previous_handler)
