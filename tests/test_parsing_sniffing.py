"""Choosing the parser by content: gzip magic, XML root dispatch, text, HTML, empty bodies, encodings."""

from __future__ import annotations

import codecs
import gzip
import io
import zlib

import pytest

from sitemap_crawl.parsing import Limits, SitemapReader, parse_sitemap
from sitemap_crawl.parsing.stream import CHUNK_SIZE, MAX_GZIP_MEMBERS, gunzip_chunks

SM = "http://www.sitemaps.org/schemas/sitemap/0.9"
URLSET = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    f'<urlset xmlns="{SM}">\n'
    "<url><loc>https://www.example.org/a</loc></url>\n"
    "<url><loc>https://www.example.org/b</loc></url>\n"
    "</urlset>\n"
).encode()
URLS = ["https://www.example.org/a", "https://www.example.org/b"]


def summary(body: bytes, url: str = "https://www.example.org/sitemap.xml", **kwargs: object) -> tuple:
    result = parse_sitemap(body, url, **kwargs)  # type: ignore[arg-type]
    return result.kind, result.error, [page.url for page in result.pages] or result.sub_sitemaps


# -- dispatch on the root element ----------------------------------------------------------


@pytest.mark.parametrize(
    ("document", "kind"),
    [
        (f'<urlset xmlns="{SM}"><url><loc>https://www.example.org/a</loc></url></urlset>', "xml_urlset"),
        (
            f'<sitemapindex xmlns="{SM}"><sitemap><loc>https://www.example.org/a</loc></sitemap></sitemapindex>',
            "xml_index",
        ),
        ('<rss version="2.0"><channel><item><link>https://www.example.org/a</link></item></channel></rss>', "rss"),
        (
            '<feed xmlns="http://www.w3.org/2005/Atom"><entry><link href="https://www.example.org/a"/></entry></feed>',
            "atom",
        ),
        (
            '<feed version="0.3" xmlns="http://purl.org/atom/ns#"><entry><link href="https://www.example.org/a"/></entry></feed>',
            "atom",
        ),
    ],
)
@pytest.mark.parametrize(
    "url",
    [
        "https://www.example.org/sitemap.xml",
        "https://www.example.org/sitemap.txt",
        "https://www.example.org/feed",
        "https://www.example.org/sitemap.xml.gz",
        "https://www.example.org/robots.txt",
    ],
)
def test_kind_comes_from_the_root_element_never_the_url(document: str, kind: str, url: str) -> None:
    body = document.encode()
    assert SitemapReader(body, url).kind == kind
    result = parse_sitemap(body, url)
    assert (result.kind, result.error) == (kind, None)
    assert (result.sub_sitemaps if kind == "xml_index" else [page.url for page in result.pages]) == [
        "https://www.example.org/a"
    ]


@pytest.mark.parametrize(
    "prefix",
    [b"", b"\n\n", b"  \t\r\n", codecs.BOM_UTF8, codecs.BOM_UTF8 + b"\n  "],
    ids=["none", "blank-lines", "whitespace", "bom", "bom-and-whitespace"],
)
def test_bom_and_whitespace_before_the_xml_declaration(prefix: bytes) -> None:
    assert summary(prefix + URLSET) == ("xml_urlset", None, URLS)


# -- not a sitemap -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b"<!DOCTYPE html><html><head><title>Not found</title></head><body><p>404</p></body></html>",
        b'<html><head><meta http-equiv="refresh" content="0; url=https://www.example.org/sitemap.xml"></head></html>',
        b'\n<!doctype html>\n<html lang="fa" dir="rtl"><head><meta charset=utf-8><script>var x = \'<urlset>\';'
        b"</script></head><body><div id=__next></div></body></html>",
        b"<HTML><BODY>Sitemap: <a href=/s.xml>s</a><br></BODY></HTML>",
        b'<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><body/></html>',
        b'<?xml version="1.0"?><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"/>',
        b"<note><to>x</to></note>",
    ],
)
def test_other_markup_is_not_a_sitemap(body: bytes) -> None:
    reader = SitemapReader(body, "https://www.example.org/sitemap.xml")
    assert (reader.kind, reader.error) == ("invalid", "not a sitemap")
    assert list(reader) == []
    assert reader.detail


@pytest.mark.parametrize(
    ("body", "root"),
    [
        (b"<URLSET><URL><LOC>https://www.example.org/a</LOC></URL></URLSET>", "URLSET"),
        (
            b'<Urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://www.example.org/a</loc>'
            b"</url></Urlset>",
            "Urlset",
        ),
        (b"<SITEMAPINDEX><sitemap><loc>https://www.example.org/s</loc></sitemap></SITEMAPINDEX>", "SITEMAPINDEX"),
        (b"<RSS><channel><item><link>https://www.example.org/a</link></item></channel></RSS>", "RSS"),
    ],
)
def test_a_root_in_other_letter_case_is_not_a_sitemap_and_says_its_name(body: bytes, root: str) -> None:
    # XML names are case-sensitive: <URLSET> was taken for a urlset, whose <url>s it then
    # did not see: 0 pages and no error
    reader = SitemapReader(body, "https://www.example.org/sitemap.xml")
    assert list(reader) == []
    assert (reader.kind, reader.error, reader.detail) == ("invalid", "not a sitemap", f"root element <{root}>")


@pytest.mark.parametrize(
    "body", [b"", b" ", b"\n\r\n\t", codecs.BOM_UTF8, gzip.compress(b"", mtime=0), gzip.compress(b"\n\n", mtime=0)]
)
def test_empty_body_is_not_a_sitemap(body: bytes) -> None:
    reader = SitemapReader(body, "https://www.example.org/sitemap.xml")
    assert list(reader) == []
    assert (reader.kind, reader.error) == ("invalid", "not a sitemap")


def test_plain_text_dispatch() -> None:
    assert summary(b"https://www.example.org/a\n", "https://www.example.org/sitemap.xml") == (
        "text",
        None,
        ["https://www.example.org/a"],
    )


# -- gzip ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "https://www.example.org/sitemap.xml.gz",
        "https://www.example.org/sitemap.xml",
        "https://www.example.org/sitemap",
        "https://www.example.org/sitemap.gz?x=1",
    ],
)
def test_gzip_by_magic_bytes_at_any_url(url: str) -> None:
    assert summary(gzip.compress(URLSET), url) == ("xml_urlset", None, URLS)


def test_gzip_with_file_name_and_max_compression() -> None:
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="sitemap.xml", mode="wb", fileobj=buffer, compresslevel=9, mtime=0) as handle:
        handle.write(URLSET)
    assert summary(buffer.getvalue()) == ("xml_urlset", None, URLS)


def test_nested_gzip() -> None:
    assert summary(gzip.compress(gzip.compress(URLSET))) == ("xml_urlset", None, URLS)
    assert summary(gzip.compress(gzip.compress(gzip.compress(URLSET)))) == ("xml_urlset", None, URLS)


def test_multi_member_gzip() -> None:
    half = URLSET.index(b"<url>", URLSET.index(b"</url>"))
    body = gzip.compress(URLSET[:half]) + gzip.compress(URLSET[half:])
    assert summary(body) == ("xml_urlset", None, URLS)
    many = b"".join(gzip.compress(URLSET[i : i + 7]) for i in range(0, len(URLSET), 7))
    assert summary(many) == ("xml_urlset", None, URLS)


@pytest.mark.parametrize("cut", [1, 2, 3])
def test_a_member_whose_start_a_chunk_cuts_is_read(cut: int) -> None:
    # a chunk that ended with the next member's first byte (0x1f) alone ended the stream:
    # every page after it was lost without a word (a text sitemap) or "truncated"
    first, second = gzip.compress(b"a" * 5000), gzip.compress(b"b" * 5000)
    body = first + second
    split = len(first) + cut - 1  # (cut 1: the chunk ends right before the magic; 2: inside it)
    out = b"".join(gunzip_chunks(iter([body[:split], body[split:]]), 1 << 20))
    assert out == b"a" * 5000 + b"b" * 5000


def test_a_member_start_at_the_readers_chunk_boundary_keeps_every_page() -> None:
    first = "".join(f"https://www.example.org/first/{i}\n" for i in range(6000)).encode()
    member = gzip.compress(first, compresslevel=0, mtime=0)
    padding = CHUNK_SIZE - 1 - len(member)  # the second member's magic byte at the chunk's last byte
    assert padding > 0
    second = gzip.compress(b"\n" * padding + b"https://www.example.org/second\n", mtime=0)
    result = parse_sitemap(member + second, "https://www.example.org/s.txt.gz")
    assert (result.kind, result.error, len(result.pages)) == ("text", None, 6001)


def test_a_member_with_a_bad_checksum_keeps_what_it_decoded() -> None:
    # the trailer's CRC (or length) failed the call that decoded the whole member: 0 pages
    body = bytearray(gzip.compress(URLSET, mtime=0))
    body[-8] ^= 0xFF  # the CRC-32
    result = parse_sitemap(bytes(body), "https://www.example.org/s.xml.gz")
    assert (result.kind, result.error) == ("xml_urlset", "parse error")
    assert [page.url for page in result.pages] == URLS


def test_millions_of_empty_members_are_cut_at_the_member_cap() -> None:
    # each member cost a copy of the rest of its chunk: minutes in the reactor for 243 KB
    empty = gzip.compress(b"", mtime=0)
    body = gzip.compress(URLSET, mtime=0) + empty * (MAX_GZIP_MEMBERS + 10)
    result = parse_sitemap(body, "https://www.example.org/s.xml.gz")
    assert (result.kind, result.error) == ("xml_urlset", "size limit")
    assert [page.url for page in result.pages] == URLS


def test_zero_padding_after_the_gzip_member_is_ignored() -> None:
    assert summary(gzip.compress(URLSET) + b"\x00" * 512) == ("xml_urlset", None, URLS)


def test_gzip_text_and_gzip_feed() -> None:
    assert summary(gzip.compress(b"https://www.example.org/a\n")) == ("text", None, ["https://www.example.org/a"])
    feed = b'<rss version="2.0"><channel><item><link>https://www.example.org/a</link></item></channel></rss>'
    assert summary(gzip.compress(feed)) == ("rss", None, ["https://www.example.org/a"])


def test_gzip_over_the_size_cap_keeps_the_pages_before_it() -> None:
    entries = "".join(f"<url><loc>https://www.example.org/p/{i}</loc></url>\n" for i in range(5000))
    document = f'<urlset xmlns="{SM}">\n{entries}</urlset>\n'.encode()
    cap = len(document) // 2
    body = gzip.compress(document)
    assert len(body) < cap
    result = parse_sitemap(body, "https://www.example.org/sitemap.xml.gz", limits=Limits(max_size=cap))
    assert (result.kind, result.error) == ("xml_urlset", "size limit")
    expected = document[:cap].count(b"</url>")
    assert 0 < expected < 5000
    assert [page.url for page in result.pages] == [f"https://www.example.org/p/{i}" for i in range(expected)]


def test_gzip_bomb_is_cut_at_the_cap() -> None:
    body = gzip.compress(b"<urlset>" + b" " * (20 * 1024 * 1024))
    result = parse_sitemap(body, "https://www.example.org/s.xml.gz", limits=Limits(max_size=1024 * 1024))
    assert result.error == "size limit"
    assert result.pages == []


def test_truncated_gzip_keeps_the_complete_entries() -> None:
    entries = "".join(f"<url><loc>https://www.example.org/p/{i}</loc></url>\n" for i in range(3000))
    document = f'<urlset xmlns="{SM}">\n{entries}</urlset>\n'.encode()
    compressed = zlib.compressobj(6, zlib.DEFLATED, 31)
    body = compressed.compress(document) + compressed.flush()
    cut = body[: len(body) * 2 // 3]
    result = parse_sitemap(cut, "https://www.example.org/s.xml.gz")
    assert (result.kind, result.error) == ("xml_urlset", "truncated")
    assert 0 < len(result.pages) < 3000
    assert [page.url for page in result.pages] == [f"https://www.example.org/p/{i}" for i in range(len(result.pages))]


def test_corrupt_gzip_is_invalid() -> None:
    reader = SitemapReader(b"\x1f\x8b\x08\x00garbage that is not deflate", "https://www.example.org/s.xml.gz")
    assert list(reader) == []
    assert reader.kind == "invalid"
    assert reader.error == "parse error"


# -- encodings -----------------------------------------------------------------------------


@pytest.mark.parametrize("declared", ["utf-16", "UTF-16", "utf-32", "ucs-2", "utf-16le"])
def test_a_wide_encoding_declared_in_single_bytes_is_read_as_utf8(declared: str) -> None:
    # a .NET StringWriter's document sent as UTF-8: libxml2 read it as UTF-16, "no root element"
    body = f'\ufeff<?xml version="1.0" encoding="{declared}"?>\n<urlset xmlns="{SM}"><url><loc>https://www.example.org/café</loc></url></urlset>'
    for start in (body.encode("utf-8"), body[1:].encode("utf-8")):
        assert summary(start) == ("xml_urlset", None, ["https://www.example.org/café"])
    index = f'<?xml version="1.0" encoding="{declared}"?><sitemapindex xmlns="{SM}"><sitemap><loc>https://www.example.org/a.xml</loc></sitemap></sitemapindex>'
    assert parse_sitemap(index.encode(), "https://www.example.org/s.xml").sub_sitemaps == [
        "https://www.example.org/a.xml"
    ]


def _document(encoding_declaration: str | None) -> str:
    declaration = f'<?xml version="1.0" encoding="{encoding_declaration}"?>\n' if encoding_declaration else ""
    return (
        f'{declaration}<urlset xmlns="{SM}">\n'
        "<url><loc>https://www.example.org/café</loc></url>\n"
        "<url><loc>https://www.example.org/a</loc><lastmod>2024-01-01</lastmod></url>\n"
        "</urlset>\n"
    )


ENCODED_URLS = ["https://www.example.org/café", "https://www.example.org/a"]


@pytest.mark.parametrize(
    ("body", "label"),
    [
        (_document("UTF-8").encode("utf-8"), "utf-8 declared"),
        (_document(None).encode("utf-8"), "no declaration"),
        (b'<?xml version="1.0"?>\n' + _document(None).encode("utf-8"), "declaration without encoding"),
        (codecs.BOM_UTF8 + _document("UTF-8").encode("utf-8"), "utf-8 BOM"),
        (codecs.BOM_UTF8 + _document(None).encode("utf-8"), "utf-8 BOM, no declaration"),
        (_document("UTF-16").encode("utf-16-le").join([codecs.BOM_UTF16_LE, b""]), "utf-16-le BOM"),
        (_document("UTF-16").encode("utf-16-be").join([codecs.BOM_UTF16_BE, b""]), "utf-16-be BOM"),
        (codecs.BOM_UTF16_LE + _document(None).encode("utf-16-le"), "utf-16-le BOM, no declaration"),
        (_document(None).encode("utf-16-le"), "utf-16-le, no BOM, no declaration"),
        (_document(None).encode("utf-16-be"), "utf-16-be, no BOM, no declaration"),
        # libxml2's push parser stops at a UTF-32 BOM, which fromstring reads
        (codecs.BOM_UTF32_LE + _document("UTF-32").encode("utf-32-le"), "utf-32-le BOM"),
        (codecs.BOM_UTF32_BE + _document("UTF-32").encode("utf-32-be"), "utf-32-be BOM"),
        (codecs.BOM_UTF32_LE + _document(None).encode("utf-32-le"), "utf-32-le BOM, no declaration"),
        (_document(None).encode("utf-32-be"), "utf-32-be, no BOM, no declaration"),
        # whitespace before the "<" of UTF-16/32 without a mark: "not a sitemap"
        (("\n " + _document(None)).encode("utf-16-le"), "utf-16-le, no BOM, whitespace"),
        (("\r\n" + _document(None)).encode("utf-16-be"), "utf-16-be, no BOM, whitespace"),
        (("\n" + _document(None)).encode("utf-32-le"), "utf-32-le, no BOM, whitespace"),
        # whitespace after the mark hid the encoding from libxml2 once the mark was dropped
        (codecs.BOM_UTF32_LE + ("\n " + _document(None)).encode("utf-32-le"), "utf-32-le BOM, whitespace"),
        (codecs.BOM_UTF32_BE + ("\r\n\t" + _document(None)).encode("utf-32-be"), "utf-32-be BOM, whitespace"),
        (_document("ISO-8859-1").encode("latin-1"), "iso-8859-1 declared"),
        (_document("windows-1252").encode("cp1252"), "windows-1252 declared"),
        (_document("utf-8").replace('"utf-8"', "'utf-8'").replace('version="1.0"', "version='1.0'").encode(), "quotes"),
    ],
)
def test_encodings_are_honoured(body: bytes, label: str) -> None:
    assert summary(body) == ("xml_urlset", None, ENCODED_URLS), label


def test_gzip_utf16_document() -> None:
    body = gzip.compress(codecs.BOM_UTF16_LE + _document("UTF-16").encode("utf-16-le"))
    assert summary(body) == ("xml_urlset", None, ENCODED_URLS)


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-32-le"])
def test_a_wide_document_cut_off_keeps_its_complete_entries_and_is_truncated(encoding: str) -> None:
    body = _document(None).encode(encoding)
    last_end = body.rindex("</url>".encode(encoding))
    cut = body[: last_end + len("</u".encode(encoding))]
    assert summary(cut) == ("xml_urlset", "truncated", ENCODED_URLS[:1])


def test_non_ascii_sjis_document() -> None:
    document = _document("Shift_JIS").replace("café", "日本語")
    assert summary(document.encode("shift_jis")) == (
        "xml_urlset",
        None,
        ["https://www.example.org/日本語", "https://www.example.org/a"],
    )


# -- safety ---------------------------------------------------------------------------------


def test_external_entities_are_never_resolved(tmp_path: object) -> None:
    body = (
        b'<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY xxe SYSTEM "file:///etc/passwd">'
        b'<!ENTITY remote SYSTEM "http://127.0.0.1:9/x">]>'
        b"<urlset><url><loc>https://www.example.org/&xxe;</loc></url>"
        b"<url><loc>https://www.example.org/&remote;</loc></url>"
        b"<url><loc>https://www.example.org/ok</loc></url></urlset>"
    )
    result = parse_sitemap(body, "https://www.example.org/s.xml")
    assert "https://www.example.org/ok" in [page.url for page in result.pages]
    assert all("root:" not in page.url for page in result.pages)


def test_a_declared_entity_never_cuts_a_value() -> None:
    # lxml's .text stops at a reference it keeps unexpanded: the page was /a (its URL cut)
    # and /b (a URL of the reference alone, then resolved relative)
    body = (
        b'<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY e "zz"><!ENTITY c "(c) 2024">]>'
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
        b'xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">'
        b"<url><loc>https://www.example.org/a&e;b</loc></url>"
        b"<url><loc>&e;</loc></url>"
        b"<url><loc>https://www.example.org/ok</loc><lastmod>2024-01-0&e;</lastmod>"
        b"<image:image><image:loc>https://www.example.org/i.png</image:loc>"
        b"<image:caption>Photo &c; by us</image:caption></image:image></url></urlset>"
    )
    result = parse_sitemap(body, "https://www.example.org/s.xml")
    assert (result.kind, result.error) == ("xml_urlset", None)
    assert [page.url for page in result.pages] == ["https://www.example.org/ok"]  # the URLs it names are unknown
    page = result.pages[0]
    assert page.last_modified is None  # "2024-01-0&e;", not a date
    assert page.images[0].caption == "Photo &c; by us"  # as written, not expanded


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-16-be", "utf-32"])
@pytest.mark.parametrize(
    "doctype",
    [
        '<!DOCTYPE urlset SYSTEM "http://127.0.0.1:9/d.dtd">',
        '<!DOCTYPE urlset PUBLIC "-//X//Y" "http://127.0.0.1:9/d">',
        "<!--" + "x" * 100_000 + '--><!DOCTYPE urlset SYSTEM "http://127.0.0.1:9/d.dtd">',  # past the first chunk
    ],
    ids=["system", "public", "late"],
)
def test_an_entity_only_an_external_dtd_could_declare_never_cuts_a_url(doctype: str, encoding: str) -> None:
    # libxml2 keeps such a reference with no error (the DTD that might declare it is never
    # loaded): the page was /a, the index child /s, URLs the sitemap never named
    declaration = f'<?xml version="1.0" encoding="{encoding.upper()}"?>'
    urlset_text = (
        declaration + doctype + '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        "<url><loc>https://www.example.org/a&x;b</loc></url>"
        "<url><loc>https://www.example.org/ok</loc><lastmod>2024-05-01</lastmod></url></urlset>"
    )
    result = parse_sitemap(urlset_text.encode(encoding), "https://www.example.org/s.xml")
    assert (result.kind, result.error) == ("xml_urlset", None)
    assert [(page.url, page.last_modified) for page in result.pages] == [("https://www.example.org/ok", "2024-05-01")]
    index_text = (
        declaration
        + doctype.replace("urlset", "sitemapindex")
        + '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        "<sitemap><loc>https://www.example.org/s&x;2.xml</loc></sitemap>"
        "<sitemap><loc>https://www.example.org/ok.xml</loc></sitemap></sitemapindex>"
    )
    result = parse_sitemap(index_text.encode(encoding), "https://www.example.org/index.xml")
    assert result.sub_sitemaps == ["https://www.example.org/ok.xml"]


def test_a_root_looked_for_past_a_megabyte_is_said_so() -> None:
    body = (
        b'<?xml version="1.0"?><!--' + b"x" * (1 << 20) + b"--><urlset><url><loc>https://e.test/a</loc></url></urlset>"
    )
    result = parse_sitemap(body, "https://www.example.org/s.xml")
    assert (result.kind, result.error) == ("invalid", "parse error")
    reader = SitemapReader(body, "https://www.example.org/s.xml")
    assert reader.detail == "no root element in the first 1 MiB"


def test_entity_expansion_is_bounded() -> None:
    lol = b'<!ENTITY lol0 "lol">' + b"".join(
        b'<!ENTITY lol%d "%s">' % (i, b"".join(b"&lol%d;" % (i - 1) for _ in range(10))) for i in range(1, 10)
    )
    body = (
        b'<?xml version="1.0"?><!DOCTYPE urlset [' + lol + b"]><urlset><url><loc>https://www.example.org/&lol9;"
        b"</loc></url><url><loc>https://www.example.org/ok</loc></url></urlset>"
    )
    result = parse_sitemap(body, "https://www.example.org/s.xml")
    assert result.kind == "xml_urlset"
    assert all(len(page.url) < 1000 for page in result.pages)
