"""The page codec: every field of every record survives the dict and tuple forms, in dataclass order."""

from __future__ import annotations

import dataclasses
import json
import pickle
import typing
from typing import Any

import orjson
import pytest

from sitemap_crawl.codec import CODECS, NESTED_PAGE_FIELDS, PAGE_FIELDS, page_from_dict, page_to_dict
from sitemap_crawl.items import CONDITIONAL_PAGE_FIELDS, SitemapPage
from sitemap_crawl.kinds import ErrorReason, NodeKind
from sitemap_crawl.parsing.worker_protocol import entry_from_tuple, entry_to_tuple
from sitemap_crawl.records import CONDITIONAL_KEY, RecordCodec


def _sample(hint: Any, name: str, salt: int) -> Any:
    """A value for a field of type ``hint``, different for every field (so a swap shows)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is list:
        return [_sample(args[0], name, salt + index) for index in range(2)]
    if type(None) in args:
        return _sample(next(arg for arg in args if arg is not type(None)), name, salt)
    if dataclasses.is_dataclass(hint):
        return _filled(hint, salt)
    if hint is bool:
        return salt % 2 == 0
    if hint in (int, float):
        return hint(salt + 0.5 if hint is float else salt)
    return f"{name}-{salt}"


def _filled(cls: Any, salt: int = 1) -> Any:
    """A record with every field set to a value of its own."""
    hints = typing.get_type_hints(cls)
    return cls(
        **{f.name: _sample(hints[f.name], f.name, salt * 100 + i) for i, f in enumerate(dataclasses.fields(cls))}
    )


@pytest.mark.parametrize("cls", list(CODECS), ids=lambda cls: cls.__name__)
def test_every_field_round_trips_in_dataclass_order(cls: Any) -> None:
    codec = CODECS[cls]
    record = _filled(cls)
    names = tuple(f.name for f in dataclasses.fields(cls))
    assert codec.fields == names
    data = codec.to_dict(record)
    assert tuple(data) == names
    assert codec.from_dict(data) == record
    assert codec.from_dict(json.loads(json.dumps(data))) == record
    context = [getattr(record, name) for name in codec.context]
    assert codec.from_tuple(pickle.loads(pickle.dumps(codec.to_tuple(record))), *context) == record
    empty = cls(
        **{
            f.name: getattr(record, f.name)
            for f in dataclasses.fields(cls)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        }
    )
    assert codec.from_tuple(codec.to_tuple(empty), *[getattr(empty, name) for name in codec.context]) == empty
    if hasattr(record, "to_dict"):
        assert record.to_dict() == data


def test_the_dict_form_is_plain_and_copies_lists() -> None:
    page = _filled(SitemapPage)
    data = page_to_dict(page)
    assert tuple(data) == (*PAGE_FIELDS, *CONDITIONAL_PAGE_FIELDS)  # set: the conditional fields come last
    assert {"news", "images", "videos", "alternates"} == NESTED_PAGE_FIELDS
    assert data["news"]["genres"] == page.news.genres and data["news"]["genres"] is not page.news.genres
    assert orjson.loads(orjson.dumps(page)) == data  # the JSON feeds' fast path writes the same object


def test_a_conditional_field_is_left_out_of_the_dict_form_while_none() -> None:
    page = _filled(SitemapPage)
    for name in CONDITIONAL_PAGE_FIELDS:  # attempt (queue runs), change (history runs)
        setattr(page, name, None)
    assert tuple(page_to_dict(page)) == PAGE_FIELDS
    assert page_from_dict(page_to_dict(page)) == page
    page.attempt = "1-0/1"
    assert page_to_dict(page)["attempt"] == "1-0/1"
    assert page_from_dict(page_to_dict(page)) == page


def test_conditional_fields_must_come_last() -> None:
    @dataclasses.dataclass
    class Wrong:
        url: str
        extra: str | None = dataclasses.field(default=None, metadata={CONDITIONAL_KEY: True})
        after: int = 0

    with pytest.raises(TypeError, match="conditional fields must come after"):
        RecordCodec(Wrong)


def test_page_from_dict_is_tolerant() -> None:
    assert page_from_dict({"url": "https://a.example/"}) == SitemapPage("https://a.example/", "")
    assert page_from_dict({"url": "u", "sitemap_url": None, "priority": "0.25"}).priority == 0.25
    with pytest.raises(KeyError):
        page_from_dict({"sitemap_url": "s"})


def test_worker_entries_round_trip() -> None:
    page = _filled(SitemapPage)
    assert entry_from_tuple(pickle.loads(pickle.dumps(entry_to_tuple(page))), page.sitemap_url) == page


def test_kinds_and_reasons_are_written_as_plain_strings() -> None:
    tree = {"kind": NodeKind.XML_INDEX, "error": ErrorReason.SIZE_LIMIT, NodeKind.RSS: 1}
    plain = {"kind": "xml_index", "error": "size limit", "rss": 1}
    assert json.dumps(tree, indent=1) == json.dumps(plain, indent=1)
    assert orjson.dumps(list(tree.values())) == orjson.dumps(list(plain.values()))  # (not as dict keys)
    assert f"{NodeKind.TEXT} {ErrorReason.LOOP}" == "text loop"
    assert str(ErrorReason.PARSE_ERROR) == "parse error"  # what logging's %s writes
