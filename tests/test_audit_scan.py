"""audit/scan.py: the audit's own read of a body (feeds, text sitemaps, a byte order mark)."""

from __future__ import annotations

import codecs
import gzip
import random
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sitemap_crawl.audit import rules
from sitemap_crawl.audit import scan as scan_module
from sitemap_crawl.audit.auditor import SiteAudit
from sitemap_crawl.audit.scan import SitemapFacts, scan, text_lines
from sitemap_crawl.parsing import parse_sitemap
from sitemap_crawl.parsing.text import MAX_LINE_LENGTH, escaped_bytes

NOW = datetime(2024, 6, 1, tzinfo=UTC)
FEED_URL = "https://example.com/feed.xml"


def rss(items: int) -> bytes:
    item = "<item><title>A post</title><link>https://example.com/post-{0}</link><description>{1}</description></item>"
    body = "".join(item.format(number, "text " * 20) for number in range(items))
    return f'<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>{body}</channel></rss>'.encode()


ATOM = (
    b'<feed xmlns="http://www.w3.org/2005/Atom"><title>t</title>'
    b"<entry><id>1</id><link href='https://example.com/a'/><updated>2024-05-01T00:00:00Z</updated></entry></feed>"
)


@pytest.mark.parametrize(("body", "root"), [(rss(3), "rss"), (ATOM, "feed")])
def test_a_well_formed_feed_has_no_finding(body: bytes, root: str) -> None:
    facts = SitemapFacts()
    assert list(scan(body, facts)) == []
    assert (facts.root, facts.error, facts.size) == (root, None, len(body))
    assert list(SiteAudit(None, now=NOW).audit_sitemap(body, FEED_URL)) == []


def test_a_broken_feed_is_an_invalid_document() -> None:
    body = rss(3).replace(b"</item>", b"", 1)
    found = list(SiteAudit(None, now=NOW).audit_sitemap(body, FEED_URL))
    assert [(finding.rule, finding.detail.split(":")[0]) for finding in found] == [
        ("invalid-document", "not well-formed XML")
    ]
    assert "mismatch" in found[0].detail


def _peak_kib() -> int:
    status = Path("/proc/self/status").read_text()
    return int(status.split("VmHWM:")[1].split()[0])


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="resets the peak RSS through /proc (Linux)")
def test_a_feed_is_checked_without_holding_its_tree() -> None:
    # a feed's items are below the root's child: a pull parser would hold the whole tree
    # (several times the body); the scan only has libxml2 check it
    body = rss(60_000)  # about 12 MB
    facts = SitemapFacts()
    Path("/proc/self/clear_refs").write_text("5")  # the peak RSS starts again from here
    before = _peak_kib()
    assert list(scan(body, facts)) == []
    grown_mib = (_peak_kib() - before) / 1024
    assert facts.error is None
    assert grown_mib < len(body) / 2**20 / 2, f"a {len(body):,}-byte feed grew the peak by {grown_mib:.0f} MiB"


SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
TEXT_URL = "https://example.com/sitemap.txt"


def urlset_text(pages: list[str]) -> str:
    entries = "".join(f"<url><loc>{page}</loc></url>\n" for page in pages)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{SITEMAP_NS}">\n{entries}</urlset>\n'


def test_an_xml_sitemap_after_a_byte_order_mark_is_read_as_xml() -> None:
    body = f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{SITEMAP_NS}">'
    body += "<url><loc>https://example.com/a</loc><priority>2</priority></url></urlset>"
    audit = SiteAudit(None, now=NOW)
    found = list(audit.audit_sitemap(codecs.BOM_UTF8 + body.encode(), "https://example.com/sitemap.xml"))
    assert [(finding.rule, finding.url) for finding in found] == [("priority-range", "https://example.com/a")]
    assert audit.kinds == {"https://example.com/sitemap.xml": "urlset"}


def test_a_byte_order_mark_is_not_part_of_a_text_sitemaps_first_url() -> None:
    audit = SiteAudit(None, now=NOW)
    body = codecs.BOM_UTF8 + b"https://example.com/a\nhttps://example.com/b\n"
    assert list(audit.audit_sitemap(body, TEXT_URL)) == []
    assert audit.sitemap_pages == {TEXT_URL: 2}


LINE_ENDS = ("\n", "\r\n", "\r", "\n\n", " \n\t")


def text_body(lines: int, seed: int) -> str:
    chooser = random.Random(seed)
    parts = []
    for number in range(lines):
        parts.append(f"  https://example.com/caf\u00e9/{number}/{'x' * chooser.randrange(40)}")
        parts.append(chooser.choice(LINE_ENDS))
    return "".join(parts)


@pytest.mark.parametrize("chunk_size", [5, 64, 1 << 16])
@pytest.mark.parametrize("ending", ["", "\n"])
def test_text_lines_are_the_lines_of_the_whole_body(
    monkeypatch: pytest.MonkeyPatch, chunk_size: int, ending: str
) -> None:
    monkeypatch.setattr(scan_module, "_CHUNK_SIZE", chunk_size)
    text = text_body(3000, chunk_size) + ending
    facts = SitemapFacts()
    read = [line for batch in text_lines(text.encode(), facts) for line in batch]
    assert read == [line.strip() for line in re.split("\r\n|\r|\n", text) if line.strip()]
    assert (facts.bad_utf8, facts.error, facts.size) == (None, None, len(text.encode()))


@pytest.mark.parametrize("ending", ["", "\n"])
def test_a_text_line_over_the_crawls_limit_is_counted_not_read(ending: str) -> None:
    # the line read so far was split again at every 64 KiB piece: a 64 MiB line without a
    # break took minutes (the crawl skips a line over 64 KiB); it was then a 64 MiB finding
    long = "x" * (MAX_LINE_LENGTH + 1)
    body = f"https://example.com/a\n{long}\r\nhttps://example.com/b\n{'y' * (12 << 20)}{ending}".encode()
    facts = SitemapFacts()
    read = [line for batch in text_lines(body, facts) for line in batch]
    assert read == ["https://example.com/a", "https://example.com/b"]
    assert facts.long_lines == 2
    exactly = f"https://example.com/{'z' * (MAX_LINE_LENGTH - 20)}"  # at the limit: read
    assert [line for batch in text_lines(exactly.encode(), SitemapFacts()) for line in batch] == [exactly]


@pytest.mark.parametrize("chunk_size", [5, 64, 1 << 16])
def test_text_lines_after_a_byte_that_is_not_utf8(monkeypatch: pytest.MonkeyPatch, chunk_size: int) -> None:
    monkeypatch.setattr(scan_module, "_CHUNK_SIZE", chunk_size)
    good = text_body(500, 1).encode()
    body = good + b"https://example.com/caf\xe9\n" + good
    facts = SitemapFacts()
    read = [line for batch in text_lines(body, facts) for line in batch]
    assert facts.bad_utf8 == len(good) + len("https://example.com/caf")
    text = body.decode("utf-8", "surrogateescape")  # (the byte as %E9, as the crawl reads it)
    assert read == [escaped_bytes(line.strip()) for line in re.split("\r\n|\r|\n", text) if line.strip()]
    assert "https://example.com/caf%E9" in read


@pytest.mark.parametrize("inside", ["\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\u2029"])
def test_a_text_sitemap_line_is_split_where_the_crawl_splits_it(inside: str) -> None:
    # str.splitlines() broke these lines in two: a relative-url for the tail, a false
    # duplicate-in-sitemap for the head, and no unescaped-url for the URL the crawl reads
    body = f"https://example.com/a{inside}x\nhttps://example.com/a{inside}y\nhttps://example.com/ok\n".encode()
    read = [line for batch in text_lines(body, SitemapFacts()) for line in batch]
    assert read == [f"https://example.com/a{inside}x", f"https://example.com/a{inside}y", "https://example.com/ok"]
    assert len(parse_sitemap(body, TEXT_URL).pages) == 3
    found = [(finding.rule, finding.url) for finding in SiteAudit(None, now=NOW).audit_sitemap(body, TEXT_URL)]
    assert found == [("unescaped-url", read[0]), ("unescaped-url", read[1])]


def test_a_text_sitemap_line_keeps_what_the_crawl_keeps_around_it() -> None:
    # the crawl strips ASCII whitespace, and the rest of a URL's edges when the line starts with one
    body = "\u00a0https://example.com/a\u200b\n https://example.com/b \x0b\nhttps://example.com/c\u00a0\n".encode()
    read = [line for batch in text_lines(body, SitemapFacts()) for line in batch]
    assert read == ["https://example.com/a", "https://example.com/b", "https://example.com/c"]
    assert [page.url for page in parse_sitemap(body, TEXT_URL).pages] == read


@pytest.mark.parametrize("text", [False, True], ids=["urlset", "text"])
def test_a_gzip_body_past_the_scan_limit_is_too_large_not_invalid(monkeypatch: pytest.MonkeyPatch, text: bool) -> None:
    # a sound document: the scan stopping at its own limit is not the document's fault
    monkeypatch.setattr(scan_module, "SCAN_LIMIT", 4000)
    monkeypatch.setattr(rules, "MAX_BYTES", 3000)
    pages = [f"https://example.com/{number}" for number in range(300)]
    plain = "".join(f"{page}\n" for page in pages) if text else urlset_text(pages)
    url = TEXT_URL + ".gz" if text else "https://example.com/sitemap.xml.gz"
    found = [
        (finding.rule, finding.detail)
        for finding in SiteAudit(None, now=NOW).audit_sitemap(gzip.compress(plain.encode()), url)
    ]
    assert found == [("too-large", "more than 4,000 bytes uncompressed (at most 3,000)")]
    monkeypatch.setattr(scan_module, "SCAN_LIMIT", 1 << 20)  # read whole: the size as it is
    found = [
        (finding.rule, finding.detail) for finding in SiteAudit(None, now=NOW).audit_sitemap(plain.encode(), url[:-3])
    ]
    assert found == [("too-large", f"{len(plain):,} bytes uncompressed (at most 3,000)")]


def test_a_text_sitemap_whose_gzip_stream_breaks_off() -> None:
    body = gzip.compress(b"".join(f"https://example.com/{number}\n".encode() for number in range(20_000)))
    audit = SiteAudit(None, now=NOW)
    found = list(audit.audit_sitemap(body[: len(body) // 2], TEXT_URL))
    assert [(finding.rule, finding.detail) for finding in found] == [
        ("invalid-document", "gzip stream ends early")  # ("gzip: " once)
    ]
    assert 0 < audit.sitemap_pages[TEXT_URL] < 20_000


def test_a_text_sitemap_over_the_size_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rules, "MAX_BYTES", 100)
    body = b"https://example.com/a\n" * 5
    found = list(SiteAudit(None, now=NOW).audit_sitemap(body, TEXT_URL))
    assert [(finding.rule, finding.detail) for finding in found] == [
        ("duplicate-in-sitemap", found[0].detail),
        ("duplicate-in-sitemap", found[0].detail),
        ("duplicate-in-sitemap", found[0].detail),
        ("duplicate-in-sitemap", found[0].detail),
        ("too-large", "110 bytes uncompressed (at most 100)"),
    ]


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        (b"", "an empty body"),
        (gzip.compress(b"", mtime=0), "an empty body"),
        (b"  \n\r\n\t\n", "a text sitemap with no URL"),
    ],
    ids=["empty", "empty-gzip", "blank-lines"],
)
def test_a_body_without_a_url_is_an_empty_sitemap(body: bytes, detail: str) -> None:
    audit = SiteAudit(None, now=NOW)
    found = [(finding.rule, finding.detail) for finding in audit.audit_sitemap(body, TEXT_URL)]
    assert found == [("empty-sitemap", detail)]
    assert audit.sitemap_pages == {TEXT_URL: 0}


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32"])
def test_a_text_sitemap_in_utf16_or_utf32_is_read_in_it(encoding: str) -> None:
    body = "https://example.com/a\nhttps://example.com/b\r\nhttps://example.com/a\n".encode(encoding)
    audit = SiteAudit(None, now=NOW)
    found = [(finding.rule, finding.url, finding.detail) for finding in audit.audit_sitemap(body, TEXT_URL)]
    assert found == [
        ("duplicate-in-sitemap", "https://example.com/a", found[0][2]),
        ("not-utf8", None, f"encoding {encoding.upper()}"),
    ]
    assert audit.sitemap_pages == {TEXT_URL: 3}


@pytest.mark.parametrize(
    "body",
    [
        f'<urlset xmlns="{SITEMAP_NS}"><url><loc>https://example.com/a&nbsp;b</loc></url></urlset>'.encode(),
        b"<rss><channel><item>&nbsp;</item></channel></rss>",
        # longer: lxml then said "Start tag expected, '<' not found, line 1, column 1"
        f'<urlset xmlns="{SITEMAP_NS}"><url><loc>https://example.com/a&nbsp;b</loc></url>'.encode()
        + b"<url><loc>https://example.com/c</loc></url>" * 2000
        + b"</urlset>",
    ],
    ids=["urlset", "rss", "long"],
)
def test_an_entity_xml_does_not_define_is_an_unescaped_entity(body: bytes) -> None:
    found = list(SiteAudit(None, now=NOW).audit_sitemap(body, "https://example.com/sitemap.xml"))
    assert [finding.rule for finding in found] == ["unescaped-entity"]
    assert "Entity 'nbsp' not defined, line 1" in found[0].detail  # libxml2's error, not lxml's "no element found"


WIDE_URLSET = f'<urlset xmlns="{SITEMAP_NS}"><url><loc>https://example.com/a</loc></url><url><loc>https://example.com/b</loc></url></urlset>'


@pytest.mark.parametrize(
    ("body", "encoding"),
    [
        (codecs.BOM_UTF32_LE + WIDE_URLSET.encode("utf-32-le"), "UTF-32"),
        (codecs.BOM_UTF32_BE + WIDE_URLSET.encode("utf-32-be"), "UTF-32"),
        (WIDE_URLSET.encode("utf-32-le"), "UTF-32"),
        (WIDE_URLSET.encode("utf-32-be"), "UTF-32"),
        (codecs.BOM_UTF16_BE + WIDE_URLSET.encode("utf-16-be"), "UTF-16"),
        (WIDE_URLSET.encode("utf-16-le"), "UTF-16"),
        (WIDE_URLSET.encode("utf-16-be"), "UTF-16"),
    ],
    ids=["utf-32-le BOM", "utf-32-be BOM", "utf-32-le", "utf-32-be", "utf-16-be BOM", "utf-16-le", "utf-16-be"],
)
def test_an_xml_sitemap_in_utf16_or_utf32_is_read_as_xml(body: bytes, encoding: str) -> None:
    # with a BOM of UTF-32, libxml2's push parser found no root (invalid-document); without
    # a BOM, the scan took the document for a text sitemap (a relative-url of NUL bytes)
    audit = SiteAudit(None, now=NOW)
    found = [(finding.rule, finding.detail) for finding in audit.audit_sitemap(body, "https://example.com/s.xml")]
    assert found == [("not-utf8", f"encoding {encoding}")]
    assert audit.sitemap_pages == {"https://example.com/s.xml": 2}


def _findings(body: bytes) -> list[tuple[str, str | None, str]]:
    audit = SiteAudit(None, now=NOW)
    return [
        (finding.rule, finding.url, finding.detail)
        for finding in audit.audit_sitemap(body, "https://example.com/s.xml")
    ]


def test_a_prefix_not_declared_is_a_bad_namespace_and_the_entries_after_it_are_checked() -> None:
    # the strict scan stopped there (invalid-document), the entries after it unchecked
    body = (
        f'<urlset xmlns="{SITEMAP_NS}">\n'
        "<url><loc>https://example.com/a</loc>"
        '<xhtml:link rel="alternate" hreflang="de" href="https://example.com/de/a"/></url>\n'
        "<url><loc>https://example.com/b</loc><lastmod>yesterday</lastmod></url>\n"
        "<url><loc>https://example.com/b</loc></url>\n</urlset>\n"
    ).encode()
    assert [(rule, url) for rule, url, _ in _findings(body)] == [
        ("lastmod-format", "https://example.com/b"),
        ("duplicate-in-sitemap", "https://example.com/b"),
        ("bad-namespace", None),
    ]
    assert _findings(body)[-1][2].startswith("Namespace prefix xhtml on link is not defined, line 2")
    facts = SitemapFacts()
    assert len(list(scan(body, facts))) == 3
    assert facts.size == len(body)  # read twice, counted once


def test_a_root_whose_prefix_is_not_declared_is_one_bad_namespace() -> None:
    # the root finder raised ValueError (lxml's QName of "sm:urlset")
    body = b"<sm:urlset><sm:url><sm:loc>https://example.com/a</sm:loc></sm:url></sm:urlset>"
    found = _findings(body)
    assert [rule for rule, _, _ in found] == ["bad-namespace"]
    assert found[0][2].startswith("Namespace prefix sm on urlset is not defined")


def test_a_feed_with_a_prefix_not_declared_is_a_bad_namespace() -> None:
    body = (
        b'<rss version="2.0"><channel><item><link>https://example.com/a</link><media:content/></item></channel></rss>'
    )
    assert [rule for rule, _, _ in _findings(body)] == ["bad-namespace"]


def test_a_prefix_not_declared_then_a_broken_tag_is_an_invalid_document() -> None:
    body = (
        f'<urlset xmlns="{SITEMAP_NS}">\n<url><loc>https://example.com/a</loc><image:image/></url>\n'
        "<url><loc>https://example.com/b</loc></urx>\n</urlset>\n"
    ).encode()
    found = _findings(body)
    assert [rule for rule, _, _ in found] == ["invalid-document", "bad-namespace"]
    assert "tag mismatch" in found[0][2]  # lxml's exception named the namespace error


FLOOD = "<x/>" * 150_000
"""More elements (600 KB of them) than an entry may hold (100,000): the parsers look every
1 MiB fed (``FREE_EVERY``), so an entry holds three of these to be caught."""


@pytest.mark.parametrize("recover", [False, True], ids=["strict", "recover"])
def test_a_flood_of_other_elements_is_freed_between_entries_and_stops_the_scan_inside_one(recover: bool) -> None:
    # an undeclared prefix sends the scan to recover mode, which reads every element's end
    prefix = "<image:image/>" if recover else ""
    url = "<url><loc>https://example.com/{}</loc></url>".format
    inner = url(1) + prefix + FLOOD + url(2) + f"<url><loc>https://example.com/3</loc>{FLOOD * 3}</url>" + url(4)
    body = f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{inner}</urlset>'.encode()
    facts = SitemapFacts()
    assert [entry.loc for entry in scan(body, facts)] == ["https://example.com/1", "https://example.com/2"]
    assert facts.error == "over 100,000 elements with no entry ending: not read further"
    found = list(SiteAudit(None, now=NOW).audit_sitemap(body, "https://example.com/sitemap.xml"))
    assert [finding.detail for finding in found if finding.rule == rules.INVALID_DOCUMENT.id] == [facts.error]


@pytest.mark.parametrize(
    ("filler", "where"),
    [("<!---->", "inside"), ("<?pi?>", "before"), ("<x/>", "nested-before-recover")],
)
def test_comments_pis_and_nested_floods_are_bounded_in_the_scan(filler: str, where: str) -> None:
    # the scan keeps comments and PIs (the page parser drops them), and in recover mode (an
    # undeclared prefix) learnt the root only from an element right below it
    flood = filler * 400_000
    url = "<url><loc>https://example.com/{}</loc></url>".format
    inner = {
        "inside": url(1) + f"<url><loc>https://example.com/2</loc>{flood}</url>" + url(3),
        "before": flood + url(1) + url(2),
        "nested-before-recover": f"<a><image:x/>{flood}</a>" + url(1) + url(2),
    }[where]
    body = f'<urlset xmlns="{SITEMAP_NS}">{inner}</urlset>'.encode()
    facts = SitemapFacts()
    read = [entry.loc for entry in scan(body, facts)]
    if where == "inside":  # (comments are dropped as read: nothing held, nothing to stop)
        assert (read, facts.error) == ([f"https://example.com/{n}" for n in (1, 2, 3)], None)
    else:
        assert (read, facts.error) == (["https://example.com/1", "https://example.com/2"], None)


@pytest.mark.parametrize("filler", ["<!---->", "<?pi?>", "<!ELEMENT x ANY>"])
def test_a_prolog_of_megabytes_is_no_root_element(filler: str) -> None:
    # the scan held its comments, PIs or DTD declarations looking for the root: 1.3 to 2.2 GB
    doctype = ("<!DOCTYPE urlset [", "]>") if filler.startswith("<!E") else ("", "")
    root = f'<urlset xmlns="{SITEMAP_NS}"><url><loc>https://example.com/1</loc></url></urlset>'
    facts = SitemapFacts()
    assert list(scan(f"{doctype[0]}{filler * 300_000}{doctype[1]}{root}".encode(), facts)) == []
    assert facts.error == "no root element in the first 1 MiB"


def test_comments_after_the_root_are_not_held() -> None:
    body = f'<urlset xmlns="{SITEMAP_NS}"><url><loc>https://example.com/1</loc></url></urlset>' + "<!---->" * 300_000
    facts = SitemapFacts()
    assert ([entry.loc for entry in scan(body.encode(), facts)], facts.error) == (["https://example.com/1"], None)


def test_an_undefined_entity_next_to_a_piece_boundary_is_an_unescaped_entity() -> None:
    # libxml2 said "Extra content at the end of the document" or a bad start tag on line 1:
    # an invalid-document naming neither the entity nor its place
    from tests.test_parsing_damaged import _mistake_at

    for offset in range(32 * 1024 - 40, 32 * 1024 + 4):
        body = _mistake_at(b"&nbsp;", offset)
        found = [
            (finding.rule, finding.detail)
            for finding in SiteAudit(None, now=NOW).audit_sitemap(body, "https://x.org/s.xml")
        ]
        assert [rule for rule, _detail in found] == ["unescaped-entity"], (offset, found)
        assert "Entity 'nbsp' not defined, line 4" in found[0][1], (offset, found)


@pytest.mark.parametrize("one_line", [False, True], ids=["lines", "one-line"])
@pytest.mark.parametrize("gzipped", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize(
    ("mistake", "rule"), [(b"&x", "unescaped-entity"), (b"</lo></loc>", "invalid-document")], ids=["amp", "tag"]
)
def test_a_mistake_early_in_a_document_too_large_gives_both_findings(
    monkeypatch: pytest.MonkeyPatch, gzipped: bool, mistake: bytes, rule: str, one_line: bool
) -> None:
    # the mistake stopped the scan before the size was known (too-large missing), or, past
    # the scan's limit, the size hid the mistake (libxml2 held "&x" back, waiting for its ";")
    monkeypatch.setattr(scan_module, "SCAN_LIMIT", 40_000)
    monkeypatch.setattr(rules, "MAX_BYTES", 30_000)
    pages = [f"https://example.com/{number}" for number in range(2000)]
    plain = urlset_text(pages).encode().replace(b"/5</loc>", b"/5" + mistake + b"</loc>", 1)
    if one_line:  # (minified: the mistake on the last line read, far from where the read stopped)
        plain = plain.replace(b"\n", b"")
    body = gzip.compress(plain) if gzipped else plain
    found = [
        (finding.rule, finding.detail)
        for finding in SiteAudit(None, now=NOW).audit_sitemap(body, "https://example.com/s.xml")
    ]
    size = "more than 40,000" if gzipped else f"{len(plain):,}"
    assert [finding_rule for finding_rule, _detail in found] == [rule, "too-large"], found
    assert found[1][1] == f"{size} bytes uncompressed (at most 30,000)"


def test_bytes_that_are_not_utf8_tell_text_sitemap_lines_apart_as_the_crawl_does() -> None:
    # read as U+FFFD, caf\xe9 and caf\xe8 were one URL: a duplicate-in-sitemap of two pages
    body = b"https://example.com/caf\xe9\nhttps://example.com/caf\xe8\nhttps://example.com/ok\xff"
    read = [line for batch in text_lines(body, SitemapFacts()) for line in batch]
    assert read == [page.url for page in parse_sitemap(body, TEXT_URL).pages]
    found = [finding.rule for finding in SiteAudit(None, now=NOW).audit_sitemap(body, TEXT_URL)]
    assert found == ["not-utf8"]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32"])
def test_a_sound_wide_gzip_document_past_the_scan_limit_is_too_large_alone(
    monkeypatch: pytest.MonkeyPatch, encoding: str
) -> None:
    # libxml2's column counts characters (2 or 4 bytes): a stop half-way along the last line
    # looked far from the end, an invalid-document for a document without a mistake
    monkeypatch.setattr(scan_module, "SCAN_LIMIT", 60_000)
    monkeypatch.setattr(rules, "MAX_BYTES", 30_000)
    text = urlset_text([f"https://example.com/{number}" for number in range(2000)]).replace("\n", "")
    body = gzip.compress(text.replace('encoding="UTF-8"', f'encoding="{encoding.upper()}"').encode(encoding))
    found = [finding.rule for finding in SiteAudit(None, now=NOW).audit_sitemap(body, "https://example.com/s.xml.gz")]
    assert "invalid-document" not in found and "too-large" in found, found


def test_an_extension_loc_in_the_url_itself_is_not_audited_as_its_loc() -> None:
    # as the crawl reads it: the page is its <loc>, whatever <image:loc> sits beside it
    body = (
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
        b'xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">'
        b"<url><loc>https://example.com/page</loc><image:loc>https://cdn.example.net/i b.jpg#x</image:loc>"
        b"<image:lastmod>yesterday</image:lastmod></url></urlset>"
    )
    assert list(SiteAudit(None, now=NOW).audit_sitemap(body, "https://example.com/sitemap.xml")) == []
