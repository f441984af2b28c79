"""The page codec: a page record as a dict (feeds, saved state) and as a tuple (worker pipe).

Everything here is derived from the fields of :class:`~sitemap_crawl.items.SitemapPage`
and its nested records by :class:`~sitemap_crawl.records.RecordCodec`, compiled once
at import: adding a field to a record means editing the dataclass only. Pure: the
parsing worker imports it.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from typing import Any

from sitemap_crawl.items import (
    ALTERNATE_CODEC,
    CONDITIONAL_PAGE_FIELDS,
    IMAGE_CODEC,
    NESTED_PAGE_FIELDS,
    NEWS_CODEC,
    PAGE_CODEC,
    PAGE_FIELDS,
    REF_CODEC,
    VIDEO_CODEC,
)
from sitemap_crawl.records import RecordCodec

__all__ = [
    "CODECS",
    "NESTED_PAGE_FIELDS",
    "PAGE_FIELDS",
    "PAGE_TUPLE_SIZE",
    "REF_TUPLE_SIZE",
    "page_from_dict",
    "page_from_tuple",
    "page_row",
    "page_to_dict",
    "page_to_tuple",
    "ref_from_tuple",
    "ref_to_tuple",
]

CODECS: dict[type, RecordCodec[Any]] = {
    codec.cls: codec for codec in (PAGE_CODEC, NEWS_CODEC, IMAGE_CODEC, VIDEO_CODEC, ALTERNATE_CODEC, REF_CODEC)
}
"""The codec of every record class (pages, their nested records, sub-sitemap references)."""

page_to_dict = PAGE_CODEC.to_dict
"""A page as a plain nested dict in field order (what :meth:`SitemapPage.to_dict` gives)."""
page_from_dict = PAGE_CODEC.from_dict
"""Rebuild a :class:`SitemapPage` from :func:`page_to_dict` output (missing keys take defaults)."""
page_to_tuple = PAGE_CODEC.to_tuple
"""A page as a tuple of plain values, its sitemap URL left out (they pickle fast)."""
page_from_tuple = PAGE_CODEC.from_tuple
"""The inverse of :func:`page_to_tuple`: ``page_from_tuple(values, sitemap_url)``."""
ref_to_tuple = REF_CODEC.to_tuple
"""A sub-sitemap reference as a tuple."""
ref_from_tuple = REF_CODEC.from_tuple
"""The inverse of :func:`ref_to_tuple`."""


def page_row(page: Any) -> dict[str, Any]:
    """:func:`page_to_dict`, also for a page whose nested fields an item pipeline set in
    another form (dicts, as the feeds show them, or a list mixing both): each goes out as
    plain values, nested records as dicts in field order."""
    try:
        return page_to_dict(page)
    except (AttributeError, TypeError):
        return {
            name: _plain(getattr(page, name))
            for name in PAGE_FIELDS
            if name not in CONDITIONAL_PAGE_FIELDS or getattr(page, name) is not None
        }


def _plain(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return {field.name: _plain(getattr(value, field.name)) for field in fields(value)}
    if isinstance(value, list | tuple):
        return [_plain(inner) for inner in value]
    if isinstance(value, dict):
        return {key: _plain(inner) for key, inner in value.items()}
    return value


PAGE_TUPLE_SIZE = len(PAGE_CODEC.tuple_fields)
REF_TUPLE_SIZE = len(REF_CODEC.tuple_fields)
if PAGE_TUPLE_SIZE == REF_TUPLE_SIZE:  # pragma: no cover - the worker tells them apart by length
    raise TypeError("a page tuple and a sub-sitemap tuple must differ in length")
