"""How many CPUs the crawl may use, and so how many parsing workers it starts by default."""

from __future__ import annotations

import os

MAX_AUTO_WORKERS = 4
"""Parsing workers started at most when SITEMAP_CRAWL_PARSE_WORKERS is left to its default."""
MAX_AUTO_PROCESSES = 4
"""Crawl processes of a many-site run at most when SITEMAP_CRAWL_PROCESSES is left to its default."""


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_worker_count(crawl_processes: int = 1) -> int:
    """Parsing workers of one crawl process by default: one per usable CPU but the crawl
    process's own (which exports every page), at least 1 and at most MAX_AUTO_WORKERS.

    A many-site run split across ``crawl_processes`` processes already keeps that many
    CPUs busy: each gets a share of the CPUs left over, none when there are none (a
    2-CPU machine with 2 crawl processes: as fast without workers, 35 MiB less).
    """
    if crawl_processes <= 1:
        return max(1, min(MAX_AUTO_WORKERS, usable_cpus() - 1))
    return min(MAX_AUTO_WORKERS, max(0, usable_cpus() - crawl_processes) // crawl_processes)
