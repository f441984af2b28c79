"""A helper crawl process: ``python -m sitemap_crawl.shards.runner``, started by the main
process (:mod:`sitemap_crawl.shards.helpers`) with a JSON description on standard input:
``{"spider": "module.Class", "arguments": {...}, "settings": {name: [value, priority]},
"shard": "1/2"}``. It runs the spider on its share of the sites; its standard output is
the pipe to the main process (anything printed goes to standard error instead), its log
goes where the main process's goes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
from typing import Any

from sitemap_crawl.engine_state import is_closing
from sitemap_crawl.processes import ignore_terminal_interrupt
from sitemap_crawl.shards.protocol import STOPPED_EXIT_CODE

logger = logging.getLogger(__name__)

HELPER_PRIORITY = 50
"""Priority of what a helper changes in the main process's settings (above the command line)."""


def helper_settings(shard: str, fd: int) -> dict[str, Any]:
    """What differs in a helper: no feeds, trees, job directory or progress of its own; its
    items go to the pipe."""
    return {
        "FEEDS": {},
        "ITEM_PIPELINES": {"sitemap_crawl.shards.output.ShardOutput": 0},
        "JOBDIR": None,
        "STATS_DUMP": False,
        "LOGSTATS_INTERVAL": 0,
        "TELNETCONSOLE_ENABLED": False,
        "REMOTE_CONTROL_ENABLED": False,
        "SITEMAP_CRAWL_TREE_FILE": None,
        "SITEMAP_CRAWL_PROCESSES": 1,
        "SITEMAP_CRAWL_SHARD": shard,
        "SITEMAP_CRAWL_SHARD_FD": fd,
    }


def main() -> int:
    spec = json.loads(sys.stdin.read())
    pipe = os.dup(1)
    os.dup2(2, 1)  # a stray print() must not break the pipe's frames

    from scrapy.crawler import AsyncCrawlerProcess
    from scrapy.settings import Settings
    from scrapy.utils.misc import load_object

    settings = Settings()
    for name, (value, priority) in spec["settings"].items():
        settings.set(name, value, priority)
    for name, value in helper_settings(spec["shard"], pipe).items():
        settings.set(name, value, HELPER_PRIORITY)
    process = AsyncCrawlerProcess(settings)
    crawler = process.create_crawler(load_object(spec["spider"]))
    # A terminal's Ctrl-C reaches this process too, and the main process stops it (SIGTERM):
    # one stop, graceful. It is started ignoring SIGINT (processes.child_command); Scrapy's
    # start installs its own handler (before the loop's first turn, reactor or not): ignored
    # again on the loop's first turn, before the crawl's own first step (queued before it),
    # until the SIGTERM, whose handler makes a second Ctrl-C force the stop.
    asyncio.get_event_loop().call_soon(ignore_terminal_interrupt)
    asyncio.get_event_loop().call_soon(finish_closing_on_sigterm, crawler)
    process.crawl(crawler, **spec["arguments"])
    process.start()
    return helper_exit_code(crawler.stats.get_value("finish_reason") if crawler.stats else None)


def finish_closing_on_sigterm(crawler: Any) -> None:
    """Wrap the SIGTERM handler Scrapy installed: a helper whose spider is already closing
    (its share done, or a limit) ignores the SIGTERM the main process sends when it stops.

    Scrapy's handler stops the reactor once the engine is stopped, and an engine already
    closing counts as stopped at once: the helper's loop ended while its last pages, site
    ends and stats still waited in its pipe's buffer for a main process slow to read, and
    they were lost (one Ctrl-C: a helper's sites ``interrupted`` with their pages in the
    feed). The main process kills a helper that has not ended DOWNLOAD_TIMEOUT + 10 s
    after the SIGTERM."""
    scrapy_handler = signal.getsignal(signal.SIGTERM)

    def on_sigterm(signum: int, frame: Any) -> None:
        if is_closing(crawler):
            logger.info("SIGTERM while this helper's spider is closing: its last output is still passed on")
            return
        if callable(scrapy_handler):
            scrapy_handler(signum, frame)

    signal.signal(signal.SIGTERM, on_sigterm)


def helper_exit_code(reason: object) -> int:
    """A helper's exit code for its finish reason: 0 for its share done or a CLOSESPIDER_*
    limit; :data:`STOPPED_EXIT_CODE` when a signal stopped it (Scrapy's ``shutdown``: the
    main process tells whether it asked for it, or the helper was stopped from outside and
    the sites it had not started are left to map); 1 for any other end (an error at its
    start, a crash)."""
    if reason == "shutdown":
        return STOPPED_EXIT_CODE
    return 0 if reason == "finished" or (isinstance(reason, str) and reason.startswith("closespider_")) else 1


if __name__ == "__main__":
    sys.exit(main())
