"""The page-aware exporters (sitemap_crawl/exporters.py) against Scrapy's own: a page batch
is exported page by page."""

from __future__ import annotations

import csv
import io
import json
import logging
from typing import Any

import pytest

from sitemap_crawl.exporters import (
    CsvPageExporter,
    JsonLinesPageExporter,
    JsonPageExporter,
)
from sitemap_crawl.items import PageBatch, SitemapPage

SITEMAP = "http://a.test/map.xml"


def batch(*paths: str) -> PageBatch:
    pages = [SitemapPage(f"http://a.test/{path}", SITEMAP, website="http://a.test/") for path in paths]
    return PageBatch(SITEMAP, (0,), pages, "http://a.test/")


def export(exporter_class: type, *items: Any, **options: Any) -> bytes:
    buffer = io.BytesIO()
    exporter = exporter_class(buffer, **options)
    exporter.start_exporting()
    for item in items:
        exporter.export_item(item)
    exporter.finish_exporting()
    return buffer.getvalue()


def urls(exporter_class: type, data: bytes) -> list[str]:
    text = data.decode("ascii")
    if exporter_class is CsvPageExporter:
        return [row["url"] for row in csv.DictReader(io.StringIO(text))]
    if exporter_class is JsonPageExporter:
        return [row["url"] for row in json.loads(text)]
    return [json.loads(line)["url"] for line in text.splitlines()]


@pytest.mark.parametrize("exporter_class", [JsonLinesPageExporter, JsonPageExporter, CsvPageExporter])
def test_a_page_the_encoding_cannot_write_loses_its_row_only(
    exporter_class: type, caplog: pytest.LogCaptureFixture
) -> None:
    # Scrapy's feed exporter logs an item it cannot export and goes on with the next one
    with caplog.at_level(logging.ERROR, logger="sitemap_crawl.exporters"):
        data = export(exporter_class, batch("a", "caf\u00e9", "b"), batch("c"), encoding="ascii")

    assert urls(exporter_class, data) == ["http://a.test/a", "http://a.test/b", "http://a.test/c"]
    assert [record.getMessage() for record in caplog.records] == [
        "Error exporting page http://a.test/caf\u00e9 to the feed"
    ]
