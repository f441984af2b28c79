"""The end tags mended before the recover parser reads a malformed document."""

from __future__ import annotations

import itertools
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitemap_crawl.parsing.xml.balance import MAX_TAG_BYTES, TagBalancer


def mended(*chunks: bytes) -> tuple[bytes, bool]:
    balancer = TagBalancer()
    return b"".join(balancer.mend(iter(chunks))), balancer.mended


WELL_FORMED = (
    b'<?xml version="1.0"?>\n<!DOCTYPE urlset>\n<urlset xmlns="urn:x" a=">">'
    b"<!-- </url> <b> --><url><loc><![CDATA[https://a.test/</b>?<x>]]></loc>"
    b"<?pi </loc>?><image:image xmlns:image='urn:i' b='</x>'/><e   /></url ></urlset>\n<!-- end -->\n"
)


def test_a_well_formed_document_passes_byte_for_byte() -> None:
    assert mended(WELL_FORMED) == (WELL_FORMED, False)


@pytest.mark.parametrize(
    ("written", "read"),
    [
        (b"<r><u><l>x</b></l></u></r>", b"<r><u><l>x</l></u></r>"),  # a stray end tag dropped
        (b"<r><u><l>x</l></l></u></r>", b"<r><u><l>x</l></u></r>"),
        (b"<r><u><l>x</u><u>", b"<r><u><l>x</l></u><u>"),  # open elements ended first
        (b"<r><u><l>x</l></uu><u>", b"<r><u><l>x</l></u><u>"),  # ends the open element, as libxml2 reads it
        (b"<r><u>x</r><u>y</u></r>", b"<r><u>x<u>y</u></u></r>"),  # the root's end held to the end
        (b"<r><u>x</u></r><u>y</u>", b"<r><u>x</u><u>y</u></r>"),
        (b"</x><r><u/></r>", b"<r><u/></r>"),  # an end tag with nothing open
        (b"<r><u>x</b></r>", b"<r><u>x</u></r>"),  # a stray end tag before the root's ends the open element
        (b"<r><u>x</b><!-- c --></u></r>", b"<r><u>x<!-- c --></u></r>"),  # judged by the next end tag
        (b"<r><u><l>x</l></x><m>y</m></u></r>", b"<r><u><l>x</l><m>y</m></u></r>"),  # between two fields
        (b"<r><u>x</uu><u>y</u></r>", b"<r><u>x</u><u>y</u></r>"),  # a misspelt end tag before a sibling
        (b"<r><u>x</r><!-- c --><u/></r>", b"<r><u>x<!-- c --><u/></u></r>"),
    ],
)
def test_end_tags_are_mended(written: bytes, read: bytes) -> None:
    assert mended(written) == (read, True)


def test_any_split_of_the_input_gives_the_same_bytes() -> None:
    document = WELL_FORMED.replace(b"<e   />", b"<e   /></b></x:y><l>t</u>")
    whole, _ = mended(document)
    assert b"</b>" not in whole.replace(b"https://a.test/</b>", b"")
    for cut in range(len(document) + 1):
        assert mended(document[:cut], document[cut:]) == (whole, True), cut
    assert mended(*(document[i : i + 1] for i in range(len(document)))) == (whole, True)


def test_a_lone_less_than_before_a_letter_is_no_tag() -> None:
    # "a<b" in a text: the mending read "<b</t>" as a start tag and added "</b></t>" (the
    # root was closed a few tags later); libxml2 does not read it as one either. It is the
    # text's character, as the repair writes a "<" before no letter
    document = b"<r><u><t>a<b</t></u><u><t>c</t><t>d</</t></u></r>"
    read = b"<r><u><t>a&#60;b</t></u><u><t>c</t><t>d&#60;/</t></u></r>"
    assert mended(document) == (read, True)
    assert mended(document[:11], document[11:]) == (read, True)


def test_a_document_cut_after_a_root_end_tag_in_its_middle_is_left_cut() -> None:
    # the root's end tag moved to the end closed the entry the cut left open: a cut URL
    assert mended(b"<r><u>a</u></r><u><l>https://a.test/p") == (b"<r><u>a</u><u><l>https://a.test/p", True)


def test_a_deep_document_with_stray_end_tags_costs_no_scan_of_its_depth() -> None:
    # each stray end tag was looked up in the whole stack: quadratic (440 KB: 8 s)
    document = b"<r>" + b"<a>" * 50_000 + b"</b><c/>" * 50_000
    started = time.process_time()
    assert mended(document)[0].startswith(b"<r><a><a>")
    assert time.process_time() - started < 2


def test_text_after_a_root_end_tag_costs_no_sum_of_what_came_before() -> None:
    # each piece given after the root's end tag summed the whole held list: quadratic
    document = b"<r><u>a</u></r>" + b"<a" * 100_000
    started = time.process_time()
    mended(document)
    assert time.process_time() - started < 2


@pytest.mark.parametrize("markup", [b"</" + b"a" * 300_000, b"<" + b"a" * 300_000, b'<a b="' + b"c" * 300_000])
def test_a_long_tag_with_no_end_costs_linear_time(markup: bytes) -> None:
    # the patterns' overlapping quantifiers would backtrack over every split of a long name
    started = time.process_time()
    for cut in (1000, 100_000):
        document = b"<r><u>" + markup + b"</u></r>"
        assert mended(document[:cut], document[cut:])[0].startswith(b"<r><u>")
    assert time.process_time() - started < 2


def test_a_malformed_end_tag_libxml2_reads_is_an_end_tag() -> None:
    # "</ loc>", "</loc/>", "</loc x='1'>" were written as text: the URL took them in
    for written in (b"</ l>", b"</l/>", b'</l x="1">'):
        document = b"<r><u><l>x" + written + b"</u></r>"
        assert mended(document) == (document, False)


def test_a_misspelt_end_tag_of_a_field_ends_it() -> None:
    # "<loc>a</lco><lastmod>": dropped, the lastmod went into the loc and was lost
    assert mended(b"<r><u><l>a</lco><m>b</m></u></r>") == (b"<r><u><l>a</l><m>b</m></u></r>", True)


def test_a_document_not_ended_is_left_open() -> None:
    # what the input leaves open is not closed: the recover pass must still see a cut entry
    assert mended(b"<r><u><l>https://a.test/cu") == (b"<r><u><l>https://a.test/cu", False)
    assert mended(b"<r><u><l>x</l></u><u><l") == (b"<r><u><l>x</l></u><u><l", False)


def test_utf16_passes_as_it_is() -> None:
    document = "<r><u><l>x</b></l></u></r>".encode("utf-16")
    assert mended(document) == (document, False)


@pytest.mark.parametrize("before", [b"", b"</r>"])
def test_a_start_tag_never_ended_ends_the_mending(before: bytes) -> None:
    # (a quote never closed, and no < or > after it: the start tag may go on past any piece)
    document = b"<r><u>" + before + b'<u a="' + b"x" * (MAX_TAG_BYTES + 10)
    for cut in (100, 1000, len(document) - 5):
        assert mended(document[:cut], document[cut:]) == (document, False)


_PIECES = [
    b"<r>",
    b"</r>",
    b"<u>",
    b"</u>",
    b"<l>",
    b"</l>",
    b"</b>",
    b"<b>",
    b"<e/>",
    b"x",
    b"<!-- </u> -->",
    b"<![CDATA[</l>]]>",
]


@given(st.lists(st.sampled_from(_PIECES), max_size=30), st.lists(st.integers(0, 400), max_size=4))
@settings(max_examples=300, deadline=None)
def test_mending_does_not_depend_on_where_the_input_is_cut(pieces: list[bytes], cuts: list[int]) -> None:
    document = b"".join(pieces)
    bounds = sorted({0, len(document), *(min(cut, len(document)) for cut in cuts)})
    chunks = [document[start:end] for start, end in itertools.pairwise(bounds)]
    assert mended(*chunks) == mended(document)


def test_text_is_given_as_it_comes_not_held() -> None:
    # text with no "<" after the last tag was held and joined to every next chunk: quadratic
    # time on 100 MiB of newlines (16 s), and its memory
    balancer = TagBalancer()
    pieces = list(balancer.mend(iter([b"<r><u>", b"x" * 1000, b"y" * 1000, b"</u></r>"])))
    assert pieces[:3] == [b"<r><u>", b"x" * 1000, b"y" * 1000]
    assert b"".join(pieces) == b"<r><u>" + b"x" * 1000 + b"y" * 1000 + b"</u></r>"
