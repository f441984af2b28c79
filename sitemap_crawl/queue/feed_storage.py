"""A queue worker's local feed files remember a write that failed.

Scrapy's feed exporter catches the error of a row it cannot write (a full disk): it logs it
and goes on. A batch of rows larger than the file's buffer is written at once, and when that
write fails nothing of it stays in the buffer: flushing and syncing the file later succeed,
so the worker acknowledged sites whose rows were never on disk. Here each file says its
first failed write or flush once in the crawl's list (:func:`feed_write_failures`), which
the worker looks at before it syncs the files and acknowledges: kept by the crawl, not the
file, as a batch's file (``FEED_EXPORT_BATCH_ITEM_COUNT``) is closed when the next batch
starts.
"""

from __future__ import annotations

import io
from typing import IO, Any, cast
from weakref import WeakKeyDictionary

from scrapy.crawler import Crawler
from scrapy.extensions.feedexport import FileFeedStorage
from scrapy.settings import BaseSettings

STORAGE_PATH = "sitemap_crawl.queue.feed_storage.QueueFeedStorage"
LOCAL_SCHEMES = ("", "file")
"""The FEED_STORAGES keys of local files (a path, a ``file://`` URI)."""


_FAILURES: WeakKeyDictionary[Crawler, list[str]] = WeakKeyDictionary()


def feed_write_failures(crawler: Crawler) -> list[str]:
    """The feed files of ``crawler`` a write to failed, each once (``path: reason``), open or closed."""
    return _FAILURES.setdefault(crawler, [])


class FailureKeepingWriter(io.BufferedWriter):
    """A buffered binary file that keeps the first OSError of a write or a flush
    (``write_failure``), and says so once in ``failures`` (the crawl's list)."""

    write_failure: OSError | None = None

    def __init__(self, raw: io.RawIOBase, failures: list[str] | None = None) -> None:
        super().__init__(raw)
        self.failures = failures if failures is not None else []

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
            self.failures.append(f"{self.name}: {exc.strerror or exc}")


class QueueFeedStorage(FileFeedStorage):
    """Scrapy's local file storage, its file a :class:`FailureKeepingWriter`."""

    failures: list[str] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler, uri: str, *, feed_options: dict[str, Any] | None = None) -> Any:
        storage = cls(uri, feed_options=feed_options)
        storage.failures = feed_write_failures(crawler)
        return storage

    def open(self, spider: Any) -> IO[bytes]:
        opened = cast(io.BufferedWriter, super().open(spider))  # (Scrapy's: its folder made, its mode)
        return FailureKeepingWriter(opened.detach(), self.failures)


def use_queue_feed_storage(settings: BaseSettings) -> None:
    """Local feeds go through :class:`QueueFeedStorage`, unless the project gave them a
    storage of its own."""
    storages = settings.getdict("FEED_STORAGES")
    chosen = {scheme: STORAGE_PATH for scheme in LOCAL_SCHEMES if scheme not in storages}
    if chosen:
        settings.set("FEED_STORAGES", {**storages, **chosen}, settings.getpriority("FEED_STORAGES") or 0)
