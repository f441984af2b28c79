"""Scrapy project settings of the sitemap_crawl repository (scrapy.cfg and the scrapyd
egg's ``scrapy`` entry point point here).

Kept thin: the sitemaps spider brings its own tree extension and exporters, so these
settings only name the spider module and keep Scrapy's remote-access surfaces
off: the telnet console and the remote-control HTTP server (on by default in
Scrapy 2.19). Ask for them on the command line when wanted:
``-s TELNETCONSOLE_ENABLED=True`` / ``-s REMOTE_CONTROL_ENABLED=True``.
"""

BOT_NAME = "sitemap_crawl"
SPIDER_MODULES = ["sitemap_crawl.spiders"]
NEWSPIDER_MODULE = "sitemap_crawl.spiders"

ROBOTSTXT_OBEY = False
TELNETCONSOLE_ENABLED = False
REMOTE_CONTROL_ENABLED = False
FEED_EXPORT_ENCODING = "utf-8"
LOG_LEVEL = "INFO"
