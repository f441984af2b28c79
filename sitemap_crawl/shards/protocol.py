"""What a helper crawl process sends to the main process, and which share it maps.

Frames are those of the parsing worker (a 4-byte length and a pickle). Messages:

- ``(PAGES, website, sitemap_url, node_path, [page tuples])``: a batch of pages;
- ``(NODE, website, NodeReport)``: a tree report (the ``sitemap_node`` signal);
- ``(SITE, website, unreachable)``: a site is finished (the ``site_finished`` signal);
- ``(STATS, {name: number})``: the helper's counters, last.

The main process adds ``(ENDED, shard)`` itself when a helper ends early (it died, or a
signal the run did not send stopped it): it then maps the sites of that share the helper
had not started.
"""

from __future__ import annotations

from sitemap_crawl.sites.shard import Shard

__all__ = ["ENDED", "NODE", "PAGES", "RUNNER_MODULE", "SITE", "STATS", "STOPPED_EXIT_CODE", "Shard"]

PAGES = "pages"
NODE = "node"
SITE = "site"
STATS = "stats"
ENDED = "ended"

STOPPED_EXIT_CODE = 3
"""The exit code of a helper that a signal stopped (Scrapy's finish reason ``shutdown``): the
main process knows whether it sent it (0: its share done or a CLOSESPIDER_* limit; 1: any
other end)."""

RUNNER_MODULE = "sitemap_crawl.shards.runner"
"""The module a helper process runs (``python -m``)."""
