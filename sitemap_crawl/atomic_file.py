"""A file written whole or not at all: through a temporary file beside it, then renamed."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path


def write_atomically(path: Path, data: bytes, before_replace: Callable[[], None] | None = None) -> None:
    """Write ``data`` to ``path`` through a temporary file that is fsynced, then renamed over
    it; ``before_replace`` runs between the fsync and the rename."""
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    if before_replace is not None:
        before_replace()
    os.replace(temporary, path)
