"""A helper crawl process: ``python -m sitemap_crawl.shards.runner``, started by the main
process (:mod:`sitemap_crawl.shards.helpers`) with a JSON description on standard input:
``{"spider": "module.Class", "arguments": {...}, "settings": {name: [value, priority]},
"shard": "1/2"}``. It runs the spider on its share of the sites; its standard output is
the pipe to the main process (anything printed goes to standard error instead), its log
goes where the main process's goes.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from sitemap_crawl.processes import ignore_terminal_interrupt

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

    from scrapy import signals
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
    # one stop, graceful. Scrapy installs its SIGINT handler as it starts: ignored from then on
    # (until the SIGTERM: its handler makes a second Ctrl-C force the stop, as in the main process).
    crawler.signals.connect(ignore_terminal_interrupt, signal=signals.engine_started)
    process.crawl(crawler, **spec["arguments"])
    process.start()
    reason = crawler.stats.get_value("finish_reason") if crawler.stats else None
    return 0 if is_asked_for_end(reason) else 1


def is_asked_for_end(reason: object) -> bool:
    """Whether a helper's finish reason is an end the run asked for: its share done, a
    CLOSESPIDER_* limit, or the main process stopping it (Scrapy's ``shutdown``); any other
    (an error at its start, a crash) makes its exit code 1."""
    return reason in ("finished", "shutdown") or (isinstance(reason, str) and reason.startswith("closespider_"))


if __name__ == "__main__":
    sys.exit(main())
