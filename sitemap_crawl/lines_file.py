"""A file of lines written whole lines at a time: a many-site run's ``.jsonl`` tree file and
the audit's findings file.

Appended to (a queue worker restarted), a last line a crash cut short is ended first, so
that the next line starts on a line of its own. A write that fails (a full disk, a file
system turned read-only) keeps the lines that reached the file whole, and a line it cut
short is taken back out when the file is closed (the writer gives it up then), where the
file system allows, so that a reader of lines does not meet a cut one.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path


def ends_mid_line(path: str | Path) -> bool:
    """Whether a file exists, is not empty and does not end with a newline."""
    try:
        with Path(path).open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            if not handle.tell():
                return False
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) != b"\n"
    except FileNotFoundError:
        return False


class LinesFile:
    """An open file of lines (unbuffered: each :meth:`write` is on the file when it returns)."""

    def __init__(self, path: str | Path, append: bool = False) -> None:
        self.name = str(path)
        cut_short = append and ends_mid_line(path)
        self._file = open(path, "ab" if append else "wb", buffering=0)  # noqa: SIM115 (closed by close)
        self._end = os.fstat(self._file.fileno()).st_size
        """The file's bytes of whole lines."""
        self.salvaged_lines = 0
        """The whole lines of the write that failed that the file kept."""
        self._cut_short = False
        """A failed write left a line cut short after :attr:`_end` (:meth:`close` cuts it)."""
        if cut_short:  # a line cut short by a crash is ended, not continued
            try:
                self.write(b"\n")
            except OSError:
                self._file.close()
                raise

    def write(self, data: bytes) -> None:
        """Append ``data`` (whole lines). When that fails (OSError, raised again), the lines
        of it that reached the file whole stay (:attr:`salvaged_lines`); a line cut short is
        taken back out when the file is closed."""
        view = memoryview(data)
        try:
            while view:
                count = self._file.write(view)
                if not count:
                    raise OSError(errno.EIO, "the file took no byte")
                view = view[count:]
        except OSError:
            self._keep_whole_lines(data)
            raise
        self._end += len(data)

    def _keep_whole_lines(self, data: bytes) -> None:
        with contextlib.suppress(OSError):
            reached = os.fstat(self._file.fileno()).st_size - self._end
            if reached > 0:
                whole = data.rfind(b"\n", 0, min(reached, len(data))) + 1  # (0: no whole line of it)
                self.salvaged_lines = data.count(b"\n", 0, whole)
                self._end += whole
                self._cut_short = reached > whole

    def flush(self) -> None:
        """Nothing to flush (unbuffered); for the callers that flush every file they sync."""

    def fileno(self) -> int:
        return self._file.fileno()

    def close(self) -> None:
        """Close the file, a line a failed write cut short taken back out first (where the
        file system allows)."""
        if self._cut_short and not self._file.closed:
            self._cut_short = False
            with contextlib.suppress(OSError):
                os.ftruncate(self._file.fileno(), self._end)
        self._file.close()
