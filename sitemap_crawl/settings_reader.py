"""Typed reading of the SITEMAP_CRAWL_* settings, their defaults filled in.

The defaults themselves are :mod:`sitemap_crawl.default_settings`.
"""

from __future__ import annotations

import contextlib
from typing import Any

from sitemap_crawl import default_settings
from sitemap_crawl.arguments import parse_bool
from sitemap_crawl.cpus import MAX_AUTO_PROCESSES, default_worker_count, usable_cpus
from sitemap_crawl.default_settings import DEFAULT_KNOWN_PATHS
from sitemap_crawl.parsing import Limits
from sitemap_crawl.sites.shard import Shard

__all__ = ["DEFAULTS", "DEFAULT_KNOWN_PATHS", "SETTINGS", "SettingsReader"]

SETTINGS: dict[str, Any] = {
    name: value for name, value in vars(default_settings).items() if name.startswith(default_settings.SETTING_PREFIX)
}
"""Every SITEMAP_CRAWL_* setting and its default (from :mod:`sitemap_crawl.default_settings`)."""

DEFAULTS: dict[str, Any] = {
    name: value
    for name, value in SETTINGS.items()
    if not name.removeprefix(default_settings.SETTING_PREFIX).startswith(default_settings.LOADER_PREFIX)
}
"""The defaults the add-on sets: every setting but the loader's (worked out at crawl time)."""


class SettingsReader:
    """Typed access to the SITEMAP_CRAWL_* settings of a crawler (defaults filled in)."""

    def __init__(self, settings: Any) -> None:
        self._settings = settings

    def _get(self, name: str) -> Any:
        value = self._settings.get(name)
        return SETTINGS[name] if value is None else value

    @property
    def tree_file(self) -> str | None:
        value = self._settings.get("SITEMAP_CRAWL_TREE_FILE")
        return str(value) if value else None

    @property
    def audit_file(self) -> str | None:
        """The audit's findings file (SITEMAP_CRAWL_AUDIT_FILE), or None."""
        value = self._settings.get("SITEMAP_CRAWL_AUDIT_FILE")
        return str(value) if value else None

    @property
    def report_file(self) -> str | None:
        """The audit's HTML report (SITEMAP_CRAWL_REPORT_FILE), or None."""
        value = self._settings.get("SITEMAP_CRAWL_REPORT_FILE")
        return str(value) if value else None

    @property
    def audited(self) -> bool:
        """Whether the audit runs: a findings file or a report is asked for."""
        return bool(self.audit_file or self.report_file)

    @property
    def max_depth(self) -> int:
        return int(self._get("SITEMAP_CRAWL_MAX_DEPTH"))

    @property
    def max_size(self) -> int:
        return int(self._get("SITEMAP_CRAWL_MAX_SIZE"))

    @property
    def known_paths(self) -> list[str]:
        value = self._get("SITEMAP_CRAWL_KNOWN_PATHS")
        if isinstance(value, str):
            value = value.split(",")
        return [path.strip() for path in value if path.strip()]

    @property
    def batch_size(self) -> int:
        """Pages per PageBatch item; 0 (one item a page) when a feed is split every N items
        (FEED_EXPORT_BATCH_ITEM_COUNT, a feed's ``batch_item_count``): Scrapy counts items,
        and N must be N rows."""
        return 0 if self.feeds_split_by_items else max(0, int(self._get("SITEMAP_CRAWL_BATCH_SIZE")))

    @property
    def feeds_split_by_items(self) -> bool:
        """Whether a feed starts a new file every N items."""
        if int(self._settings.get("FEED_EXPORT_BATCH_ITEM_COUNT") or 0) > 0:
            return True
        feeds = self._settings.getdict("FEEDS") if hasattr(self._settings, "getdict") else {}
        return any(int((options or {}).get("batch_item_count") or 0) > 0 for options in feeds.values())

    @property
    def tree_log_lines(self) -> int:
        return int(self._get("SITEMAP_CRAWL_TREE_LOG_LINES"))

    @property
    def concurrent_sites(self) -> int:
        """Sites mapped at once in a many-site run."""
        return max(1, int(self._get("SITEMAP_CRAWL_CONCURRENT_SITES")))

    @property
    def crawl_processes(self) -> int:
        """Crawl processes of a many-site run; None or "auto": one per usable CPU, 1 to 4.

        A run that writes one file from every site runs in one process: an audit
        (``SITEMAP_CRAWL_AUDIT_FILE``, ``SITEMAP_CRAWL_REPORT_FILE``: its findings) and a
        history run (``SITEMAP_CRAWL_HISTORY``: one SQLite file, one writer).
        """
        if self.audited or self._get("SITEMAP_CRAWL_HISTORY"):
            return 1
        value = self._get("SITEMAP_CRAWL_PROCESSES")
        if value is None or str(value).strip().lower() == "auto":
            return max(1, min(MAX_AUTO_PROCESSES, usable_cpus()))
        return max(1, int(value))

    @property
    def shard(self) -> Shard | None:
        """The share of a helper crawl process (None in the main process)."""
        value = self._get("SITEMAP_CRAWL_SHARD")
        return None if value is None else Shard.parse(str(value))

    @property
    def known_paths_mode(self) -> str:
        """``always`` or ``fallback`` (lower-cased; checked by the spider)."""
        return str(self._get("SITEMAP_CRAWL_KNOWN_PATHS_MODE")).strip().lower()

    @property
    def concurrent_sitemaps(self) -> int:
        """Sitemaps in flight at once; by default two more than the parsing workers (at least 3),
        so that the next bodies download while the workers parse."""
        value = self._get("SITEMAP_CRAWL_CONCURRENT_SITEMAPS")
        if value is None:
            return max(3, self.parse_workers + 2)
        return max(1, int(value))

    @property
    def parse_workers(self) -> int:
        """Parsing worker processes; None means one per usable CPU (1 to 4), 0 none."""
        return self.parse_workers_among(1)

    def parse_workers_among(self, crawl_processes: int) -> int:
        """Parsing worker processes of one of ``crawl_processes`` crawl processes (a many-site
        run): when left to the default, a share of the CPUs those processes do not use."""
        name = "SITEMAP_CRAWL_PARSE_WORKERS"
        value = self._get(name)
        if not isinstance(value, bool):
            with contextlib.suppress(TypeError, ValueError):
                return max(0, int(value))  # a count: 2, "2"
        if str(value).strip().lower() == "auto":
            return default_worker_count(crawl_processes)
        return default_worker_count(crawl_processes) if parse_bool(name, value, True) else 0

    @property
    def parse_worker_min_size(self) -> int:
        return int(self._get("SITEMAP_CRAWL_PARSE_WORKER_MIN_SIZE"))

    @property
    def limits(self) -> Limits:
        """The parsing bounds; a body is read (downloaded, then decompressed) up to the
        smaller of SITEMAP_CRAWL_MAX_SIZE and Scrapy's DOWNLOAD_MAXSIZE (when set)."""
        max_size = self.max_size
        download_maxsize = int(self._settings.get("DOWNLOAD_MAXSIZE") or 0)
        if download_maxsize > 0:
            max_size = min(max_size, download_maxsize)
        return Limits(
            max_size=max_size,
            max_index_children=int(self._get("SITEMAP_CRAWL_MAX_INDEX_CHILDREN")),
        )

    @property
    def audit_backlog(self) -> int:
        """Bytes of bodies with the audit at most before the crawl pauses (SITEMAP_CRAWL_AUDIT_BACKLOG)."""
        return int(self._get("SITEMAP_CRAWL_AUDIT_BACKLOG"))

    @property
    def idle_connection_timeout(self) -> float:
        """Seconds an idle connection is kept in a many-site run (SITEMAP_CRAWL_IDLE_CONNECTION_TIMEOUT)."""
        return float(self._get("SITEMAP_CRAWL_IDLE_CONNECTION_TIMEOUT"))

    @property
    def loader_queue_size(self) -> int:
        """Page URLs the loader reads ahead (SITEMAP_CRAWL_LOADER_QUEUE_SIZE)."""
        return int(self._get("SITEMAP_CRAWL_LOADER_QUEUE_SIZE"))

    @property
    def loader_save_interval(self) -> float:
        """Seconds between two snapshots of the loader's state (SITEMAP_CRAWL_LOADER_SAVE_INTERVAL)."""
        return float(self._get("SITEMAP_CRAWL_LOADER_SAVE_INTERVAL"))

    @property
    def loader_log_interval(self) -> float:
        """Seconds between two progress lines (SITEMAP_CRAWL_LOADER_LOG_INTERVAL, else LOGSTATS_INTERVAL)."""
        value = self._get("SITEMAP_CRAWL_LOADER_LOG_INTERVAL")
        if value is None:
            value = self._settings.get("LOGSTATS_INTERVAL")
        return float(default_settings.LOADER_LOG_INTERVAL if value is None else value)

    @property
    def loader_max_in_flight(self) -> int:
        """Page requests handed to Scrapy and not yet handled, at most (SITEMAP_CRAWL_LOADER_MAX_IN_FLIGHT,
        else twice CONCURRENT_REQUESTS, at least 16); at least 1."""
        value = self._get("SITEMAP_CRAWL_LOADER_MAX_IN_FLIGHT")
        if value is None:
            concurrent = int(self._settings.get("CONCURRENT_REQUESTS") or 0)
            value = max(default_settings.LOADER_MIN_IN_FLIGHT, 2 * concurrent)
        return max(1, int(value))
