"""How itemadapter (and so Scrapy's exporters and your pipelines) sees a page item.

A :class:`~sitemap_crawl.items.SitemapPage` is a dataclass whose conditional fields
(``attempt``, ``change``) only some runs fill. itemadapter's dataclass adapter would
show them on every page, so a stock exporter would write empty ``attempt`` and
``change`` columns in a plain run. :class:`SitemapPageAdapter` shows a conditional
field only while it is set, as the feeds do (see docs/output.md).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, KeysView
from typing import Any

from itemadapter import ItemAdapter
from itemadapter.adapter import DataclassAdapter

from sitemap_crawl.items import CONDITIONAL_PAGE_FIELDS, SitemapPage


class SitemapPageAdapter(DataclassAdapter):
    """itemadapter's adapter of a page: a conditional field is one of its fields while set."""

    @classmethod
    def is_item(cls, item: Any) -> bool:
        return isinstance(item, SitemapPage)

    @classmethod
    def is_item_class(cls, item_class: type) -> bool:
        return isinstance(item_class, type) and issubclass(item_class, SitemapPage)

    def _unset(self, field_name: str) -> bool:
        return field_name in CONDITIONAL_PAGE_FIELDS and getattr(self.item, field_name) is None

    def field_names(self) -> KeysView[str]:
        return KeysView(dict.fromkeys(iter(self)))

    def __iter__(self) -> Iterator[str]:
        return (name for name in self._fields_dict if not self._unset(name))

    def __getitem__(self, field_name: str) -> Any:
        if field_name in self._fields_dict and self._unset(field_name):
            raise KeyError(field_name)
        return super().__getitem__(field_name)

    def __delitem__(self, field_name: str) -> None:
        if field_name in CONDITIONAL_PAGE_FIELDS:  # unset, as a plain run has it
            if self._unset(field_name):
                raise KeyError(field_name)
            setattr(self.item, field_name, None)
        else:
            super().__delitem__(field_name)


def register_page_adapter() -> None:
    """Put :class:`SitemapPageAdapter` before itemadapter's own adapters (once)."""
    adapters = ItemAdapter.ADAPTER_CLASSES
    if SitemapPageAdapter not in adapters:
        assert isinstance(adapters, deque)
        adapters.appendleft(SitemapPageAdapter)
