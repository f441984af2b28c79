"""sitemap_crawl: find and read every sitemap of a website, for Scrapy."""

from sitemap_crawl.items import (
    Alternate,
    Image,
    NewsStory,
    PageBatch,
    SitemapNodeItem,
    SitemapPage,
    SitemapRef,
    Video,
)
from sitemap_crawl.parsing import Limits, ParsedSitemap, SitemapReader, parse_sitemap

__version__ = "0.1.0"

__all__ = [
    "Alternate",
    "Image",
    "Limits",
    "NewsStory",
    "PageBatch",
    "ParsedSitemap",
    "SitemapNodeItem",
    "SitemapPage",
    "SitemapReader",
    "SitemapRef",
    "Video",
    "__version__",
    "parse_sitemap",
]
