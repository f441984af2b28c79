"""Many machines: workers that share one queue of sites on a Redis (>= 6.2) or Valkey server.

config.py (names of the keys, the settings), stream.py (the server's commands: add,
take, keep, acknowledge, dead-letter, status), ledger.py (when a site's pages have been
written), worker.py (the ``sitemaps`` spider's homepage source in a queue run), files.py
(the worker's output files to sync, the ``-O`` guard),
collect.py (each site's rows of exactly one completed attempt), commands/ (the
``sitemaps-enqueue``, ``sitemaps-status`` and ``sitemaps-collect`` Scrapy commands).
See docs/many-machines.md.
"""

from sitemap_crawl.queue.config import QueueConfig, parse_queue_url

__all__ = ["QueueConfig", "parse_queue_url"]
