"""Spider arguments, end to end (see docs/arguments.md): homepage normalisation,
sitemap_urls (http, file, robots.txt), use_robots / use_known_paths / extra_known_paths,
follow / deny, boolean spellings, and bad arguments (one clear error line, no traceback)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from sitemap_crawl.arguments import SpiderArgumentError, parse_homepage, parse_sitemap_urls
from tests.support import Route, gzip_bytes, robots, sitemapindex, text_sitemap, urlset
from tests.support.crawl import CrawlRunner
from tests.support.fixture_server import SiteFactory
from tests.support.tree import node, robots_tree, website_node

FAST = {"RETRY_TIMES": 0, "DOWNLOAD_TIMEOUT": 5}
ONE_AT_A_TIME = {**FAST, "CONCURRENT_REQUESTS": 1}
KNOWN_PATH_COUNT = 14


# -- homepage ------------------------------------------------------------------------------


def test_homepage_is_reduced_to_the_site_root(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    site = fixture_site({"/robots.txt": robots("{base}/s.xml"), "/s.xml": urlset("{base}/a")})
    homepage = f"HTTP://127.0.0.1:{site.port}/Some/Deep/page.html?q=1#top"

    result = crawl({"homepage": homepage, "use_known_paths": False}, settings=FAST).assert_ok()

    assert result.tree == robots_tree(site.base, node(site.url("/s.xml"), "xml_urlset", pages=1))
    assert site.paths() == ["/robots.txt", "/s.xml"]


@pytest.mark.parametrize(
    ("homepage", "site"),
    [
        ("http://user:secret@www.example.org:8080/a?b#c", "http://www.example.org:8080/"),
        ("HTTP://WWW.Example.ORG:80/page", "http://www.example.org/"),
        ("https://www.example.org:443", "https://www.example.org/"),
        ("https://[::1]:8443/x", "https://[::1]:8443/"),
    ],
)
def test_the_site_root_has_no_user_password_or_default_port(homepage: str, site: str) -> None:
    # the website node and every row's website field kept "user:secret@" and ":80"
    assert parse_homepage(homepage, normalize=True) == site


@pytest.mark.parametrize(
    "homepage", ["https://exa mple.com/", "https://exa%20mple.com/", "http://:80/", "https://a<b>/"]
)
def test_a_host_no_name_can_hold_is_a_bad_homepage(homepage: str) -> None:
    # (a space in the host was taken, and each of its requests failed)
    with pytest.raises(SpiderArgumentError, match="is not an http"):
        parse_homepage(homepage, normalize=True)


@pytest.mark.parametrize(
    ("homepage", "normalize", "expected"),
    [
        ("http://bücher.test:8080/", True, "http://xn--bcher-kva.test:8080/"),
        ("https://BÜCHER.test/Katalog", True, "https://xn--bcher-kva.test/"),
        ("http://\uff42ücher.test/", True, "http://xn--bcher-kva.test/"),  # NFKC first, as w3lib
        ("https://xn--bcher-kva.test/", True, "https://xn--bcher-kva.test/"),
        ("http://user@bücher.test:8080/Katalog", False, "http://xn--bcher-kva.test:8080/Katalog/"),
        ("http://\u210cost.example/", True, "http://host.example/"),  # NFKC makes capitals: lowered too
        ("http://\U0001d404\U0001d417.com/", True, "http://ex.com/"),
    ],
)
def test_a_host_beyond_ascii_is_reduced_to_its_idna_form(homepage: str, normalize: bool, expected: str) -> None:
    # the website node and every row's website stayed in Unicode while the requests were punycode
    assert parse_homepage(homepage, normalize) == expected


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://127.0.0.1:99999/", "Port out of range 0-65535"),
        ("http://127.0.0.1:-1/", "Port could not be cast to integer value as '-1'"),
        ("http://[::1/", "Invalid IPv6 URL"),
    ],
)
def test_a_bad_port_or_bracket_is_said_as_such(url: str, why: str) -> None:
    # it was "is not an http(s) URL": the scheme was fine
    with pytest.raises(SpiderArgumentError, match=re.escape(f"homepage={url!r} is not a usable URL: {why}")):
        parse_homepage(url, normalize=True)
    with pytest.raises(
        SpiderArgumentError, match=re.escape(f"sitemap_urls: {url + 's.xml'!r} is not a usable URL: {why}")
    ):
        parse_sitemap_urls(url + "s.xml")


def test_a_host_that_is_not_a_valid_idn_is_a_bad_homepage() -> None:
    with pytest.raises(SpiderArgumentError, match="not a valid internationalised domain name"):
        parse_homepage("https://" + "ü" * 64 + ".test/", normalize=True)


@pytest.mark.parametrize("normalize", [True, False])
def test_a_user_and_password_leave_the_homepage_either_way(normalize: bool) -> None:
    # kept (lower-cased) without normalising: every request then failed in Scrapy's downloader
    expected = "http://127.0.0.1:8080/" if normalize else "http://127.0.0.1:8080/Blog/"
    assert parse_homepage("http://Alice:SeCrEt@127.0.0.1:8080/Blog", normalize) == expected


def test_a_homepage_with_a_password_is_mapped_without_normalising(
    fixture_site: SiteFactory, crawl: CrawlRunner
) -> None:
    site = fixture_site(
        {"/blog/robots.txt": robots("{base}/blog/declared.xml"), "/blog/declared.xml": urlset("{base}/a")}
    )
    homepage = site.base.replace("http://", "http://alice:secret@") + "/blog/"
    result = crawl({"homepage": homepage, "normalize_homepage": "false"}, settings=FAST).assert_ok()
    assert result.urls() == [site.url("/a")]


def test_normalize_homepage_false_keeps_the_path(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/root-only.xml"),
            "/blog/robots.txt": robots("{base}/blog/declared.xml"),
            "/blog/declared.xml": urlset("{base}/blog/a"),
            "/blog/sitemap.xml": urlset("{base}/blog/b"),
        }
    )

    result = crawl({"homepage": site.base + "/blog", "normalize_homepage": "false"}, settings=FAST).assert_ok()

    home = site.base + "/blog/"
    assert result.tree == node(
        home,
        "website",
        node(home + "robots.txt", "robots_txt", node(home + "declared.xml", "xml_urlset", pages=1)),
        node(home + "sitemap.xml", "xml_urlset", pages=1),
    ), result.tree_text()
    assert all(path.startswith("/blog/") for path in site.paths()), site.paths()
    assert len(site.paths()) == 2 + KNOWN_PATH_COUNT
    assert sorted(result.urls()) == [home + "a", home + "b"]


# -- booleans ------------------------------------------------------------------------------

BOOLEAN_CASES = [
    # use_robots, use_known_paths, normalize_homepage
    ("true", "false", "no"),
    ("1", "0", "0"),
    ("yes", "no", "false"),
    ("false", "true", "yes"),
    ("0", "1", "1"),
    ("no", "yes", "true"),
    ("TRUE", "FALSE", "NO"),
    ("No", "Yes", "True"),
]
TRUE_SPELLINGS = {"true", "1", "yes"}


def test_boolean_arguments_accept_every_spelling(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    runs = []
    for use_robots, use_known_paths, normalize in BOOLEAN_CASES:
        site = fixture_site({"/deep/robots.txt": robots(), "/robots.txt": robots()})
        running = crawl.start(
            {
                "homepage": site.base + "/deep/",
                "use_robots": use_robots,
                "use_known_paths": use_known_paths,
                "normalize_homepage": normalize,
            },
            settings=FAST,
        )
        runs.append((site, running, use_robots, use_known_paths, normalize))
    for site, running, use_robots, use_known_paths, normalize in runs:
        case = (use_robots, use_known_paths, normalize)
        running.wait(60).assert_ok()
        prefix = "/" if normalize.lower() in TRUE_SPELLINGS else "/deep/"
        paths = site.paths()
        assert all(path.startswith(prefix) for path in paths), (case, paths)
        robots_hits = site.hits(prefix + "robots.txt")
        assert robots_hits == (1 if use_robots.lower() in TRUE_SPELLINGS else 0), (case, paths)
        known = len(paths) - robots_hits
        assert known == (KNOWN_PATH_COUNT if use_known_paths.lower() in TRUE_SPELLINGS else 0), (case, paths)


def test_extra_known_paths_are_probed_even_without_the_standard_ones(
    fixture_site: SiteFactory, crawl: CrawlRunner
) -> None:
    site = fixture_site({"/maps/custom.xml": urlset("{base}/a"), "/sitemap.xml": urlset("{base}/never")})

    result = crawl(
        {"homepage": site.base, "use_known_paths": "no", "extra_known_paths": "maps/custom.xml,/missing.xml"},
        settings=ONE_AT_A_TIME,
    ).assert_ok()

    assert site.paths() == ["/robots.txt", "/maps/custom.xml", "/missing.xml"]
    assert result.tree == node(site.base + "/", "website", node(site.url("/maps/custom.xml"), "xml_urlset", pages=1))
    assert result.urls() == [site.url("/a")]


# -- sitemap_urls --------------------------------------------------------------------------


def test_sitemap_urls_skip_discovery(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/from-robots.xml"),
            "/sitemap.xml": urlset("{base}/known"),
            "/a.xml": urlset("{base}/a1", "{base}/a2"),
            "/b.txt": text_sitemap("{base}/b1"),
            "/c.xml": sitemapindex("{base}/c-child.xml"),
            "/c-child.xml": urlset("{base}/c1"),
        }
    )

    result = crawl(
        {"sitemap_urls": f"{site.base}/a.xml, {site.base}/b.txt,{site.base}/c.xml,{site.base}/a.xml"},
        settings=ONE_AT_A_TIME,
    ).assert_ok()

    assert result.tree == website_node(
        site.base,
        node(site.url("/a.xml"), "xml_urlset", pages=2),
        node(site.url("/b.txt"), "text", pages=1),
        node(site.url("/c.xml"), "xml_index", node(site.url("/c-child.xml"), "xml_urlset", pages=1)),
    ), result.tree_text()
    assert result.urls() == [site.url(path) for path in ("/a1", "/a2", "/b1", "/c1")]
    assert site.paths() == ["/a.xml", "/b.txt", "/c.xml", "/c-child.xml"]


def test_sitemap_urls_with_a_homepage_names_the_website_node(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    site = fixture_site({"/robots.txt": robots("{base}/x.xml"), "/a.xml": urlset("{base}/a1")})

    result = crawl(
        {"homepage": site.base + "/shop/index.html", "sitemap_urls": site.url("/a.xml")},
        settings=FAST,
    ).assert_ok()

    assert result.tree == node(site.base + "/", "website", node(site.url("/a.xml"), "xml_urlset", pages=1))
    assert site.paths() == ["/a.xml"]


def test_sitemap_urls_accept_file_urls(fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path) -> None:
    site = fixture_site({"/remote.xml": urlset("{base}/remote-page")})
    local = tmp_path / "local sitemaps"
    (local / "part").mkdir(parents=True)
    secret = tmp_path / "secret.xml"
    secret.write_text(urlset("http://secret.invalid/"), encoding="utf-8")
    (local / "part" / "child.xml").write_text(urlset(site.url("/local-page")), encoding="utf-8")
    # a local index may name files of its own folder (relative or file: URLs), no other file
    children = (site.url("/remote.xml"), "part/child.xml", secret.as_uri(), "../secret.xml")
    (local / "index.xml").write_text(sitemapindex(*children), encoding="utf-8")
    (local / "pages.xml.gz").write_bytes(gzip_bytes(urlset(site.url("/p1"), site.url("/p2"))))
    index_url = (local / "index.xml").as_uri()
    pages_url = (local / "pages.xml.gz").as_uri()
    child_url = (local / "part" / "child.xml").as_uri()

    result = crawl({"sitemap_urls": f"{index_url},{pages_url}"}, settings=ONE_AT_A_TIME).assert_ok()

    assert result.tree is not None
    assert result.tree["kind"] == "website"
    assert result.tree["sub_sitemaps"] == [
        node(
            index_url,
            "xml_index",
            node(site.url("/remote.xml"), "xml_urlset", pages=1),
            node(child_url, "xml_urlset", pages=1),
        ),
        node(pages_url, "xml_urlset", pages=2),
    ], result.tree_text()
    assert sorted((page["url"], page["sitemap_url"]) for page in result.pages) == [
        (site.url("/local-page"), child_url),
        (site.url("/p1"), pages_url),
        (site.url("/p2"), pages_url),
        (site.url("/remote-page"), site.url("/remote.xml")),
    ]


def test_a_local_file_over_the_cap_or_not_a_file_is_not_read(crawl: CrawlRunner, tmp_path: Path) -> None:
    # Scrapy's file handler read a whole file into memory, the cap applied after (a 600 MB
    # file: 698 MB of RSS); a pipe (or a device) was read until it ended, if ever
    (tmp_path / "big.xml").write_text(urlset(*(f"https://a.test/{i}" for i in range(2000))), encoding="utf-8")
    (tmp_path / "small.xml").write_text(urlset("https://a.test/small"), encoding="utf-8")
    os.mkfifo(tmp_path / "pipe.xml")
    (tmp_path / "index.xml").write_text(sitemapindex("big.xml", "pipe.xml", "small.xml"), encoding="utf-8")
    settings = {**ONE_AT_A_TIME, "SITEMAP_CRAWL_MAX_SIZE": 20_000}
    result = crawl({"sitemap_urls": (tmp_path / "index.xml").as_uri()}, settings=settings).assert_ok()
    assert result.tree is not None
    (index,) = result.tree["sub_sitemaps"]
    assert [(child["kind"], child["error"]) for child in index["sub_sitemaps"]] == [
        ("invalid", "size limit"),
        ("invalid", f"ignored: {tmp_path / 'pipe.xml'} is not a regular file: not read"),
        ("xml_urlset", None),
    ]
    assert result.urls() == ["https://a.test/small"]


@pytest.mark.parametrize(
    ("url", "read_as"),
    [
        ("file:///data/sitemap.xml", "file:///data/sitemap.xml"),
        ("FILE:///data/a%20b.xml", "FILE:///data/a%20b.xml"),
        # RFC 8089, read by Scrapy's SitemapSpider: it was refused for want of //, then read
        # as two sitemaps (file:/... asked for, file:///... answered from)
        ("file:/data/sitemap.xml", "file:///data/sitemap.xml"),
    ],
)
def test_a_file_url_of_an_absolute_path_is_a_start_url(url: str, read_as: str) -> None:
    assert parse_sitemap_urls(url) == [read_as]


def test_a_start_url_given_twice_is_read_once() -> None:
    given = "https://example.com/a.xml,file:/data/s.xml,https://example.com/b.xml,https://example.com/a.xml,file:///data/s.xml"
    assert parse_sitemap_urls(given) == ["https://example.com/a.xml", "file:///data/s.xml", "https://example.com/b.xml"]
    spelt = "https://example.com/café.xml,https://example.com/caf%C3%A9.xml,https://example.com/a.xml#top,https://example.com/a.xml"
    assert parse_sitemap_urls(spelt) == ["https://example.com/café.xml", "https://example.com/a.xml#top"]
    cased = (
        "HTTPS://Example.COM/a.xml,https://example.com/a.xml,https://example.com/A.xml,file:///D/s.xml,file:///d/s.xml"
    )
    assert parse_sitemap_urls(cased) == [
        "HTTPS://Example.COM/a.xml",
        "https://example.com/A.xml",
        "file:///D/s.xml",
        "file:///d/s.xml",
    ]


def test_sitemap_urls_may_name_a_robots_txt(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/a.xml", "/b.xml"),
            "/a.xml": urlset("{base}/a1"),
            "/b.xml": urlset("{base}/b1"),
            "/sitemap.xml": urlset("{base}/known"),
        }
    )

    result = crawl({"sitemap_urls": site.url("/robots.txt")}, settings=ONE_AT_A_TIME).assert_ok()

    assert result.tree == website_node(
        site.base,
        node(
            site.url("/robots.txt"),
            "robots_txt",
            node(site.url("/a.xml"), "xml_urlset", pages=1),
            node(site.url("/b.xml"), "xml_urlset", pages=1),
        ),
    )
    assert result.urls() == [site.url("/a1"), site.url("/b1")]
    assert site.paths() == ["/robots.txt", "/a.xml", "/b.xml"]


def test_a_local_robots_txt_may_name_files_of_its_folder(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    site = fixture_site({"/remote.xml": urlset("{base}/remote-page")})
    local = tmp_path / "maps"
    local.mkdir()
    (tmp_path / "outside.xml").write_text(urlset(site.url("/secret")), encoding="utf-8")
    (local / "s.xml").write_text(urlset(site.url("/s1")), encoding="utf-8")
    (local / "t.xml").write_text(urlset(site.url("/t1")), encoding="utf-8")
    # ("..\\outside.xml", ".\t./outside.xml": the URL Scrapy requests reads them as ../outside.xml:
    # they were taken for files of the folder, and the file outside was read)
    lines = ["s.xml", (local / "t.xml").as_uri(), "../outside.xml", "..\\outside.xml", site.url("/remote.xml")]
    (local / "robots.txt").write_text("".join(f"Sitemap: {line}\n" for line in lines), encoding="utf-8")

    result = crawl({"sitemap_urls": (local / "robots.txt").as_uri()}, settings=ONE_AT_A_TIME).assert_ok()

    # its own folder's files were left unread (a robots_txt node with no child, nothing said)
    assert result.tree is not None
    assert [child["url"] for child in result.tree["sub_sitemaps"][0]["sub_sitemaps"]] == [
        (local / "s.xml").as_uri(),
        (local / "t.xml").as_uri(),
        site.url("/remote.xml"),
    ]
    assert sorted(result.urls()) == [site.url("/remote-page"), site.url("/s1"), site.url("/t1")]


# -- follow / deny -------------------------------------------------------------------------


def test_follow_and_deny_choose_the_sub_sitemaps_fetched(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    site = fixture_site(
        {
            # robots.txt's own sitemaps and the known paths are not sub-sitemaps: never filtered
            "/robots.txt": robots("{base}/sitemap_index.xml"),
            "/sitemap_index.xml": sitemapindex(
                "{base}/products-1.xml",
                "{base}/posts.xml",
                "{base}/products-old.xml",
                "{base}/all-products-2.xml",
            ),
            "/products-1.xml": sitemapindex("{base}/products-1a.xml", "{base}/blog.xml"),
            "/products-1a.xml": urlset("{base}/p1a"),
            "/all-products-2.xml": urlset("{base}/p2"),
            "/posts.xml": urlset("{base}/post"),
            "/products-old.xml": urlset("{base}/old"),
            "/blog.xml": urlset("{base}/blog"),
            "/sitemap-news.xml": urlset("{base}/news"),
        }
    )

    result = crawl({"homepage": site.base, "follow": "products", "deny": r"old|\.txt$"}, settings=FAST).assert_ok()

    base = site.base
    assert result.tree == robots_tree(
        base,
        node(
            base + "/sitemap_index.xml",
            "xml_index",
            node(base + "/products-1.xml", "xml_index", node(base + "/products-1a.xml", "xml_urlset", pages=1)),
            node(base + "/all-products-2.xml", "xml_urlset", pages=1),  # follow is a search, not a full match
        ),
        known=[node(base + "/sitemap-news.xml", "xml_urlset", pages=1)],
    ), result.tree_text()
    assert sorted(result.urls()) == [base + "/news", base + "/p1a", base + "/p2"]
    for path in ("/posts.xml", "/products-old.xml", "/blog.xml"):
        assert site.hits(path) == 0, path


# -- bad arguments -------------------------------------------------------------------------

BAD_ARGUMENTS = {
    "no homepage": ({}, "homepage"),
    "ftp homepage": ({"homepage": "ftp://example.org/"}, "homepage"),
    "homepage not a valid IDN": ({"homepage": "https://" + "ü" * 64 + ".test/"}, "homepage"),
    "broken follow regex": ({"homepage": "http://127.0.0.1:9/", "follow": "(products"}, "follow"),
    "broken deny regex": ({"homepage": "http://127.0.0.1:9/", "deny": "[a-"}, "deny"),
    "bad boolean": ({"homepage": "http://127.0.0.1:9/", "use_robots": "maybe"}, "use_robots"),
    # an empty boolean was taken for the default
    "empty use_robots": ({"homepage": "http://127.0.0.1:9/", "use_robots": ""}, "use_robots=''"),
    "empty use_known_paths": ({"homepage": "http://127.0.0.1:9/", "use_known_paths": ""}, "use_known_paths=''"),
    "empty normalize_homepage": ({"homepage": "http://127.0.0.1:9/", "normalize_homepage": ""}, "normalize_homepage"),
    "ftp sitemap url": ({"sitemap_urls": "ftp://example.org/sitemap.xml"}, "sitemap_urls"),
    # passed the check, then a traceback at start and a crawl that never ended
    "file URL without //": ({"sitemap_urls": "file:sitemap.xml"}, "sitemap_urls: 'file:sitemap.xml'"),
    "http URL without //": (
        {"sitemap_urls": "http://127.0.0.1:9/a.xml,http:127.0.0.1:9/b.xml"},
        "sitemap_urls: 'http:127.0.0.1:9/b.xml'",
    ),
    # a traceback at start, nothing mapped, exit code 0
    "extra known path no URL holds": (
        {"homepage": "http://127.0.0.1:9/", "extra_known_paths": "sitemap.xml,http://[::1"},
        "extra_known_paths: 'http://[::1'",
    ),
}


@pytest.mark.parametrize("case", list(BAD_ARGUMENTS))
def test_a_bad_argument_stops_the_crawl_with_one_error_line(crawl: CrawlRunner, case: str) -> None:
    arguments, named = BAD_ARGUMENTS[case]

    result = crawl(arguments, settings=FAST, timeout=60)

    assert result.returncode != 0
    assert "Traceback" not in result.log, result.log
    errors = result.log_lines("ERROR") + result.log_lines("CRITICAL")
    assert len(errors) == 1, result.log
    assert named in errors[0]
    assert result.log.count("\n", result.log.index(errors[0])) == 1, "the error line is the last line of the log"
    assert result.tree is None
    assert not result.log_has("Spider opened")


def test_a_valid_regex_with_special_characters_is_accepted(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/index.xml"),
            "/index.xml": sitemapindex("{base}/a.xml?page=1", "{base}/a.xml?page=2"),
            "/a.xml?page=1": urlset("{base}/one"),
            "/a.xml?page=2": Route(urlset("{base}/two")),
        }
    )

    result = crawl(
        {"homepage": site.base, "use_known_paths": False, "follow": r"\?page=\d$", "deny": r"page=2"},
        settings=FAST,
    ).assert_ok()

    assert result.urls() == [site.url("/one")]
    assert site.hits("/a.xml?page=2") == 0


def test_with_robots_and_known_paths_off_nothing_is_fetched(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    site = fixture_site({"/robots.txt": robots("{base}/s.xml"), "/sitemap.xml": urlset("{base}/a")})

    result = crawl({"homepage": site.base, "use_robots": "no", "use_known_paths": "0"}, settings=FAST).assert_ok()

    assert site.paths() == []
    assert result.tree == node(site.base + "/", "website")
    assert result.pages == []
    assert any("nothing will be fetched" in line for line in result.log_lines("WARNING")), result.log[-3000:]
