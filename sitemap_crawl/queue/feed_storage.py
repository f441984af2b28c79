"""A queue worker's local feed files remember a write that failed.

Scrapy's feed exporter catches the error of a row it cannot write (a full disk): it logs it
and goes on. A batch of rows larger than the file's buffer is written at once, and when that
write fails nothing of it stays in the buffer: flushing and syncing the file later succeed,
so the worker acknowledged sites whose rows were never on disk. Here the file keeps the
first error of a write or a flush, and the worker's sync before an acknowledgement
(:func:`sitemap_crawl.queue.files.sync_files`) reports it.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import IO, Any

from scrapy.extensions.feedexport import FileFeedStorage
from scrapy.settings import BaseSettings

STORAGE_PATH = "sitemap_crawl.queue.feed_storage.QueueFeedStorage"
LOCAL_SCHEMES = ("", "file")
"""The FEED_STORAGES keys of local files (a path, a ``file://`` URI)."""


class FailureKeepingWriter(io.BufferedWriter):
    """A buffered binary file that keeps the first OSError of a write or a flush (``write_failure``)."""

    write_failure: OSError | None = None

    def write(self, data: Any) -> int:
        try:
            return super().write(data)
        except OSError as exc:
            self._keep(exc)
            raise

    def flush(self) -> None:
        try:
            super().flush()
        except OSError as exc:
            self._keep(exc)
            raise

    def _keep(self, exc: OSError) -> None:
        if self.write_failure is None:
            self.write_failure = exc


class QueueFeedStorage(FileFeedStorage):
    """Scrapy's local file storage, its file a :class:`FailureKeepingWriter`."""

    def open(self, spider: Any) -> IO[bytes]:
        path = Path(self.path)
        if not path.parent.exists():
            path.parent.mkdir(parents=True)
        raw = io.FileIO(path, "wb" if self.write_mode == "wb" else "ab")
        return FailureKeepingWriter(raw)


def use_queue_feed_storage(settings: BaseSettings) -> None:
    """Local feeds go through :class:`QueueFeedStorage`, unless the project gave them a
    storage of its own."""
    storages = settings.getdict("FEED_STORAGES")
    chosen = {scheme: STORAGE_PATH for scheme in LOCAL_SCHEMES if scheme not in storages}
    if chosen:
        settings.set("FEED_STORAGES", {**storages, **chosen}, settings.getpriority("FEED_STORAGES") or 0)
