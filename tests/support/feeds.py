"""Read back what a crawl wrote: ``read_feed(path)`` gives a feed's rows (jsonl, json, csv
or xml, from the file name or the format given); ``csv_columns(path)`` a CSV feed's header.
``CrawlResult.pages`` reads its feed with the same function.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from lxml import etree

__all__ = ["FEED_FORMATS", "csv_columns", "read_feed"]

FEED_FORMATS: dict[str, str] = {
    "jsonl": "jsonl",
    "jsonlines": "jsonl",
    "json": "json",
    "csv": "csv",
    "xml": "xml",
}
"""output_format -> file extension of the feed (Scrapy picks the exporter from it)."""

_READABLE = {**FEED_FORMATS, "jl": "jsonl"}


def read_feed(path: Path, output_format: str | None = None) -> list[dict[str, Any]]:
    """The rows of a feed file: jsonl/json as written; csv as DictReader rows (all str,
    nested columns are JSON text); xml as nested dicts/lists of str (best effort: an element
    whose children are all <value> is a list, an empty element is ""). The format defaults
    to the file's extension; a jsonl last line cut short (a killed crawl) is dropped."""
    name = output_format if output_format is not None else path.suffix.lstrip(".")
    if name not in _READABLE:
        raise ValueError(f"not a feed format: {name!r} (one of {sorted(_READABLE)})")
    extension = _READABLE[name]
    if extension == "jsonl":
        return _read_jsonl(path.read_text("utf-8"))
    if extension == "json":
        text = path.read_text("utf-8")
        rows: list[dict[str, Any]] = json.loads(text) if text.strip() else []
        return rows
    if extension == "csv":
        with path.open(newline="", encoding="utf-8") as handle:
            return list(csv.DictReader(handle))
    return _read_xml_feed(path)


def csv_columns(path: Path) -> list[str] | None:
    """The header row of a CSV feed (None for an empty file)."""
    with path.open(newline="", encoding="utf-8") as handle:
        fieldnames = csv.DictReader(handle).fieldnames
        return None if fieldnames is None else list(fieldnames)


def _read_jsonl(text: str) -> list[dict[str, Any]]:
    lines = text.split("\n")
    rows = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except ValueError:
            if number == len(lines):  # a last line cut short by a killed crawl
                break
            raise
    return rows


def _xml_value(element: etree._Element) -> Any:
    children = [child for child in element if isinstance(child.tag, str)]
    if not children:
        return element.text or ""
    if all(child.tag == "value" for child in children):
        return [_xml_value(child) for child in children]
    return {str(child.tag): _xml_value(child) for child in children}


def _read_xml_feed(path: Path) -> list[dict[str, Any]]:
    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True)
    root = etree.parse(str(path), parser).getroot()
    return [{str(field.tag): _xml_value(field) for field in item if isinstance(field.tag, str)} for item in root]
