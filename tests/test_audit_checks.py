"""The audit's pure checks: one broken and one sound minimal case per rule.

These run the checks on bytes (no server); tests/test_crawl_audit.py runs them in crawls.
"""

from __future__ import annotations

import gzip
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from sitemap_crawl.audit import auditor, rules
from sitemap_crawl.audit.auditor import SiteAudit
from sitemap_crawl.audit.discovery import RobotsRules, SitemapDeclarations

NOW = datetime(2026, 6, 15, 12, 0, tzinfo=UTC)
SITEMAP = "https://example.com/dir/sitemap.xml"
NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
EXTENSIONS = (
    "xmlns:news='http://www.google.com/schemas/sitemap-news/0.9'"
    " xmlns:image='http://www.google.com/schemas/sitemap-image/1.1' xmlns:xhtml='http://www.w3.org/1999/xhtml'"
)


def urlset(*entries: str, ns: str = NS, decl: str = '<?xml version="1.0" encoding="UTF-8"?>') -> bytes:
    return f"{decl}<urlset {ns} {EXTENSIONS}>{''.join(entries)}</urlset>".encode()


def url(loc: str = "https://example.com/dir/a", extra: str = "") -> str:
    return f"<url><loc>{loc}</loc>{extra}</url>"


def index(*locs: str, lastmod: str = "") -> bytes:
    children = "".join(f"<sitemap><loc>{loc}</loc>{lastmod}</sitemap>" for loc in locs)
    return f"<sitemapindex {NS}>{children}</sitemapindex>".encode()


def news(date: str) -> str:
    return f"<news:news><news:publication_date>{date}</news:publication_date></news:news>"


def images(count: int) -> str:
    return "<image:image><image:loc>https://example.com/dir/i.png</image:loc></image:image>" * count


def alternate(hreflang: str) -> str:
    return f'<xhtml:link rel="alternate" hreflang="{hreflang}" href="https://example.com/dir/x"/>'


many = rules.MAX_URLS + 1
big_text = (" " * (rules.MAX_BYTES + 10)).encode()

# rule -> (a body that breaks it once, a sound body)
CASES: dict[str, tuple[bytes, bytes]] = {
    "too-many-urls": (
        urlset(*(url(f"https://example.com/dir/{i}") for i in range(many))),
        urlset(*(url(f"https://example.com/dir/{i}") for i in range(rules.MAX_URLS))),
    ),
    "too-many-children": (
        index(*(f"https://example.com/dir/s{i}.xml" for i in range(many))),
        index(*(f"https://example.com/dir/s{i}.xml" for i in range(rules.MAX_URLS))),
    ),
    "too-large": (urlset(url()) + big_text, urlset(url())),
    "url-too-long": (
        urlset(url("https://example.com/dir/" + "a" * 2100)),
        urlset(url("https://example.com/dir/" + "a" * 2000)),
    ),
    "other-host": (urlset(url("https://other.example/dir/a")), urlset(url())),
    "outside-directory": (urlset(url("https://example.com/elsewhere")), urlset(url("https://example.com/dir/x/y"))),
    "relative-url": (urlset(url("/dir/a")), urlset(url())),
    "url-fragment": (urlset(url("https://example.com/dir/a#top")), urlset(url())),
    "unescaped-url": (urlset(url("https://example.com/dir/a b")), urlset(url("https://example.com/dir/a%20b"))),
    "mixed-scheme": (urlset(url("http://example.com/dir/a")), urlset(url())),
    "empty-sitemap": (urlset(), urlset(url())),
    "missing-loc": (urlset(url(), "<url><lastmod>2024-05-01</lastmod></url>"), urlset(url())),
    "duplicate-in-sitemap": (urlset(url(), url()), urlset(url(), url("https://example.com/dir/b"))),
    "bad-namespace": (
        urlset(url(), ns='xmlns="http://www.google.com/schemas/sitemap/0.84"'),
        urlset(url()),
    ),
    "not-utf8": (
        urlset(url(), decl='<?xml version="1.0" encoding="ISO-8859-1"?>'),
        urlset(url(), decl='<?xml version="1.0" encoding="utf-8"?>'),
    ),
    "unescaped-entity": (
        urlset(url("https://example.com/dir/a?b=1&c=2")),
        urlset(url("https://example.com/dir/a?b=1&amp;c=2")),
    ),
    "invalid-document": (urlset(url())[:-5], urlset(url())),
    "lastmod-format": (
        urlset(url(extra="<lastmod>05/01/2024</lastmod>")),
        urlset(url(extra="<lastmod>2024-05-01T10:00+02:00</lastmod>")),
    ),
    "lastmod-future": (
        urlset(url(extra="<lastmod>2027-01-01</lastmod>")),
        urlset(url(extra="<lastmod>2026-06-15</lastmod>")),
    ),
    "priority-range": (urlset(url(extra="<priority>1.5</priority>")), urlset(url(extra="<priority>1.0</priority>"))),
    "changefreq-value": (
        urlset(url(extra="<changefreq>Daily!</changefreq>")),
        urlset(url(extra="<changefreq>daily</changefreq>")),
    ),
    "news-too-old": (urlset(url(extra=news("2026-06-01"))), urlset(url(extra=news("2026-06-15T08:00:00Z")))),
    "too-many-news": (
        urlset(*(url(f"https://example.com/dir/{i}", news("2026-06-15")) for i in range(1001))),
        urlset(*(url(f"https://example.com/dir/{i}", news("2026-06-15")) for i in range(1000))),
    ),
    "too-many-images": (urlset(url(extra=images(1001))), urlset(url(extra=images(1000)))),
    "hreflang-value": (
        urlset(url(extra=alternate("english"))),
        urlset(url(extra=alternate("en-GB") + alternate("x-default"))),
    ),
}


def findings_of(body: bytes, sitemap_url: str = SITEMAP) -> list[str]:
    audit = SiteAudit("https://example.com/", now=NOW)
    return [finding.rule for finding in audit.audit_sitemap(body, sitemap_url)]


@pytest.mark.parametrize(
    ("ns", "found"),
    [
        ('xmlns="http://www.sitemaps.org/schemas/sitemap/0.9 "', ["bad-namespace"]),  # no valid URI: one fault
        ('xmlns="not a uri"', ["bad-namespace"]),
        ('xmlns="http://www.example.com/x"', ["bad-namespace"]),
        ("", ["bad-namespace"]),
    ],
)
def test_a_wrong_root_namespace_is_one_finding(ns: str, found: list[str]) -> None:
    assert findings_of(urlset(url(), ns=ns)) == found


@pytest.mark.parametrize("ns", ["link", "x", "defined", "urn:other"])
def test_a_wrong_root_namespace_and_an_undeclared_prefix_are_two_findings(ns: str) -> None:
    # a namespace that the prefix error's wording happened to contain ("link") was taken for it
    body = urlset(url(extra="<zz:link>1</zz:link>"), ns=f'xmlns="{ns}"')
    found = [(f.rule, f.detail) for f in SiteAudit(None, now=NOW).audit_sitemap(body, SITEMAP)]
    assert [rule for rule, _detail in found] == ["bad-namespace", "bad-namespace"]
    assert found[0][1].startswith("Namespace prefix zz on link is not defined")
    assert found[1][1] == f"namespace {ns!r}"


@pytest.mark.parametrize("rule", sorted(CASES))
def test_rule_broken_and_sound(rule: str) -> None:
    broken, sound = CASES[rule]
    assert findings_of(broken) == [rule]
    assert findings_of(sound) == []


def test_gzip_body_is_read() -> None:
    assert findings_of(gzip.compress(urlset(url("/rel")))) == ["relative-url"]


def test_duplicate_across_sitemaps_and_nested_index() -> None:
    audit = SiteAudit("https://example.com/", now=NOW)
    first = list(audit.audit_sitemap(index("https://example.com/dir/inner.xml"), SITEMAP))
    inner = list(
        audit.audit_sitemap(
            index("https://example.com/dir/a.xml"), "https://example.com/dir/inner.xml", parent_url=SITEMAP
        )
    )
    pages = list(
        audit.audit_sitemap(
            urlset(url()), "https://example.com/dir/a.xml", parent_url="https://example.com/dir/inner.xml"
        )
    )
    again = list(audit.audit_sitemap(urlset(url()), "https://example.com/dir/b.xml"))
    assert first == [] and pages == []
    assert [(f.rule, f.sitemap_url, f.url) for f in inner] == [
        ("nested-index", SITEMAP, "https://example.com/dir/inner.xml")
    ]
    assert [(f.rule, f.website, f.url) for f in again] == [
        ("duplicate-across-sitemaps", "https://example.com/", "https://example.com/dir/a")
    ]
    assert audit.counts == {"nested-index": 1, "duplicate-across-sitemaps": 1}


def test_an_index_child_with_a_fragment_is_found_as_the_sitemap_the_crawl_fetched() -> None:
    # the crawl asks for inner.xml (a fragment is never sent): its parent was not found
    audit = SiteAudit("https://example.com/", now=NOW)
    listed = list(audit.audit_sitemap(index("https://example.com/dir/inner.xml#part"), SITEMAP))
    inner = list(audit.audit_sitemap(index("https://example.com/dir/a.xml"), "https://example.com/dir/inner.xml"))
    assert [f.rule for f in listed] == ["url-fragment"]
    assert [(f.rule, f.url) for f in inner] == [("nested-index", "https://example.com/dir/inner.xml")]


@pytest.mark.parametrize(
    ("page", "host"),
    [
        ("http://[2001:db8::1]:8080/x", "[2001:db8::1]:8080"),  # not 2001:db8::1:8080, another address
        ("http://[2001:DB8::1]/x", "[2001:db8::1]"),
    ],
)
def test_an_ipv6_host_is_named_in_brackets(page: str, host: str) -> None:
    audit = SiteAudit(None, now=NOW)
    [finding] = audit.audit_sitemap(urlset(url(page)), SITEMAP)
    assert finding.rule == "other-host"
    assert finding.detail.startswith(f"host {host}, the sitemap is on example.com;")


def test_an_ipv6_sitemap_lists_its_own_pages() -> None:
    audit = SiteAudit(None, now=NOW)
    body = urlset(url("http://[2001:db8::1]:8080/dir/a"))
    assert list(audit.audit_sitemap(body, "http://[2001:db8::1]:8080/dir/sitemap.xml")) == []


def test_counts_in_details_are_written_with_thousands_separators() -> None:
    audit = SiteAudit(None, now=NOW)
    found = {f.rule: f.detail for f in audit.audit_sitemap(CASES["url-too-long"][0], SITEMAP)}
    found |= {f.rule: f.detail for f in audit.audit_sitemap(CASES["too-many-images"][0], SITEMAP)}
    assert found == {"url-too-long": "2,124 characters", "too-many-images": "1,001 images"}


def test_cross_submission_allows_other_host() -> None:
    audit = SiteAudit(None, now=NOW)
    body = urlset(url("https://other.example/dir/a"))
    assert list(audit.audit_sitemap(body, SITEMAP, cross_hosts=frozenset({"other.example"}))) == []


def test_a_sitemap_its_host_declares_may_list_any_page_of_that_host() -> None:
    xml = urlset(url("https://example.com/elsewhere"), url("https://other.example/dir/a"))
    text = b"https://example.com/other\n"
    robots = f"Sitemap: {SITEMAP}\nSitemap: https://example.com/dir/sitemap.txt\n".encode()
    undeclared = SiteAudit(None, now=NOW)
    assert [f.rule for f in undeclared.audit_sitemap(xml, SITEMAP)] == ["outside-directory", "other-host"]
    declared = SiteAudit(None, now=NOW)
    list(declared.audit_robots(robots, "https://example.com/robots.txt"))
    assert [f.rule for f in declared.audit_sitemap(xml, SITEMAP)] == ["other-host"]  # other.example did not
    assert list(declared.audit_sitemap(text, "https://example.com/dir/sitemap.txt")) == []
    told = SiteAudit(None, now=NOW)  # the library's way: the declaring hosts passed in
    assert [f.rule for f in told.audit_sitemap(xml, SITEMAP, cross_hosts=frozenset({"example.com"}))] == ["other-host"]


@pytest.mark.parametrize("declared", [True, False])
def test_the_sitemaps_of_an_index_robots_txt_declares_are_declared_with_it(declared: bool) -> None:
    # every page of a site whose index (declared) lists sitemaps in a folder was outside-directory
    audit = SiteAudit(None, now=NOW)
    if declared:
        list(audit.audit_robots(b"Sitemap: https://example.com/index.xml\n", "https://example.com/robots.txt"))
    list(audit.audit_sitemap(index("https://example.com/maps/inner.xml"), "https://example.com/index.xml"))
    list(audit.audit_sitemap(index("https://example.com/maps/deep/pages.xml"), "https://example.com/maps/inner.xml"))
    body = urlset(url("https://example.com/at-the-root"))
    found = [f.rule for f in audit.audit_sitemap(body, "https://example.com/maps/deep/pages.xml")]
    assert found == ([] if declared else ["outside-directory"])


def test_a_cdn_sitemap_under_an_index_a_site_declares_may_list_the_sites_pages() -> None:
    # www.example.com's robots.txt declares an index on a CDN host: its sitemaps (on the CDN
    # too) list www's pages: an other-host error for every page before
    audit = SiteAudit(None, now=NOW)
    cdn = "https://cdn.example.net"
    list(audit.audit_robots(f"Sitemap: {cdn}/www/index.xml\n".encode(), "https://www.example.com/robots.txt"))
    list(audit.audit_sitemap(index(f"{cdn}/www/pages.xml"), f"{cdn}/www/index.xml"))
    pages = urlset(url("https://www.example.com/a"), url("https://shop.example.com/b"))
    [finding] = audit.audit_sitemap(pages, f"{cdn}/www/pages.xml")
    assert (finding.rule, finding.url) == ("other-host", "https://shop.example.com/b")  # shop did not declare it


def test_a_redirected_index_robots_txt_declares_under_its_first_url_vouches_for_its_sitemaps() -> None:
    audit = SiteAudit(None, now=NOW)
    list(audit.audit_robots(b"Sitemap: http://example.com/index.xml\n", "http://example.com/robots.txt"))
    list(audit.audit_sitemap(index("https://example.com/maps/a.xml"), "https://example.com/index.xml",
                             requested_url="http://example.com/index.xml"))  # fmt: skip
    assert list(audit.audit_sitemap(urlset(url("https://example.com/p")), "https://example.com/maps/a.xml")) == []


def test_a_wide_encoding_declared_in_single_bytes_is_still_a_finding() -> None:
    # the crawl reads it as UTF-8 (its entries are checked too); its declaration is wrong
    body = urlset(url("https://example.com/dir/a b"), decl='<?xml version="1.0" encoding="utf-16"?>')
    found = [(f.rule, f.detail) for f in SiteAudit(None, now=NOW).audit_sitemap(body, SITEMAP)]
    assert found == [("unescaped-url", "' ' at position 25"), ("not-utf8", "encoding utf-16")]


@pytest.mark.parametrize("layers", [1, 2, 3])
def test_gzip_layers_are_undone_as_the_crawl_undoes_them(layers: int) -> None:
    # a gzip file served gzipped again was scanned as binary text: not-utf8, relative-url of garbage
    body = urlset(url(), url("https://example.com/dir/b"))
    for _ in range(layers):
        body = gzip.compress(body)
    assert findings_of(body) == []
    text = b"https://example.com/dir/a\nhttps://example.com/dir/a\n"
    for _ in range(layers):
        text = gzip.compress(text)
    assert findings_of(text, "https://example.com/dir/sitemap.txt") == ["duplicate-in-sitemap"]


def test_gzip_past_the_crawls_layers_or_broken_is_one_invalid_document() -> None:
    # four layers were scanned as binary text (the crawl reads no sitemap there); a broken
    # stream's detail said "gzip: gzip: ..."
    deep = urlset(url())
    for _ in range(4):
        deep = gzip.compress(deep)
    found = [(f.rule, f.detail) for f in SiteAudit(None, now=NOW).audit_sitemap(deep, SITEMAP)]
    assert found == [("invalid-document", "gzip nested more than 3 layers deep")]
    broken = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + b"\xff" * 64
    found = [(f.rule, f.detail) for f in SiteAudit(None, now=NOW).audit_sitemap(broken, SITEMAP)]
    assert [rule for rule, _detail in found] == ["invalid-document"]
    assert found[0][1].startswith("gzip: Error -3 while decompressing data")


def test_text_sitemap_location_and_duplicates() -> None:
    body = b"https://example.com/dir/a\nhttps://example.com/dir/a\n/rel\n"
    assert findings_of(body, "https://example.com/dir/sitemap.txt") == ["relative-url", "duplicate-in-sitemap"]


def test_a_text_line_the_crawl_reads_no_page_from_is_one_finding_and_no_page() -> None:
    # such a line was a page for the audit (counted, checked for other-host, duplicates)
    # while the crawl read none from it: a repeated comment was a duplicate-in-sitemap
    audit = SiteAudit("https://example.com/", now=NOW)
    body = (
        b"# made by hand\n# made by hand\nhttps://example.com/dir/a\nhttp://example.com:80 /b\nhttp://.example.com/c\n"
        b"ftp://example.com/dir/d\nfile:///etc/e\n"
    )
    found = [(f.rule, f.url, f.detail) for f in audit.audit_sitemap(body, "https://example.com/dir/sitemap.txt")]
    unread = ": the crawl reads no page from this line"
    assert [(rule, url) for rule, url, _detail in found] == [
        ("relative-url", "# made by hand"),
        ("relative-url", "# made by hand"),
        ("unescaped-url", "http://example.com:80 /b"),
        ("unescaped-url", "http://.example.com/c"),
        ("mixed-scheme", "ftp://example.com/dir/d"),
        ("other-host", "file:///etc/e"),
    ]
    assert all(detail.endswith(unread) for _rule, _url, detail in found)
    assert found[-2][2] == f"not an http(s) URL (ftp:){unread}"  # (it said "ftp page in an https sitemap")
    assert audit.sitemap_pages == {"https://example.com/dir/sitemap.txt": 1}


def test_text_lines_the_crawl_skips_for_their_length_are_one_finding() -> None:
    body = b"https://example.com/dir/a\n" + b"https://example.com/dir/" + b"x" * 70_000 + b"\n"
    found = [(f.rule, f.url, f.detail) for f in SiteAudit(None, now=NOW).audit_sitemap(body, SITEMAP)]
    assert found == [("url-too-long", None, "1 line(s) of more than 65,536 characters: the crawl skips them")]


def test_a_relative_url_detail_fits_a_text_sitemap_too() -> None:
    # it said "<loc># made by X</loc> has no scheme and host" of a text sitemap's line
    found = SiteAudit(None, now=NOW).audit_sitemap(b"# made by X\n", "https://example.com/dir/sitemap.txt")
    assert [(f.rule, f.detail) for f in found] == [
        (
            "relative-url",
            "'# made by X' is not an absolute URL (no scheme and host): the crawl reads no page from this line",
        ),
        ("empty-sitemap", "a text sitemap with no URL"),  # (no page: the crawl reads none either)
    ]


@pytest.mark.parametrize(
    ("robots", "expected"),
    [
        (b"User-agent: *\nDisallow:\n", ["no-sitemap-in-robots"]),
        (b"Sitemap: /sitemap.xml\n", ["relative-sitemap-line"]),
        (b"Sitemap: https://example.com/sitemap.xml\n", []),
    ],
)
def test_robots_discovery(robots: bytes, expected: list[str]) -> None:
    audit = SiteAudit(None, now=NOW)
    assert [f.rule for f in audit.audit_robots(robots, "https://example.com/robots.txt")] == expected


def test_robots_disallow_for_the_user_agent() -> None:
    robots = RobotsRules(b"User-agent: mybot\nDisallow: /private/\n", "mybot")
    assert [rule.id for rule, _ in robots.check("https://example.com/private/sitemap.xml")] == ["sitemap-disallowed"]
    assert list(robots.check("https://example.com/sitemap.xml")) == []
    assert not RobotsRules(b"User-agent: mybot\nDisallow: /private/\n", "other").disallows(
        "https://example.com/private/x"
    )


def test_robots_rules_are_read_from_the_first_500_kib() -> None:
    # a robots.txt of a million rules: minutes and half a GiB in the audit process
    many = b"".join(b"Disallow: /rule-%d/\n" % i for i in range(60_000))  # about 1.2 MB
    body = b"User-agent: *\nDisallow: /first/\n" + many + b"Disallow: /last/\nSitemap: https://example.com/s.xml\n"
    robots = RobotsRules(body, "*")
    assert robots.disallows("https://example.com/first/a") and robots.disallows("https://example.com/rule-20/")
    assert not robots.disallows("https://example.com/last/a")  # (past 500 KiB, as Google reads it)
    assert robots.prefixes is not None and len(robots.prefixes) < 30_000
    audit = SiteAudit(None, now=NOW)
    list(audit.audit_robots(body, "https://example.com/robots.txt", "*"))
    assert audit.declared == {"https://example.com/s.xml"}  # (Sitemap: lines from all of it)


CAFE_UTF8 = urlset(url("https://example.com/dir/caf%C3%A9", "<lastmod>2024-05-01</lastmod><!-- café -->"))


@pytest.mark.parametrize(
    ("sound", "sitemap_url"),
    [
        (CAFE_UTF8, SITEMAP),
        (gzip.compress(CAFE_UTF8), SITEMAP),
        ("https://example.com/dir/café\n".encode(), "https://example.com/dir/sitemap.txt"),
    ],
)
def test_bytes_that_are_not_utf8(sound: bytes, sitemap_url: str) -> None:
    def latin(body: bytes) -> bytes:
        if body.startswith(b"\x1f\x8b"):
            return gzip.compress(latin(gzip.decompress(body)))
        return body.replace("é".encode(), b"\xe9")

    found = [(f.rule, f.detail) for f in SiteAudit(None, now=NOW).audit_sitemap(latin(sound), sitemap_url)]
    assert [(rule, "is not UTF-8" in detail) for rule, detail in found if rule != "unescaped-url"] == [
        ("not-utf8", True)
    ]
    assert [f.rule for f in SiteAudit(None, now=NOW).audit_sitemap(sound, sitemap_url)] in ([], ["unescaped-url"])


CHILD = "https://example.com/dir/pages.xml"


@pytest.mark.parametrize(
    "pages",
    [
        ["2024-05-02T01:00:00+05:00", "2024-05-01T23:30:00-05:00"],  # later on its clock, earlier as an instant
        ["2024-05-01T23:30:00-05:00", "2024-05-02T01:00:00+05:00"],
        ["2024-05-01", "2024-05-02T01:00:00+05:00", "2024-05-01T20:00:00Z"],
    ],
)
def test_index_date_against_the_page_latest_on_its_own_clock(pages: list[str]) -> None:
    # only the newest page by instant was compared: a page on the next day on its own clock was missed
    audit = SiteAudit(None, now=NOW)
    parent = index(CHILD, lastmod="<lastmod>2024-05-01</lastmod>")
    child = urlset(*(url(f"https://example.com/dir/p{i}", f"<lastmod>{lm}</lastmod>") for i, lm in enumerate(pages)))
    found = [*audit.audit_sitemap(parent, SITEMAP), *audit.audit_sitemap(child, CHILD)]
    assert [(f.rule, f.detail) for f in found] == [
        ("index-lastmod-older", "the index says 2024-05-01, a page in it 2024-05-02T01:00:00+05:00")
    ]


@pytest.mark.parametrize("index_first", [True, False])
@pytest.mark.parametrize(
    ("said", "newest", "broken"),
    [
        ("2024-05-01", "2024-05-03", True),
        ("2024-05-01T08:00:00Z", "2024-05-01T09:00:00Z", True),
        ("2024-05-01", "2024-05-01T23:00:00Z", False),  # a date names the whole day
        ("2024-05-03", "2024-05-03", False),
        ("2024-05-01T08:00:00Z", "2024-05-01T08:00:00Z", False),  # the same instant is not older
        ("2024-05-01T10:00:00+02:00", "2024-05-01T09:00:00+01:00", False),  # nor written with other offsets
        ("2024-05-01", "2024-05-01T23:00:00-05:00", False),  # a date has no zone: the page's own day
        ("2024-05-01", "2024-05-02T00:30:00+02:00", True),  # the next day on the page's clock
        ("2024-05", "2024-05-31T23:30:00-05:00", False),
        ("2024-05-01", "2024-05-02T00:00:00Z", True),
    ],
)
def test_index_lastmod_older_than_a_page_inside(said: str, newest: str, broken: bool, index_first: bool) -> None:
    audit = SiteAudit(None, now=NOW)
    parent = index(CHILD, lastmod=f"<lastmod>{said}</lastmod>")
    child = urlset(
        url(extra="<lastmod>2020-01-01</lastmod>"), url("https://example.com/dir/b", f"<lastmod>{newest}</lastmod>")
    )
    reads = [(parent, SITEMAP), (child, CHILD)]
    found = [f for body, where in (reads if index_first else reads[::-1]) for f in audit.audit_sitemap(body, where)]
    expected = [("index-lastmod-older", SITEMAP, CHILD)] if broken else []
    assert [(f.rule, f.sitemap_url, f.url) for f in found] == expected


@pytest.mark.parametrize("order", ["indexes first", "child between", "child first"])
def test_index_lastmod_older_is_judged_for_each_index_that_lists_the_child(order: str) -> None:
    # only the first index to pair with the child was judged: the other's stale claim was lost
    audit = SiteAudit(None, now=NOW)
    fresh, stale, other = (
        "https://example.com/dir/a.xml",
        "https://example.com/dir/b.xml",
        "https://example.com/dir/c.xml",
    )
    child = urlset(url("https://example.com/dir/p", "<lastmod>2024-05-01</lastmod>"))
    reads = {
        "indexes first": [(fresh, "2025-01-01"), (stale, "2020-01-01"), (other, "2020-02-02"), (CHILD, None)],
        "child between": [(fresh, "2025-01-01"), (CHILD, None), (stale, "2020-01-01"), (other, "2020-02-02")],
        "child first": [(CHILD, None), (fresh, "2025-01-01"), (stale, "2020-01-01"), (other, "2020-02-02")],
    }[order]
    found = []
    for where, said in reads:
        # (an index that lists the child twice: its first entry counts, as the crawl fetches it once)
        body = child if said is None else index(CHILD, CHILD, lastmod=f"<lastmod>{said}</lastmod>")
        findings = audit.audit_sitemap(body, where)
        found += [(f.sitemap_url, f.detail) for f in findings if f.rule == "index-lastmod-older"]
    assert sorted(found) == [
        (stale, "the index says 2020-01-01, a page in it 2024-05-01"),
        (other, "the index says 2020-02-02, a page in it 2024-05-01"),
    ]


@pytest.mark.parametrize("count", [3, 2000])
def test_the_entries_before_a_byte_that_is_not_utf8_are_checked(count: int) -> None:
    # the entries of the piece fed with the byte (up to 32 KiB of them) were lost with the
    # parse error, and in a small sitemap the root too (no entry checked at all)
    entries = "".join(url(f"https://example.com/dir/p{n}#part", "<lastmod>2024-05-01</lastmod>") for n in range(count))
    body = urlset(entries).replace(b"</urlset>", b"<!-- caf\xe9 --></urlset>")
    audit = SiteAudit(None, now=NOW)
    found = [f.rule for f in audit.audit_sitemap(body, SITEMAP)]
    assert (found.count("url-fragment"), found.count("not-utf8")) == (count, 1)
    assert sum(audit.months.values()) == count  # (the report's lastmod histogram)


@pytest.mark.parametrize(
    ("priority", "broken"),
    [
        *[("0.5", False), ("1", False), ("+0.5", False), (".5", False), ("0", False)],
        *[("1.5", True), ("-0.1", True), ("1e-1", True), ("nan", True), ("1_0", True), ("\u0661", True)],
        *[("high", True), (" ", True)],
    ],
)
def test_a_priority_is_a_decimal_from_0_to_1(priority: str, broken: bool) -> None:
    # xsd:decimal: float() also reads exponents, nan, underscores and other scripts' digits
    found = findings_of(urlset(url(extra=f"<priority>{priority}</priority>")))
    assert found == (["priority-range"] if broken else [])


@pytest.mark.parametrize("spaces", ["", " ", "\n\t"], ids=["empty", "space", "whitespace"])
@pytest.mark.parametrize(
    ("element", "rule"),
    [
        ("lastmod", "lastmod-format"),
        ("priority", "priority-range"),
        ("changefreq", "changefreq-value"),
        ("news:publication_date", "lastmod-format"),
    ],
)
def test_an_empty_value_is_as_broken_as_one_of_spaces(element: str, rule: str, spaces: str) -> None:
    value = f"<{element}>{spaces}</{element}>" if spaces else f"<{element}/>"
    extra = f"<news:news>{value}</news:news>" if element.startswith("news:") else value
    assert findings_of(urlset(url(extra=extra))) == [rule]


@pytest.mark.parametrize("lastmod", ["<lastmod/>", "<lastmod> </lastmod>"])
def test_an_index_entrys_empty_lastmod_is_a_finding(lastmod: str) -> None:
    assert findings_of(index("https://example.com/dir/s.xml", lastmod=lastmod)) == ["lastmod-format"]


@pytest.mark.parametrize(
    ("published", "broken"),
    [
        ("2026-06-13T12:00:01Z", False),  # NOW is 2026-06-15T12:00Z: two days are 2026-06-13T12:00Z
        ("2026-06-13T11:59:59Z", True),
        ("2026-06-13", False),  # a date names its whole day, which ends after 2026-06-13T12:00Z
        ("2026-06-12", True),  # ends at 2026-06-13T00:00Z
        ("2026-06", False),
        ("2026-05", True),
    ],
)
def test_news_older_than_two_days(published: str, broken: bool) -> None:
    assert findings_of(urlset(url(extra=news(published)))) == (["news-too-old"] if broken else [])


BROKEN_HOST = "https://[example.com/dir/b"  # urlsplit: "Invalid IPv6 URL"


@pytest.mark.parametrize(
    ("body", "where"),
    [
        (urlset(url(BROKEN_HOST), url("https://example.com/dir/a#x")), SITEMAP),
        (index(BROKEN_HOST, "https://example.com/dir/a#x"), SITEMAP),
        (f"{BROKEN_HOST}\nhttps://example.com/dir/a#x\n".encode(), "https://example.com/dir/sitemap.txt"),
    ],
    ids=["urlset", "index", "text"],
)
def test_a_loc_that_is_no_url_is_a_finding_and_the_next_are_checked(body: bytes, where: str) -> None:
    # urlsplit raises on an unbalanced bracket: that raised out of the audit of the whole sitemap
    found = [(f.rule, f.url, f.detail) for f in SiteAudit(None, now=NOW).audit_sitemap(body, where)]
    unread = ": the crawl reads no page from this line" if where.endswith(".txt") else ""
    assert found == [
        ("unescaped-url", BROKEN_HOST, f"not a URL: Invalid IPv6 URL{unread}"),
        ("url-fragment", "https://example.com/dir/a#x", "fragment #x"),
    ]


def test_an_index_child_is_matched_by_the_url_the_crawl_fetches() -> None:
    # a space in the child's <loc>: the crawl fetches news%20index.xml; the index's checks on
    # the child (nested-index, index-lastmod-older) looked for "news index.xml"
    audit = SiteAudit(None, now=NOW)
    lastmod = "<lastmod>2024-01-01</lastmod>"
    parent = index("https://example.com/news index.xml", "https://example.com/spaced urlset.xml", lastmod=lastmod)
    assert [f.rule for f in audit.audit_sitemap(parent, "https://example.com/idx.xml")] == ["unescaped-url"] * 2
    child_index = index("https://example.com/leaf.xml")
    found = [(f.rule, f.url) for f in audit.audit_sitemap(child_index, "https://example.com/news%20index.xml")]
    assert found == [("nested-index", "https://example.com/news%20index.xml")]
    pages = urlset(url("https://example.com/p", "<lastmod>2024-06-01</lastmod>"))
    found = [(f.rule, f.url) for f in audit.audit_sitemap(pages, "https://example.com/spaced%20urlset.xml")]
    assert found == [("index-lastmod-older", "https://example.com/spaced%20urlset.xml")]


def test_a_robots_sitemap_line_read_as_the_crawl_reads_it() -> None:
    # the value is the whole line (a space in it included, escaped as the crawl requests it),
    # a comment cut off; a space that must be escaped is an unescaped-url, as in an index
    audit = SiteAudit(None, now=NOW)
    robots = b"Sitemap: https://example.com/my sitemap.xml # the main one\nsitemap:\nhttps://example.com/bare.xml\n"
    found = [(f.rule, f.url, f.detail) for f in audit.audit_robots(robots, "https://example.com/robots.txt")]
    assert found == [
        ("unescaped-url", "https://example.com/my sitemap.xml", "' ' at position 22"),
        ("relative-sitemap-line", None, "Sitemap: '' is not an absolute URL"),
    ]
    assert audit.declared == {"https://example.com/my%20sitemap.xml", "https://example.com/bare.xml"}


def test_a_local_robots_txt_may_declare_file_urls() -> None:
    # an absolute file: line was "not an absolute URL" (the crawl reads it, as a local index's)
    audit = SiteAudit(None, now=NOW)
    robots = b"Sitemap: file:///data/maps/a.xml\nSitemap: file:/data/maps/b.xml\nSitemap: c.xml\n"
    found = [(f.rule, f.url) for f in audit.audit_robots(robots, "file:///data/maps/robots.txt")]
    assert found == [("relative-sitemap-line", "c.xml")]
    assert audit.declared == {"file:///data/maps/a.xml", "file:///data/maps/b.xml", "file:///data/maps/c.xml"}


def test_a_robots_sitemap_line_that_is_no_url() -> None:
    audit = SiteAudit(None, now=NOW)
    robots = f"Sitemap: {BROKEN_HOST}\nSitemap: https://example.com/dir/sitemap.xml\n".encode()
    found = [(f.rule, f.url) for f in audit.audit_robots(robots, "https://example.com/robots.txt")]
    assert found == [("relative-sitemap-line", BROKEN_HOST)]
    assert audit.declared == {"https://example.com/dir/sitemap.xml"}


MOVED = "https://example.com/dir/moved.xml"


@pytest.mark.parametrize("index_first", [True, False])
def test_a_redirected_child_is_found_under_the_url_its_index_lists(index_first: bool) -> None:
    # the index lists CHILD, which redirects to MOVED: its lastmod and its parent are CHILD's
    audit = SiteAudit(None, now=NOW)
    parent = index(CHILD, lastmod="<lastmod>2024-05-01</lastmod>")
    child = urlset(url("https://example.com/dir/b", "<lastmod>2024-05-03</lastmod>"))
    reads = [(parent, SITEMAP, None), (child, MOVED, CHILD)]
    found = [
        f
        for body, where, asked in (reads if index_first else reads[::-1])
        for f in audit.audit_sitemap(body, where, requested_url=asked)
    ]
    assert [(f.rule, f.sitemap_url, f.url) for f in found] == [("index-lastmod-older", SITEMAP, CHILD)]
    nested = SiteAudit(None, now=NOW)
    assert list(nested.audit_sitemap(index(CHILD), SITEMAP)) == []
    found = list(nested.audit_sitemap(index("https://example.com/dir/c.xml"), MOVED, requested_url=CHILD))
    # the nested index is named as the index lists it (the URL to mend there), as above
    assert [(f.rule, f.sitemap_url, f.url) for f in found] == [("nested-index", SITEMAP, CHILD)]


def test_a_sitemap_declared_under_the_url_it_redirects_from() -> None:
    # robots.txt declares CHILD; it redirects to MOVED, which may then list any page of the host
    audit = SiteAudit(None, now=NOW)
    list(audit.audit_robots(f"Sitemap: {CHILD}\n".encode(), "https://example.com/robots.txt"))
    outside = urlset(url("https://example.com/elsewhere/a"))
    assert list(audit.audit_sitemap(outside, MOVED, requested_url=CHILD)) == []
    assert [f.rule for f in SiteAudit(None, now=NOW).audit_sitemap(outside, MOVED)] == ["outside-directory"]


def _alternates(*hrefs: str) -> str:
    return "".join(f'<xhtml:link rel="alternate" hreflang="fr" href="{href}"/>' for href in hrefs)


@pytest.mark.parametrize(
    ("b_entry", "expected"),
    [
        (url("https://example.com/dir/b"), [("hreflang-not-reciprocal", "https://example.com/dir/a")]),
        (url("https://example.com/dir/b", _alternates("https://example.com/dir/a")), []),
        ("", []),  # b is not listed: its alternates are not known
    ],
)
def test_hreflang_not_reciprocal(b_entry: str, expected: list[tuple[str, str]]) -> None:
    audit = SiteAudit(None, now=NOW)
    a = url(extra=_alternates("https://example.com/dir/a", "https://example.com/dir/b"))  # self-reference is fine
    assert list(audit.audit_sitemap(urlset(a), SITEMAP)) == []
    assert (
        list(audit.audit_sitemap(urlset(b_entry) if b_entry else urlset(url("https://example.com/dir/c")), CHILD)) == []
    )
    assert [(f.rule, f.url) for f in audit.finish()] == expected
    assert list(audit.finish()) == []  # reported once


def test_hreflang_is_checked_on_a_link_whose_rel_holds_alternate_among_other_tokens() -> None:
    link = '<xhtml:link rel="Alternate nofollow" hreflang="english" href="https://example.com/dir/x"/>'
    assert findings_of(urlset(url(extra=link))) == ["hreflang-value"]


def test_hreflang_past_the_limit_is_not_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(auditor, "ALTERNATE_LIMIT", 1)
    audit = SiteAudit(None, now=NOW)
    body = urlset(
        url(extra=_alternates("https://example.com/dir/b", "https://example.com/dir/c")),
        url("https://example.com/dir/b"),
    )
    list(audit.audit_sitemap(body, SITEMAP))
    assert list(audit.finish()) == []


def test_page_disallowed_by_robots() -> None:
    audit = SiteAudit(None, now=NOW)
    robots = b"User-agent: mybot\nDisallow: /dir/private/\nSitemap: https://example.com/dir/sitemap.xml\n"
    assert list(audit.audit_robots(robots, "https://example.com/robots.txt", "mybot")) == []
    body = urlset(url("https://example.com/dir/private/a"), url("https://example.com/dir/public"))
    found = [(f.rule, f.url) for f in audit.audit_sitemap(body, SITEMAP)]
    assert found == [("page-disallowed", "https://example.com/dir/private/a")]
    text = b"https://example.com/dir/private/t\nhttps://example.com/dir/t\n"
    assert [f.rule for f in audit.audit_sitemap(text, "https://example.com/dir/s.txt")] == ["page-disallowed"]
    other = SiteAudit(None, now=NOW)  # robots.txt read without a user agent: pages not checked
    list(other.audit_robots(robots, "https://example.com/robots.txt"))
    assert list(other.audit_sitemap(body, SITEMAP)) == []


@pytest.mark.parametrize(
    ("body", "where", "content_type", "encoding", "why"),
    [
        (urlset(url()), "https://example.com/s.xml.gz", "application/xml", "", "a .gz URL whose body is not gzip"),
        (urlset(url()), "https://example.com/s.xml.gz", "application/xml", "gzip", "Content-Encoding: gzip"),
        (gzip.compress(urlset(url())), "https://example.com/s.xml", "application/xml", "gzip", "gzip twice"),
        (gzip.compress(urlset(url())), "https://example.com/s.xml", "text/xml; charset=utf-8", "", "served as"),
        (gzip.compress(urlset(url())), "https://example.com/s.xml.gz", "application/x-gzip", "", None),
        (gzip.compress(urlset(url())), "https://example.com/s", "application/octet-stream", "", None),
        (urlset(url()), "https://example.com/s.xml", "text/xml", "gzip", None),  # transport gzip: fine
    ],
)
def test_gzip_mislabelled(body: bytes, where: str, content_type: str, encoding: str, why: str | None) -> None:
    found = list(SiteAudit(None, now=NOW).audit_served(body, where, content_type, encoding))
    if why is None:
        assert found == []
    else:
        assert [f.rule for f in found] == ["gzip-mislabelled"] and why in found[0].detail


def test_gzip_encoding_on_a_body_that_is_not_gzip() -> None:
    found = list(SiteAudit(None, now=NOW).audit_undecodable("https://example.com/s.xml", "gzip"))
    assert [(f.rule, f.detail) for f in found] == [
        ("gzip-mislabelled", "Content-Encoding: gzip on a body that is not gzip")
    ]


def test_other_host_says_which_robots_txt_was_checked() -> None:
    declarations = SitemapDeclarations()  # shared by the sites of a run

    def other_host_details() -> list[str]:
        audit = SiteAudit(None, now=NOW, declarations=declarations)
        return [f.detail for f in audit.audit_sitemap(urlset(url("https://other.example/dir/a")), SITEMAP)]

    assert [("https://other.example/robots.txt was not read" in d) for d in other_host_details()] == [True]
    other = SiteAudit("https://other.example/", now=NOW, declarations=declarations)
    list(other.audit_robots(b"Sitemap: https://other.example/sitemap.xml\n", "https://other.example/robots.txt"))
    assert [("https://other.example/robots.txt was read and does not" in d) for d in other_host_details()] == [True]
    list(other.audit_robots(f"Sitemap: {SITEMAP}\n".encode(), "https://other.example/robots.txt"))
    assert other_host_details() == []  # cross-submission


ROBOTS = b"User-agent: *\nDisallow: /dir/private/\nSitemap: https://example.com/dir/sitemap.xml\n"


@pytest.mark.parametrize(
    ("rule", "broken", "sound"),
    [
        ("http-error", {"status": 404, "known_path": False}, {"status": 404}),  # a probe finding nothing is fine
        ("redirected", {"final_url": "https://example.com/dir/new.xml"}, {}),
        ("served-as-html", {"content_type": "text/html; charset=utf-8"}, {"content_type": "application/xml"}),
        ("sitemap-disallowed", {"url": "https://example.com/dir/private/s.xml", "known_path": False}, {}),
        ("known-path-only", {"url": "https://example.com/sitemap.xml"}, {"url": SITEMAP}),
    ],
)
def test_fetch_rules(rule: str, broken: dict[str, Any], sound: dict[str, Any]) -> None:
    def fetch(
        url: str = SITEMAP,
        final_url: str | None = None,
        status: int = 200,
        content_type: str = "text/xml",
        known_path: bool = True,
    ) -> list[str]:
        audit = SiteAudit(None, now=NOW)
        list(audit.audit_robots(ROBOTS, "https://example.com/robots.txt", "mybot"))
        found = audit.audit_fetch(url, final_url or url, status, content_type, known_path=known_path)
        return [f.rule for f in found]

    assert fetch(**broken) == [rule]
    assert fetch(**sound) == []


def test_an_http_error_after_a_redirect_names_the_url_that_answered() -> None:
    audit = SiteAudit(None, now=NOW)
    (found,) = audit.audit_fetch(SITEMAP, "https://example.com/gone.xml", 404)
    assert (found.rule, found.sitemap_url, found.url) == ("http-error", SITEMAP, "https://example.com/gone.xml")
    assert found.detail == "HTTP 404 at https://example.com/gone.xml (redirected)"


def test_a_download_that_failed_is_one_finding_per_url() -> None:
    # a declared sitemap that could not be downloaded (or that redirects to a dead host) had
    # no finding at all: the tree said "DNS lookup failed", the findings nothing
    audit = SiteAudit(None, now=NOW)
    found = [*audit.audit_download_failure(SITEMAP, "DNS lookup failed")]
    found += audit.audit_download_failure(SITEMAP, "DNS lookup failed")  # (listed twice)
    assert [(f.rule, f.severity, f.sitemap_url, f.url, f.detail) for f in found] == [
        ("download-failed", "error", SITEMAP, None, "DNS lookup failed")
    ]


def test_every_rule_has_a_case() -> None:
    covered = set(CASES) | {
        "nested-index",
        "duplicate-across-sitemaps",
        "no-sitemap-in-robots",
        "relative-sitemap-line",
        "index-lastmod-older",
        "hreflang-not-reciprocal",
        "page-disallowed",
        "gzip-mislabelled",
    }
    covered |= {
        "sitemap-disallowed",
        "known-path-only",
        "http-error",
        "redirected",
        "served-as-html",
        "download-failed",
    }
    # and all in one crawl: tests/test_crawl_audit.py::test_a_site_breaking_every_rule_once
    assert covered == {rule.id for rule in rules.RULES}


def test_docs_rules_table_is_the_rules() -> None:
    page = (Path(__file__).parent.parent / "docs" / "audit.md").read_text()
    assert rules.rules_table() in page


def test_robots_without_a_disallow_line_skips_the_page_check() -> None:
    assert not RobotsRules(b"User-agent: *\nDisallow:\nDisallow: # none\n", "bot").disallows_any
    assert RobotsRules(b"user-agent: *\n  DISALLOW : /x\n", "bot").disallows_any


def test_hreflang_back_links_in_either_order_and_repeats() -> None:
    audit = SiteAudit(None, now=NOW)
    a, b = "https://example.com/dir/a", "https://example.com/dir/b"
    body = urlset(
        url(b, _alternates(a)),  # B lists A before A lists B
        url(a, _alternates(b, b)),  # an href twice in one entry
        url(a, _alternates(b)),  # the page again (duplicate-in-sitemap): its alternates count once
    )
    assert [f.rule for f in audit.audit_sitemap(body, SITEMAP)] == ["duplicate-in-sitemap"]
    assert list(audit.finish()) == []


@pytest.mark.parametrize("b_first", [True, False])
def test_hreflang_of_a_page_listed_first_without_alternates(b_first: bool) -> None:
    # B in a plain sitemap first, then A and B listing each other in the hreflang one: B's
    # second listing was skipped as a repeat, so A "was not listed back" (in one order only)
    audit = SiteAudit(None, now=NOW)
    a, b = "https://example.com/dir/a", "https://example.com/dir/b"
    plain = urlset(url(b))
    pair = [url(a, _alternates(b)), url(b, _alternates(a))]
    hreflang = urlset(*(pair[::-1] if b_first else pair))
    assert list(audit.audit_sitemap(plain, SITEMAP)) == []
    assert [f.rule for f in audit.audit_sitemap(hreflang, CHILD)] == ["duplicate-across-sitemaps"]
    assert list(audit.finish()) == []


def test_hreflang_pairs_listed_twice_with_their_alternates_are_answered_once() -> None:
    # both sitemaps list A and B with each other as alternates; and C -> A in the second only
    audit = SiteAudit(None, now=NOW)
    a, b, c = "https://example.com/dir/a", "https://example.com/dir/b", "https://example.com/dir/c"
    body = urlset(url(a, _alternates(b)), url(b, _alternates(a)))
    list(audit.audit_sitemap(body, SITEMAP))
    list(audit.audit_sitemap(urlset(url(b, _alternates(a)), url(a, _alternates(b)), url(c, _alternates(a))), CHILD))
    assert [(f.rule, f.url) for f in audit.finish()] == [("hreflang-not-reciprocal", c)]


def test_hreflang_past_the_limit_of_repeats_waiting_is_not_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    # the waits of pages listed again were dropped silently past the limit: the pages that
    # answered them later became findings (10,000 false ones for 60,000 pairs)
    monkeypatch.setattr(auditor, "ALTERNATE_LIMIT", 2)
    audit = SiteAudit(None, now=NOW)
    english = [f"https://example.com/dir/en{i}" for i in range(4)]
    german = [f"https://example.com/dir/de{i}" for i in range(4)]
    list(audit.audit_sitemap(urlset(*map(url, english)), SITEMAP))
    list(
        audit.audit_sitemap(urlset(*(url(en, _alternates(de)) for en, de in zip(english, german, strict=True))), CHILD)
    )
    list(
        audit.audit_sitemap(urlset(*(url(de, _alternates(en)) for en, de in zip(english, german, strict=True))), MOVED)
    )
    assert list(audit.finish()) == []


def test_hreflang_limit_counts_only_alternates_waiting_for_a_back_link(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(auditor, "ALTERNATE_LIMIT", 2)
    audit = SiteAudit(None, now=NOW)
    pages = [f"https://example.com/dir/p{i}" for i in range(10)]
    pairs = [url(page, _alternates(pages[i ^ 1])) for i, page in enumerate(pages)]  # p0<->p1, p2<->p3...
    lonely = url("https://example.com/dir/x", _alternates(pages[0]))  # p0 does not list x
    list(audit.audit_sitemap(urlset(*pairs, lonely), SITEMAP))
    assert [(f.rule, f.url) for f in audit.finish()] == [("hreflang-not-reciprocal", "https://example.com/dir/x")]


def test_another_port_is_another_host() -> None:
    # a page on another port of the sitemap's host, and a robots.txt of one port vouching for another
    here = "http://localhost:8001/sitemap.xml"
    body = urlset(url("http://localhost:8002/a"), url("http://localhost:8003/b"), url("http://localhost:8001/c"))
    audit = SiteAudit(None, now=NOW)
    list(audit.audit_robots(f"Sitemap: {here}\n".encode(), "http://localhost:8003/robots.txt"))
    found = [(f.rule, f.url, f.detail) for f in audit.audit_sitemap(body, here)]
    assert found == [
        (
            "other-host",
            "http://localhost:8002/a",
            "host localhost:8002, the sitemap is on localhost:8001;"
            " http://localhost:8002/robots.txt was not read before this sitemap (cross-submission not checked)",
        )
    ]
    # the scheme's default port written out is the same host
    same = urlset(url("https://example.com:443/dir/a"), url("https://example.com/dir/b"))
    assert list(SiteAudit(None, now=NOW).audit_sitemap(same, "https://example.com:443/dir/sitemap.xml")) == []


def test_an_internationalised_host_is_its_ascii_form() -> None:
    # bücher.test is xn--bcher-kva.test: it was other-host (and a robots.txt read under the
    # ASCII name "not read"); the page still has characters to escape
    here = "http://xn--bcher-kva.test/sitemap.xml"
    body = urlset(url("http://bücher.test/b"), url("http://BÜCHER.test/c"), url("http://xn--bcher-kva.test/d"))
    audit = SiteAudit(None, now=NOW)
    assert [(f.rule, f.url) for f in audit.audit_sitemap(body, here)] == [
        ("unescaped-url", "http://bücher.test/b"),
        ("unescaped-url", "http://BÜCHER.test/c"),
    ]
    other = urlset(url("http://bücher.example/b"))
    assert [f.rule for f in SiteAudit(None, now=NOW).audit_sitemap(other, here)] == ["unescaped-url", "other-host"]


def test_a_robots_txt_vouches_for_its_own_port_only() -> None:
    declarations = SitemapDeclarations()
    declarations.add("http://localhost:8001/robots.txt", ["http://other.example/sitemap.xml"])
    assert declarations.declares("localhost:8001", "http://other.example/sitemap.xml")
    assert not declarations.declares("localhost:8002", "http://other.example/sitemap.xml")
    assert not declarations.read("localhost")


def test_a_sitemap_redirected_to_a_disallowed_url() -> None:
    audit = SiteAudit(None, now=NOW)
    list(audit.audit_robots(ROBOTS, "https://example.com/robots.txt", "mybot"))
    moved = "https://example.com/dir/private/s.xml"
    found = [(f.rule, f.sitemap_url, f.url) for f in audit.audit_fetch(SITEMAP, moved, 200, "text/xml")]
    assert found == [("redirected", SITEMAP, moved), ("sitemap-disallowed", SITEMAP, moved)]


def test_entries_without_a_loc() -> None:
    body = urlset("<url><lastmod>2024-05-01</lastmod></url>", "<url><loc> </loc></url>")
    found = [(f.rule, f.detail) for f in SiteAudit(None, now=NOW).audit_sitemap(body, SITEMAP)]
    assert found == [
        ("missing-loc", "<url> entry 1 has no <loc>"),
        ("missing-loc", "<url> entry 2 has an empty <loc>"),
        ("empty-sitemap", "<urlset> with no entry that has a <loc>"),
    ]
    bare = index("https://example.com/dir/a.xml").replace(b"<loc>", b"").replace(b"</loc>", b"")
    found = [(f.rule, f.detail) for f in SiteAudit(None, now=NOW).audit_sitemap(bare, SITEMAP)]
    assert found[0] == ("missing-loc", "<sitemap> entry 1 has no <loc>")


def test_entries_without_a_loc_are_not_counted_as_urls() -> None:
    located = [url(f"https://example.com/dir/{i}") for i in range(rules.MAX_URLS)]
    body = urlset(*located, "<url><lastmod>2024-05-01</lastmod></url>")
    assert findings_of(body) == ["missing-loc"]
    bare = "<sitemap><lastmod>2024-05-01</lastmod></sitemap>"
    children = index(*(f"https://example.com/dir/s{i}.xml" for i in range(rules.MAX_URLS)))
    assert findings_of(children.replace(b"</sitemapindex>", f"{bare}</sitemapindex>".encode())) == ["missing-loc"]


def test_a_page_listed_again_counts_once_in_the_lastmod_months() -> None:
    again = url("https://example.com/dir/p", "<lastmod>2024-06-01</lastmod>")
    body = urlset(again, again, again, url("https://example.com/dir/q", "<lastmod>2024-07-01</lastmod>"))
    audit = SiteAudit(None, now=NOW)
    list(audit.audit_sitemap(body, SITEMAP))
    assert audit.months == {"2024-06": 1, "2024-07": 1}
    # another sitemap listing it is another occurrence (as in the feed and the tree)
    list(audit.audit_sitemap(urlset(again), "https://example.com/dir/other.xml"))
    assert audit.months == {"2024-06": 2, "2024-07": 1}


def test_only_lastmods_that_are_days_of_the_calendar_count_in_the_months() -> None:
    # 2024-13-01, 2023-02-29 and 2024-04-31 are lastmod-format findings; they were counted
    # in the histogram all the same (a month 13)
    dates = ["2024-02-29", "2024-13-01", "2023-02-29", "2024-04-31", "2024-04-30"]
    body = urlset(*(url(f"https://example.com/dir/{i}", f"<lastmod>{date}</lastmod>") for i, date in enumerate(dates)))
    audit = SiteAudit(None, now=NOW)
    assert [finding.rule for finding in audit.audit_sitemap(body, SITEMAP)] == ["lastmod-format"] * 3
    assert audit.months == {"2024-02": 1, "2024-04": 1}
    again = url("https://example.com/dir/4", "<lastmod>2024-04-31</lastmod>")  # a bad one listed again
    list(audit.audit_sitemap(urlset(url("https://example.com/dir/4", "<lastmod>2024-04-30</lastmod>"), again), SITEMAP))
    assert audit.months == {"2024-02": 1, "2024-04": 2}


def test_a_local_sitemap_is_on_no_host() -> None:
    # -a sitemap_urls=file://...: a copy of a site's sitemaps, read from disk
    local = urlset(url("https://example.com/dir/a"), url("file:///data/part.xml"), url("part.xml"))
    found = [(f.rule, f.url) for f in SiteAudit(None, now=NOW).audit_sitemap(local, "file:///data/sitemap.xml")]
    assert found == [("relative-url", "part.xml")]
    remote = urlset(url("file:///data/part.xml"))
    found = [(f.rule, f.detail) for f in SiteAudit(None, now=NOW).audit_sitemap(remote, SITEMAP)]
    assert found == [("other-host", "a local file, the sitemap is on example.com")]
