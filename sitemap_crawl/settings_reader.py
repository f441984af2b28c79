"""Typed reading of the SITEMAP_CRAWL_* settings, their defaults filled in.

The defaults themselves are :mod:`sitemap_crawl.default_settings`.
"""

from __future__ import annotations

import json
import logging
import math
from typing import Any

from sitemap_crawl import default_settings
from sitemap_crawl.arguments import SpiderArgumentError, parse_bool
from sitemap_crawl.cpus import MAX_AUTO_PROCESSES, default_worker_count, usable_cpus
from sitemap_crawl.default_settings import DEFAULT_KNOWN_PATHS
from sitemap_crawl.discovery.rules import KNOWN_PATHS_MODES, makes_known_path_url
from sitemap_crawl.parsing import Limits
from sitemap_crawl.sites.hosts import SlotLimits
from sitemap_crawl.sites.shard import Shard

logger = logging.getLogger(__name__)

__all__ = ["DEFAULTS", "DEFAULT_KNOWN_PATHS", "SETTINGS", "SettingError", "SettingsReader"]

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


_LEAST_CLAIM_AFTER = 0.1
"""SITEMAP_CRAWL_QUEUE_CLAIM_AFTER below this is taken as this (renewals every 25 ms at most)."""


class SettingError(SpiderArgumentError):
    """A SITEMAP_CRAWL_* setting has a value it cannot take; the crawl stops before it starts."""


def _finite_number(value: object) -> float | None:
    """A setting's value as a finite number (``10``, ``"10"``, ``2.5``), or None (``"8KB"``, ``True``)."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value.strip() if isinstance(value, str) else value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


MAX_DEPTH_LIMIT = 100
"""The largest SITEMAP_CRAWL_MAX_DEPTH: past about 470 levels the tree's JSON (nested
objects) went over Python's recursion limit and the tree file was not written."""

CHECKED_PROPERTIES = (
    "known_paths",
    "slot_limits",
    "known_paths_mode",
    "max_depth",
    "limits",
    "batch_size",
    "tree_log_lines",
    "concurrent_sites",
    "crawl_processes",
    "concurrent_sitemaps",
    "parse_workers",
    "parse_worker_min_size",
    "audit_backlog",
    "idle_connection_timeout",
    "loader_queue_size",
    "loader_save_interval",
    "loader_log_interval",
    "loader_max_in_flight",
    "queue_claim_after",
    "queue_max_attempts",
    "shard",
    "concurrent_requests",
    "logstats_interval",
    "gc_tuning",
)
"""The properties :meth:`SettingsReader.check` reads: each raises SettingError for a value out of range."""


_BATCH_ITEM_COUNT = "a whole number, 0 or more (0: one file)"


def _int_as_scrapy_reads(value: Any) -> int:
    """``int(value)`` as Scrapy reads its whole-number settings; -1 when that fails."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return -1


def _feed_batch_item_count(uri: object, options: dict[str, Any]) -> int:
    """A feed's ``batch_item_count`` as Scrapy reads it (``int()``); SettingError otherwise."""
    value = options.get("batch_item_count")
    if not value:
        return 0
    count = _int_as_scrapy_reads(value)
    if count < 0:
        raise SettingError(f"FEEDS: {uri}: batch_item_count must be {_BATCH_ITEM_COUNT}, not {value!r}")
    return count


def _unrolls_batches(exporter: Any) -> bool:
    """Whether a FEED_EXPORTERS value (a class or its import path; None: no exporter for the
    format, Scrapy says so) writes a row a page of a page batch (sitemap_crawl's exporters)."""
    if exporter is None:
        return True
    from scrapy.utils.misc import load_object

    from sitemap_crawl.exporters import PageRows

    try:
        exporter_class = load_object(exporter) if isinstance(exporter, str) else exporter
    except (ImportError, NameError, ValueError):
        return True  # (Scrapy stops the feed with its own error)
    return isinstance(exporter_class, type) and issubclass(exporter_class, PageRows)


class SettingsReader:
    """Typed access to the SITEMAP_CRAWL_* settings of a crawler (defaults filled in).

    A numeric setting out of its range raises :class:`SettingError`; :meth:`check` reads
    them all, for a spider to stop at start with one line."""

    def __init__(self, settings: Any) -> None:
        self._settings = settings

    def _get(self, name: str) -> Any:
        value = self._settings.get(name)
        return SETTINGS[name] if value is None else value

    def _whole(self, name: str, least: int, most: int | None = None) -> int:
        """A setting that is a whole number of at least ``least`` (0 or 1), and at most
        ``most`` if given; SettingError otherwise."""
        value = self._get(name)
        number = _finite_number(value)
        if number is None or not number.is_integer() or number < least or (most is not None and number > most):
            if most is not None:
                allowed = f"a whole number from {least} to {most}"
            else:
                allowed = "a positive whole number" if least > 0 else "a whole number, 0 or more"
            raise SettingError(f"{name} must be {allowed}, not {value!r}")
        return int(number)

    def _seconds(self, name: str, positive: bool) -> float:
        """A setting that is a number of seconds, above 0 (``positive``) or at least 0; SettingError otherwise."""
        value = self._get(name)
        number = _finite_number(value)
        if number is None or number < 0 or (positive and number == 0):
            allowed = "a number of seconds above 0" if positive else "a number of seconds, 0 or more"
            raise SettingError(f"{name} must be {allowed}, not {value!r}")
        return number

    def check(self) -> None:
        """Read every setting that has a range (the numbers, the known-path mode): SettingError
        for the first one out of it, before anything is fetched."""
        for name in CHECKED_PROPERTIES:
            getattr(self, name)

    def check_for(self, spider_name: str) -> None:
        """:meth:`check` for a spider's ``from_crawler``: a bad setting is logged in one
        ERROR line (``Bad setting for the <name> spider: ...``) and raised, so that the crawl
        stops at start with exit code 1."""
        try:
            self.check()
        except SettingError as exc:
            logger.error("Bad setting for the %s spider: %s", spider_name, exc)
            raise

    def _file(self, name: str) -> str | None:
        """A file setting's path, or None when it is not set, empty or only spaces (off)."""
        value = self._settings.get(name)
        path = "" if value is None else str(value)
        return path if path.strip() else None

    @property
    def tree_file(self) -> str | None:
        """The tree file (SITEMAP_CRAWL_TREE_FILE), or None."""
        return self._file("SITEMAP_CRAWL_TREE_FILE")

    @property
    def history_file(self) -> str | None:
        """The history's SQLite file (SITEMAP_CRAWL_HISTORY), or None."""
        return self._file("SITEMAP_CRAWL_HISTORY")

    @property
    def audit_file(self) -> str | None:
        """The audit's findings file (SITEMAP_CRAWL_AUDIT_FILE), or None."""
        return self._file("SITEMAP_CRAWL_AUDIT_FILE")

    @property
    def report_file(self) -> str | None:
        """The audit's HTML report (SITEMAP_CRAWL_REPORT_FILE), or None."""
        return self._file("SITEMAP_CRAWL_REPORT_FILE")

    @property
    def audited(self) -> bool:
        """Whether the audit runs: a findings file or a report is asked for."""
        return bool(self.audit_file or self.report_file)

    @property
    def max_depth(self) -> int:
        """Index levels read below a start URL (0: none), SITEMAP_CRAWL_MAX_DEPTH (at most
        ``MAX_DEPTH_LIMIT``: a deeper tree is no JSON a tree file can hold)."""
        return self._whole("SITEMAP_CRAWL_MAX_DEPTH", 0, MAX_DEPTH_LIMIT)

    @property
    def max_size(self) -> int:
        """Bytes read from one sitemap, SITEMAP_CRAWL_MAX_SIZE (positive)."""
        return self._whole("SITEMAP_CRAWL_MAX_SIZE", 1)

    def _bool(self, name: str) -> bool:
        """A true/false setting (also 1/0, yes/no, as the spider's arguments); SettingError otherwise."""
        value = self._get(name)
        try:
            return parse_bool(name, value, bool(SETTINGS[name]))
        except SpiderArgumentError:
            raise SettingError(f"{name} must be true or false (or 1/0, yes/no), not {value!r}") from None

    @property
    def gc_tuning(self) -> bool:
        """Whether the garbage collector is tuned while the spider runs (SITEMAP_CRAWL_GC_TUNING)."""
        return self._bool("SITEMAP_CRAWL_GC_TUNING")

    @property
    def known_paths(self) -> list[str]:
        """The well-known paths probed, in order; SettingError for one that makes no http(s) URL
        (or a value that is neither a list of strings nor a comma-separated string)."""
        name = "SITEMAP_CRAWL_KNOWN_PATHS"
        value = self._get(name)
        if isinstance(value, str) and value.lstrip().startswith("["):  # JSON, as Scrapy reads its dict settings
            try:
                value = json.loads(value)
            except ValueError:
                raise SettingError(f"{name} is not a JSON list of paths: {value!r}") from None
        elif isinstance(value, str):
            value = value.split(",")
        if not isinstance(value, list | tuple) or not all(isinstance(path, str) for path in value):
            raise SettingError(f"{name} must be a list of paths or a comma-separated string, not {value!r}")
        paths = [path.strip() for path in value if path.strip()]
        for path in paths:
            if not makes_known_path_url(path):
                raise SettingError(f"{name}: {path!r} is not a path or an http(s) URL (example: maps/sitemap.xml)")
        return paths

    @property
    def batch_size(self) -> int:
        """Pages per PageBatch item; 0 (one item a page) when Scrapy counts or filters the
        items (:attr:`pages_as_items`)."""
        size = self._whole("SITEMAP_CRAWL_BATCH_SIZE", 0)
        return 0 if self.pages_as_items else size

    @property
    def pages_as_items(self) -> bool:
        """Whether each page must be an item of its own, because a Scrapy setting counts or
        filters items and means pages: a feed split every N items (FEED_EXPORT_BATCH_ITEM_COUNT,
        a feed's ``batch_item_count``), CLOSESPIDER_ITEMCOUNT, a feed's ``item_classes`` or
        ``item_filter``; or because a feed's format is mapped (FEED_EXPORTERS) to an exporter
        that does not unroll page batches (a project's own: it wrote a row a batch)."""
        settings = self._settings
        if self._scrapy_whole("FEED_EXPORT_BATCH_ITEM_COUNT", _BATCH_ITEM_COUNT, missing=0) > 0:
            return True
        if self._scrapy_whole("CLOSESPIDER_ITEMCOUNT", "a whole number, 0 or more (0: no limit)", missing=0) > 0:
            return True
        feeds = settings.getdict("FEEDS") if hasattr(settings, "getdict") else {}
        exporters = settings.getwithbase("FEED_EXPORTERS") if hasattr(settings, "getwithbase") else {}
        return any(
            _feed_batch_item_count(uri, options) > 0
            or options.get("item_classes")
            or options.get("item_filter")
            or not _unrolls_batches(exporters.get(options.get("format")))
            for uri, options in ((uri, options or {}) for uri, options in feeds.items())
        )

    @property
    def tree_log_lines(self) -> int:
        return self._whole("SITEMAP_CRAWL_TREE_LOG_LINES", 0)

    @property
    def concurrent_sites(self) -> int:
        """Sites mapped at once in a many-site run."""
        return self._whole("SITEMAP_CRAWL_CONCURRENT_SITES", 1)

    @property
    def crawl_processes(self) -> int:
        """Crawl processes of a many-site run; None or "auto": one per usable CPU, 1 to 4.

        A run that writes one file from every site runs in one process: an audit
        (``SITEMAP_CRAWL_AUDIT_FILE``, ``SITEMAP_CRAWL_REPORT_FILE``: its findings) and a
        history run (``SITEMAP_CRAWL_HISTORY``: one SQLite file, one writer); so does a run
        bound per address (CONCURRENT_REQUESTS_PER_IP: sites split by host name may share
        one address, and each process would hold the bound on its own).
        """
        name = "SITEMAP_CRAWL_PROCESSES"
        value = self._get(name)
        auto = value is None or str(value).strip().lower() == "auto"
        count = max(1, min(MAX_AUTO_PROCESSES, usable_cpus())) if auto else self._whole(name, 1)
        one_process = self.audited or self.history_file or self.slot_limits.by_ip
        return 1 if one_process else count

    @property
    def slot_limits(self) -> SlotLimits:
        """The bound of each download slot, as Scrapy's downloader reads its settings
        (CONCURRENT_REQUESTS_PER_DOMAIN, CONCURRENT_REQUESTS_PER_IP, DOWNLOAD_SLOTS);
        SettingError for a slot concurrency or a per-IP bound that is no whole number."""
        try:
            return SlotLimits.from_settings(self._settings)
        except (TypeError, ValueError) as exc:
            raise SettingError(
                f"CONCURRENT_REQUESTS_PER_IP and each DOWNLOAD_SLOTS concurrency must be whole numbers ({exc})"
            ) from exc

    @property
    def shard(self) -> Shard | None:
        """The share of a helper crawl process (None in the main process)."""
        value = self._get("SITEMAP_CRAWL_SHARD")
        if value is None:
            return None
        try:
            return Shard.parse(str(value))
        except ValueError:
            raise SettingError(
                "SITEMAP_CRAWL_SHARD must be index/count, 0 <= index < count (the crawl sets it for its "
                f"helper processes), not {value!r}"
            ) from None

    @property
    def known_paths_mode(self) -> str:
        """``always`` or ``fallback`` (lower-cased); SettingError otherwise."""
        name = "SITEMAP_CRAWL_KNOWN_PATHS_MODE"
        value = self._get(name)
        mode = str(SETTINGS[name] if value is None else value).strip().lower()  # (empty: no mode, a bad value)
        if mode not in KNOWN_PATHS_MODES:
            raise SettingError(f"{name} must be {' or '.join(KNOWN_PATHS_MODES)}, not {mode!r}")
        return mode

    @property
    def concurrent_sitemaps(self) -> int:
        """Sitemaps in flight at once; by default two more than the parsing workers (at least 3),
        so that the next bodies download while the workers parse."""
        name = "SITEMAP_CRAWL_CONCURRENT_SITEMAPS"
        if self._get(name) is None:
            return max(3, self.parse_workers + 2)
        return self._whole(name, 1)

    @property
    def parse_workers(self) -> int:
        """Parsing worker processes; None means one per usable CPU (1 to 4), 0 none."""
        return self.parse_workers_among(1)

    def parse_workers_among(self, crawl_processes: int) -> int:
        """Parsing worker processes of one of ``crawl_processes`` crawl processes (a many-site
        run): when left to the default, a share of the CPUs those processes do not use."""
        name = "SITEMAP_CRAWL_PARSE_WORKERS"
        value = self._get(name)
        if _finite_number(value) is not None:
            return self._whole(name, 0)  # a count: 2, "2"
        if value is None or str(value).strip().lower() == "auto":
            return default_worker_count(crawl_processes)
        try:
            enabled = parse_bool(name, value, True)
        except SpiderArgumentError:
            raise SettingError(
                f"{name} must be a whole number, 0 or more, auto, true or false, not {value!r}"
            ) from None
        return default_worker_count(crawl_processes) if enabled else 0

    @property
    def parse_worker_min_size(self) -> int:
        return self._whole("SITEMAP_CRAWL_PARSE_WORKER_MIN_SIZE", 0)

    @property
    def limits(self) -> Limits:
        """The parsing bounds; a body is read (downloaded, then decompressed) up to the
        smaller of SITEMAP_CRAWL_MAX_SIZE and Scrapy's DOWNLOAD_MAXSIZE (when set)."""
        max_size = self.max_size
        # (a negative cap: Scrapy would cancel every download)
        download_maxsize = self._scrapy_whole("DOWNLOAD_MAXSIZE", "a whole number of bytes, 0 or more (0: no cap)")
        if download_maxsize > 0:
            max_size = min(max_size, download_maxsize)
        return Limits(
            max_size=max_size,
            max_index_children=self._whole("SITEMAP_CRAWL_MAX_INDEX_CHILDREN", 1),
        )

    @property
    def audit_backlog(self) -> int:
        """Bytes of bodies with the audit at most before the crawl pauses (SITEMAP_CRAWL_AUDIT_BACKLOG)."""
        return self._whole("SITEMAP_CRAWL_AUDIT_BACKLOG", 0)

    @property
    def idle_connection_timeout(self) -> float:
        """Seconds an idle connection is kept in a many-site run (SITEMAP_CRAWL_IDLE_CONNECTION_TIMEOUT)."""
        return self._seconds("SITEMAP_CRAWL_IDLE_CONNECTION_TIMEOUT", positive=True)

    @property
    def loader_queue_size(self) -> int:
        """Page URLs the loader reads ahead (SITEMAP_CRAWL_LOADER_QUEUE_SIZE)."""
        return self._whole("SITEMAP_CRAWL_LOADER_QUEUE_SIZE", 1)

    @property
    def loader_save_interval(self) -> float:
        """Seconds between two snapshots of the loader's state (SITEMAP_CRAWL_LOADER_SAVE_INTERVAL)."""
        return self._seconds("SITEMAP_CRAWL_LOADER_SAVE_INTERVAL", positive=False)

    @property
    def loader_log_interval(self) -> float:
        """Seconds between two progress lines (SITEMAP_CRAWL_LOADER_LOG_INTERVAL, else LOGSTATS_INTERVAL)."""
        name = "SITEMAP_CRAWL_LOADER_LOG_INTERVAL"
        if self._get(name) is not None:
            return self._seconds(name, positive=False)
        value = self.logstats_interval
        return float(default_settings.LOADER_LOG_INTERVAL) if value is None else value

    @property
    def logstats_interval(self) -> float | None:
        """Scrapy's LOGSTATS_INTERVAL (a number of seconds, 0 or more), or None when not set."""
        if self._settings.get("LOGSTATS_INTERVAL") is None:
            return None
        return self._seconds("LOGSTATS_INTERVAL", positive=False)

    @property
    def concurrent_requests(self) -> int:
        """Scrapy's CONCURRENT_REQUESTS (unset or empty: 0)."""
        return self._scrapy_whole("CONCURRENT_REQUESTS", "a whole number, 0 or more", missing=0)

    def _scrapy_whole(self, name: str, allowed: str, missing: int | None = None) -> int:
        """One of Scrapy's whole-number settings as Scrapy reads it: ``int()`` (``1.0``, ``8.0``,
        ``abc`` fail there, in its downloader or engine: a traceback), 0 or more; ``missing``
        stands for a value not set or empty. SettingError otherwise."""
        value = self._settings.get(name)
        if missing is not None and not value:
            return missing
        number = _int_as_scrapy_reads(value)
        if number < 0:
            raise SettingError(f"{name} must be {allowed}, not {value!r}")
        return number

    @property
    def depth_limit(self) -> int:
        """Scrapy's DEPTH_LIMIT (0: none), which the loader applies to its page requests."""
        return int(self._settings.get("DEPTH_LIMIT") or 0)

    @property
    def loader_max_in_flight(self) -> int:
        """Page requests handed to Scrapy and not yet handled, at most (SITEMAP_CRAWL_LOADER_MAX_IN_FLIGHT,
        else twice CONCURRENT_REQUESTS, at least 16); at least 1."""
        name = "SITEMAP_CRAWL_LOADER_MAX_IN_FLIGHT"
        if self._get(name) is not None:
            return self._whole(name, 1)
        return max(default_settings.LOADER_MIN_IN_FLIGHT, 2 * self.concurrent_requests)

    @property
    def queue_claim_after(self) -> float:
        """Queue runs: seconds after which a silent worker's site is taken over (SITEMAP_CRAWL_QUEUE_CLAIM_AFTER;
        at least 0.1: a worker renews its hold every quarter of it)."""
        return max(_LEAST_CLAIM_AFTER, self._seconds("SITEMAP_CRAWL_QUEUE_CLAIM_AFTER", positive=True))

    @property
    def queue_max_attempts(self) -> int:
        """Queue runs: workers that may take one site (SITEMAP_CRAWL_QUEUE_MAX_ATTEMPTS)."""
        return self._whole("SITEMAP_CRAWL_QUEUE_MAX_ATTEMPTS", 1)
