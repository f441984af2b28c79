"""Plain-text sitemaps: one absolute URL per line, every other line ignored."""

from __future__ import annotations

import codecs
import gzip

import pytest

from sitemap_crawl.items import SitemapPage
from sitemap_crawl.parsing import Limits, SitemapReader, parse_sitemap

TEXT_URL = "https://www.example.org/sitemap.txt"


def text_urls(body: bytes, url: str = TEXT_URL) -> list[str]:
    result = parse_sitemap(body, url)
    assert (result.kind, result.error) == ("text", None)
    assert result.sub_sitemaps == []
    assert all(page.sitemap_url == url for page in result.pages)
    return [page.url for page in result.pages]


def test_one_url_per_line() -> None:
    body = b"https://www.example.org/a\nhttps://www.example.org/b\nhttp://other.example.com/c?d=1&e=2\n"
    assert text_urls(body) == [
        "https://www.example.org/a",
        "https://www.example.org/b",
        "http://other.example.com/c?d=1&e=2",
    ]


def test_a_byte_that_is_not_utf8_is_kept_percent_encoded() -> None:
    # a Latin-1 file: caf\xe9 became caf\ufffd, a URL the server does not have
    body = b"https://www.example.org/caf\xe9?q=\xe9t\xe9\nhttps://www.example.org/caf\xc3\xa9\n"
    assert text_urls(body) == ["https://www.example.org/caf%E9?q=%E9t%E9", "https://www.example.org/caf\u00e9"]


def test_pages_have_default_fields() -> None:
    (page,) = parse_sitemap(b"https://www.example.org/a\n", TEXT_URL).pages
    assert page == SitemapPage(url="https://www.example.org/a", sitemap_url=TEXT_URL)
    assert (page.priority, page.last_modified, page.change_frequency, page.news) == (0.5, None, None, None)


@pytest.mark.parametrize("before", [b"\xc2\xa0", b"\x1c", b"\xe2\x80\x8b"], ids=["nbsp", "control", "zero-width"])
def test_a_byte_that_is_not_utf8_after_a_unicode_space_is_kept_percent_encoded(before: bytes) -> None:
    # the line was decoded with "replace" to strip the space: caf\xe9 and caf\xe8 were one page, caf\ufffd
    body = before + b"https://www.example.org/caf\xe9\n" + before + b"https://www.example.org/caf\xe8\n"
    assert text_urls(body) == ["https://www.example.org/caf%E9", "https://www.example.org/caf%E8"]


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"], ids=["LF", "CRLF", "CR"])
def test_line_breaks(newline: bytes) -> None:
    body = newline.join([b"https://www.example.org/a", b"https://www.example.org/b", b"https://www.example.org/c"])
    assert text_urls(body) == ["https://www.example.org/a", "https://www.example.org/b", "https://www.example.org/c"]
    assert text_urls(body + newline) == text_urls(body)


def test_mixed_line_breaks_and_blank_lines() -> None:
    body = b"\n\nhttps://www.example.org/a\r\n\r\n\rhttps://www.example.org/b\r\r   \n\t\nhttps://www.example.org/c"
    assert text_urls(body) == ["https://www.example.org/a", "https://www.example.org/b", "https://www.example.org/c"]


def test_surrounding_whitespace_is_ignored() -> None:
    assert text_urls(b"   https://www.example.org/a   \n\thttps://www.example.org/b\t\n") == [
        "https://www.example.org/a",
        "https://www.example.org/b",
    ]


def test_capitalised_scheme() -> None:
    body = b"https://0x.example/a\nHttps://0x.example/api\nHTTP://0x.example/b\n"
    assert text_urls(body) == ["https://0x.example/a", "https://0x.example/api", "http://0x.example/b"]


def test_non_url_lines_are_ignored() -> None:
    body = (
        b"# a comment\n"
        b"https://www.example.org/a\n"
        b"/relative/path\n"
        b"www.example.org/no-scheme\n"
        b"ftp://www.example.org/file\n"
        b"mailto:someone@example.org\n"
        b"http\n"
        b"httpfoo\n"
        b"https-proxy-settings\n"
        b"http:/one-slash\n"
        b"Sitemap: https://www.example.org/robots-style\n"
        b"<url><loc>https://www.example.org/markup</loc></url>\n"
        b"https://www.example.org/b\n"
    )
    assert text_urls(body) == ["https://www.example.org/a", "https://www.example.org/b"]


def test_a_space_or_tab_inside_a_line_is_part_of_its_url() -> None:
    # the line was dropped without a word, while the same URL in a <loc> is kept (%20, tab
    # removed, as w3lib and browsers read it) and the audit counted it a page (unescaped-url)
    body = b"https://www.example.org/with space\nhttps://www.example.org/t\tu\n  https://www.example.org/a \n"
    assert text_urls(body) == [
        "https://www.example.org/with%20space",
        "https://www.example.org/tu",
        "https://www.example.org/a",
    ]


def test_duplicates_removed_first_kept_in_order() -> None:
    body = (
        b"https://www.example.org/b\nhttps://www.example.org/a\nhttps://www.example.org/b\nhttps://www.example.org/c\n"
    )
    assert text_urls(body) == ["https://www.example.org/b", "https://www.example.org/a", "https://www.example.org/c"]


def test_urls_on_several_hosts_are_kept() -> None:
    body = b"https://a.example.org/\nhttps://b.example.org/x\nhttp://c.example.net/\n"
    assert text_urls(body) == ["https://a.example.org/", "https://b.example.org/x", "http://c.example.net/"]


def test_utf8_urls() -> None:
    assert text_urls("https://www.example.org/日本/é\n".encode()) == ["https://www.example.org/日本/é"]


def test_utf8_bom_does_not_hide_the_first_url() -> None:
    body = codecs.BOM_UTF8 + b"https://www.example.org/a\nhttps://www.example.org/b\n"
    assert text_urls(body) == ["https://www.example.org/a", "https://www.example.org/b"]


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_text_sitemap_with_bom(encoding: str) -> None:
    text = "\ufeffhttps://www.example.org/a\r\nhttps://www.example.org/é\r\n"
    assert text_urls(text.encode(encoding)) == ["https://www.example.org/a", "https://www.example.org/é"]


def test_xml_inside_a_txt_url_is_xml() -> None:
    body = (
        b'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        b"<url><loc>https://www.example.org/a</loc></url>\n</urlset>\n"
    )
    result = parse_sitemap(body, TEXT_URL)
    assert (result.kind, [page.url for page in result.pages]) == ("xml_urlset", ["https://www.example.org/a"])


def test_text_at_an_xml_url_is_text() -> None:
    result = parse_sitemap(b"https://www.example.org/a\n", "https://www.example.org/sitemap.xml")
    assert (result.kind, [page.url for page in result.pages]) == ("text", ["https://www.example.org/a"])


@pytest.mark.parametrize(
    "body",
    [
        b"hello world\n",
        b"User-agent: *\nDisallow: /\n",
        b"/only/relative\n/paths\n",
        b'{"urls": ["https://www.example.org/a"]}',
    ],
)
def test_text_without_any_url_is_not_a_sitemap(body: bytes) -> None:
    reader = SitemapReader(body, TEXT_URL)
    assert reader.kind == "text"
    assert list(reader) == []
    assert (reader.kind, reader.error) == ("invalid", "not a sitemap")


def test_gzip_text_sitemap() -> None:
    assert text_urls(gzip.compress(b"https://www.example.org/a\nhttps://www.example.org/b\n"), TEXT_URL + ".gz") == [
        "https://www.example.org/a",
        "https://www.example.org/b",
    ]


def test_overlong_line_is_skipped_and_reported() -> None:
    body = b"https://www.example.org/a\nhttps://www.example.org/" + b"x" * 5000 + b"\nhttps://www.example.org/b\n"
    result = parse_sitemap(body, TEXT_URL, limits=Limits(max_line_length=1000))
    assert [page.url for page in result.pages] == ["https://www.example.org/a", "https://www.example.org/b"]
    assert result.kind == "text"
    assert result.error == "parse error"


def test_text_sitemap_over_the_size_cap_keeps_complete_lines() -> None:
    lines = [f"https://www.example.org/page/{i}".encode() for i in range(100)]
    body = b"\n".join(lines) + b"\n"
    cap = len(b"\n".join(lines[:10])) + 1 + 5  # ten full lines and part of the eleventh
    result = parse_sitemap(body, TEXT_URL, limits=Limits(max_size=cap))
    assert result.kind == "text"
    assert result.error == "size limit"
    assert [page.url for page in result.pages] == [line.decode() for line in lines[:10]]


def test_large_text_sitemap() -> None:
    body = b"".join(b"https://www.example.org/p/%d\n" % i for i in range(20_000))
    urls = text_urls(body)
    assert len(urls) == 20_000
    assert urls[-1] == "https://www.example.org/p/19999"


@pytest.mark.parametrize(
    "line",
    [
        "https://.shop.example/item",  # empty first label
        "https://shop..example/item",  # empty label inside
        "http:///item",  # no host at all
        "https://shop example/item",
    ],
)
def test_a_line_whose_host_cannot_exist_is_not_a_page(line: str) -> None:
    body = f"https://shop.example/first\n{line}\nhttps://shop.example/last\n".encode()
    assert text_urls(body) == ["https://shop.example/first", "https://shop.example/last"]


@pytest.mark.parametrize(
    "url",
    [
        "https://shop.example./item",  # a fully qualified name ends with a dot
        "http://127.0.0.1:8080/item",
        "http://[2001:db8::7]:8080/item",
        "http://intranet_box:81/item",
        "https://user:secret@shop.example:8443/item?q=1#top",
        "https://m\u00fcnchen.example/stra\u00dfe",
    ],
)
def test_hosts_that_can_exist_are_kept(url: str) -> None:
    assert text_urls(f"{url}\n".encode()) == [url.replace(" ", "%20")]


def test_control_and_unicode_space_characters_in_a_line_are_percent_encoded_utf8() -> None:
    body = "https://shop.example/c/1\x01x\nhttps://shop.example/c/2\x85x\nhttps://shop.example/c/3\ufffex\x02\n"
    assert text_urls(body.encode()) == [
        "https://shop.example/c/1%01x",
        "https://shop.example/c/2%C2%85x",
        "https://shop.example/c/3%EF%BF%BEx",  # the control character at the end is dropped
    ]


def test_a_unicode_space_or_control_character_before_a_line_is_dropped() -> None:
    # as around a <loc>: the line is the URL after it (it was lost)
    body = "\u00a0https://shop.example/a\n\u3000https://shop.example/b\u3000\n\x01https://shop.example/c\n"
    assert text_urls(body.encode()) == ["https://shop.example/a", "https://shop.example/b", "https://shop.example/c"]


def test_a_zero_width_space_before_a_line_is_dropped() -> None:
    assert text_urls("\u200bhttps://shop.example/a\n".encode()) == ["https://shop.example/a"]
