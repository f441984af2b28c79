"""The files a crawl writes besides its feeds (the tree file, the audit's findings and report):
checked at start, so that a path that cannot be written stops the crawl before anything is
fetched instead of losing the file at its end."""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def unwritable_reason(path: str | Path) -> str | None:
    """Why a file cannot be written at ``path`` (None: it can). Its missing parent folders are
    made (the writer would make them too), and a file is made and removed beside it."""
    target = Path(path)
    if target.is_dir():
        return f"{str(path)!r} is a directory"
    folder = next((parent for parent in target.parents if parent.exists()), None)
    if folder is not None and not folder.is_dir():
        return f"{str(path)!r} cannot be written: {str(folder)!r} is a file, not a folder"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        probe = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}")
        probe.open("x").close()
        probe.unlink()
    except OSError as exc:
        return f"{str(path)!r} cannot be written ({exc.strerror or exc})"
    return None
