"""The queue's Scrapy commands (the package's ``scrapy.commands`` entry points):
``sitemaps-enqueue``, ``sitemaps-status`` and ``sitemaps-collect``."""

from __future__ import annotations

import argparse

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from sitemap_crawl.arguments import SpiderArgumentError
from sitemap_crawl.queue.config import QueueConfig


class QueueCommand(ScrapyCommand):
    """A command that talks to the queue given with ``--queue URL``."""

    requires_project = False
    requires_crawler_process = False
    default_settings = {"LOG_LEVEL": "WARNING"}  # noqa: RUF012 - Scrapy's own commands declare it so

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--queue", metavar="URL", help="redis:// or rediss:// URL of the queue's server")

    def queue_config(self, opts: argparse.Namespace) -> QueueConfig:
        if not opts.queue:
            raise UsageError("give the queue's server: --queue redis://host:6379/0")
        try:
            return QueueConfig.from_settings(opts.queue, self.settings)
        except SpiderArgumentError as exc:
            raise UsageError(str(exc).replace("queue=", "--queue ")) from None
