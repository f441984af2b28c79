"""SITEMAP_CRAWL_TREE_FILE: where the trees of the mapped sites are written.

* ``.jsonl`` / ``.jl``: one line per site, its tree, appended as soon as the site is
  finished (a run stopped halfway keeps every finished site);
* ``.json`` (any other name): the tree of a single-site run as one object; in a
  many-site run, one JSON array of trees. It is written to a temporary file beside it
  and renamed over it when the crawl closes (also when it is stopped early), so that a
  reader never sees half a file; a many-site run streams the array there, holding no
  finished tree in memory.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from pathlib import Path
from typing import IO, Any

from sitemap_crawl.atomic_file import replaceable
from sitemap_crawl.lines_file import LinesFile

LINE_SUFFIXES = (".jsonl", ".jl")


def is_lines_file(path: str | Path) -> bool:
    """Whether a tree file holds one JSON line per site."""
    return Path(path).suffix.lower() in LINE_SUFFIXES


class TreeFile:
    """Writes finished trees to one file (see the module docstring)."""

    def __init__(self, path: str | Path, many_sites: bool, append: bool = False) -> None:
        self.path = Path(path)
        self.many_sites = many_sites
        self.append = append
        """A lines file is appended to rather than started anew (queue runs: a restarted worker
        keeps the lines of the sites it acknowledged before)."""
        self.lines = is_lines_file(self.path)
        self.written = 0
        self._stream: IO[str] | None = None
        self._lines: LinesFile | None = None
        self._temporary: Path | None = None
        self._single: dict[str, Any] | None = None

    def add(self, tree: dict[str, Any]) -> None:
        """One finished site's tree."""
        if self.lines:
            self._lines_file().write((json.dumps(tree, ensure_ascii=False) + "\n").encode("utf-8"))
        elif self.many_sites:
            stream = self._open()
            stream.write(("[\n" if not self.written else ",\n") + json.dumps(tree, ensure_ascii=False, indent=1))
        else:
            self._single = tree
        self.written += 1

    def close(self) -> None:
        """Finish the file: the array's end, or the single tree; rename into place."""
        if self.lines:
            self._lines_file().close()  # a run that finished no site still leaves an empty file
            return
        if self.many_sites:
            stream = self._open()
            stream.write("]\n" if self.written else "[]\n")
            self._finish(stream)
        elif self._single is not None:
            stream = self._open()
            json.dump(self._single, stream, ensure_ascii=False, indent=1)
            self._finish(stream)

    def abandon(self) -> None:
        """Give up after a write failed: close the file as it is, and remove the temporary one
        (the file at ``path`` is left as it was)."""
        for stream in (self._stream, self._lines):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self._stream = self._lines = None
        if self._temporary is not None:
            with contextlib.suppress(OSError):  # (a file system turned read-only: EROFS, not ENOENT)
                self._temporary.unlink(missing_ok=True)

    @property
    def stream(self) -> LinesFile | None:
        """The open file of a lines file (None before the first line); a queue run syncs it."""
        return self._lines

    def _lines_file(self) -> LinesFile:
        if self._lines is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._lines = LinesFile(self.path, append=self.append)  # (not appending: the file anew)
        return self._lines

    def _open(self) -> IO[str]:
        if self._stream is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if not replaceable(self.path):  # (a device or pipe: written in place)
                self._stream = self.path.open("w", encoding="utf-8")
            else:
                # a name of its own, opened as a new file: mkstemp's would keep mode 0600
                temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.{secrets.token_hex(4)}")
                self._stream = temporary.open("x", encoding="utf-8")
                self._temporary = temporary  # (only once it exists: abandon removes it)
        return self._stream

    def _finish(self, stream: IO[str]) -> None:
        if self._temporary is None:  # (written in place)
            stream.close()
            return
        try:
            stream.flush()
            os.fsync(stream.fileno())
            stream.close()
            os.replace(self._temporary, self.path)
        except OSError:
            with contextlib.suppress(OSError):
                stream.close()
            with contextlib.suppress(OSError):
                self._temporary.unlink(missing_ok=True)  # no half-written file left beside it
            raise
