"""Spiders of sitemap_crawl: ``sitemaps``, the discovery spider."""
