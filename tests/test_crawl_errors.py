"""Failures and redirects, end to end: a declared sitemap that fails becomes an ``invalid``
node saying why, an incomplete one keeps its kind and pages, and the crawl goes on
(see docs/tree.md and docs/limits-and-security.md)."""

from __future__ import annotations

from pathlib import Path

from tests.support import Route, robots, sitemapindex, text_sitemap, urlset
from tests.support.crawl import CrawlRunner
from tests.support.fixture_server import SiteFactory
from tests.support.live_frames import FRAMES_STAT
from tests.support.spiders import run_spider
from tests.support.tree import node, robots_tree, tree_of, website_node

FAST = {"RETRY_TIMES": 0, "DOWNLOAD_TIMEOUT": 5}


def test_failed_declared_sitemaps_become_invalid_nodes_and_the_crawl_goes_on(
    fixture_site: SiteFactory, crawl: CrawlRunner
) -> None:
    declared = [
        "/missing.xml",
        "/broken.xml",
        "/ok.xml",
        "/html.xml",
        "/empty.xml",
        "/other-root.xml",
        "/words.txt",
        "/slow.xml",
        "/hang-up.xml",
        "/index.xml",
        "/redirect-to-missing.xml",
        "/garbage.xml",
        "/unfinished.xml",
        "/ok-too.xml",
    ]
    site = fixture_site(
        {
            "/robots.txt": robots(*("{base}" + path for path in declared)),
            # /missing.xml is not served: 404
            "/broken.xml": Route("<h1>Internal error</h1>", status=500),
            "/ok.xml": urlset("{base}/ok-1", "{base}/ok-2"),
            "/html.xml": Route("<!DOCTYPE html>\n<html><body>not a sitemap</body></html>", content_type="text/html"),
            "/empty.xml": "",
            "/other-root.xml": "<?xml version='1.0'?><catalog><book/></catalog>",
            "/words.txt": "no URL here\nnor here\n",
            "/slow.xml": Route(urlset("{base}/never"), delay=3),
            "/hang-up.xml": Route(urlset("{base}/never"), drop_connection=True),
            # failures nested in an index
            "/index.xml": sitemapindex("{base}/nested-404.xml", "{base}/nested-ok.xml", "{base}/nested-503.xml"),
            "/nested-ok.xml": urlset("{base}/nested-1"),
            "/nested-503.xml": Route(urlset("{base}/never"), fail_times=99),
            "/redirect-to-missing.xml": Route(redirect_to="/gone-for-good.xml"),
            "/garbage.xml": "<?xml version='1.0'?><<<not xml at all",
            # served whole, but the document stops in the middle: the pages before are kept
            "/unfinished.xml": "<urlset><url><loc>{base}/u1</loc></url><url><loc>{base}/u2</loc></url><url><lo",
            "/ok-too.xml": text_sitemap("{base}/ok-3"),
        }
    )

    result = crawl(
        {"homepage": site.base, "use_known_paths": False},
        settings={**FAST, "DOWNLOAD_TIMEOUT": 1},
    ).assert_ok()

    url = site.url
    assert result.tree == robots_tree(
        site.base,
        node(url("/missing.xml"), "invalid", error="HTTP 404"),
        node(url("/broken.xml"), "invalid", error="HTTP 500"),
        node(url("/ok.xml"), "xml_urlset", pages=2),
        node(url("/html.xml"), "invalid", error="not a sitemap"),
        node(url("/empty.xml"), "invalid", error="not a sitemap"),
        node(url("/other-root.xml"), "invalid", error="not a sitemap"),
        node(url("/words.txt"), "invalid", error="not a sitemap"),
        node(url("/slow.xml"), "invalid", error="timeout"),
        node(url("/hang-up.xml"), "invalid", error="connection error"),
        node(
            url("/index.xml"),
            "xml_index",
            node(url("/nested-404.xml"), "invalid", error="HTTP 404"),
            node(url("/nested-ok.xml"), "xml_urlset", pages=1),
            node(url("/nested-503.xml"), "invalid", error="HTTP 503"),
        ),
        node(url("/redirect-to-missing.xml"), "invalid", error="HTTP 404"),
        node(url("/garbage.xml"), "invalid", error="parse error"),
        node(url("/unfinished.xml"), "xml_urlset", error="truncated", pages=2),
        node(url("/ok-too.xml"), "text", pages=1),
    ), result.tree_text()
    assert sorted(result.urls()) == [url(path) for path in ("/nested-1", "/ok-1", "/ok-2", "/ok-3", "/u1", "/u2")]
    stats = result.stats
    assert stats["sitemap_crawl/errors/HTTP 404"] == 3
    assert stats["sitemap_crawl/errors/HTTP 500"] == 1
    assert stats["sitemap_crawl/errors/HTTP 503"] == 1
    assert stats["sitemap_crawl/errors/not a sitemap"] == 4
    assert stats["sitemap_crawl/errors/timeout"] == 1
    assert stats["sitemap_crawl/errors/connection error"] == 1
    assert stats["sitemap_crawl/errors/parse error"] == 1
    assert stats["sitemap_crawl/errors/truncated"] == 1
    assert stats["sitemap_crawl/sitemaps/invalid"] == 12
    assert stats["finish_reason"] == "finished"


def test_retries_keep_their_meaning(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/flaky.xml", "{base}/down.xml"),
            "/flaky.xml": Route(urlset("{base}/flaky-page"), fail_times=2),
            "/down.xml": Route(urlset("{base}/never"), fail_times=99, fail_status=500),
        }
    )

    result = crawl(
        {"homepage": site.base, "use_known_paths": False},
        settings={"RETRY_TIMES": 2, "DOWNLOAD_TIMEOUT": 5, "USER_AGENT": "sitemap-tests/1.0 (+local)"},
    ).assert_ok()

    assert result.urls() == [site.url("/flaky-page")]
    assert result.node(site.url("/flaky.xml"))[0]["error"] is None
    assert result.node(site.url("/down.xml"))[0]["error"] == "HTTP 500"
    assert site.hits("/flaky.xml") == 3
    assert site.hits("/down.xml") == 3
    assert {request.header("User-Agent") for request in site.requests} == {"sitemap-tests/1.0 (+local)"}


def test_redirects_are_followed_and_recorded_under_the_declared_url(
    fixture_site: SiteFactory, crawl: CrawlRunner
) -> None:
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/old.xml", "{base}/moved-index.xml", "{base}/loop-a.xml"),
            "/old.xml": Route(redirect_to="/new/sitemap.xml"),
            # relative locs resolve against the URL the sitemap was finally read from
            "/new/sitemap.xml": urlset("page-1", "{base}/page-2"),
            "/moved-index.xml": Route(redirect_to="{base}/real-index.xml", status=307),
            "/real-index.xml": sitemapindex("child.xml"),
            "/child.xml": Route(redirect_to="/child-final.xml", status=302),
            "/child-final.xml": urlset("{base}/child-page"),
            # a redirect cycle that never lands
            "/loop-a.xml": Route(redirect_to="/loop-b.xml"),
            "/loop-b.xml": Route(redirect_to="/loop-a.xml"),
        }
    )

    result = crawl(
        {"homepage": site.base, "use_known_paths": False},
        settings={**FAST, "REDIRECT_MAX_TIMES": 3},
    ).assert_ok()

    url = site.url
    assert result.tree == robots_tree(
        site.base,
        node(url("/old.xml"), "xml_urlset", pages=2),
        node(url("/moved-index.xml"), "xml_index", node(url("/child.xml"), "xml_urlset", pages=1)),
        node(url("/loop-a.xml"), "invalid", error="redirect limit"),
    ), result.tree_text()
    assert sorted((page["url"], page["sitemap_url"]) for page in result.pages) == [
        (url("/child-page"), url("/child.xml")),
        (url("/new/page-1"), url("/old.xml")),
        (url("/page-2"), url("/old.xml")),
    ]


def test_a_body_that_breaks_off_keeps_the_pages_before_the_break(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    xml = urlset(*(f"{{base}}/x{i}" for i in range(10)))
    text = text_sitemap(*(f"{{base}}/t{i}" for i in range(10)))
    site = fixture_site({"/robots.txt": robots("{base}/cut.xml", "{base}/cut.txt", "{base}/cut.xml.gz")})
    site["/cut.xml"] = Route(xml, drop_after=len(site.format(xml)) // 2)
    site["/cut.txt"] = Route(text, drop_after=len(site.format(text)) // 2 + 3)  # in the middle of a line
    big = urlset(*(f"{{base}}/g{i}" for i in range(300)))
    site["/cut.xml.gz"] = Route(big, gzip_file=True, drop_after=600)

    result = crawl({"homepage": site.base, "use_known_paths": False}, settings=FAST).assert_ok()

    by_sitemap: dict[str, list[str]] = {}
    for page in result.pages:
        by_sitemap.setdefault(page["sitemap_url"], []).append(page["url"])
    for path, kind, prefix in [
        ("/cut.xml", "xml_urlset", "x"),
        ("/cut.txt", "text", "t"),
        ("/cut.xml.gz", "xml_urlset", "g"),
    ]:
        (found,) = result.node(site.url(path))
        assert (found["kind"], found["error"]) == (kind, "truncated"), (path, result.tree_text())
        kept = by_sitemap.get(site.url(path), [])
        assert kept, path
        # every page before the break, in order, and no page cut in half
        assert kept == [site.url(f"/{prefix}{i}") for i in range(len(kept))], path
        assert found["page_count"] == len(kept)
    assert 0 < len(by_sitemap[site.url("/cut.xml")]) < 10
    assert len(by_sitemap[site.url("/cut.txt")]) == 5
    assert result.stats["sitemap_crawl/errors/truncated"] == 3
    for path in ("/cut.xml", "/cut.txt", "/cut.xml.gz"):  # (the text sitemap had none: it reads without error)
        assert result.log_has(f"WARNING: Sitemap {site.url(path)}: truncated"), path


def test_a_body_that_breaks_off_is_asked_for_again_as_scrapy_retries(
    fixture_site: SiteFactory, crawl: CrawlRunner
) -> None:
    # the connection closed after half the body, once: kept "truncated" with half its pages,
    # never asked again (Scrapy's RetryMiddleware asks again for a download that breaks off)
    xml = urlset(*(f"{{base}}/x{i}" for i in range(10)))
    site = fixture_site({"/robots.txt": robots("{base}/cut.xml", "{base}/always.xml")})
    site["/cut.xml"] = Route(xml, drop_after=len(site.format(xml)) // 2, fail_times=1)
    site["/always.xml"] = Route(xml, drop_after=len(site.format(xml)) // 2)
    result = crawl({"homepage": site.base, "use_known_paths": False}, settings={**FAST, "RETRY_TIMES": 1})
    result.assert_ok()
    assert site.hits("/cut.xml") == 2 and site.hits("/always.xml") == 2
    (whole,) = result.node(site.url("/cut.xml"))
    assert (whole["error"], whole["page_count"]) == (None, 10)
    (cut,) = result.node(site.url("/always.xml"))
    assert cut["error"] == "truncated" and 0 < cut["page_count"] < 10  # the retries spent: what came is kept
    assert result.stats["retry/reason_count/body broke off"] == 2


def test_a_start_url_that_fails_is_an_invalid_node(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    site = fixture_site({"/ok.xml": urlset("{base}/a")})

    result = crawl({"sitemap_urls": f"{site.url('/missing.xml')},{site.url('/ok.xml')}"}, settings=FAST).assert_ok()

    assert result.tree == website_node(
        site.base,
        node(site.url("/missing.xml"), "invalid", error="HTTP 404"),
        node(site.url("/ok.xml"), "xml_urlset", pages=1),
    )
    assert result.urls() == [site.url("/a")]


def test_a_body_that_is_not_its_content_encoding_says_why(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    # plain XML sent as deflate (or gzip) failed as "download error: error" (zlib's class name)
    body = urlset("{base}/a")
    site = fixture_site(
        {
            "/deflate.xml": Route(body, headers={"Content-Encoding": "deflate"}),
            "/gzip.xml": Route(body, headers={"Content-Encoding": "gzip"}),
        }
    )
    result = crawl({"sitemap_urls": f"{site.url('/deflate.xml')},{site.url('/gzip.xml')}"}, settings=FAST).assert_ok()
    assert result.tree is not None
    errors = [child["error"] for child in result.tree["sub_sitemaps"]]
    assert errors == [
        "download error: the body is not what its Content-Encoding says (zlib.error)",
        "download error: the body is not what its Content-Encoding says (gzip.BadGzipFile)",
    ]


def test_a_body_inflating_past_the_limit_is_not_kept_after_its_failure(
    fixture_site: SiteFactory, crawl: CrawlRunner
) -> None:
    # Scrapy raises IgnoreRequest from the error that stopped the inflating; that error's
    # frames held the body inflated so far until a rare full collection (6 such bodies of
    # 100 MiB: 700 MB peak)
    big = urlset(*(f"{{base}}/page-{number:06}" for number in range(40_000)))
    paths = [f"/big-{number}.xml" for number in range(4)]
    site = fixture_site(
        {
            "/robots.txt": robots(*("{base}" + path for path in paths)),
            **{path: Route(big, gzip_encoding=True) for path in paths},
        }
    )
    settings = {
        **FAST,
        "SITEMAP_CRAWL_MAX_SIZE": 256 * 1024,
        "SITEMAP_CRAWL_CONCURRENT_SITEMAPS": 1,
        "EXTENSIONS": {"tests.support.live_frames.DecompressionFrames": 0},
    }
    result = crawl({"homepage": site.url("/")}, settings=settings).assert_ok()

    robots_node = tree_of(result)["sub_sitemaps"][0]
    assert [child.get("error") for child in robots_node["sub_sitemaps"]] == ["size limit"] * 4
    assert result.stats[FRAMES_STAT] == 0


def test_an_unreachable_site_still_ends_cleanly(crawl: CrawlRunner, fixture_site: SiteFactory) -> None:
    site = fixture_site({})
    port = site.port
    site.stop()  # nothing listens there any more

    result = crawl({"homepage": f"http://127.0.0.1:{port}/"}, settings=FAST).assert_ok()

    # nothing else is probed there: the website node says why (docs/tree.md)
    assert result.tree == node(f"http://127.0.0.1:{port}/", "website", error="unreachable: connection refused")
    assert result.pages == []


def test_a_host_that_cannot_be_reached_is_asked_once_and_named_once(
    crawl: CrawlRunner, fixture_site: SiteFactory
) -> None:
    site = fixture_site({})
    port = site.port
    site.stop()

    result = crawl({"homepage": f"http://127.0.0.1:{port}/"}, settings={"RETRY_TIMES": 2}).assert_ok()

    # Scrapy would retry the refused robots.txt twice and log "Gave up retrying" as an ERROR
    assert result.stats["downloader/request_count"] == 1
    assert "retry/count" not in result.stats
    assert "Gave up retrying" not in result.log and "ERROR" not in result.log
    assert result.log.count(f"http://127.0.0.1:{port}/") >= 1


UNREQUESTABLE_START_URL = """
from sitemap_crawl.spiders.sitemaps import SitemapsSpider


class UnrequestableStart(SitemapsSpider):
    name = "unrequestable"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.start_sitemap_urls.append("file:sitemap.xml")  # past the argument check: Scrapy refuses it
"""


def test_a_sitemap_url_scrapy_cannot_request_fails_and_the_crawl_ends(
    fixture_site: SiteFactory, tmp_path: Path
) -> None:
    # the request raised in start(): its site waited for it forever, and the crawl never ended
    site = fixture_site({"/a.xml": urlset("{base}/a1")})

    result = run_spider(tmp_path, UNREQUESTABLE_START_URL, spider_args={"sitemap_urls": site.url("/a.xml")}, timeout=60)

    assert result.returncode == 0, result.log
    assert result.urls() == [site.url("/a1")]
    assert result.log_has("Cannot request the sitemap file:sitemap.xml")
