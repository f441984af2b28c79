"""``scrapy sitemaps-enqueue sites.txt --queue redis://host:6379/0``: add homepages to the queue.

One homepage per line (``-`` reads standard input), as ``-a homepages_file=`` reads them:
blank lines and ``#`` comments skipped, each reduced to its site root unless
``--keep-path``; a homepage added before (by any run) is not added again. Prints how
many were new and how many were already there.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import signal
import sys
from collections.abc import Callable, Iterable, Iterator
from types import FrameType

from scrapy.exceptions import UsageError

from sitemap_crawl.arguments import SpiderArgumentError
from sitemap_crawl.queue.commands import QueueCommand
from sitemap_crawl.queue.config import QueueConfig, server_error
from sitemap_crawl.sites.homepages import HomepageList


class Command(QueueCommand):
    def syntax(self) -> str:
        return "FILE|- --queue URL"

    def short_desc(self) -> str:
        return "Add homepages to the shared queue of a sitemaps run (- reads standard input)"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--keep-path", action="store_true", help="queue each URL as given, not its site root")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        from redis.exceptions import RedisError  # here: every `scrapy` command loads this module

        if len(args) != 1:
            raise UsageError("give one file of homepages, or - for standard input")
        config = self.queue_config(opts)
        normalize = not opts.keep_path
        interrupt = _Interrupt()
        try:
            if args[0] == "-":
                # read as a file is read: UTF-8, a byte that is not UTF-8 replaced (not passed on
                # as a surrogate, which no server key can encode)
                stdin = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
                homepages = HomepageList(stdin, "<stdin>", normalize, stop=interrupt.said)
            else:
                homepages = HomepageList.from_file(args[0], normalize, stop=interrupt.said)
        except SpiderArgumentError as exc:
            raise UsageError(str(exc).replace("homepages_file=", "")) from None
        from sitemap_crawl.queue.stream import AddStopped

        previous = signal.signal(signal.SIGINT, interrupt)  # (asyncio.run then leaves SIGINT to it)
        try:
            new, already = asyncio.run(_add(config, interrupt.lines(homepages), interrupt.said))
        except RedisError as exc:
            print(server_error(config.url, exc, config.key), file=sys.stderr)
            self.exitcode = 1
            return
        except AddStopped as stop:
            print(f"Stopped (Ctrl-C): {stop.new} new, {stop.already} already there; the rest of the list was not added")
            self.exitcode = 1
            return
        finally:
            signal.signal(signal.SIGINT, previous)
        repeated = f", {homepages.repeated} repeated in the list" if homepages.repeated else ""
        skipped = f", {_lines(homepages.skipped)} skipped (not http(s) URLs)" if homepages.skipped else ""
        print(f"{new} new, {already} already there{repeated}{skipped}")


def _lines(count: int) -> str:
    """``1 line``, ``3 lines``."""
    return f"{count} line" if count == 1 else f"{count} lines"


class _Interrupt:
    """Ctrl-C while homepages are added (asyncio.run's own cancel of the task was lost inside
    the Redis client): asked after each batch sent; while the list is being read (a person
    typing, a slow pipe: a read that blocks), it stops the read at once."""

    def __init__(self) -> None:
        self.seen = False
        self._reading = False

    def __call__(self, _signum: int, frame: FrameType | None) -> None:
        self.seen = True
        # raised only where the list's lines are read (a read that may block), not in what
        # reading them calls: logging an invalid line would swallow it (the next line stops)
        if self._reading and frame is not None and frame.f_globals.get("__name__") == HomepageList.__module__:
            from sitemap_crawl.queue.stream import StopAdding

            raise StopAdding

    def said(self) -> bool:
        """Whether Ctrl-C was pressed."""
        return self.seen

    def lines(self, homepages: Iterable[str]) -> Iterator[str]:
        """``homepages``, each read with Ctrl-C stopping the read."""
        read = iter(homepages)
        while True:
            self._reading = True
            try:
                homepage = next(read, None)
            finally:
                self._reading = False
            if homepage is None:
                return
            if self.seen:  # (heard while reading, where it was not raised)
                from sitemap_crawl.queue.stream import StopAdding

                raise StopAdding
            yield homepage


async def _add(config: QueueConfig, homepages: Iterable[str], stopped: Callable[[], bool]) -> tuple[int, int]:
    """Send the homepages; ``stopped`` (Ctrl-C) ends it after the batch being sent (AddStopped)."""
    from sitemap_crawl.queue.stream import SiteQueue

    queue = SiteQueue(config)
    try:
        return await queue.add(homepages, stopped=stopped)
    finally:
        await queue.close()
