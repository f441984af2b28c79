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
        try:
            if args[0] == "-":
                # read as a file is read: UTF-8, a byte that is not replaced (not smuggled on as
                # a surrogate that no server key can encode)
                stdin = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
                homepages = HomepageList(stdin, "<stdin>", normalize)
            else:
                homepages = HomepageList.from_file(args[0], normalize)
        except SpiderArgumentError as exc:
            raise UsageError(str(exc).replace("homepages_file=", "")) from None
        from sitemap_crawl.queue.stream import AddStopped

        try:
            new, already = asyncio.run(_add(config, homepages))
        except RedisError as exc:
            print(server_error(config.url, exc), file=sys.stderr)
            self.exitcode = 1
            return
        except AddStopped as stop:
            print(f"Stopped (Ctrl-C): {stop.new} new, {stop.already} already there; the rest of the list was not added")
            self.exitcode = 1
            return
        repeated = f", {homepages.repeated} repeated in the list" if homepages.repeated else ""
        skipped = f", {homepages.skipped} lines skipped (not http(s) URLs)" if homepages.skipped else ""
        print(f"{new} new, {already} already there{repeated}{skipped}")


async def _add(config: QueueConfig, homepages: HomepageList) -> tuple[int, int]:
    """Send the homepages; a Ctrl-C stops it after the batch being sent (AddStopped)."""
    from sitemap_crawl.queue.stream import SiteQueue

    interrupted = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, interrupted.set)  # (asyncio.run's own cancel was lost in the client)
    queue = SiteQueue(config)
    try:
        return await queue.add(homepages, stopped=interrupted.is_set)
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        await queue.close()
