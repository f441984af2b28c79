"""The page-aware exporters (sitemap_crawl/exporters.py) against Scrapy's own: a page batch
is exported page by page, FEED_EXPORT_FIELDS keeps Scrapy's meaning in every format, and a
conditional page field (``attempt``) is left out of every format while None, written when
set (in CSV the column is there when the first row has it)."""

from __future__ import annotations

import csv
import io
import json
import logging
import pickle
from typing import Any

import pytest
from lxml import etree
from scrapy.exporters import CsvItemExporter

from sitemap_crawl.codec import page_to_dict
from sitemap_crawl.exporters import (
    CsvPageExporter,
    JsonLinesPageExporter,
    JsonPageExporter,
    PicklePageExporter,
    XmlPageExporter,
)
from sitemap_crawl.items import PAGE_FIELDS, Image, PageBatch, SitemapPage

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


def test_csv_writes_another_item_after_pages_under_the_pages_columns(caplog: pytest.LogCaptureFixture) -> None:
    # its values went out in its own key order: the title under "url", the URL under "sitemap_url"
    post = {"title": "A post", "url": "http://a.test/blog/0"}
    with caplog.at_level(logging.WARNING):
        rows = list(csv.DictReader(io.StringIO(export(CsvPageExporter, batch("a"), post).decode())))
    assert rows[0]["url"] == "http://a.test/a"
    assert rows[1] == {**dict.fromkeys(rows[0], ""), "url": "http://a.test/blog/0"}
    assert any("dropped fields ['title']" in record.getMessage() for record in caplog.records)  # (Scrapy's warning)


def test_a_projects_exporter_with_page_rows_as_a_base_writes_a_row_a_page() -> None:
    # docs/embedding.md names it as a base: every batch raised NotImplementedError (no row)
    from scrapy.exporters import JsonLinesItemExporter

    from sitemap_crawl.exporters import PageRows

    class ProjectExporter(PageRows, JsonLinesItemExporter):
        pass

    ours = export(ProjectExporter, batch("a", "b"), {"other": 1})
    assert [json.loads(line) for line in ours.decode().splitlines()] == [
        *(json.loads(line) for line in export(JsonLinesPageExporter, batch("a", "b")).decode().splitlines()),
        {"other": 1},
    ]


def test_csv_writes_a_named_field_the_page_lacks_as_an_empty_column() -> None:
    fields = ["url", "source", "priority"]
    rows = list(csv.reader(io.StringIO(export(CsvPageExporter, batch("a"), fields_to_export=fields).decode())))
    plain = export(CsvItemExporter, {"url": "http://a.test/a", "priority": 0.5}, fields_to_export=fields)

    assert rows == [fields, ["http://a.test/a", "", "0.5"]]
    assert list(csv.reader(io.StringIO(plain.decode()))) == rows


@pytest.mark.parametrize("exporter_class", [JsonLinesPageExporter, JsonPageExporter])
def test_json_leaves_out_a_named_field_the_page_lacks(exporter_class: type) -> None:
    data = export(exporter_class, batch("a"), fields_to_export=["url", "source", "change", "priority"])

    assert data.decode().replace(" ", "").count('"url":"http://a.test/a","priority":0.5}') == 1


def test_xml_and_pickle_leave_out_a_named_field_the_page_lacks() -> None:
    fields = {"url": "address", "source": "origin"}

    assert b"<origin" not in export(XmlPageExporter, batch("a"), fields_to_export=fields)
    assert pickle.loads(export(PicklePageExporter, batch("a"), fields_to_export=fields)) == {
        "address": "http://a.test/a"
    }


def batch_with_attempt(attempt: str | None) -> PageBatch:
    """Two pages whose conditional field ``attempt`` is ``attempt``."""
    pages = [SitemapPage(f"http://a.test/p{i}", SITEMAP, website="http://a.test/") for i in range(2)]
    for page in pages:
        page.attempt = attempt
    return PageBatch(SITEMAP, (0,), pages, "http://a.test/")


@pytest.mark.parametrize("options", [{"ensure_ascii": False, "encoding": "utf-8"}, {}])
@pytest.mark.parametrize("exporter_class", [JsonLinesPageExporter, JsonPageExporter])
def test_json_rows_have_attempt_only_when_set(exporter_class: type, options: dict[str, object]) -> None:
    # the first options take the orjson fast path, the others Scrapy's encoder
    def rows(data: bytes) -> list[dict[str, object]]:
        text = data.decode()
        return json.loads(text) if exporter_class is JsonPageExporter else [json.loads(x) for x in text.splitlines()]

    assert [list(row) for row in rows(export(exporter_class, batch_with_attempt(None), **options))] == [
        list(PAGE_FIELDS)
    ] * 2
    with_attempt = rows(export(exporter_class, batch_with_attempt("1-0/2"), **options))
    assert [list(row) for row in with_attempt] == [[*PAGE_FIELDS, "attempt"]] * 2
    assert {row["attempt"] for row in with_attempt} == {"1-0/2"}


def test_csv_has_the_attempt_column_when_the_first_row_has_it() -> None:
    plain = list(csv.reader(io.StringIO(export(CsvPageExporter, batch_with_attempt(None)).decode())))
    assert plain[0] == list(PAGE_FIELDS)
    queued = list(csv.reader(io.StringIO(export(CsvPageExporter, batch_with_attempt("1-0/1")).decode())))
    assert queued[0] == [*PAGE_FIELDS, "attempt"] and queued[1][-1] == "1-0/1"


def test_xml_rows_have_attempt_only_when_set() -> None:
    assert b"<attempt>" not in export(XmlPageExporter, batch_with_attempt(None))
    assert export(XmlPageExporter, batch_with_attempt("1-0/1")).count(b"<attempt>1-0/1</attempt>") == 2


def image_page(images: list[Any]) -> SitemapPage:
    return SitemapPage("http://a.test/p", SITEMAP, images=images, website="http://a.test/")


IMAGE_ROW = {"loc": "http://a.test/i.jpg", "caption": "c", "title": None, "geo_location": None, "license": None}


@pytest.mark.parametrize(
    ("exporter_class", "options"),
    [
        (CsvPageExporter, {}),
        (XmlPageExporter, {}),
        (JsonPageExporter, {"indent": 2}),  # (Scrapy's encoder: orjson only writes plain JSON)
        (PicklePageExporter, {}),
    ],
)
def test_a_nested_field_a_pipeline_set_as_dicts_is_written_as_the_records_are(
    exporter_class: type, options: dict[str, Any]
) -> None:
    # the page's own records, or dicts in their shape (what the JSON feed shows): CSV and XML
    # lost every such row (AttributeError: 'dict' object has no attribute 'loc')
    records = export(exporter_class, image_page([Image("http://a.test/i.jpg", caption="c")]), **options)
    assert export(exporter_class, image_page([dict(IMAGE_ROW)]), **options) == records


def test_a_page_a_pipeline_handed_on_as_a_dict_keeps_the_row_format() -> None:
    # ItemAdapter(page).asdict(): its nested cells were Python reprs in CSV, its nulls "None" in XML
    row = page_to_dict(image_page([Image("http://a.test/i.jpg", caption="c")]))
    assert export(CsvPageExporter, row) == export(CsvPageExporter, image_page([Image("http://a.test/i.jpg", "c")]))
    xml = export(XmlPageExporter, row)
    assert b"None" not in xml and b"<title></title>" in xml


def test_characters_xml_cannot_hold_are_replaced_and_the_file_stays_well_formed() -> None:
    page = image_page([Image("http://a.test/i.jpg", title="form\x0cfeed\x01 \ufffe", caption="tab\tkept é")])

    xml = export(XmlPageExporter, page, encoding="utf-8")

    root = etree.fromstring(xml)  # (raised: "PCDATA invalid Char value 12")
    assert root.findtext("item/images/value/title") == "form\ufffdfeed\ufffd \ufffd"
    assert root.findtext("item/images/value/caption") == "tab\tkept é"


@pytest.mark.parametrize("exporter_class", [JsonLinesPageExporter, JsonPageExporter])
def test_a_page_the_json_encoder_cannot_write_loses_its_row_only(
    exporter_class: type, caplog: pytest.LogCaptureFixture
) -> None:
    # (a number orjson cannot write, set by a pipeline: the JSON lines feed lost the whole
    # batch, and its exception stopped Scrapy's loop over the other feeds)
    pages = batch("a", "b", "c")
    pages.pages[1].priority = 10**30  # type: ignore[assignment]
    with caplog.at_level(logging.ERROR, logger="sitemap_crawl.exporters"):
        data = export(exporter_class, pages, encoding="utf-8", ensure_ascii=False)  # (as a feed has it)

    assert urls(exporter_class, data) == ["http://a.test/a", "http://a.test/c"]
    assert [record.getMessage() for record in caplog.records] == ["Error exporting page http://a.test/b to the feed"]


def test_json_lines_in_utf_16_end_each_row_with_an_encoded_newline() -> None:
    # (rows joined by a single byte 0x0a: every row after an odd one was unreadable)
    data = export(JsonLinesPageExporter, batch("a", "b"), batch("c"), encoding="utf-16")
    rows = data.decode("utf-16-le").replace("\ufeff", "").splitlines()  # (a byte order mark a row, as Scrapy's)
    assert [json.loads(row)["url"] for row in rows] == [f"http://a.test/{x}" for x in "abc"]
