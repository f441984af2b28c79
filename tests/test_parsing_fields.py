"""Normalisation of single field values: dates, priority, change frequency, URLs, extension values."""

from __future__ import annotations

from urllib.parse import urljoin

import pytest
from w3lib.url import safe_url_string

from sitemap_crawl.parsing import parse_sitemap
from sitemap_crawl.parsing.fields import (
    CHANGE_FREQUENCIES,
    DEFAULT_PRIORITY,
    MAX_URL_LENGTH,
    clean_text,
    normalize_change_frequency,
    normalize_date,
    normalize_priority,
    parse_duration,
    parse_yes_no,
    resolve_url,
    split_list,
)

SITEMAP_URL = "https://www.example.org/maps/sitemap.xml"


# -- lastmod / publication dates ---------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # a date stays a date
        ("2024-05-01", "2024-05-01"),
        ("  2024-05-01\n", "2024-05-01"),
        ("20240501", "2024-05-01"),
        ("2024-W18", "2024-04-29"),  # an ISO week date is a date (it became 2024-04-29T00:00:00)
        ("2024W183", "2024-05-01"),
        # W3C reduced precision stays as written
        ("2024", "2024"),
        ("2024-05", "2024-05"),
        # the offset is kept; Z becomes +00:00
        ("2024-05-01T10:20:30+02:00", "2024-05-01T10:20:30+02:00"),
        ("2024-05-01T10:20:30-05:00", "2024-05-01T10:20:30-05:00"),
        ("2024-05-01T10:20:30Z", "2024-05-01T10:20:30+00:00"),
        ("2024-05-01T10:20Z", "2024-05-01T10:20:00+00:00"),
        ("2024-05-01T10:20:30+0200", "2024-05-01T10:20:30+02:00"),
        ("2024-05-01T10:20:30 +02:00", "2024-05-01T10:20:30+02:00"),
        ("2024-05-01T10:20:30.123Z", "2024-05-01T10:20:30.123000+00:00"),
        # no offset given: none invented
        ("2024-05-01T10:20:30", "2024-05-01T10:20:30"),
        ("2024-05-01 10:20:30", "2024-05-01T10:20:30"),
        # RFC 822 (RSS pubDate)
        ("Tue, 10 Jun 2003 04:00:00 GMT", "2003-06-10T04:00:00+00:00"),
        ("Tue, 10 Jun 2003 04:00:00 +0200", "2003-06-10T04:00:00+02:00"),
        ("10 Jun 2003 04:00:00 -0500", "2003-06-10T04:00:00-05:00"),
        # RFC 2822 "-0000": a UTC time whose local zone is unknown; the instant is UTC
        ("Sat, 03 Feb 2024 18:45:09 -0000", "2024-02-03T18:45:09+00:00"),
        ("3 Feb 2024 18:45 -0000", "2024-02-03T18:45:00+00:00"),
        # invalid: None
        ("2024-13-01", None),
        ("2024-13", None),
        ("0000-01", None),  # no year 0, as 0000-01-01 is no date
        ("0000", None),
        ("2024-00", None),
        ("2024-12", "2024-12"),
        ("2024-01", "2024-01"),
        ("2024-02-30", None),
        ("2024-05-01T25:00:00Z", None),
        ("2024-5-1", None),
        ("yesterday", None),
        ("0", None),
        ("", None),
        ("   ", None),
        (None, None),
        ("2024-05-01" * 10, None),
    ],
)
def test_normalize_date(raw: str | None, expected: str | None) -> None:
    assert normalize_date(raw) == expected


# -- priority ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("0.8", 0.8),
        (" 0.8 ", 0.8),
        ("1", 1.0),
        ("1.0", 1.0),
        ("0", 0.0),
        ("0.0", 0.0),
        (".3", 0.3),
        ("0.25", 0.25),
        # missing, invalid or out of range: 0.5
        (None, DEFAULT_PRIORITY),
        ("", DEFAULT_PRIORITY),
        ("high", DEFAULT_PRIORITY),
        ("0,8", DEFAULT_PRIORITY),
        ("1.5", DEFAULT_PRIORITY),
        ("10", DEFAULT_PRIORITY),
        ("-0.1", DEFAULT_PRIORITY),
        ("nan", DEFAULT_PRIORITY),
        ("inf", DEFAULT_PRIORITY),
        ("-inf", DEFAULT_PRIORITY),
    ],
)
def test_normalize_priority(raw: str | None, expected: float) -> None:
    value = normalize_priority(raw)
    assert isinstance(value, float)
    assert value == expected


@pytest.mark.parametrize("raw", ["-0", "-0.0", "-.0"])
def test_a_negative_zero_priority_is_zero(raw: str) -> None:
    # -0.0 is in range, but a feed wrote "-0.0"
    assert str(normalize_priority(raw)) == "0.0"


def test_default_priority_is_one_half() -> None:
    assert DEFAULT_PRIORITY == 0.5


# -- change frequency --------------------------------------------------------------------


@pytest.mark.parametrize("value", sorted(CHANGE_FREQUENCIES))
def test_every_protocol_change_frequency_is_kept(value: str) -> None:
    assert normalize_change_frequency(value) == value
    assert normalize_change_frequency(f"  {value.upper()}\n") == value


def test_change_frequencies_are_the_protocol_ones() -> None:
    assert set(CHANGE_FREQUENCIES) == {"always", "hourly", "daily", "weekly", "monthly", "yearly", "never"}


@pytest.mark.parametrize("raw", [None, "", "  ", "biweekly", "every day", "1", "week", "dailly"])
def test_unknown_change_frequency_is_none(raw: str | None) -> None:
    assert normalize_change_frequency(raw) is None


# -- URLs --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("https://www.example.org/a", "https://www.example.org/a"),
        ("  https://www.example.org/a \n", "https://www.example.org/a"),
        ("http://other.example.com/x?y=1&z=2", "http://other.example.com/x?y=1&z=2"),
        # the scheme is lowered, nothing else is touched
        ("HTTPS://www.Example.org/A", "https://www.Example.org/A"),
        ("Https://www.example.org/api", "https://www.example.org/api"),
        # relative locations are resolved against the sitemap URL
        ("/a/b", "https://www.example.org/a/b"),
        ("page.html", "https://www.example.org/maps/page.html"),
        ("../up.html", "https://www.example.org/up.html"),
        ("//cdn.example.net/x.jpg", "https://cdn.example.net/x.jpg"),
        ("?page=2", "https://www.example.org/maps/sitemap.xml?page=2"),
        # inner whitespace is percent-encoded
        ("https://www.example.org/a b", "https://www.example.org/a%20b"),
        # already-decoded characters are not decoded or escaped again
        ("https://www.example.org/?a=1&copy=2", "https://www.example.org/?a=1&copy=2"),
        ("https://www.example.org/%E6%97%A5", "https://www.example.org/%E6%97%A5"),
        ("https://www.example.org/日本", "https://www.example.org/日本"),
        # not http(s): None
        ("javascript:alert(1)", None),
        ("mailto:someone@example.org", None),
        ("ftp://ftp.example.org/file", None),
        ("", None),
        ("   ", None),
        (None, None),
    ],
)
def test_resolve_url(raw: str | None, expected: str | None) -> None:
    assert resolve_url(raw, SITEMAP_URL) == expected


@pytest.mark.parametrize(
    "character",
    [
        "\u00a0",  # no-break space
        "\u3000",  # ideographic space
        "\u2003",  # em space
        "\u2028",  # line separator
        "\u0085",  # next line
        "\x0b",
        "\x01",  # C0 controls: not allowed in an XML feed
        "\x1f",
        "\x7f",
        "\ufffe",  # a noncharacter
        "\u200b",  # zero width space (a format character)
        "\t",  # tab and newlines: removed, as w3lib (and a browser) removes them
        "\n",
        "\r\n",
    ],
)
def test_unprintable_characters_inside_a_url_are_its_utf8_bytes_percent_encoded(character: str) -> None:
    raw = f"https://www.example.org/a{character}b?q={character}c"
    assert resolve_url(raw, SITEMAP_URL) == safe_url_string(raw)
    relative = f"/a{character}b?q={character}c"
    assert resolve_url(relative, SITEMAP_URL) == safe_url_string(urljoin(SITEMAP_URL, relative))


@pytest.mark.parametrize(
    "raw",
    [
        "\u3000https://www.example.org/a\u00a0\n",  # Unicode spaces, as str.strip() (Scrapy's SitemapSpider)
        "\x01https://www.example.org/a\x02",  # C0 controls, as w3lib's safe_url_string
        " \x00\u2003 https://www.example.org/a \x1b\u2028",
    ],
)
def test_whitespace_and_control_characters_around_a_url_are_dropped(raw: str) -> None:
    assert resolve_url(raw, SITEMAP_URL) == "https://www.example.org/a"
    assert resolve_url(raw.replace("https://www.example.org", ""), SITEMAP_URL) == "https://www.example.org/a"


@pytest.mark.parametrize(
    "raw",
    [
        "https://[www.example.org/a",  # an unbalanced bracket: urlsplit raises "Invalid IPv6 URL"
        "http://a]b.example.org/",
        "//[cdn.example.net/x",
        "https://www.example.org:99999/a",  # Scrapy's Request raises on these ports
        "https://www.example.org:http/a",
        "https://www.ex\uff03ample.org/",  # a netloc that NFKC normalisation would change
    ],
)
def test_resolve_url_drops_urls_no_request_can_be_made_of(raw: str) -> None:
    assert resolve_url(raw, SITEMAP_URL) is None


@pytest.mark.parametrize(
    "raw",
    ["https://[::1]:8080/a", "https://www.example.org:8080/a", "/a[1]?t=10:00", "https://bücher.example/"],
)
def test_resolve_url_keeps_brackets_ports_and_colons_that_are_fine(raw: str) -> None:
    assert resolve_url(raw, SITEMAP_URL) == urljoin(SITEMAP_URL, raw)


def test_resolve_url_keeps_the_base_scheme_for_protocol_relative_values() -> None:
    assert resolve_url("//cdn.example.net/x", "http://www.example.org/s.xml") == "http://cdn.example.net/x"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("x;", "https://www.example.org/dir/x;"),
        ("x;?q=1", "https://www.example.org/dir/x;?q=1"),
        ("/p;#top", "https://www.example.org/p;#top"),
        (";", "https://www.example.org/dir/;"),
        ("../a;b/c;", "https://www.example.org/a;b/c;"),
        ("x;y", "https://www.example.org/dir/x;y"),
    ],
)
def test_a_relative_url_keeps_a_semicolon_that_ends_its_path(raw: str, expected: str) -> None:
    # urljoin drops an empty ;params ("x;" gave .../x): RFC 3986 keeps it, as part of the path
    assert resolve_url(raw, "https://www.example.org/dir/sitemap.xml") == expected


# -- extension values --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Blog, PressRelease", ["Blog", "PressRelease"]),
        (" business , merger,  acquisition ", ["business", "merger", "acquisition"]),
        ("NASDAQ:A, NASDAQ:B", ["NASDAQ:A", "NASDAQ:B"]),
        ("single", ["single"]),
        ("a,,b, ,", ["a", "b"]),
        ("", []),
        (None, []),
    ],
)
def test_split_list(raw: str | None, expected: list[str]) -> None:
    assert split_list(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("600", 600),
        (" 42 ", 42),
        ("0", 0),
        ("600.7", 600),
        ("-5", None),
        ("PT10M", None),
        ("", None),
        (None, None),
        # past what a feed's JSON encoder writes (a 64-bit integer): the batch failed to export
        ("99999999999999999999999", None),
        (str(2**63), None),
        (str(2**63 - 1), 2**63 - 1),
    ],
)
def test_parse_duration(raw: str | None, expected: int | None) -> None:
    value = parse_duration(raw)
    assert value == expected
    if value is not None:
        assert type(value) is int


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("yes", True),
        ("YES", True),
        (" Yes ", True),
        ("true", True),
        ("no", False),
        ("No", False),
        ("false", False),
        ("maybe", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_yes_no(raw: str | None, expected: bool | None) -> None:
    assert parse_yes_no(raw) is expected


@pytest.mark.parametrize(("raw", "expected"), [("  a title ", "a title"), ("", None), ("  \n ", None), (None, None)])
def test_clean_text(raw: str | None, expected: str | None) -> None:
    assert clean_text(raw) == expected


@pytest.mark.parametrize("invisible", ["\ufeff", "\u200b", "\u2060"])
def test_an_invisible_format_character_around_a_url_is_dropped(invisible: str) -> None:
    # a byte order mark or a zero-width space an export left before the URL: not a relative path
    assert resolve_url(f"{invisible}https://www.example.org/a{invisible}", SITEMAP_URL) == "https://www.example.org/a"


def test_a_url_longer_than_the_limit_names_nothing() -> None:
    # a 5 MB sub-sitemap URL made the crawl peak at 570 MB (w3lib's quoting of a request)
    base = "https://example.com/"
    longest = base + "a" * (MAX_URL_LENGTH - len(base))
    assert resolve_url(longest, base) == longest
    assert resolve_url(longest + "a", base) is None
    assert resolve_url("/" + "a" * MAX_URL_LENGTH, base) is None
    body = f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>{longest}a</loc></url><url><loc>{base}b</loc></url></urlset>'
    assert [page.url for page in parse_sitemap(body.encode(), base + "s.xml").pages] == [base + "b"]
