"""sitemap_crawl.downloads: a many-site run uses the HTTP handler that closes idle connections
sooner (that it bounds the open sockets is measured by benchmarks/many_sites.py)."""

from __future__ import annotations

from pathlib import Path

from scrapy.crawler import AsyncCrawlerRunner

from sitemap_crawl.downloads import MANY_SITES_HANDLER
from sitemap_crawl.spiders.sitemaps import SitemapsSpider


def test_a_many_site_run_uses_it_unless_the_project_has_its_own(tmp_path: Path) -> None:
    sites = tmp_path / "sites.txt"
    sites.write_text("https://a.example/\n", encoding="utf-8")
    runner = AsyncCrawlerRunner({"DOWNLOAD_HANDLERS": {"https": "my.Handler"}})
    crawler = runner.create_crawler(SitemapsSpider)  # settings not frozen yet, as in crawl()
    SitemapsSpider.from_crawler(crawler, homepages_file=str(sites))
    handlers = crawler.settings.getdict("DOWNLOAD_HANDLERS")
    assert handlers["http"] == MANY_SITES_HANDLER
    assert handlers["https"] == "my.Handler"
    single = AsyncCrawlerRunner().create_crawler(SitemapsSpider)
    SitemapsSpider.from_crawler(single, homepage="https://a.example/")
    assert "http" not in single.settings.getdict("DOWNLOAD_HANDLERS")


def test_the_idle_connection_timeout_is_its_default_without_the_add_on() -> None:
    # the handler read it with settings.getfloat: unset (no add-on), it was 0.0
    from scrapy.settings import Settings

    from sitemap_crawl.settings_reader import SettingsReader

    assert SettingsReader(Settings()).idle_connection_timeout == 10.0
    assert SettingsReader(Settings({"SITEMAP_CRAWL_IDLE_CONNECTION_TIMEOUT": "2.5"})).idle_connection_timeout == 2.5
