"""Shared test harness: a local fixture web site, sitemap builders, and a
runner for the real ``scrapy crawl sitemaps`` command.

Modules: fixture_server (the one local web site, with a fast path for generated pages),
sitemaps (document builders), crawl (``scrapy crawl sitemaps`` in a subprocess), spiders
(``scrapy runspider`` of a test's spider module; big SitemapSpider crawls), feeds (read a
feed back), tree (build and inspect the sitemap tree), corpus (the real-world corpus).

Import it as ``tests.support`` (tests/conftest.py puts the repository root
on ``sys.path``).
"""

from .corpus import CORPUS_DIR
from .crawl import REPO_ROOT, CrawlResult, CrawlRunner, CrawlTimeoutError, RunningCrawl, run_crawl, start_crawl
from .fixture_server import FixtureServer, RecordedRequest, Route, RouteLike, SiteFactory
from .sitemaps import SITEMAP_NS, atom, gzip_bytes, robots, rss, sitemapindex, text_sitemap, urlset

__all__ = [
    "CORPUS_DIR",
    "REPO_ROOT",
    "SITEMAP_NS",
    "CrawlResult",
    "CrawlRunner",
    "CrawlTimeoutError",
    "FixtureServer",
    "RecordedRequest",
    "Route",
    "RouteLike",
    "RunningCrawl",
    "SiteFactory",
    "atom",
    "gzip_bytes",
    "robots",
    "rss",
    "run_crawl",
    "sitemapindex",
    "start_crawl",
    "text_sitemap",
    "urlset",
]
