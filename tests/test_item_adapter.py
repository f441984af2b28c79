"""itemadapter's view of a page item (sitemap_crawl/item_adapter.py): the conditional fields
(``attempt``, ``change``) are fields of a page only while set, for Scrapy's stock exporters
and your pipelines as in sitemap_crawl's feeds."""

from __future__ import annotations

import csv
import io

import pytest
from itemadapter import ItemAdapter
from scrapy.exporters import CsvItemExporter, JsonLinesItemExporter
from scrapy.settings import Settings

from sitemap_crawl.item_adapter import SitemapPageAdapter, register_page_adapter
from sitemap_crawl.items import PAGE_FIELDS, SitemapPage
from sitemap_crawl.wiring import add_sitemap_crawl_components


@pytest.fixture(autouse=True)
def page_adapter() -> None:
    register_page_adapter()


def page(**fields: str) -> SitemapPage:
    return SitemapPage("http://a.test/p", "http://a.test/map.xml", website="http://a.test/", **fields)


def csv_header(item: SitemapPage) -> list[str]:
    buffer = io.BytesIO()
    exporter = CsvItemExporter(buffer)
    exporter.start_exporting()
    exporter.export_item(item)
    exporter.finish_exporting()
    return next(csv.reader(io.StringIO(buffer.getvalue().decode())))


def test_a_plain_runs_page_has_neither_attempt_nor_change() -> None:
    adapter = ItemAdapter(page())

    assert list(adapter.field_names()) == list(adapter) == list(PAGE_FIELDS)
    assert "change" not in adapter and adapter.get("attempt") is None
    assert csv_header(page()) == list(PAGE_FIELDS)


def test_a_history_or_queue_runs_page_has_its_field() -> None:
    assert csv_header(page(change="added")) == [*PAGE_FIELDS, "change"]
    assert csv_header(page(attempt="1-0/1")) == [*PAGE_FIELDS, "attempt"]
    buffer = io.BytesIO()
    JsonLinesItemExporter(buffer).export_item(page(change="removed"))
    assert buffer.getvalue().endswith(b'"website": "http://a.test/", "change": "removed"}\n')


def test_a_conditional_field_set_and_unset_through_the_adapter() -> None:
    item = page()
    adapter = ItemAdapter(item)

    adapter["change"] = "modified"
    assert item.change == "modified" and adapter["change"] == "modified"
    del adapter["change"]
    assert item.change is None and "change" not in adapter
    with pytest.raises(KeyError):
        del adapter["change"]


def test_the_wiring_registers_the_adapter_once() -> None:
    ItemAdapter.ADAPTER_CLASSES.remove(SitemapPageAdapter)  # type: ignore[attr-defined]

    add_sitemap_crawl_components(Settings())
    add_sitemap_crawl_components(Settings())

    assert list(ItemAdapter.ADAPTER_CLASSES).count(SitemapPageAdapter) == 1
    assert next(iter(ItemAdapter.ADAPTER_CLASSES)) is SitemapPageAdapter
