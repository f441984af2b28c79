"""A file written whole or not at all: through a temporary file beside it, then renamed."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable
from pathlib import Path


def replaceable(path: Path) -> bool:
    """Whether a file may be written beside ``path`` and renamed over it: ``path`` is a
    regular file or nothing yet. A device, a pipe (``/dev/null``, ``/dev/stdout``: run as
    root, a rename would put a plain file in ``/dev/null``'s place) is written in place, and
    so is a symbolic link (``/dev/stdout`` with the output sent to a file: a rename put a
    plain file in the link's place)."""
    try:
        return not os.path.islink(path) and stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        return True


def write_atomically(path: Path, data: bytes, before_replace: Callable[[], None] | None = None) -> None:
    """Write ``data`` to ``path`` through a temporary file that is fsynced, then renamed over
    it; ``before_replace`` runs between the fsync and the rename. A ``path`` that is no
    regular file (:func:`replaceable`) is written in place. When writing fails (OSError,
    raised again) the temporary file is removed: ``path`` is left as it was."""
    if not replaceable(path):
        with path.open("wb") as handle:
            handle.write(data)
        if before_replace is not None:
            before_replace()
        return
    temporary = path.with_name(path.name + ".tmp")
    try:
        with temporary.open("wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if before_replace is not None:
            before_replace()
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):  # (a full disk: no cut file left beside it)
            temporary.unlink(missing_ok=True)
        raise
