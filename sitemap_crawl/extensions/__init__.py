"""Scrapy extensions of sitemap_crawl (enabled through EXTENSIONS by the add-on and the spider)."""
