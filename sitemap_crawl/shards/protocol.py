"""What a helper crawl process sends to the main process, and which share it maps.

Frames are those of the parsing worker (a 4-byte length and a pickle). Messages:

- ``(PAGES, website, sitemap_url, node_path, [page tuples])``: a batch of pages;
- ``(NODE, website, NodeReport)``: a tree report (the ``sitemap_node`` signal);
- ``(SITE, website, unreachable)``: a site is finished (the ``site_finished`` signal);
- ``(STATS, {name: number})``: the helper's counters, last.
"""

from __future__ import annotations

from sitemap_crawl.sites.shard import Shard

__all__ = ["NODE", "PAGES", "RUNNER_MODULE", "SITE", "STATS", "Shard"]

PAGES = "pages"
NODE = "node"
SITE = "site"
STATS = "stats"

RUNNER_MODULE = "sitemap_crawl.shards.runner"
"""The module a helper process runs (``python -m``)."""
