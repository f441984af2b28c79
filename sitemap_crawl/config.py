"""Setting names and defaults of sitemap_crawl (all prefixed SITEMAP_CRAWL_)."""

from __future__ import annotations

import contextlib
from typing import Any

from sitemap_crawl.arguments import parse_bool
from sitemap_crawl.offload import default_worker_count
from sitemap_crawl.parsing import Limits
from sitemap_crawl.parsing.reader import DEFAULT_MAX_SIZE, PROTOCOL_MAX_CHILDREN

DEFAULT_KNOWN_PATHS: tuple[str, ...] = (
    "sitemap.xml",
    "sitemap.xml.gz",
    "sitemap_index.xml",
    "sitemap-index.xml",
    "sitemap_index.xml.gz",
    "sitemap-index.xml.gz",
    ".sitemap.xml",
    "sitemap",
    "admin/config/search/xmlsitemap",
    "sitemap/sitemap-index.xml",
    "sitemap_news.xml",
    "sitemap-news.xml",
    "sitemap_news.xml.gz",
    "sitemap-news.xml.gz",
)
"""Well-known sitemap paths, probed in this order after robots.txt."""

DEFAULTS: dict[str, Any] = {
    "SITEMAP_CRAWL_TREE_FILE": None,
    "SITEMAP_CRAWL_MAX_DEPTH": 10,
    "SITEMAP_CRAWL_MAX_SIZE": DEFAULT_MAX_SIZE,
    "SITEMAP_CRAWL_KNOWN_PATHS": list(DEFAULT_KNOWN_PATHS),
    "SITEMAP_CRAWL_MAX_INDEX_CHILDREN": PROTOCOL_MAX_CHILDREN,
    "SITEMAP_CRAWL_BATCH_SIZE": 250,
    "SITEMAP_CRAWL_TREE_LOG_LINES": 200,
    "SITEMAP_CRAWL_GC_TUNING": True,
    "SITEMAP_CRAWL_PARSE_WORKERS": None,
    "SITEMAP_CRAWL_CONCURRENT_SITEMAPS": None,
    "SITEMAP_CRAWL_CONCURRENT_SITES": 100,
    "SITEMAP_CRAWL_KNOWN_PATHS_MODE": "always",
    "SITEMAP_CRAWL_PARSE_WORKER_MIN_SIZE": 256 * 1024,
}
"""Every SITEMAP_CRAWL_* setting and its default."""


class SettingsReader:
    """Typed access to the SITEMAP_CRAWL_* settings of a crawler (defaults filled in)."""

    def __init__(self, settings: Any) -> None:
        self._settings = settings

    def _get(self, name: str) -> Any:
        value = self._settings.get(name)
        return DEFAULTS[name] if value is None else value

    @property
    def tree_file(self) -> str | None:
        value = self._settings.get("SITEMAP_CRAWL_TREE_FILE")
        return str(value) if value else None

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
        return max(0, int(self._get("SITEMAP_CRAWL_BATCH_SIZE")))

    @property
    def tree_log_lines(self) -> int:
        return int(self._get("SITEMAP_CRAWL_TREE_LOG_LINES"))

    @property
    def concurrent_sites(self) -> int:
        """Sites mapped at once in a many-site run."""
        return max(1, int(self._get("SITEMAP_CRAWL_CONCURRENT_SITES")))

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
        name = "SITEMAP_CRAWL_PARSE_WORKERS"
        value = self._get(name)
        if not isinstance(value, bool):
            with contextlib.suppress(TypeError, ValueError):
                return max(0, int(value))  # a count: 2, "2"
        if str(value).strip().lower() == "auto":
            return default_worker_count()
        return default_worker_count() if parse_bool(name, value, True) else 0

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
