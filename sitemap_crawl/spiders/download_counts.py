"""Scrapy's ``downloader/*`` counts, kept by the spider itself in a many-site run.

Scrapy's DownloaderStats middleware builds each request's HTTP text to measure it and
updates the stats collector seven times per request; in a many-site run, where most
requests are small robots.txt files and 404 probes, that was ~5% of the CPU. The
``sitemaps`` spider turns it off there (``DOWNLOADER_STATS``, unless the project set it)
and counts the figures people read in the stats dump in plain counters instead, written
to the stats when the spider closes.
"""

from __future__ import annotations

from collections import Counter

from scrapy.statscollectors import StatsCollector
from scrapy.utils.python import global_object_name

REQUEST_COUNT = "downloader/request_count"
REQUEST_METHOD_COUNT = "downloader/request_method_count/GET"
RESPONSE_COUNT = "downloader/response_count"
RESPONSE_STATUS_COUNT = "downloader/response_status_count/{}"
EXCEPTION_COUNT = "downloader/exception_count"
EXCEPTION_TYPE_COUNT = "downloader/exception_type_count/{}"


class DownloadCounts:
    """Responses by status and failures by exception type (retries aside: each sitemap
    request counts once, with how it finally ended)."""

    def __init__(self) -> None:
        self.statuses: Counter[int] = Counter()
        self.exceptions: Counter[str] = Counter()

    def response(self, status: int) -> None:
        self.statuses[status] += 1

    def exception(self, error: BaseException) -> None:
        self.exceptions[global_object_name(type(error))] += 1

    def write(self, stats: StatsCollector, requests: int) -> None:
        """Add the counts (and the ``requests`` sent) to Scrapy's stats under the keys of its
        DownloaderStats."""
        if requests:
            stats.inc_value(REQUEST_COUNT, requests)
            stats.inc_value(REQUEST_METHOD_COUNT, requests)
        if self.statuses:
            stats.inc_value(RESPONSE_COUNT, sum(self.statuses.values()))
            for status, count in self.statuses.items():
                stats.inc_value(RESPONSE_STATUS_COUNT.format(status), count)
        if self.exceptions:
            stats.inc_value(EXCEPTION_COUNT, sum(self.exceptions.values()))
            for name, count in self.exceptions.items():
                stats.inc_value(EXCEPTION_TYPE_COUNT.format(name), count)
