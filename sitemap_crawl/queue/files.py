"""A queue worker's output files: which to sync before a site is acknowledged, and the
guard against ``-O`` erasing the rows of sites acknowledged before."""

from __future__ import annotations

import asyncio
import errno
import os
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows
    fcntl = None  # type: ignore[assignment]

from scrapy.crawler import Crawler
from scrapy.extensions.feedexport import apply_uri_params
from w3lib.url import file_uri_to_path

from sitemap_crawl.arguments import SpiderArgumentError
from sitemap_crawl.lines_file import LinesFile, ends_mid_line

LINE_FORMATS = ("jsonlines", "jsonl", "jl")
"""Feed formats of one record per line, whose last line a crash may cut short."""


class OutputWriteError(Exception):
    """An output file of the worker cannot be written (a full disk): no site may be
    acknowledged, as its rows or its tree line would not be on disk."""


def tree_files(crawler: Crawler) -> list[LinesFile]:
    """The tree file's open stream (a lines file), if any; :class:`OutputWriteError` when a
    write to it failed."""
    from sitemap_crawl.extensions.tree import SitemapTreeExtension

    extension = SitemapTreeExtension.existing(crawler)  # (none when the project switched it off)
    if extension is not None and extension.tree_file_failure is not None:
        raise OutputWriteError(f"the tree file {extension.tree_file_failure}")
    tree_file = extension.tree_file if extension is not None else None
    stream = tree_file.stream if tree_file is not None else None
    return [stream] if stream is not None else []


def _local_feeds(feeds: dict[str, Any], spider: Any) -> list[tuple[str, dict[str, Any], Path]]:
    """The local files of the feeds, as this run will name them (a name with ``%(time)s``
    is new for every run: left out)."""
    params = {name: getattr(spider, name, "") for name in dir(spider) if not name.startswith("__")}
    params.update(batch_id=1)
    found = []
    for uri, options in feeds.items():
        uri = str(uri)
        if "%(time)s" in uri or "%(batch_time)s" in uri or ("://" in uri and not uri.startswith("file:")):
            continue
        try:
            target = apply_uri_params(uri, params)
        except (KeyError, ValueError, TypeError):
            continue
        found.append(
            (uri, dict(options or {}), Path(file_uri_to_path(target) if target.startswith("file:") else target))
        )
    return found


def prepare_feeds(feeds: dict[str, Any], spider: Any) -> None:
    """Before the feeds open: refuse a post-processed feed (its rows cannot be synced to disk
    before an acknowledgement), and ``-O`` over a file that holds rows (a restarted worker
    would erase the rows of the sites it acknowledged before; ``-o`` appends, and a name
    with ``%(worker)s`` is new for every run), and end a JSON lines file's last line when a
    crash cut it short, so that appended rows start on a line of their own."""
    for uri, options, path in _local_feeds(feeds, spider):
        if options.get("postprocessing"):
            raise SpiderArgumentError(
                f"the feed {uri} of a queue worker cannot be post-processed (postprocessing: a plugin such "
                "as GzipPlugin holds rows until the feed closes): a site is acknowledged only once its rows "
                "are on disk; compress the files once the workers are done"
            )
        if not options.get("overwrite"):
            if str(options.get("format", "")).lower() in LINE_FORMATS and ends_mid_line(path):
                with path.open("ab") as handle:
                    handle.write(b"\n")
            continue
        if path.is_file() and path.stat().st_size:
            raise SpiderArgumentError(
                f"-O {uri} would erase the rows that {path} holds (sites the queue counts as done): "
                "give a queue worker -o (append) or a file name of its own, such as pages-%(worker)s.jsonl"
            )


def lock_outputs(feeds: dict[str, Any], spider: Any, *files: str | None) -> list[int]:
    """Hold an exclusive lock on each local feed file and each of ``files`` (the tree, audit
    and report files) for the run (the descriptors returned; closing them lets go): a second
    worker given the same files (the same directory and ``-O pages-%(batch_id)s.jsonl``)
    stops at start with a bad argument, where the two wrote over each other's rows."""
    if fcntl is None:  # pragma: no cover - not on Windows
        return []
    paths = [path for _uri, _options, path in _local_feeds(feeds, spider)]
    paths += [Path(name) for name in files if name]
    held: list[int] = []
    for path in dict.fromkeys(paths):
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(descriptor)
            for other in held:
                os.close(other)
            raise SpiderArgumentError(
                f"another worker writes {path}: give each worker files of its own "
                "(-o 'pages-%(worker)s.jsonl', and tree, audit and report files of its own, such as trees-HOST-1.jsonl)"
            ) from None
        held.append(descriptor)
    return held


async def sync_files(files: list[Any]) -> None:
    """Flush files here, then sync them to disk in a thread (never blocking the reactor);
    :class:`OutputWriteError` when one cannot be written."""
    descriptors = []
    for handle in files:
        try:
            handle.flush()
            descriptors.append(handle.fileno())
        except ValueError:  # closed already (the crawl is ending): closing flushed it
            continue
        except OSError as exc:
            raise OutputWriteError(f"{getattr(handle, 'name', handle)}: {exc.strerror or exc}") from None
    if descriptors:
        await asyncio.to_thread(_fsync, descriptors)


def _fsync(descriptors: list[int]) -> None:
    for descriptor in descriptors:
        try:
            os.fsync(descriptor)
        except OSError as exc:
            if exc.errno in (errno.EINVAL, errno.EROFS, errno.EBADF):  # a pipe, a device: nothing to sync
                continue
            raise OutputWriteError(f"file descriptor {descriptor}: {exc.strerror or exc}") from None
