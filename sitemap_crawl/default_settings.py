"""Every SITEMAP_CRAWL_* setting of sitemap_crawl and its default (like Scrapy's default_settings).

Plain constants, read through :class:`sitemap_crawl.settings_reader.SettingsReader`;
the add-on sets them at add-on priority (all but the loader's SITEMAP_CRAWL_LOADER_*,
whose defaults the loader works out at crawl time). A None default is worked out
from other settings (see each). Pure: nothing imported.
"""

from __future__ import annotations

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

SITEMAP_CRAWL_TREE_FILE: str | None = None
"""Where the sitemap tree is written as JSON (None: not written)."""
SITEMAP_CRAWL_AUDIT_FILE: str | None = None
"""Where the audit's findings are written as JSON lines (None: no audit; docs/audit.md)."""
SITEMAP_CRAWL_REPORT_FILE: str | None = None
"""Where the audit's self-contained HTML report is written at the end (None: none)."""
SITEMAP_CRAWL_AUDIT_BACKLOG = 16 * 1024 * 1024
"""Bytes of response bodies with the audit process at once (one body always); past them
the crawl pauses until the audit catches up."""
SITEMAP_CRAWL_MAX_DEPTH = 10
"""Index levels read below a start URL, robots.txt or known path."""
SITEMAP_CRAWL_MAX_SIZE = 100 * 1024 * 1024
"""Decompressed bytes read from one sitemap (DOWNLOAD_MAXSIZE caps it too, when set)."""
SITEMAP_CRAWL_KNOWN_PATHS: list[str] = list(DEFAULT_KNOWN_PATHS)
"""Paths probed below the homepage after robots.txt."""
SITEMAP_CRAWL_MAX_INDEX_CHILDREN = 50_000
"""Sub-sitemaps taken from one index or robots.txt (the protocol allows 50,000)."""
SITEMAP_CRAWL_BATCH_SIZE = 250
"""Pages per PageBatch item (0: one item per page)."""
SITEMAP_CRAWL_TREE_LOG_LINES = 200
"""Node lines of the tree written to the log at the end."""
SITEMAP_CRAWL_GC_TUNING = True
"""Tune the garbage collector for a crawl of many pages."""
SITEMAP_CRAWL_PARSE_WORKERS: int | str | bool | None = None
"""Parsing worker processes; None ("auto"): one per usable CPU but one, 1 to 4."""
SITEMAP_CRAWL_CONCURRENT_SITEMAPS: int | None = None
"""Sitemaps of one site in flight at once; None: two more than the parsing workers, at least 3."""
SITEMAP_CRAWL_CONCURRENT_SITES = 100
"""Sites mapped at once in a many-site run (homepages_file), in each crawl process."""
SITEMAP_CRAWL_PROCESSES: int | str | None = None
"""Crawl processes of a many-site run (homepages_file), the sites split among them by host;
None ("auto"): one per usable CPU, 1 to 4. A single-site run uses one."""
SITEMAP_CRAWL_IDLE_CONNECTION_TIMEOUT = 10.0
"""Many-site run: seconds an idle keep-alive connection stays open (Twisted's default is 240)."""
SITEMAP_CRAWL_SHARD: str | None = None
"""Internal: the share (``index/count``) of the sites that a helper crawl process maps."""
SITEMAP_CRAWL_SHARD_FD: int | None = None
"""Internal: the file descriptor on which a helper crawl process sends its output."""
SITEMAP_CRAWL_KNOWN_PATHS_MODE = "always"
"""``always``: probe the well-known paths; ``fallback``: only when robots.txt declares no sitemap."""
SITEMAP_CRAWL_HISTORY: str | None = None
"""Path of the SQLite history file: conditional requests, and a feed of the changes since
the last run only (docs/incremental.md). None: every run exports every page."""
SITEMAP_CRAWL_PARSE_WORKER_MIN_SIZE = 256 * 1024
"""Smallest body sent to a parsing worker (smaller ones are read inline)."""

SITEMAP_CRAWL_LOADER_QUEUE_SIZE = 1000
"""Page URLs the loader reads ahead and holds in memory."""
SITEMAP_CRAWL_LOADER_MAX_IN_FLIGHT: int | None = None
"""Page requests handed to Scrapy and not yet handled; None: twice CONCURRENT_REQUESTS,
at least LOADER_MIN_IN_FLIGHT."""
SITEMAP_CRAWL_LOADER_SAVE_INTERVAL = 5.0
"""Seconds between two snapshots of the loader's state (with JOBDIR)."""
SITEMAP_CRAWL_LOADER_LOG_INTERVAL: float | None = None
"""Seconds between two progress lines of the loader; None: LOGSTATS_INTERVAL."""

LOADER_MIN_IN_FLIGHT = 16
"""The least SITEMAP_CRAWL_LOADER_MAX_IN_FLIGHT worked out from CONCURRENT_REQUESTS."""
LOADER_LOG_INTERVAL = 60.0
"""SITEMAP_CRAWL_LOADER_LOG_INTERVAL when LOGSTATS_INTERVAL is not set either (Scrapy's default)."""
SETTING_PREFIX = "SITEMAP_CRAWL_"
"""What every setting name of sitemap_crawl starts with."""
LOADER_PREFIX = "LOADER_"
"""What the loader's setting names start with after SETTING_PREFIX (the add-on leaves them alone)."""

SITEMAP_CRAWL_QUEUE_KEY = "sitemap_crawl"
"""Queue runs (``-a queue=``): prefix of the queue's keys on the server (``<key>:sites`` ...)."""
SITEMAP_CRAWL_QUEUE_CLAIM_AFTER = 60.0
"""Queue runs: seconds after which a site held by a silent worker is taken over by another
(a live worker renews its hold every quarter of this)."""
SITEMAP_CRAWL_QUEUE_MAX_ATTEMPTS = 3
"""Queue runs: workers that may take a site; one taken more often goes to the dead-letter stream."""
