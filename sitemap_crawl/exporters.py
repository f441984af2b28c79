"""Feed exporters that write one row per page, whether pages come alone or in batches.

They are Scrapy's own CSV, JSON, JSON lines, XML, pickle and marshal exporters with a fast path
for sitemap_crawl items: a :class:`PageBatch` becomes one row per page, tree
node items are not exported, every other item is exported as Scrapy would.
In CSV the nested page fields (news, images, videos, alternates) are JSON
texts, empty cells when empty; the other formats keep the nesting.
"""

from __future__ import annotations

import itertools
import json
import logging
import marshal
import operator
import pickle
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar
from xml.sax.saxutils import XMLGenerator
from xml.sax.xmlreader import AttributesImpl

from scrapy.exporters import (
    BaseItemExporter,
    CsvItemExporter,
    JsonItemExporter,
    JsonLinesItemExporter,
    MarshalItemExporter,
    PickleItemExporter,
    XmlItemExporter,
)

from sitemap_crawl.codec import NESTED_PAGE_FIELDS, page_row
from sitemap_crawl.items import CONDITIONAL_PAGE_FIELDS, PAGE_CODEC, NodeReport, PageBatch, SitemapPage

try:
    import orjson
except ImportError:  # pragma: no cover - a dependency; the standard encoder is the fallback
    orjson = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)
T = TypeVar("T")

_NO_ATTRIBUTES = AttributesImpl({})
PAGE_FIELDS = PAGE_CODEC.fields
"""Every page field, the conditional ones last (left out of a row while None)."""
PAGE_FIELD_NAMES = frozenset(PAGE_FIELDS)


def iter_pages(item: Any) -> Iterator[SitemapPage] | None:
    """The pages an item carries, or None when it is not a page or a batch."""
    if isinstance(item, PageBatch):
        return iter(item.pages)
    if isinstance(item, SitemapPage):
        return iter((item,))
    return None


class PageRows:
    """What the page-aware exporters share: the dispatch of an item (a page batch is
    written a row a page), and which page fields go out under which names. Listed before
    Scrapy's exporter in the bases; a project's own exporter that has it as a base keeps
    the pages in batches (one without it gets one item a page: ``SettingsReader.pages_as_items``)."""

    fields_to_export: Any

    def export_item(self, item: Any) -> None:
        pages = iter_pages(item)
        if pages is not None:
            self._export_pages(pages)
        elif not isinstance(item, NodeReport):
            super().export_item(item)  # type: ignore[misc]

    def _export_pages(self, pages: Iterator[SitemapPage]) -> None:
        """A row a page, each given to the Scrapy exporter this class is combined with as the
        dict of its fields (a project's exporter with this class as a base: an ``export_item``
        of its own sees the batch; the package's exporters write the rows faster, each its
        own way)."""
        export = super().export_item  # type: ignore[misc]
        for _ in exported_rows(pages, lambda page: export(self._page_dict(page))):
            pass

    def _page_columns(self) -> list[tuple[str, str]]:
        columns = getattr(self, "_columns", None)
        if columns is None:
            wanted = self.fields_to_export
            if not wanted:
                columns = [(name, name) for name in PAGE_FIELDS]
            elif isinstance(wanted, Mapping):
                columns = [(name, str(output)) for name, output in wanted.items()]
            else:
                columns = [(name, name) for name in wanted]
            self._columns = columns
        return columns

    def _page_dict(self, page: SitemapPage) -> dict[str, Any]:
        """The page's fields to export; a field asked for that the page lacks is left out
        (as Scrapy's exporters leave out a field the item does not have)."""
        values = page_row(page)
        if self._all_columns():
            return values
        return {output: values[name] for name, output in self._page_columns() if name in values}

    def _all_columns(self) -> bool:
        every = getattr(self, "_every_column", None)
        if every is None:
            every = self._page_columns() == [(name, name) for name in PAGE_FIELDS]
            self._every_column = every
        return every

    def _page_bytes(self) -> Callable[[SitemapPage], bytes]:
        """A page as the JSON bytes of its row (orjson's, or Scrapy's encoder's)."""
        dumps = _fast_dumps(self)
        if dumps is not None:
            return dumps
        encode = self.encoder.encode  # type: ignore[attr-defined]
        encoding = self.encoding or "utf-8"  # type: ignore[attr-defined]
        page_dict = self._page_dict
        return lambda page: encode(page_dict(page)).encode(encoding)


class JsonLinesPageExporter(PageRows, JsonLinesItemExporter):
    """JSON lines: one object per page."""

    def _export_pages(self, pages: Iterator[SitemapPage]) -> None:
        encoding = self.encoding or "utf-8"
        if "\n".encode(encoding) != b"\n":  # (UTF-16, UTF-32: each row and its newline encoded, as Scrapy's)
            encode, page_dict = self.encoder.encode, self._page_dict
            for row in exported_rows(pages, lambda page: (encode(page_dict(page)) + "\n").encode(encoding)):
                self.file.write(row)
            return
        page_bytes = self._page_bytes()
        batch = list(pages)
        data: bytes | None = None
        if _writes_any_text(self.encoding):  # the common case: all at once
            try:
                data = b"\n".join([page_bytes(page) for page in batch])
            except Exception:  # (a number orjson cannot write...): page by page below
                data = None
        if data is None:  # page by page, each failure logged
            data = b"\n".join(exported_rows(batch, page_bytes))
        if data:
            self.file.write(data + b"\n")


class JsonPageExporter(PageRows, JsonItemExporter):
    """JSON: an array with one object per page."""

    def _export_pages(self, pages: Iterator[SitemapPage]) -> None:
        for data in exported_rows(pages, self._page_bytes()):
            self._add_comma_after_first()
            self.file.write(data)


_NOT_XML_TEXT = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
"""A character XML 1.0 cannot hold, not even as a character reference (C0 controls but tab,
newline and carriage return; U+FFFE, U+FFFF; lone surrogates)."""


class _XmlTextGenerator(XMLGenerator):
    """XMLGenerator whose text has every character XML cannot hold replaced by U+FFFD."""

    def characters(self, content: str) -> None:
        if _NOT_XML_TEXT.search(content):
            content = _NOT_XML_TEXT.sub("\ufffd", content)
        super().characters(content)


class XmlPageExporter(PageRows, XmlItemExporter):
    """XML: one ``<item>`` per page; nested fields become nested elements, null an empty element
    (also in a page an item pipeline handed on as a dict). A character XML 1.0 cannot hold (a
    form feed in a title) is written as U+FFFD, so that the file stays well-formed."""

    def __init__(self, file: Any, **kwargs: Any) -> None:
        super().__init__(file, **kwargs)
        self.xg = _XmlTextGenerator(self.stream, encoding=self.encoding or "utf-8")

    def serialize_field(self, field: Any, name: str, value: Any) -> Any:
        if name in PAGE_FIELD_NAMES:
            value = _without_nulls(value)
        return super().serialize_field(field, name, value)

    def _export_pages(self, pages: Iterator[SitemapPage]) -> None:
        for _ in exported_rows(pages, lambda page: self._export_page(self._page_dict(page))):
            pass

    def _export_page(self, values: dict[str, Any]) -> None:
        self._beautify_indent(depth=1)
        self.xg.startElement(self.item_element, _NO_ATTRIBUTES)
        self._beautify_newline()
        for name, value in values.items():
            self._export_xml_field(name, _without_nulls(value), depth=2)
        self._beautify_indent(depth=1)
        self.xg.endElement(self.item_element)
        self._beautify_newline(new_item=True)


class CsvPageExporter(PageRows, CsvItemExporter):
    """CSV: one row per page; nested fields as JSON text, empty cell when empty (also in a
    page an item pipeline handed on as a dict)."""

    def serialize_field(self, field: Any, name: str, value: Any) -> Any:
        if name in NESTED_PAGE_FIELDS and (value is None or isinstance(value, list | dict)):
            return _nested_cell(value)
        return super().serialize_field(field, name, value)

    def _export_pages(self, pages: Iterator[SitemapPage]) -> None:
        columns = self._page_columns()
        if self._headers_not_written:
            first = next(pages, None)
            if first is None:
                return
            pages = itertools.chain((first,), pages)
            if not self.fields_to_export:  # a conditional column is there when the first page has it
                columns = [
                    (name, output)
                    for name, output in columns
                    if name not in CONDITIONAL_FIELDS or getattr(first, name) is not None
                ]
                self._columns = columns
                # the header is the pages': an item of another kind is written under it, as
                # Scrapy writes any item under the first one's fields (it wrote its own values in order)
                self.fields_to_export = [name for name, _output in columns]
                self._autodetected_fields = True
            self._headers_not_written = False
            if self.include_headers_line:
                self.csv_writer.writerow([output for _name, output in columns])
        names = [name for name, _output in columns]
        if _writes_any_text(self.encoding):  # the common case: no row can fail, all at once
            self.csv_writer.writerows(_csv_row(page_row(page), names) for page in pages)
            return
        writerow = self.csv_writer.writerow
        for _ in exported_rows(pages, lambda page: writerow(_csv_row(page_row(page), names))):
            pass


class PicklePageExporter(PageRows, PickleItemExporter):
    """Pickle: one pickled dict per page (nested fields as plain dicts and lists)."""

    def _export_pages(self, pages: Iterator[SitemapPage]) -> None:
        for _ in exported_rows(pages, lambda page: pickle.dump(self._page_dict(page), self.file, self.protocol)):
            pass


class MarshalPageExporter(PageRows, MarshalItemExporter):
    """Marshal: one marshalled dict per page (nested fields as plain dicts and lists)."""

    def _export_pages(self, pages: Iterator[SitemapPage]) -> None:
        for _ in exported_rows(pages, lambda page: marshal.dump(self._page_dict(page), self.file)):
            pass


def _writes_any_text(encoding: str | None) -> bool:
    """Whether a feed in ``encoding`` (None: UTF-8) can write any text (a UTF encoding): then
    a batch's rows are written at once, else page by page (:func:`exported_rows`)."""
    return encoding is None or encoding.lower().replace("_", "-").startswith("utf")


def exported_rows(pages: Iterable[SitemapPage], export: Callable[[SitemapPage], T]) -> Iterator[T]:
    """``export(page)`` of each page; a page that fails is logged (an ERROR with its
    traceback) and skipped, and the others go on, as Scrapy's feed exporter goes on after
    an item it could not export (a URL the feed's encoding cannot write, say)."""
    for page in pages:
        try:
            yield export(page)
        except Exception:
            logger.exception("Error exporting page %s to the feed", page.url)


def _fast_dumps(exporter: PageRows) -> Callable[[SitemapPage], bytes] | None:
    """orjson's serialiser for whole pages, where its output is what the feed asked for.

    orjson writes a page (a dataclass, fields in order, nested dataclasses as
    objects) straight to UTF-8 JSON bytes, about twice as fast as building a
    dict and encoding it with the standard library, and JSON encoding is the
    largest cost of a large crawl. It is used when the feed is UTF-8 without
    ASCII escaping, not indented, with every page field; otherwise Scrapy's
    encoder is used as before. The only difference in the bytes is spacing
    (``{"url":"..."}``, no blank after ``:`` and ``,``).
    """
    if hasattr(exporter, "_orjson_dumps"):
        cached: Callable[[SitemapPage], bytes] | None = exporter._orjson_dumps
        return cached
    dumps: Callable[[SitemapPage], bytes] | None = None
    kwargs = getattr(exporter, "_kwargs", {})
    utf8 = str(getattr(exporter, "encoding", "") or "").lower().replace("-", "") == "utf8"
    plain = (
        kwargs.get("ensure_ascii") is False and not kwargs.get("indent") and set(kwargs) <= {"ensure_ascii", "indent"}
    )
    if orjson is not None and utf8 and plain and exporter._all_columns():
        dumps = _without_null_conditionals(orjson.dumps) if CONDITIONAL_FIELDS else orjson.dumps
    exporter._orjson_dumps = dumps  # type: ignore[attr-defined]
    return dumps


CONDITIONAL_FIELDS = CONDITIONAL_PAGE_FIELDS
"""Page fields written only when set (see :mod:`sitemap_crawl.records`)."""


def _without_null_conditionals(dumps: Callable[[Any], bytes]) -> Callable[[SitemapPage], bytes]:
    """orjson's bytes of a page without the conditional fields that are None: a dataclass is
    written whole, so their ``,"name":null`` tail is cut (all None, the usual case), or the
    page goes through its dict form (some set, some not)."""
    values = operator.attrgetter(*CONDITIONAL_FIELDS)
    single = len(CONDITIONAL_FIELDS) == 1
    null_tail = len("".join(f',"{name}":null' for name in CONDITIONAL_FIELDS)) + 1

    def page_dumps(page: SitemapPage) -> bytes:
        found = (values(page),) if single else values(page)
        if all(value is None for value in found):
            return dumps(page)[:-null_tail] + b"}"
        if None not in found:
            return dumps(page)
        return dumps(page_row(page))

    return page_dumps


def _csv_row(values: dict[str, Any], names: Iterable[str]) -> list[Any]:
    row: list[Any] = []
    for name in names:
        value = values.get(name)
        if name in NESTED_PAGE_FIELDS:
            row.append(_nested_cell(value))
        else:
            row.append("" if value is None else value)
    return row


def _nested_cell(value: Any) -> str:
    """A nested page field in a CSV cell: JSON text, an empty cell when empty."""
    return json.dumps(value, ensure_ascii=False) if value else ""


def _without_nulls(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, dict):
        return {key: _without_nulls(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_without_nulls(inner) for inner in value]
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


EXPORTERS: dict[str, type[BaseItemExporter]] = {
    "csv": CsvPageExporter,
    "json": JsonPageExporter,
    "jsonlines": JsonLinesPageExporter,
    "jsonl": JsonLinesPageExporter,
    "jl": JsonLinesPageExporter,
    "xml": XmlPageExporter,
    "pickle": PicklePageExporter,
    "marshal": MarshalPageExporter,
}
"""Feed format → page-aware exporter, as FEED_EXPORTERS expects (paths built in wiring)."""
