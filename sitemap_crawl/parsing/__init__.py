"""Pure sitemap parsers: bytes in, pages and sub-sitemap references out. No Scrapy here."""

from sitemap_crawl.parsing.reader import (
    DEFAULT_LIMITS,
    INVALID,
    NOT_A_SITEMAP,
    ROBOTS_TXT,
    Limits,
    ParsedSitemap,
    SitemapReader,
    parse_sitemap,
)

__all__ = [
    "DEFAULT_LIMITS",
    "INVALID",
    "NOT_A_SITEMAP",
    "ROBOTS_TXT",
    "Limits",
    "ParsedSitemap",
    "SitemapReader",
    "parse_sitemap",
]
