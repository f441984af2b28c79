"""The files a crawl writes besides its feeds (the tree file, the audit's findings and report):
checked at start, so that a path that cannot be written stops the crawl before anything is
fetched instead of losing the file at its end."""

from __future__ import annotations

import os
import secrets
from collections.abc import Hashable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit


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
    except OSError as exc:
        return f"{str(path)!r} cannot be written: its folder cannot be made ({exc.strerror or exc})"
    try:
        probe = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}")
        probe.open("x").close()
        probe.unlink()
    except OSError as exc:  # (a file in /proc or /sys: "No such file or directory" alone misled)
        folder_name = str(target.parent)
        return f"{str(path)!r} cannot be written: no file can be made in {folder_name!r} ({exc.strerror or exc})"
    return None


def feed_files(feeds: Mapping[Any, Any], spider_name: str) -> Iterator[tuple[str, str]]:
    """("the feed <uri>", path) of each FEEDS entry written to a local file whose name is
    fixed: ``%(name)s`` is the spider's name; one Scrapy names from ``%(time)s``, a batch or
    another attribute is left out."""
    for uri in feeds:
        text = str(uri)
        if "%(" in text:
            text = text.replace("%(name)s", spider_name)
            if "%(" in text:
                continue
        parts = urlsplit(text)
        if parts.scheme == "file":
            yield f"the feed {str(uri)!r}", unquote(parts.path)
        elif not parts.scheme or len(parts.scheme) == 1:  # (a path; C:\\... on Windows)
            yield f"the feed {str(uri)!r}", text


def file_identity(path: str) -> Hashable:
    """What tells one file from another: its device and inode when it exists (a hard link, a
    symlink and any spelling of its path are the same file), else its resolved path; ``-``
    is standard output (the file its descriptor is open on, such as ``/dev/stdout``'s)."""
    try:
        status = os.fstat(1) if path == "-" else os.stat(path)
    except OSError:
        return Path(path).resolve()  # (no ~ expanded: neither the crawl nor Scrapy's feeds expand it)
    return (status.st_dev, status.st_ino)


def shared_file(outputs: Iterable[tuple[str, str | None]]) -> str | None:
    """Why two of ``outputs`` (what writes it, its path) cannot both be written: they name
    the same file (the last one written would hold it alone). None when they do not."""
    seen: dict[Hashable, str] = {}
    for what, path in outputs:
        if not path:
            continue
        key = file_identity(path)
        if key in seen:
            return f"{seen[key]} and {what} name the same file {path!r}: give each its own"
        seen[key] = what
    return None
