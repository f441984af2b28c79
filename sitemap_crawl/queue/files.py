"""A queue worker's output files: which to sync before a site is acknowledged, and the
guard against ``-O`` erasing the rows of sites acknowledged before."""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path
from typing import IO, Any

from scrapy.crawler import Crawler
from scrapy.extensions.feedexport import FeedExporter, FileFeedStorage, apply_uri_params
from w3lib.url import file_uri_to_path

from sitemap_crawl.arguments import SpiderArgumentError


def feed_files(crawler: Crawler) -> list[IO[bytes]]:
    """The open files of the crawl's local feeds (other storages upload at the end: they
    hold nothing a crash could keep anyway)."""
    exporter = crawler.get_extension(FeedExporter)
    files = []
    for slot in getattr(exporter, "slots", ()):
        if isinstance(slot.storage, FileFeedStorage) and slot.file is not None:
            files.append(slot.file)
    return files


def tree_files(crawler: Crawler) -> list[IO[str]]:
    """The tree file's open stream (a lines file), if any."""
    from sitemap_crawl.extensions.tree import SitemapTreeExtension

    tree_file = SitemapTreeExtension.for_crawler(crawler).tree_file
    stream = tree_file.stream if tree_file is not None else None
    return [stream] if stream is not None else []


def refuse_overwriting_feeds(feeds: dict[str, Any], spider: Any) -> None:
    """A worker restarted with ``-O file`` would erase the rows of the sites it acknowledged
    before: refuse a local feed that overwrites a file holding rows (``-o`` appends; a name
    with ``%(worker)s`` or ``%(time)s`` is new for every run)."""
    params = {name: getattr(spider, name, "") for name in dir(spider) if not name.startswith("__")}
    params.update(batch_id=1)
    for uri, options in feeds.items():
        uri = str(uri)
        if not (options or {}).get("overwrite") or "%(time)s" in uri or "%(batch_time)s" in uri:
            continue
        if "://" in uri and not uri.startswith("file:"):
            continue
        try:
            target = apply_uri_params(uri, params)
        except (KeyError, ValueError, TypeError):
            continue
        path = Path(file_uri_to_path(target) if target.startswith("file:") else target)
        if path.is_file() and path.stat().st_size:
            raise SpiderArgumentError(
                f"-O {uri} would erase the rows that {path} holds (sites the queue counts as done): "
                "give a queue worker -o (append) or a file name of its own, such as pages-%(worker)s.jsonl"
            )


async def sync_files(files: list[Any]) -> None:
    """Flush files here, then sync them to disk in a thread (never blocking the reactor)."""
    descriptors = []
    for handle in files:
        try:
            handle.flush()
            descriptors.append(handle.fileno())
        except (ValueError, OSError):  # closed already (the crawl is ending): closing flushed it
            continue
    if descriptors:
        await asyncio.to_thread(_fsync, descriptors)


def _fsync(descriptors: list[int]) -> None:
    for descriptor in descriptors:
        with contextlib.suppress(OSError):
            os.fsync(descriptor)
