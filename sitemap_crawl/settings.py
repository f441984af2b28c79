"""Scrapy project settings of the sitemap_crawl repository (used by scrapy.cfg).

Kept thin: the sitemaps spider brings its own pipeline and exporters, so these
settings only name the spider module and keep Scrapy's remote-control surfaces off.
"""

BOT_NAME = "sitemap_crawl"
SPIDER_MODULES = ["sitemap_crawl.spiders"]
NEWSPIDER_MODULE = "sitemap_crawl.spiders"

ROBOTSTXT_OBEY = False
TELNETCONSOLE_ENABLED = False
FEED_EXPORT_ENCODING = "utf-8"
LOG_LEVEL = "INFO"
REMOTE_CONTROL_ENABLED = False
