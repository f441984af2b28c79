"""Names sitemap_crawl gives to things outside its code: stats keys and request meta keys.

Plain string constants (the settings reference lists every one of them). Stats keys
that end in a kind or a reason are built as ``f"{SITEMAPS_STAT}/{kind}"`` and
``f"{ERRORS_STAT}/{reason}"``. Pure: nothing imported.
"""

from __future__ import annotations

STATS_PREFIX = "sitemap_crawl"
"""First part of every stats key of sitemap_crawl."""

ITEM_SCRAPED_COUNT_STAT = "item_scraped_count"
"""Scrapy's count of scraped items (CoreStats): the tree extension counts a page batch as its pages."""
PAGES_STAT = "sitemap_crawl/pages"
"""Pages the spider yielded."""
NOT_FOLLOWED_STAT = "sitemap_crawl/not_followed"
"""Sub-sitemaps left out by the follow/deny spider arguments."""
REQUESTS_STAT = "sitemap_crawl/requests"
"""Sitemap requests sent (robots.txt, sitemaps, well-known paths; retries not counted)."""
SITES_DONE_STAT = "sitemap_crawl/sites_done"
"""Sites whose mapping finished (``sitemap_crawl/requests`` / this = requests per site)."""
SITEMAPS_STAT = "sitemap_crawl/sitemaps"
"""Sitemaps in the tree; ``sitemap_crawl/sitemaps/<kind>`` by kind."""
ERRORS_STAT = "sitemap_crawl/errors"
"""Prefix of the stats of nodes with an error, by reason."""
SITES_STAT = "sitemap_crawl/sites"
"""Prefix of a many-site run's stats of sites by outcome (``with_sitemaps``, ``unreachable``...)."""
AUDIT_STAT = "sitemap_crawl/audit"
"""Prefix of the audit's stats: findings by rule id (``SITEMAP_CRAWL_AUDIT_FILE``)."""
TREE_FILE_FAILED_STAT = "sitemap_crawl/tree_file_failed"
"""1 when the tree file could not be written (a full disk): the error is logged once."""
HELD_STAT = "sitemap_crawl/requests_held"
"""Sitemap requests that waited because too many responses were still being passed on."""
AUDIT_FILE_FAILED_STAT = "sitemap_crawl/audit_file_failed"
"""1 when the audit's findings file could not be written (a full disk): logged once."""
AUDIT_REPORT_FAILED_STAT = "sitemap_crawl/audit_report_failed"
"""1 when the audit's HTML report could not be written: logged once."""
AUDIT_PAUSED_STAT = "sitemap_crawl/audit_paused"
"""Times the crawl was paused for the audit to catch up (``SITEMAP_CRAWL_AUDIT_BACKLOG``)."""
SINCE_PAGES_DROPPED_STAT = "sitemap_crawl/since/pages_dropped"
"""Pages left out of the feed by ``-a since`` (older, or undated with ``since_undated=drop``)."""
SINCE_SITEMAPS_SKIPPED_STAT = "sitemap_crawl/since/sitemaps_skipped"
"""Index children not fetched because their own lastmod is before ``-a since``."""
HISTORY_STATS_PREFIX = "sitemap_crawl/history"
"""Prefix of a history run's stats: ``sitemap_crawl/history/<what>``."""

QUEUE_ACKED_STAT = "sitemap_crawl/queue/acknowledged"
"""Queue runs: sites this worker acknowledged (only the attempt that holds a site is: each counts once)."""
QUEUE_CLAIMED_STAT = "sitemap_crawl/queue/claimed"
"""Queue runs: sites this worker took over from a silent worker."""
QUEUE_DEAD_STAT = "sitemap_crawl/queue/dead_lettered"
"""Queue runs: sites this worker moved to the dead-letter stream (taken MAX_ATTEMPTS times)."""
QUEUE_DUPLICATE_STAT = "sitemap_crawl/queue/duplicates"
"""Queue runs: entries this worker acknowledged unmapped, their homepage reducing to a site another
entry maps (``--keep-path`` entries of one site, read by a worker that reduces homepages)."""
QUEUE_TAKEN_OVER_STAT = "sitemap_crawl/queue/taken_over"
"""Queue runs: sites this worker finished but could not acknowledge (another worker had taken them
over, and finished them or still holds them; or they were dead-lettered meanwhile)."""
QUEUE_ROUND_TRIPS_STAT = "sitemap_crawl/queue/round_trips"
"""Queue runs: commands and scripts this worker sent to the queue server (a pipeline counts once)."""

LOADER_PAGES_QUEUED_STAT = "sitemap_crawl/loader/pages_queued"
LOADER_PAGES_HANDLED_STAT = "sitemap_crawl/loader/pages_handled"
LOADER_PAGES_PENDING_STAT = "sitemap_crawl/loader/pages_pending"
LOADER_SITEMAPS_READ_STAT = "sitemap_crawl/loader/sitemaps_read"
LOADER_COMPLETED_STAT = "sitemap_crawl/loader/completed"
LOADER_PAGES_WRITTEN_OFF_STAT = "sitemap_crawl/loader/pages_written_off"

META_KEY = "sitemap_crawl"
"""Request meta key holding the ``Visit`` of a ``sitemaps`` spider's sitemap request."""
RUN_META_KEY = "sitemap_crawl_run"
"""Request meta key holding the run that sent a ``sitemaps`` spider's request (a sitemap, or
the one that passes on the helper processes' output): a request of another run (one Scrapy
resumed from a stopped run's JOBDIR) is ignored (internal)."""
PAGE_META_KEY = "sitemap_page"
"""Request/response meta key holding the :class:`~sitemap_crawl.items.SitemapPage` of a page request."""
TOKEN_META_KEY = "sitemap_crawl_loader"
"""Request meta key holding the loader's handle of a page request (internal)."""
SITEMAP_META_KEY = "sitemap_crawl_loader_sitemap"
"""Request meta key marking the loader's own sitemap downloads."""
DOWNLOAD_META_KEY = "sitemap_crawl_loader_download"
"""Request meta key holding the loader's record of one of its sitemap downloads (internal)."""
DUPES_ONLY_META_KEY = "sitemap_crawl_dont_filter_dupes_only"
"""Request meta key: the page request's ``dont_filter`` is there to skip the duplicate filter
only; allowed_domains still applies to it and to its redirects (internal)."""
CONDITIONAL_META_KEY = "sitemap_crawl_conditional"
"""Request meta key of a history run's sitemap request: (the URL its stored validators came
from, keyed by :func:`~sitemap_crawl.parsing.fields.same_url_key`; {header name: value}), for
:mod:`sitemap_crawl.history.conditional`."""
AUDIT_ENCODING_META_KEY = "sitemap_crawl_audit_encoding"
"""Request meta key: the Content-Encoding a sitemap was sent with, noted by the audit before
Scrapy's HttpCompressionMiddleware decodes the body and removes the header (internal)."""
