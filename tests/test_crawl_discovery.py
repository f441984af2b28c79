"""Discovery, end to end: robots.txt ``Sitemap:`` lines, then the well-known paths, under
one ``website`` node (see docs/arguments.md and docs/tree.md).

Every test runs the real ``scrapy crawl sitemaps`` command against a local fixture site.
"""

from __future__ import annotations

import pytest

from tests.support import CrawlResult, Route, gzip_bytes, robots, sitemapindex, text_sitemap, urlset
from tests.support.crawl import CrawlRunner
from tests.support.fixture_server import RouteLike, SiteFactory, closed_port
from tests.support.tree import child_urls, children, node, robots_of, robots_tree, tree_of, website_node

FAST = {"RETRY_TIMES": 0, "DOWNLOAD_TIMEOUT": 5}
ONE_AT_A_TIME = {**FAST, "CONCURRENT_REQUESTS": 1}

KNOWN_PATHS = [
    "sitemap.xml",
    "sitemap.xml.gz",
    "sitemap_index.xml",
    "sitemap-index.xml",
    "sitemap_index.xml.gz",
    "sitemap-index.xml.gz",
    ".sitemap.xml",
    "sitemap",
    "admin/config/search/xmlsitemap",
    "sitemap/sitemap-index.xml",
    "sitemap_news.xml",
    "sitemap-news.xml",
    "sitemap_news.xml.gz",
    "sitemap-news.xml.gz",
]
"""The well-known paths, in their documented fixed order (docs/arguments.md)."""


def top_level(result: CrawlResult) -> list[tuple[str, str]]:
    assert result.tree is not None, result.log[-3000:]
    return children(tree_of(result))


def test_robots_sitemap_lines_in_every_spelling_in_file_order(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    robots_txt = (
        "User-agent: *\n"
        "Disallow: /private\n"
        "Sitemap: {base}/one.xml\n"
        "sitemap:{base}/two.xml\r\n"
        "SITEMAP :   {base}/three.xml   # the third one\n"
        "  SiteMap\t:\t/four.xml\n"
        "Sitemap: {base}/one.xml\n"  # a duplicate: ignored
        "# Sitemap: {base}/commented-out.xml\n"
        "sitemap: five.xml#fragment-free comment\n"
    )
    routes: dict[str, RouteLike] = {"/robots.txt": robots_txt}
    names = ["one", "two", "three", "four", "five"]
    for name in names:
        routes[f"/{name}.xml"] = urlset(f"{{base}}/page-{name}")
    site = fixture_site(routes)

    result = crawl({"homepage": site.base, "use_known_paths": False}, settings=ONE_AT_A_TIME).assert_ok()

    base = site.base
    assert result.tree == robots_tree(
        base,
        *(node(f"{base}/{name}.xml", "xml_urlset", pages=1) for name in names),
    ), result.tree_text()
    assert result.urls() == [f"{base}/page-{name}" for name in names]
    # fetched once each, in file order, robots.txt first
    assert site.paths() == ["/robots.txt"] + [f"/{name}.xml" for name in names]
    assert site.hits("/commented-out.xml") == 0


def test_known_paths_are_probed_in_the_fixed_order_then_extra_paths(
    fixture_site: SiteFactory, crawl: CrawlRunner
) -> None:
    site = fixture_site({"/robots.txt": robots()})  # a robots.txt without Sitemap: lines

    result = crawl(
        {"homepage": site.base, "extra_known_paths": "custom/map.xml, /other.xml"},
        settings=ONE_AT_A_TIME,
    ).assert_ok()

    expected = ["/robots.txt"] + [f"/{path}" for path in KNOWN_PATHS] + ["/custom/map.xml", "/other.xml"]
    assert site.paths() == expected
    # nothing was found: the tree is the website node and the robots.txt that names no
    # sitemap (kept, with no children, so that an auditor sees it); the feed is empty
    assert result.tree == node(site.base + "/", "website", node(site.url("/robots.txt"), "robots_txt"))
    assert result.pages == []


def test_known_paths_skip_urls_seen_under_robots_also_after_redirects(
    fixture_site: SiteFactory, crawl: CrawlRunner
) -> None:
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/sitemap.xml", "{base}/moved.xml", "{base}/sitemap_index.xml.gz"),
            # /sitemap_index.xml.gz: declared under robots.txt, not served (404): not probed again either
            # declared by robots.txt directly
            "/sitemap.xml": sitemapindex("{base}/sitemap-news.xml"),
            # seen under robots.txt one level down
            "/sitemap-news.xml": urlset("{base}/news-1"),
            # declared under robots.txt, lands on a known path after a redirect
            "/moved.xml": Route(redirect_to="/sitemap_index.xml"),
            "/sitemap_index.xml": urlset("{base}/moved-1"),
            # a known path that redirects to a URL seen under robots.txt: left out
            "/sitemap.xml.gz": Route(redirect_to="{base}/sitemap.xml", status=302),
            # a known path nobody declared: found
            "/sitemap_news.xml": urlset("{base}/known-1"),
        }
    )

    result = crawl({"homepage": site.base}, settings=FAST).assert_ok()

    base = site.base
    assert result.tree == robots_tree(
        base,
        node(base + "/sitemap.xml", "xml_index", node(base + "/sitemap-news.xml", "xml_urlset", pages=1)),
        node(base + "/moved.xml", "xml_urlset", pages=1),
        node(base + "/sitemap_index.xml.gz", "invalid", error="HTTP 404"),
        known=[node(base + "/sitemap_news.xml", "xml_urlset", pages=1)],
    ), result.tree_text()
    assert sorted(result.urls()) == sorted([base + "/news-1", base + "/moved-1", base + "/known-1"])
    # URLs seen under robots.txt are not even requested again as known paths...
    assert site.hits("/sitemap-news.xml") == 1
    assert site.hits("/sitemap_index.xml") == 1  # (through the redirect of /moved.xml)
    assert site.hits("/sitemap_index.xml.gz") == 1
    # ...a known path is requested, and dropped when it redirects to one
    assert site.hits("/sitemap.xml.gz") == 1
    # every other known path was probed once
    for path in KNOWN_PATHS:
        if path not in ("sitemap.xml", "sitemap-news.xml", "sitemap_index.xml", "sitemap_index.xml.gz"):
            assert site.hits("/" + path) == 1, path


def test_failed_known_paths_are_left_out_of_the_tree(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    site = fixture_site(
        {
            # sitemap.xml: not served (404)
            "/sitemap.xml.gz": Route("oops", status=500),
            "/sitemap_index.xml": Route("<!DOCTYPE html><html><body>Home</body></html>", content_type="text/html"),
            "/sitemap-index.xml": "",
            "/sitemap_index.xml.gz": "no URL here\njust words\n",
            "/sitemap-index.xml.gz": Route(redirect_to="/nowhere"),  # redirect to a 404
            "/.sitemap.xml": urlset("{base}/dot"),
            "/sitemap": Route(text_sitemap("{base}/plain"), content_type="text/html"),
            "/sitemap_news.xml": "<rss version='2.0'><channel></channel></rss>",  # a feed without items
            # a catch-all redirect to the home page, an HTML page
            "/sitemap/sitemap-index.xml": Route(redirect_to="/"),
            "/": Route("<html><body>Welcome</body></html>", content_type="text/html"),
        }
    )

    result = crawl({"homepage": site.base}, settings=FAST).assert_ok()

    base = site.base
    assert result.tree == website_node(
        base,
        node(base + "/.sitemap.xml", "xml_urlset", pages=1),
        node(base + "/sitemap", "text", pages=1),
    ), result.tree_text()
    assert sorted(result.urls()) == [base + "/dot", base + "/plain"]
    assert not [key for key in result.stats if key.startswith("sitemap_crawl/errors/")]
    assert result.stats["sitemap_crawl/sitemaps"] == 2


def test_failed_robots_txt_is_left_out_and_one_without_sitemaps_stays(
    fixture_site: SiteFactory, crawl: CrawlRunner
) -> None:
    failures: dict[str, RouteLike] = {
        "/404/robots.txt": Route("gone", status=404, content_type="text/plain"),
        "/500/robots.txt": Route("boom", status=500, content_type="text/plain"),
        "/html/robots.txt": Route("<html><head><title>Home</title></head><body>Hi</body></html>"),
        "/empty/robots.txt": Route("", content_type="text/plain"),
        "/url-less/robots.txt": robots(extra="Disallow: /private\nCrawl-delay: 3\n"),
    }
    routes: dict[str, RouteLike] = dict(failures)
    for prefix in ("/404", "/500", "/html", "/empty", "/url-less"):
        routes[f"{prefix}/sitemap.xml"] = urlset(f"{{base}}{prefix}/page")
    site = fixture_site(routes)

    runs = {
        prefix: crawl.start(
            {"homepage": f"{site.base}{prefix}/", "normalize_homepage": False, "use_known_paths": False},
            {"extra_known_paths": "sitemap.xml"},
            settings=FAST,
        )
        for prefix in ("/404", "/500", "/html", "/empty", "/url-less")
    }
    for prefix, running in runs.items():
        result = running.wait(60).assert_ok()
        home = f"{site.base}{prefix}/"
        known = node(home + "sitemap.xml", "xml_urlset", pages=1)
        if prefix in ("/empty", "/url-less"):
            # it answered as a robots.txt: it stays, with no children ("names no sitemap")
            assert result.tree == node(home, "website", node(home + "robots.txt", "robots_txt"), known), prefix
        else:
            assert result.tree == node(home, "website", known), prefix
        assert result.urls() == [home + "page"]
        assert site.hits(f"{prefix}/robots.txt") == 1


def test_robots_txt_and_known_paths_hang_under_one_website_node(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/declared.xml"),
            "/declared.xml": urlset("{base}/a"),
            "/sitemap.xml": urlset("{base}/b"),
            "/sitemap-news.xml": urlset("{base}/c"),
        }
    )

    result = crawl({"homepage": site.base + "/some/page.html?x=1"}, settings=FAST).assert_ok()

    assert result.tree is not None
    assert (result.tree["url"], result.tree["kind"], result.tree["error"]) == (site.base + "/", "website", None)
    assert top_level(result) == [
        (site.url("/robots.txt"), "robots_txt"),
        (site.url("/sitemap.xml"), "xml_urlset"),  # known paths follow robots.txt, in the fixed order
        (site.url("/sitemap-news.xml"), "xml_urlset"),
    ]
    assert child_urls(robots_of(tree_of(result))) == [site.url("/declared.xml")]
    assert sorted(result.urls()) == [site.url("/a"), site.url("/b"), site.url("/c")]


def test_robots_sitemaps_are_read_before_the_known_paths(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    # a slow robots.txt subtree: known paths still wait for all of it
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/slow-index.xml"),
            "/slow-index.xml": Route(sitemapindex("{base}/slow-child.xml"), delay=0.3),
            "/slow-child.xml": Route(urlset("{base}/a"), delay=0.3),
            "/sitemap.xml": urlset("{base}/b"),
        }
    )

    result = crawl({"homepage": site.base}, settings=FAST).assert_ok()

    paths = site.paths()
    assert paths[:3] == ["/robots.txt", "/slow-index.xml", "/slow-child.xml"]
    assert sorted(paths[3:]) == sorted("/" + path for path in KNOWN_PATHS)
    assert result.urls() == [site.url("/a"), site.url("/b")]


def test_a_site_that_cannot_be_reached_is_not_probed_further(crawl: CrawlRunner) -> None:
    home = f"http://127.0.0.1:{closed_port()}/"

    result = crawl({"homepage": home}, settings=FAST).assert_ok()

    assert result.tree == node(home, "website", error="unreachable: connection refused")
    assert result.stats["downloader/request_count"] == 1  # robots.txt (no retry here); no well-known path
    warnings = [line for line in result.log.splitlines() if "WARNING" in line and "unreachable" in line]
    assert len(warnings) == 1 and home in warnings[0], warnings
    assert result.stats["sitemap_crawl/errors/unreachable"] == 1
    assert "Problems: 1 unreachable" in result.log


def test_without_robots_txt_a_site_that_cannot_be_reached_is_unreachable(crawl: CrawlRunner) -> None:
    # every well-known path refused: it was "Problems: none", like a site without sitemaps
    home = f"http://127.0.0.1:{closed_port()}/"
    result = crawl({"homepage": home, "use_robots": "false"}, settings=FAST).assert_ok()
    assert result.tree == node(home, "website", error="unreachable: connection refused")
    assert "Problems: 1 unreachable" in result.log


def test_fallback_mode_probes_the_known_paths_only_without_robots_sitemaps(
    fixture_site: SiteFactory, crawl: CrawlRunner
) -> None:
    declared = fixture_site(
        {"/robots.txt": robots("{base}/declared.xml"), "/declared.xml": urlset("{base}/a"), "/sitemap.xml": urlset()}
    )
    silent = fixture_site({"/robots.txt": robots(), "/sitemap.xml": urlset("{base}/b")})
    settings = {**FAST, "SITEMAP_CRAWL_KNOWN_PATHS_MODE": "fallback"}

    with_sitemaps = crawl({"homepage": declared.base}, settings=settings).assert_ok()
    without = crawl({"homepage": silent.base}, settings=settings).assert_ok()

    assert declared.paths() == ["/robots.txt", "/declared.xml"]
    assert with_sitemaps.urls() == [declared.url("/a")]
    assert silent.paths()[0] == "/robots.txt"
    assert sorted(silent.paths()[1:]) == sorted("/" + path for path in KNOWN_PATHS)
    assert without.urls() == [silent.url("/b")]


@pytest.mark.parametrize("gzipped", [False, True])
def test_a_well_known_path_over_the_size_cap_is_an_invalid_node_with_the_error(
    fixture_site: SiteFactory, crawl: CrawlRunner, gzipped: bool
) -> None:
    # the site's only sitemap; it vanished ("Problems: none", no page, nothing said)
    big: str | bytes = urlset(*(f"https://example.com/page-{i}" for i in range(60)))
    if gzipped:  # small on the wire, its first entry past the cap once decompressed
        big = gzip_bytes(big.replace("<url>", "<!--" + "x" * 2000 + "--><url>", 1))
    site = fixture_site({"/robots.txt": robots(), "/sitemap.xml": big})
    result = crawl({"homepage": site.base}, settings={**FAST, "SITEMAP_CRAWL_MAX_SIZE": 1000})
    result.assert_ok()
    known = tree_of(result)["sub_sitemaps"][1:]
    assert [(child["url"], child["kind"], child["error"]) for child in known] == [
        (site.url("/sitemap.xml"), "invalid", "size limit")
    ]
    assert "Problems: 1 size limit." in result.log
    assert result.urls() == []


@pytest.mark.parametrize("setting", ["SITEMAP_CRAWL_MAX_SIZE", "DOWNLOAD_MAXSIZE"])
def test_a_robots_txt_over_the_size_cap_is_a_robots_txt_node_with_the_error(
    fixture_site: SiteFactory, crawl: CrawlRunner, setting: str
) -> None:
    site = fixture_site({"/robots.txt": robots("{base}/a.xml") + "# filler\n" * 40, "/a.xml": urlset("{base}/a")})
    result = crawl({"homepage": site.base, "use_known_paths": False}, settings={**FAST, setting: 200})
    result.assert_ok()
    # it vanished from the tree, and the log said "Problems: none"
    assert children(tree_of(result)) == [(site.url("/robots.txt"), "robots_txt")]
    assert robots_of(tree_of(result))["error"] == "size limit"
    assert result.stats["sitemap_crawl/errors/size limit"] == 1
    assert "Problems: 1 size limit." in result.log


def test_a_gzip_robots_txt_over_the_size_cap_once_inflated_is_a_robots_txt_node_with_the_error(
    fixture_site: SiteFactory, crawl: CrawlRunner
) -> None:
    # small on the wire (gzip bytes, no Content-Encoding), its Sitemap: line past the cap
    # once decompressed: it vanished from the tree, with no WARNING ("Problems: none")
    body = gzip_bytes("# filler\n" * 40 + robots("{base}/a.xml"))
    site = fixture_site({"/robots.txt": body, "/a.xml": urlset("{base}/a")})
    result = crawl({"homepage": site.base, "use_known_paths": False}, settings={**FAST, "SITEMAP_CRAWL_MAX_SIZE": 200})
    result.assert_ok()
    assert children(tree_of(result)) == [(site.url("/robots.txt"), "robots_txt")]
    assert robots_of(tree_of(result))["error"] == "size limit"
    assert "Problems: 1 size limit." in result.log
    assert result.urls() == []


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("SITEMAP_CRAWL_KNOWN_PATHS_MODE", "sometimes", "must be always or fallback, not 'sometimes'"),
        # a number it cannot read: tracebacks, exit code 0; one out of range: taken as it was
        ("SITEMAP_CRAWL_MAX_SIZE", "8KB", "must be a positive whole number, not '8KB'"),
        ("SITEMAP_CRAWL_MAX_DEPTH", "-1", "must be a whole number from 0 to 100, not '-1'"),
        ("DOWNLOAD_MAXSIZE", "abc", "must be a whole number of bytes, 0 or more (0: no cap), not 'abc'"),
    ],
)
def test_a_bad_setting_stops_the_crawl_with_one_line(
    fixture_site: SiteFactory, crawl: CrawlRunner, name: str, value: str, message: str
) -> None:
    site = fixture_site({})
    result = crawl({"homepage": site.base}, settings={**FAST, name: value})
    assert result.returncode == 1
    errors = [line for line in result.log.splitlines() if " ERROR: " in line]
    assert len(errors) == 1 and errors[0].endswith(f"Bad setting for the sitemaps spider: {name} {message}"), errors
    assert "Traceback" not in result.log
    assert site.paths() == []


def test_sitemap_urls_no_request_can_be_made_of_do_not_stop_the_crawl(
    fixture_site: SiteFactory, crawl: CrawlRunner
) -> None:
    # Scrapy's Request raises ValueError on these: the crawl hung, its sitemap never done
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/sitemap.xml", "https://[broken/robots.xml"),
            "/sitemap.xml": sitemapindex("https://[broken/x.xml", "https://127.0.0.1:99999/y.xml", "{base}/pages.xml"),
            "/pages.xml": urlset("{base}/a", "https://[broken/page", "{base}/b"),
        }
    )
    result = crawl({"homepage": site.base}, settings=FAST, timeout=60)
    result.assert_ok()
    assert sorted(page["url"] for page in result.pages) == [site.url("/a"), site.url("/b")]


def test_no_url_of_a_redirect_chain_under_robots_is_probed_again(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/old.xml"),
            "/old.xml": Route(redirect_to="/sitemap.xml"),
            "/sitemap.xml": Route(redirect_to="/sitemap_index.xml"),
            "/sitemap_index.xml": urlset("{base}/p"),
        }
    )

    result = crawl({"homepage": site.base}, settings=FAST).assert_ok()

    assert result.tree == robots_tree(site.base, node(site.base + "/old.xml", "xml_urlset", pages=1))
    assert (site.hits("/sitemap.xml"), site.hits("/sitemap_index.xml")) == (1, 1)


def test_a_known_path_redirected_to_another_known_path_is_read_once(
    fixture_site: SiteFactory, crawl: CrawlRunner
) -> None:
    # WordPress/Yoast: /sitemap.xml -> 301 /sitemap_index.xml, robots.txt without Sitemap:
    site = fixture_site(
        {
            "/robots.txt": "User-agent: *\nDisallow: /wp-admin/\n",
            "/sitemap.xml": Route(redirect_to="/sitemap_index.xml"),
            "/sitemap_index.xml": sitemapindex("{base}/post-sitemap.xml"),
            "/post-sitemap.xml": urlset("{base}/post-1", "{base}/post-2"),
            "/.sitemap.xml": Route(redirect_to="/sitemap"),
            "/sitemap": urlset("{base}/p"),
        }
    )

    result = crawl({"homepage": site.base}, settings=FAST).assert_ok()

    base = site.base
    assert top_level(result) == [
        (base + "/robots.txt", "robots_txt"),
        (base + "/sitemap_index.xml", "xml_index"),
        (base + "/sitemap", "xml_urlset"),
    ]
    assert sorted(result.urls()) == [base + "/p", base + "/post-1", base + "/post-2"]
    assert site.hits("/post-sitemap.xml") == 1


def test_two_known_paths_redirected_to_one_url_name_it_by_their_order_not_their_answers(
    fixture_site: SiteFactory, crawl: CrawlRunner
) -> None:
    # the first to answer kept it: the node's name (and a history's rows) changed from run to run
    site = fixture_site(
        {
            "/robots.txt": "User-agent: *\n",
            "/sitemap.xml": Route(redirect_to="/real.xml", delay=0.7),  # (first in the known paths' order)
            "/sitemap_index.xml": Route(redirect_to="/real.xml"),
            "/real.xml": urlset("{base}/a", "{base}/b"),
        }
    )

    result = crawl({"homepage": site.base}, settings=FAST).assert_ok()

    base = site.base
    assert top_level(result) == [(base + "/robots.txt", "robots_txt"), (base + "/sitemap.xml", "xml_urlset")]
    assert result.urls() == [base + "/a", base + "/b"]


@pytest.mark.parametrize(
    "args", [{"since": "2024-01-01"}, {"deny": r"sitemap\.xml"}], ids=["older than since", "denied"]
)
def test_a_sitemap_listed_under_robots_but_not_fetched_is_not_probed_as_a_known_path(
    fixture_site: SiteFactory, crawl: CrawlRunner, args: dict[str, str]
) -> None:
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/idx.xml"),
            "/idx.xml": sitemapindex({"loc": "{base}/sitemap.xml", "lastmod": "2020-01-01"}, "{base}/new.xml"),
            "/sitemap.xml": urlset("{base}/old-undated-page"),
            "/new.xml": urlset({"loc": "{base}/new-page", "lastmod": "2025-01-01"}),
        }
    )

    result = crawl({"homepage": site.base, **args}, settings=FAST).assert_ok()

    assert site.hits("/sitemap.xml") == 0
    assert result.urls() == [site.base + "/new-page"]
    assert [url for url, _ in top_level(result)] == [site.base + "/robots.txt"]
