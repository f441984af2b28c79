"""robots.txt: the ``Sitemap:`` lines in every spelling real files use (read with is_robots=True)."""

from __future__ import annotations

import codecs
import gzip
from urllib.parse import urljoin

import pytest

from sitemap_crawl.items import SitemapRef
from sitemap_crawl.parsing import Limits, SitemapReader, parse_sitemap
from sitemap_crawl.parsing.robots import declared_sitemap_url, sitemap_urls_from_robots

ROBOTS_URL = "https://www.example.org/robots.txt"


def sitemaps(body: bytes, url: str = ROBOTS_URL) -> list[str]:
    result = parse_sitemap(body, url, is_robots=True)
    assert result.kind == "robots_txt", (result.kind, result.error)
    assert result.error is None
    assert result.pages == []
    return result.sub_sitemaps


@pytest.mark.parametrize(
    "line",
    [
        b"Sitemap: https://www.example.org/s.xml",
        b"sitemap: https://www.example.org/s.xml",
        b"SITEMAP: https://www.example.org/s.xml",
        b"SiteMap: https://www.example.org/s.xml",
        b"Sitemaps: https://www.example.org/s.xml",
        b"Sitemap : https://www.example.org/s.xml",
        b"Sitemap\t:\thttps://www.example.org/s.xml",
        b"Sitemap:https://www.example.org/s.xml",
        b"Sitemap:  https://www.example.org/s.xml",
        b"Sitemap: https://www.example.org/s.xml   ",
        b"  Sitemap: https://www.example.org/s.xml",
        b"\tSitemap: https://www.example.org/s.xml",
        b"Sitemap: https://www.example.org/s.xml # the main one",
        b"Sitemap: https://www.example.org/s.xml#comment without space",
        b"Sitemap: \xc2\xa0https://www.example.org/s.xml",  # NBSP before the URL
        b"Sitemap: \xc3\x82\xc2\xa0https://www.example.org/s.xml",  # mojibake NBSP (double-encoded UTF-8)
        b"Sitemap: /s.xml",
        b"Sitemap: s.xml",
        b"Sitemap: HTTPS://www.example.org/s.xml",
        b"Site-map: https://www.example.org/s.xml",  # the hyphenated key Google's parser accepts too
        b"site-map:https://www.example.org/s.xml",
        b"SITE-MAP : https://www.example.org/s.xml",
    ],
)
def test_every_spelling_of_the_directive(line: bytes) -> None:
    body = b"User-agent: *\nDisallow: /private/\n" + line + b"\n"
    assert sitemaps(body) == ["https://www.example.org/s.xml"]


def test_directive_without_trailing_newline() -> None:
    assert sitemaps(b"User-agent: *\nDisallow:\n\nSitemap: https://www.example.org/s.xml") == [
        "https://www.example.org/s.xml"
    ]


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"], ids=["LF", "CRLF", "CR"])
def test_line_breaks(newline: bytes) -> None:
    body = newline.join(
        [
            b"User-agent: *",
            b"Disallow: /x",
            b"Sitemap: https://www.example.org/a.xml",
            b"Sitemap: https://www.example.org/b.xml",
            b"",
        ]
    )
    assert sitemaps(body) == ["https://www.example.org/a.xml", "https://www.example.org/b.xml"]


def test_mixed_bare_cr_and_inline_comments() -> None:
    # help.walmart.com style: "Sitemap: URL  # ADDED BY HMS<CR>  # CUSTOM<LF>"
    body = (
        b"User-agent: * # everyone\r  # CUSTOM\n"
        b"Sitemap: https://www.example.org/a.xml  # ADDED BY HMS\r  # CUSTOM\n"
        b"Sitemap: http://www.example.org/a.xml\r"
        b"Disallow: /cgi-bin/\n"
    )
    assert sitemaps(body) == ["https://www.example.org/a.xml", "http://www.example.org/a.xml"]


@pytest.mark.parametrize(
    ("encoded", "label"),
    [
        (codecs.BOM_UTF8 + b"Sitemap: https://www.example.org/s.xml\r\n", "utf-8 BOM"),
        (codecs.BOM_UTF16_LE + "Sitemap: https://www.example.org/s.xml\r\n".encode("utf-16-le"), "utf-16-le BOM"),
        (codecs.BOM_UTF16_BE + "Sitemap: https://www.example.org/s.xml\r\n".encode("utf-16-be"), "utf-16-be BOM"),
        ("Sitemap: https://www.example.org/s.xml\n".encode("utf-32"), "utf-32 BOM"),
        ("ï»¿Sitemap: https://www.example.org/s.xml\n".encode(), "double-encoded BOM"),
        (b"\n\n   \nSitemap: https://www.example.org/s.xml\n", "leading blank lines"),
    ],
)
def test_boms_and_encodings(encoded: bytes, label: str) -> None:
    assert sitemaps(encoded) == ["https://www.example.org/s.xml"], label


def test_utf16_with_bom_and_many_lines() -> None:
    text = "User-agent: *\r\nDisallow: /a\r\n" + "".join(
        f"Sitemap: https://www.example.org/s{i}.xml\r\n" for i in range(50)
    )
    expected = [f"https://www.example.org/s{i}.xml" for i in range(50)]
    assert sitemaps(codecs.BOM_UTF16_LE + text.encode("utf-16-le")) == expected
    assert sitemaps(codecs.BOM_UTF16_BE + text.encode("utf-16-be")) == expected


def test_relative_values_are_resolved_against_the_robots_url() -> None:
    body = (
        b"Sitemap: /sitemap_index.xml\nSitemap: wp-sitemap.xml\nSitemap: ../up.xml\nSitemap: //cdn.example.net/s.xml\n"
    )
    assert sitemaps(body, "https://www.example.org/sub/robots.txt") == [
        "https://www.example.org/sitemap_index.xml",
        "https://www.example.org/sub/wp-sitemap.xml",
        "https://www.example.org/up.xml",
        "https://cdn.example.net/s.xml",
    ]


def test_a_scheme_less_host_gets_the_scheme_of_robots_txt() -> None:
    assert sitemaps(b"Sitemap: www.other.example.com/sitemap.xml\n", "http://www.example.org/robots.txt") == [
        "http://www.other.example.com/sitemap.xml"
    ]


@pytest.mark.parametrize(
    ("value", "url"),
    [
        ("www.example.net/s.xml", "https://www.example.net/s.xml"),
        ("example.org/s.xml", "https://example.org/s.xml"),  # robots.txt's own site
        ("cdn.example.org:8080/s.xml", "https://cdn.example.org:8080/s.xml"),
        ("sitemaps.example.net/s.xml", "https://sitemaps.example.net/s.xml"),  # three labels
        # a file or script name before a slash is a path (index.cfm was fetched as a host)
        ("index.cfm/sitemap.xml", "https://shop.example.org/sub/index.cfm/sitemap.xml"),
        ("app.py/sitemap.xml", "https://shop.example.org/sub/app.py/sitemap.xml"),
        ("static.files/sitemap.xml", "https://shop.example.org/sub/static.files/sitemap.xml"),
        ("feeds.v2.xml/all", "https://shop.example.org/sub/feeds.v2.xml/all"),
    ],
)
def test_a_scheme_less_value_is_a_host_only_when_it_looks_like_one(value: str, url: str) -> None:
    assert sitemaps(f"Sitemap: {value}\n".encode(), "https://shop.example.org/sub/robots.txt") == [url]


@pytest.mark.parametrize(
    ("robots_url", "value", "url"),
    [
        ("http://127.0.0.1:18273/robots.txt", "127.0.0.1:18273/a.xml", "http://127.0.0.1:18273/a.xml"),
        ("http://127.0.0.1:18273/robots.txt", "127.0.0.1/a.xml", "http://127.0.0.1/a.xml"),
        ("https://[::1]:8443/robots.txt", "[::1]:8443/a.xml", "https://[::1]:8443/a.xml"),
        ("http://localhost:8000/robots.txt", "LOCALHOST:8000/a.xml", "http://LOCALHOST:8000/a.xml"),
        # another address, or a name with a port, is a host too (a path never starts so)
        ("http://127.0.0.1:18273/robots.txt", "10.0.0.1/a.xml", "http://10.0.0.1/a.xml"),
        ("http://127.0.0.1:18273/robots.txt", "127.0.0.2:18273/a.xml", "http://127.0.0.2:18273/a.xml"),
        ("http://127.0.0.1:18273/robots.txt", "localhost:18273/j.xml", "http://localhost:18273/j.xml"),
        ("https://www.example.org/robots.txt", "[2001:db8::1]/a.xml", "https://[2001:db8::1]/a.xml"),
    ],
)
def test_a_scheme_less_value_naming_robots_txts_own_host_is_that_host(robots_url: str, value: str, url: str) -> None:
    assert sitemaps(f"Sitemap: {value}\n".encode(), robots_url) == [url]


def test_a_url_written_raw_and_percent_encoded_is_one_sitemap() -> None:
    # Scrapy requests café.xml as caf%C3%A9.xml: the second line named the same sitemap
    body = "Sitemap: https://www.example.org/caf\u00e9.xml\nSitemap: https://www.example.org/caf%C3%A9.xml\n".encode()
    assert sitemaps(body) == ["https://www.example.org/caf\u00e9.xml"]


def test_duplicates_are_ignored_and_file_order_is_kept() -> None:
    body = (
        b"Sitemap: https://www.example.org/b.xml\n"
        b"sitemap: https://www.example.org/a.xml\n"
        b"SITEMAP: https://www.example.org/b.xml\n"
        b"Sitemap: /a.xml\n"
        b"Sitemap: https://www.example.org/c.xml\n"
    )
    assert sitemaps(body) == [
        "https://www.example.org/b.xml",
        "https://www.example.org/a.xml",
        "https://www.example.org/c.xml",
    ]


def test_sitemap_lines_anywhere_in_the_file() -> None:
    body = (
        b"Sitemap: https://www.example.org/first.xml\n"
        b"User-agent: Googlebot\nDisallow: /nogoogle\n"
        b"Sitemap: https://www.example.org/middle.xml\n"
        b"User-agent: *\nDisallow: /\n\n"
        b"Sitemap: https://www.example.org/last.xml\n"
        b"Disallow: /after\n"
    )
    assert sitemaps(body) == [
        "https://www.example.org/first.xml",
        "https://www.example.org/middle.xml",
        "https://www.example.org/last.xml",
    ]


def test_empty_directive_takes_the_url_on_the_next_lines() -> None:
    body = (
        b"User-agent: *\nDisallow: /tmp\n\n"
        b"Sitemap: \n"
        b"https://www.example.org/next.xml\n"
        b"https://www.example.org/next2.xml\n"
        b"User-agent: bot\n"
        b"https://www.example.org/not-a-sitemap.xml\n"
    )
    assert sitemaps(body) == ["https://www.example.org/next.xml", "https://www.example.org/next2.xml"]


def test_sitemaps_header_followed_by_bare_urls() -> None:
    body = (
        b"User-agent: *\nDisallow: /yazit/\n\nSitemaps:\nhttps://www.example.org/h.xml\nhttps://www.example.org/s.xml\n"
    )
    assert sitemaps(body) == ["https://www.example.org/h.xml", "https://www.example.org/s.xml"]


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"\n\n",
        b"User-agent: *\nDisallow: /\n",
        b"User-agent: *\nDisallow: /sitemap.xml\nAllow: /sitemap-public.xml\n",
        b"# Sitemap: https://www.example.org/commented-out.xml\n",
        b"Disallow: /x # Sitemap: https://www.example.org/in-a-comment.xml\n",
        b"Sitemap-index: https://www.example.org/no.xml\nSitemapx: https://www.example.org/no2.xml\n",
        b"https://www.example.org/bare-line-without-directive.xml\n",
        b"Sitemap:\n\nUser-agent: *\n",
        codecs.BOM_UTF8 + b"User-agent: *\r\nDisallow: /w/\r\n",
    ],
)
def test_no_sitemap_declared(body: bytes) -> None:
    assert sitemaps(body) == []


def test_query_strings_are_kept() -> None:
    body = b"SITEMAP: https://www.example.org/arc/outboundfeeds/sitemap-index/?outputType=xml\n"
    assert sitemaps(body) == ["https://www.example.org/arc/outboundfeeds/sitemap-index/?outputType=xml"]


def test_entries_are_sitemap_refs_and_streamed_in_order() -> None:
    reader = SitemapReader(b"Sitemap: https://www.example.org/a.xml\nSitemap: /b.xml\n", ROBOTS_URL, is_robots=True)
    assert reader.kind == "robots_txt"
    entries = list(reader)
    assert all(isinstance(entry, SitemapRef) for entry in entries)
    assert [entry.url for entry in entries] == ["https://www.example.org/a.xml", "https://www.example.org/b.xml"]
    assert reader.error is None


def test_gzip_robots_txt_is_decompressed() -> None:
    assert sitemaps(gzip.compress(b"User-agent: *\nSitemap: https://www.example.org/gz.xml\n")) == [
        "https://www.example.org/gz.xml"
    ]


def test_many_sitemap_lines() -> None:
    body = b"".join(b"Sitemap: https://www.example.org/s-%d.xml\r\n" % i for i in range(1500))
    assert sitemaps(body) == [f"https://www.example.org/s-{i}.xml" for i in range(1500)]


def test_more_sitemaps_than_the_index_limit() -> None:
    body = b"".join(b"Sitemap: https://www.example.org/s-%d.xml\n" % i for i in range(10))
    result = parse_sitemap(body, ROBOTS_URL, is_robots=True, limits=Limits(max_index_children=3))
    assert result.sub_sitemaps == [f"https://www.example.org/s-{i}.xml" for i in range(3)]
    assert result.error == "size limit"


@pytest.mark.parametrize(
    "body",
    [
        b"<!DOCTYPE html><html><head><title>403 Forbidden</title></head><body>403</body></html>",
        b"<html>\r\n<head><title>403 Forbidden</title></head>\r\n<body>\r\n<center><h1>403 Forbidden</h1></center>"
        b"\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n",
        b"\n\n  <!doctype html>\n<html lang=en><body><div id=root></div></body></html>",
        codecs.BOM_UTF8 + b"<!DOCTYPE html><html></html>",
        b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"></urlset>',
    ],
)
def test_html_served_as_robots_txt_is_invalid(body: bytes) -> None:
    reader = SitemapReader(body, ROBOTS_URL, is_robots=True)
    assert list(reader) == []
    assert reader.kind == "invalid"
    assert reader.error == "not a sitemap"


def test_html_mentioning_sitemap_is_still_invalid() -> None:
    body = b"<html><body>\nSitemap: https://www.example.org/s.xml\n</body></html>"
    result = parse_sitemap(body, ROBOTS_URL, is_robots=True)
    assert (result.kind, result.error, result.sub_sitemaps) == ("invalid", "not a sitemap", [])


def test_pure_helper_matches_the_reader() -> None:
    text = "Sitemap: /a.xml\r\nsitemap:https://www.example.org/b.xml # c\rSitemaps:\nhttps://www.example.org/c.xml\n"
    assert sitemap_urls_from_robots(text, ROBOTS_URL) == [
        "https://www.example.org/a.xml",
        "https://www.example.org/b.xml",
        "https://www.example.org/c.xml",
    ]
    assert sitemaps(text.encode()) == sitemap_urls_from_robots(text, ROBOTS_URL)


def test_a_url_with_a_byte_that_is_not_utf8_is_skipped() -> None:
    # 0xfe is no UTF-8 byte: no server has a URL with U+FFFD in it, so the line gives nothing
    body = (
        b"User-agent: *\n"
        b"Sitemap: https://www.example.org/caf\xfe-menu.xml\n"
        b"Sitemap: https://www.example.org/drinks.xml\n"
    )
    assert sitemaps(body) == ["https://www.example.org/drinks.xml"]


def test_a_real_replacement_character_is_not_mistaken_for_a_bad_byte() -> None:
    body = "Sitemap: https://www.example.org/\ufffd.xml\nSitemap: https://www.example.org/caf\u00e9.xml\n"
    assert sitemaps(body.encode("utf-8")) == [
        "https://www.example.org/\ufffd.xml",
        "https://www.example.org/caf\u00e9.xml",
    ]


def test_utf16_robots_with_a_broken_code_unit_still_reads_the_good_lines() -> None:
    good = "Sitemap: https://www.example.org/a.xml\n".encode("utf-16-le")
    body = codecs.BOM_UTF16_LE + good + b"\x00\xd8" + "\nSitemap: https://www.example.org/b.xml\n".encode("utf-16-le")
    assert sitemaps(body) == ["https://www.example.org/a.xml", "https://www.example.org/b.xml"]


def test_a_binary_robots_txt_is_not_a_robots_txt() -> None:
    # bytes that are not text (a misconfigured server): not a robots.txt that names no sitemap
    body = bytes((i * 97 + 13) % 256 for i in range(4096))
    result = parse_sitemap(body, ROBOTS_URL, is_robots=True)
    assert (result.kind, result.error, result.sub_sitemaps) == ("invalid", "not a sitemap", [])


@pytest.mark.parametrize("start", [b"\x00\x01\x00\x00", b"\x01\x00\x00\x00", b"\x00\x00\x01\x00"])
def test_binary_bytes_that_start_with_a_nul_are_not_utf16_text(start: bytes) -> None:
    # (a TrueType font: 00 01 00 00) read as UTF-16 without a BOM, its bytes were text: a
    # robots.txt naming no sitemap
    body = start + bytes((i * 97 + 13) % 256 for i in range(4096))
    result = parse_sitemap(body, ROBOTS_URL, is_robots=True)
    assert (result.kind, result.error, result.sub_sitemaps) == ("invalid", "not a sitemap", [])


@pytest.mark.parametrize("first_line", ["", "# caf\u00e9\n", "\u00e9\n", "#\u65e5\u672c\n", "\u00a0\n", "\t\n", "\r\n"])
@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_without_a_bom_is_read_from_its_first_character(first_line: str, encoding: str) -> None:
    # (an ASCII-only rule for the first two characters dropped these: a regression, mended)
    body = (first_line + "Sitemap: https://www.example.org/a.xml\n").encode(encoding)
    assert sitemaps(body) == ["https://www.example.org/a.xml"]
    assert sitemaps(body[:4]) == []


def test_a_robots_txt_with_a_few_odd_bytes_is_still_text() -> None:
    body = b"# caf\xe9 \xe0 la carte\nUser-agent: *\nDisallow: /tmp\nSitemap: https://www.example.org/s.xml\n"
    assert sitemaps(body) == ["https://www.example.org/s.xml"]


def test_sitemap_lines_no_request_can_be_made_of_are_skipped() -> None:
    text = (
        "Sitemap: https://[broken/a.xml\nSitemap: https://example.com:99999/b.xml\nSitemap: [c/d.xml\nSitemap: /e.xml\n"
    )
    assert sitemap_urls_from_robots(text, ROBOTS_URL) == [
        urljoin(ROBOTS_URL, "[c/d.xml"),
        urljoin(ROBOTS_URL, "/e.xml"),
    ]


def test_value_with_a_space_is_kept_whole_and_escaped() -> None:
    # Scrapy and Protego keep the whole value; it was cut at the space (/my, a 404)
    body = (
        b"Sitemap: https://www.example.org/my sitemap.xml\n"
        b"Sitemap:  /sub dir/s.xml   # a comment\n"
        b"Sitemap: https://www.example.org/a.xml#frag ment\n"
    )
    assert sitemaps(body) == [
        "https://www.example.org/my%20sitemap.xml",
        "https://www.example.org/sub%20dir/s.xml",
        "https://www.example.org/a.xml",
    ]


@pytest.mark.parametrize(
    ("value", "robots_url", "named"),
    [
        ("s.xml", "file:///data/maps/robots.txt", "file:///data/maps/s.xml"),
        ("file:///data/maps/sub/s.xml", "file:///data/maps/robots.txt", "file:///data/maps/sub/s.xml"),
        ("../s.xml", "file:///data/maps/robots.txt", None),  # outside its folder
        ("file:///etc/passwd", "file:///data/maps/robots.txt", None),
        ("file:///data/maps/s.xml", "https://example.com/robots.txt", None),  # a site's robots.txt names no file
        ("https://example.com/s.xml", "file:///data/maps/robots.txt", "https://example.com/s.xml"),
    ],
)
def test_a_local_robots_txt_names_files_of_its_folder_only(value: str, robots_url: str, named: str | None) -> None:
    assert declared_sitemap_url(value, robots_url) == named
