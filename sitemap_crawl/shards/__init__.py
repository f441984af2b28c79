"""Crawl processes: a many-site run split across several processes (one per CPU).

The sites of a ``homepages_file`` are partitioned by host name: the process that the
user started (the *main* process) maps its share and starts one *helper* process per
other share (:mod:`.helpers`); each helper runs the same spider on its share
(:mod:`.runner`) and streams its pages, tree reports and finished sites back over a
pipe (:mod:`.protocol`, written by :mod:`.output`). The main process hands them to
its own item pipelines, feeds and tree extension, so the run has one feed and one
tree file, as with one process. A site belongs to one process only, so per-host
politeness is the same as in one process for every host but one that serves the
sitemaps of sites in different processes (docs/arguments.md).
"""

from sitemap_crawl.shards.protocol import Shard

__all__ = ["Shard"]
