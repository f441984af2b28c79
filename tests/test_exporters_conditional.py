"""Conditional page fields (``attempt``) in the page-aware exporters: left out of every
format while None, written when set; in CSV the column is there when the first row has it."""

from __future__ import annotations

import csv
import io
import json

import pytest

from sitemap_crawl.exporters import CsvPageExporter, JsonLinesPageExporter, JsonPageExporter, XmlPageExporter
from sitemap_crawl.items import PAGE_FIELDS, PageBatch, SitemapPage


def batch(attempt: str | None) -> PageBatch:
    pages = [SitemapPage(f"http://a.test/p{i}", "http://a.test/map.xml", website="http://a.test/") for i in range(2)]
    for page in pages:
        page.attempt = attempt
    return PageBatch("http://a.test/map.xml", (0,), pages, "http://a.test/")


def export(exporter_class: type, item: PageBatch, **options: object) -> bytes:
    buffer = io.BytesIO()
    exporter = exporter_class(buffer, **options)
    exporter.start_exporting()
    exporter.export_item(item)
    exporter.finish_exporting()
    return buffer.getvalue()


@pytest.mark.parametrize("options", [{"ensure_ascii": False, "encoding": "utf-8"}, {}])
@pytest.mark.parametrize("exporter_class", [JsonLinesPageExporter, JsonPageExporter])
def test_json_rows_have_attempt_only_when_set(exporter_class: type, options: dict[str, object]) -> None:
    # the first options take the orjson fast path, the others Scrapy's encoder
    def rows(data: bytes) -> list[dict[str, object]]:
        text = data.decode()
        return json.loads(text) if exporter_class is JsonPageExporter else [json.loads(x) for x in text.splitlines()]

    assert [list(row) for row in rows(export(exporter_class, batch(None), **options))] == [list(PAGE_FIELDS)] * 2
    with_attempt = rows(export(exporter_class, batch("1-0/2"), **options))
    assert [list(row) for row in with_attempt] == [[*PAGE_FIELDS, "attempt"]] * 2
    assert {row["attempt"] for row in with_attempt} == {"1-0/2"}


def test_csv_has_the_attempt_column_when_the_first_row_has_it() -> None:
    plain = list(csv.reader(io.StringIO(export(CsvPageExporter, batch(None)).decode())))
    assert plain[0] == list(PAGE_FIELDS)
    queued = list(csv.reader(io.StringIO(export(CsvPageExporter, batch("1-0/1")).decode())))
    assert queued[0] == [*PAGE_FIELDS, "attempt"] and queued[1][-1] == "1-0/1"


def test_xml_rows_have_attempt_only_when_set() -> None:
    assert b"<attempt>" not in export(XmlPageExporter, batch(None))
    assert export(XmlPageExporter, batch("1-0/1")).count(b"<attempt>1-0/1</attempt>") == 2
