"""Documents with a DTD: their entities are never expanded (no DTD is loaded); a reference
is put back in the text as written, and an entry whose URL holds one is skipped."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lxml import etree

from sitemap_crawl.parsing.xml.libxml import Element, local_name


def has_dtd(element: Element) -> bool:
    """Whether the document of ``element`` has a DTD (``<!DOCTYPE ...>``, whatever its encoding
    or place before the root). Its entities, declared in its internal subset or in an external
    one (never loaded), are never expanded: lxml keeps a reference to one as a node of its own,
    even to one nothing declares, with no error, and an element's ``.text`` stops before it."""
    return element.getroottree().docinfo.internalDTD is not None


class EntryReading:
    """The entry reader of one document: on the first entry read it looks whether the
    document has a DTD (:func:`has_dtd`), and if so reads every entry with
    :func:`_keeping_entity_references`."""

    __slots__ = ("_plain", "read")

    def __init__(self, read_entry: Callable[[Element, str], Any]) -> None:
        self._plain = read_entry
        self.read: Callable[[Element, str], Any] = self._first

    def _first(self, element: Element, sitemap_url: str) -> Any:
        self.read = _keeping_entity_references(self._plain) if has_dtd(element) else self._plain
        return self.read(element, sitemap_url)


def inline_entity_references(element: Element) -> None:
    """Put each entity reference below ``element`` back in the text as written (``a&e;b``):
    lxml keeps a reference to a declared entity as a node of its own, and ``.text`` stops
    before it (a URL was cut there)."""
    for reference in list(element.iter(etree.Entity)):
        written = (reference.text or "") + (reference.tail or "")
        before, parent = reference.getprevious(), reference.getparent()
        if before is not None:
            before.tail = (before.tail or "") + written
        elif parent is not None:
            parent.text = (parent.text or "") + written
        if parent is not None:
            parent.remove(reference)


_URL_FIELDS = frozenset({"loc", "link", "guid"})
"""The children of an entry that give its URL (urlset, index, RSS)."""


def _keeping_entity_references(read_entry: Callable[[Element, str], Any]) -> Callable[[Element, str], Any]:
    """``read_entry`` for a document with a DTD (see :func:`has_dtd`, :func:`inline_entity_references`);
    an entry whose URL holds a reference is skipped: what it names is not known."""

    def read(element: Element, sitemap_url: str) -> Any:
        for reference in element.iter(etree.Entity):
            field = reference.getparent()
            if field is not None and field.getparent() is element and local_name(field.tag) in _URL_FIELDS:
                return None
        inline_entity_references(element)
        return read_entry(element, sitemap_url)

    return read
