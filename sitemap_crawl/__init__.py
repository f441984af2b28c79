"""sitemap_crawl: find and read every sitemap of a website, for Scrapy."""

from typing import TYPE_CHECKING, Any

from sitemap_crawl.items import (
    Alternate,
    Image,
    NewsStory,
    NodeReport,
    PageBatch,
    SitemapNodeItem,
    SitemapPage,
    SitemapRef,
    Video,
)
from sitemap_crawl.parsing import Limits, ParsedSitemap, SitemapReader, parse_sitemap

if TYPE_CHECKING:
    from sitemap_crawl.addon import Addon
    from sitemap_crawl.loader import SitemapRequestLoader
    from sitemap_crawl.sitemap_spider import SitemapSpider

__version__ = "0.1.0"

__all__ = [
    "Addon",
    "Alternate",
    "Image",
    "Limits",
    "NewsStory",
    "NodeReport",
    "PageBatch",
    "ParsedSitemap",
    "SitemapNodeItem",
    "SitemapPage",
    "SitemapReader",
    "SitemapRef",
    "SitemapRequestLoader",
    "SitemapSpider",
    "Video",
    "__version__",
    "parse_sitemap",
]


def __getattr__(name: str) -> Any:
    # imported on first use, so that importing the package (or its pure parsers) does not load Scrapy
    if name == "Addon":
        from sitemap_crawl.addon import Addon

        return Addon
    if name == "SitemapRequestLoader":
        from sitemap_crawl.loader import SitemapRequestLoader

        return SitemapRequestLoader
    if name == "SitemapSpider":
        from sitemap_crawl.sitemap_spider import SitemapSpider

        return SitemapSpider
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
