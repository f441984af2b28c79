"""The Scrapy add-on: one line in an existing project's settings.py.

    ADDONS = {"sitemap_crawl.Addon": 0}

gives that project the ``sitemaps`` spider, the tree extension, the page-aware
feed exporters and the SITEMAP_CRAWL_* defaults of ``sitemap_crawl.default_settings``.
Everything is added at add-on priority or merged into what is there: a setting
the project (or the command line, or a spider) already set is never replaced.
"""

from __future__ import annotations

import copy

from scrapy.settings import BaseSettings

from sitemap_crawl.settings_reader import DEFAULTS
from sitemap_crawl.wiring import add_sitemap_crawl_components

SPIDER_MODULE = "sitemap_crawl.spiders"
"""The module holding the ``sitemaps`` spider, added to SPIDER_MODULES."""


class Addon:
    """Scrapy add-on of sitemap_crawl; enable it with ``ADDONS = {"sitemap_crawl.Addon": 0}``.

    * ``update_pre_crawler_settings`` puts ``sitemap_crawl.spiders`` before the
      project's SPIDER_MODULES (Scrapy's spider loader keeps the last spider of a name:
      a project spider named ``sitemaps`` keeps it), so ``scrapy crawl sitemaps`` finds
      the spider. Scrapy runs this hook when a
      crawler process is made (``scrapy crawl``, ``shell``, ``fetch``, ``parse``,
      ``check``, a CrawlerProcess/CrawlerRunner in a script), not for
      ``scrapy list``, ``edit`` or ``genspider`` (nor scrapyd's spider
      check, which runs ``scrapy list``): see docs/embedding.md.
    * ``update_settings`` sets the SITEMAP_CRAWL_* defaults of
      ``sitemap_crawl.default_settings`` at add-on priority (below the
      project's), adds the tree extension to EXTENSIONS and maps the feed
      formats the project has not mapped itself to the page-aware exporters.

    Nothing else is touched: ROBOTSTXT_OBEY, DOWNLOAD_DELAY, concurrency,
    the telnet console and the remote control stay as the project set them.
    """

    @classmethod
    def update_pre_crawler_settings(cls, settings: BaseSettings) -> None:
        modules = settings.getlist("SPIDER_MODULES")
        if SPIDER_MODULE not in modules:  # first: a spider of the project named sitemaps keeps the name
            settings.set("SPIDER_MODULES", [SPIDER_MODULE, *modules], settings.getpriority("SPIDER_MODULES") or 0)

    def update_settings(self, settings: BaseSettings) -> None:
        for name, value in DEFAULTS.items():
            if value is not None:
                settings.set(name, copy.deepcopy(value), priority="addon")
        add_sitemap_crawl_components(settings)

    def __repr__(self) -> str:
        return "sitemap_crawl.Addon()"
