"""Another project's add-on, written as many are (each dict setting set whole, at the add-on
priority): what the tests put beside sitemap_crawl's to check that its components stay."""

from __future__ import annotations

from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exporters import JsonLinesItemExporter
from scrapy.settings import BaseSettings

REQUESTS_STAT = "test/other_addon_requests"
EXTENSION_STAT = "test/other_addon_extension"
FEED_FORMAT = "other"


class CountingMiddleware:
    """A downloader middleware that counts the requests it saw."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CountingMiddleware:
        return cls(crawler)

    def process_request(self, request: Request) -> None:
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value(REQUESTS_STAT)


class MarkingExtension:
    """An extension that says it was enabled."""

    def __init__(self, crawler: Crawler) -> None:
        assert crawler.stats is not None
        crawler.stats.set_value(EXTENSION_STAT, 1)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> MarkingExtension:
        return cls(crawler)


class OtherExporter(JsonLinesItemExporter):
    """A feed format of the other project: JSON lines, each row with ``"other": 1``."""

    def export_item(self, item: Any) -> None:
        from itemadapter import ItemAdapter

        super().export_item({**ItemAdapter(item).asdict(), "other": 1})


class ReplacingAddon:
    """Sets ``EXTENSIONS`` to its own extension alone, dropping what was there (ours too)."""

    def update_settings(self, settings: BaseSettings) -> None:
        settings.set("EXTENSIONS", {f"{__name__}.MarkingExtension": 500}, "addon")


class OtherAddon:
    """Adds its middleware, extension and feed format with ``settings.set(name, {...}, "addon")``."""

    def update_settings(self, settings: BaseSettings) -> None:
        for name, component in (
            ("DOWNLOADER_MIDDLEWARES", f"{__name__}.CountingMiddleware"),
            ("EXTENSIONS", f"{__name__}.MarkingExtension"),
        ):
            settings.set(name, {**settings.getdict(name), component: 500}, "addon")
        exporters = {**settings.getdict("FEED_EXPORTERS"), FEED_FORMAT: f"{__name__}.OtherExporter"}
        settings.set("FEED_EXPORTERS", exporters, "addon")
