"""``scrapy sitemaps-status --queue redis://host:6379/0 [--json]``: how far the queue is.

Sites enqueued, waiting, in flight (per worker), done, failed (unreachable),
dead-lettered (with the last reasons), and pages written so far by acknowledged sites.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from sitemap_crawl.queue.commands import QueueCommand
from sitemap_crawl.queue.config import QueueConfig, display_url, server_error

DEAD_SHOWN = 5
"""Dead-lettered sites listed (the newest) in the text form; --json lists up to 100."""


class Command(QueueCommand):
    def syntax(self) -> str:
        return "--queue URL [--json]"

    def short_desc(self) -> str:
        return "Show the shared queue of a sitemaps run: waiting, in flight per worker, done, dead-lettered"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--json", action="store_true", help="one JSON object, for scripts")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        from redis.exceptions import RedisError  # here: every `scrapy` command loads this module

        config = self.queue_config(opts)
        try:
            status, dead = asyncio.run(_status(config))
        except RedisError as exc:
            print(server_error(config.url, exc, config.key), file=sys.stderr)
            self.exitcode = 1
            return
        if opts.json:
            print(json.dumps({"queue": display_url(config.url), "key": config.key, **status, "dead": dead}))
            return
        print(render(display_url(config.url), config.key, status, dead[:DEAD_SHOWN]))


async def _status(config: QueueConfig) -> tuple[dict[str, Any], list[dict[str, str | int]]]:
    from sitemap_crawl.queue.stream import SiteQueue

    queue = SiteQueue(config)
    try:
        status = await queue.status()
        return status.to_dict(), await queue.dead_letters()
    finally:
        await queue.close()


def render(url: str, key: str, status: dict[str, Any], dead: list[dict[str, str | int]]) -> str:
    """The text form of the status."""
    waiting = "unknown (Redis < 7)" if status["waiting"] is None else status["waiting"]
    workers = ", ".join(f"{name}: {count}" for name, count in sorted(status["workers"].items()))
    lines = [
        f"Queue {url} (key {key})",
        f"  enqueued:      {status['enqueued']}",
        f"  waiting:       {waiting}",
        f"  in flight:     {status['in_flight']}" + (f" ({workers})" if workers else ""),
        f"  done:          {status['done']}",
        f"  failed:        {status['failed']} (unreachable)",
        f"  dead-lettered: {status['dead_lettered']}",
        f"  duplicates:    {status['duplicates']} (entries of a site another entry maps)",
        f"  pages:         {status['pages']}",
    ]
    for letter in dead:
        lines.append(f"    dead: {letter.get('homepage')} - {letter.get('reason')}")
    more = int(status["dead_lettered"] or 0) - len(dead)
    if dead and more > 0:  # (the text shows the last DEAD_SHOWN)
        lines.append(f"    ... and {more} more (--json lists them all)")
    return "\n".join(lines)
