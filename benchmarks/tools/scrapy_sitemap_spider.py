"""Scrapy's own SitemapSpider, made to export page URLs instead of fetching pages.

Run (from a directory with no scrapy.cfg above it, so Scrapy's default settings apply):

    scrapy runspider scrapy_sitemap_spider.py -a robots_url=http://HOST/robots.txt -O pages.jsonl

``sitemap_urls`` is just the robots.txt URL.  Everything is stock
``scrapy.spiders.SitemapSpider`` (robots.txt ``Sitemap:`` lines, sitemap indexes,
``sitemap_follow``, gzip by magic number, ``Sitemap`` lxml parsing) except that for a
``urlset`` it yields one item ``{"url": loc}`` per entry instead of one Request per
page.  Stock SitemapSpider only understands ``urlset`` and ``sitemapindex`` (no RSS,
Atom or plain-text sitemaps, which it logs as "Ignoring invalid sitemap"), so its
page set lacks those pages: that is measured, not worked around.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from scrapy import Request
from scrapy.http import Response
from scrapy.spiders import SitemapSpider
from scrapy.utils.sitemap import Sitemap, sitemap_urls_from_robots


class BenchSitemapSpider(SitemapSpider):
    name = "bench_sitemapspider"

    def __init__(self, robots_url: str = "", *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sitemap_urls = [robots_url]

    def _parse_sitemap(self, response: Response) -> Iterable[Any]:
        # Same as SitemapSpider._parse_sitemap (Scrapy 2.19) except for the urlset branch.
        if response.url.endswith("/robots.txt"):
            urls = list(sitemap_urls_from_robots(response.body, base_url=response.url))
            return (Request(url, callback=self._parse_sitemap) for url in urls)

        body = self._get_sitemap_body(response)
        if not body:
            self.logger.warning("Ignoring invalid sitemap: %(response)s", {"response": response})
            return ()

        s = Sitemap(body)
        if s.type == "sitemapindex":
            urls = list(self._get_urls_from_sitemapindex(self.sitemap_filter(s)))
            return (Request(loc, callback=self._parse_sitemap) for loc in urls)
        if s.type == "urlset":
            pairs = list(self._get_urls_and_callbacks_from_urlset(self.sitemap_filter(s)))
            return ({"url": loc} for loc, _callback in pairs)

        self.logger.warning("Ignoring invalid sitemap: %(response)s", {"response": response})
        return ()
