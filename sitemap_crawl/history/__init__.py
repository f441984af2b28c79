"""SITEMAP_CRAWL_HISTORY: what each sitemap held last time, so a run exports only changes.

store.py   the SQLite file, on one worker thread of its own
diff.py    one sitemap's pages against the stored ones: added / modified / removed (pure)
tracker.py the spider's side: validators on requests, unchanged / changed, commit after export
conditional.py the downloader middleware that sends the validators to the URL they came from
"""

from sitemap_crawl.history.diff import ADDED, MODIFIED, REMOVED, PageDiff, diff_pages
from sitemap_crawl.history.store import HistoryError, HistoryStore, SitemapState

__all__ = [
    "ADDED",
    "MODIFIED",
    "REMOVED",
    "HistoryError",
    "HistoryStore",
    "PageDiff",
    "SitemapState",
    "diff_pages",
]
