"""The crawl's open feed files: flushed before progress that counts on their rows is
recorded (a kill -9 then keeps the rows of what was recorded done)."""

from __future__ import annotations

import contextlib
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


def feed_files(crawler: Crawler, local_only: bool = True) -> list[IO[bytes]]:
    """The open files of the crawl's feeds: local ones only by default (other storages
    upload at the end: they hold nothing a crash could keep anyway)."""
    from scrapy.extensions.feedexport import FeedExporter, FileFeedStorage  # (Scrapy only when crawling)

    exporter = crawler.get_extension(FeedExporter)
    files: list[IO[bytes]] = []
    for slot in getattr(exporter, "slots", ()):
        file: Any = getattr(slot, "file", None)
        if file is None or getattr(file, "closed", False):
            continue
        if local_only and not isinstance(slot.storage, FileFeedStorage):
            continue
        files.append(file)
    return files


def flush_feed_files(crawler: Crawler) -> None:
    """Push the rows written so far to the feed files (the operating system has them)."""
    for file in feed_files(crawler, local_only=False):
        with contextlib.suppress(ValueError, OSError):  # closed meanwhile (the crawl is ending)
            file.flush()
