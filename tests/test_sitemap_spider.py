"""sitemap_crawl.SitemapSpider: behaviour parity with scrapy.spiders.SitemapSpider on the
examples of Scrapy's documentation (the same spider body is run with both classes against
the same fixture site), then what ours adds: every format, homepage discovery, the page
item in meta, handled accounting, resumption with JOBDIR, progress in the log."""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from sitemap_crawl.loader import STATE_FIELDS, read_saved_state
from tests.support import FixtureServer, Route, atom, robots, rss, sitemapindex, text_sitemap, urlset
from tests.support.crawl import CrawlResult
from tests.support.fixture_server import SiteFactory
from tests.support.spiders import (
    read_lines,
    recording_spider,
    run_spider,
    serve_paged_sitemaps,
    sitemap_spider,
    start_spider,
    wait_for_lines,
)

HTML = "<html><body>page {base}</body></html>"

CALLBACKS = """
    def parse(self, response):
        yield {"cb": "parse", "url": response.url}

    def parse_product(self, response):
        yield {"cb": "parse_product", "url": response.url}

    def parse_category(self, response):
        yield {"cb": "parse_category", "url": response.url}

    def parse_shop(self, response):
        yield {"cb": "parse_shop", "url": response.url}

    def parse_other(self, response):
        yield {"cb": "parse_other", "url": response.url}
"""


def spider_source(module: str, body: str) -> str:
    return (
        "from datetime import datetime\n"
        "from scrapy import Request\n"
        f"from {module} import SitemapSpider\n\n\n"
        "class DocSpider(SitemapSpider):\n"
        '    name = "doc"\n' + textwrap.indent(textwrap.dedent(body), "    ") + CALLBACKS
    )


def visits(result: CrawlResult) -> list[tuple[str, str]]:
    result.assert_ok()
    return sorted((row["cb"], row["url"]) for row in result.pages)


def crawl_both(tmp_path: Path, body: str, settings: dict[str, Any] | None = None) -> tuple[Any, Any]:
    theirs = run_spider(tmp_path / "scrapy", spider_source("scrapy.spiders", body), settings=settings)
    ours = run_spider(tmp_path / "ours", spider_source("sitemap_crawl", body), settings=settings)
    return visits(theirs), visits(ours)


def with_pages(site: FixtureServer, *paths: str) -> FixtureServer:
    for path in paths:
        site[path] = Route(HTML, content_type="text/html")
    return site


# -- parity with Scrapy's documented examples ------------------------------------------------


def test_docs_simplest_example_every_url_to_parse(fixture_site: SiteFactory, tmp_path: Path) -> None:
    site = with_pages(
        fixture_site({"/sitemap.xml": urlset("{base}/a", "{base}/b", {"loc": "{base}/c", "lastmod": "2024-01-01"})}),
        "/a",
        "/b",
        "/c",
    )
    theirs, ours = crawl_both(tmp_path, f'sitemap_urls = ["{site.url("/sitemap.xml")}"]\n')
    assert ours == theirs == [("parse", site.url(p)) for p in ("/a", "/b", "/c")]


@pytest.mark.parametrize(
    "where",
    [
        """
        @classmethod
        def from_crawler(cls, crawler, *args, **kwargs):
            spider = super().from_crawler(crawler, *args, **kwargs)
            spider.sitemap_urls = [crawler.settings.get("MY_SITEMAP")]
            return spider
        """,
        """
        async def start(self):
            self.sitemap_urls = [self.settings.get("MY_SITEMAP")]
            async for request in super().start():
                yield request
        """,
    ],
    ids=["from_crawler", "start"],
)
def test_sitemap_urls_set_after_init_are_read(fixture_site: SiteFactory, tmp_path: Path, where: str) -> None:
    # Scrapy's spider reads sitemap_urls in start(); ours had made its loader before: nothing was read
    site = with_pages(fixture_site({"/sitemap.xml": urlset("{base}/a", "{base}/b")}), "/a", "/b")
    theirs, ours = crawl_both(tmp_path, where, settings={"MY_SITEMAP": site.url("/sitemap.xml")})
    assert ours == theirs == [("parse", site.url("/a")), ("parse", site.url("/b"))]


@pytest.mark.parametrize("own_filter", [False, True])
def test_since_keeps_the_newer_pages_and_skips_older_index_children(
    fixture_site: SiteFactory, tmp_path: Path, own_filter: bool
) -> None:
    # -a since was silently ignored by the drop-in
    site = with_pages(
        fixture_site(
            {
                "/index.xml": sitemapindex(
                    {"loc": "{base}/old.xml", "lastmod": "2020-01-01"},
                    {"loc": "{base}/new.xml", "lastmod": "2025-01-01"},
                ),
                "/old.xml": urlset({"loc": "{base}/old-page", "lastmod": "2025-02-01"}),
                "/new.xml": urlset(
                    {"loc": "{base}/fresh", "lastmod": "2025-02-01"},
                    {"loc": "{base}/stale", "lastmod": "2019-05-01"},
                    "{base}/undated",
                ),
            }
        ),
        "/fresh",
        "/stale",
        "/undated",
        "/old-page",
    )
    body = f'sitemap_urls = ["{site.url("/index.xml")}"]\n'
    if own_filter:  # it sees what since keeps (it was given the old pages too)
        body += "def sitemap_filter(self, entries):\n"
        body += "    for entry in entries:\n"
        body += "        assert entry.get('lastmod', '2099') >= '2024', entry\n"
        body += "        yield entry\n"
    source = spider_source("sitemap_crawl", body)
    result = run_spider(tmp_path, source, spider_args={"since": "2024-06-01", "since_undated": "drop"})
    assert visits(result) == [("parse", site.url("/fresh"))]
    assert "/old.xml" not in [request.path for request in site.requests]
    assert result.stats["sitemap_crawl/since/pages_dropped"] == 2


@pytest.mark.parametrize("undated", ["keep", "drop"])
def test_since_with_alternate_links(fixture_site: SiteFactory, tmp_path: Path, undated: str) -> None:
    # a listed alternate that since drops was requested anyway as an alternate of a kept page
    links = '<xhtml:link rel="alternate" hreflang="{lang}" href="{{base}}/{lang}"/>'
    en = {"loc": "{base}/en", "lastmod": "2025-01-01", "extra": links.format(lang="de") + links.format(lang="fr")}
    site = with_pages(
        fixture_site({"/sitemap.xml": urlset(en, {"loc": "{base}/de", "lastmod": "2019-01-01"})}), "/en", "/de", "/fr"
    )
    body = f"""
    sitemap_urls = ["{site.url("/sitemap.xml")}"]
    sitemap_alternate_links = True
    """
    source = spider_source("sitemap_crawl", body)
    result = run_spider(tmp_path, source, spider_args={"since": "2024-01-01", "since_undated": undated})
    expected = [("parse", site.url("/en"))] + ([("parse", site.url("/fr"))] if undated == "keep" else [])
    assert visits(result) == expected  # /fr: listed by no entry, so undated


def test_a_bad_since_is_one_error_line(tmp_path: Path) -> None:
    result = run_spider(
        tmp_path,
        spider_source("sitemap_crawl", 'sitemap_urls = ["http://127.0.0.1:9/s.xml"]\n'),
        spider_args={"since": "last tuesday"},
    )
    assert result.returncode == 1
    assert "since" in result.log and "Traceback" not in result.log


def test_a_broken_deny_regex_is_one_error_line(tmp_path: Path) -> None:
    result = run_spider(
        tmp_path,
        spider_source("sitemap_crawl", 'sitemap_urls = ["http://127.0.0.1:9/s.xml"]\n'),
        spider_args={"sitemap_deny": "shop("},
    )
    assert result.returncode == 1
    assert "sitemap_deny='shop(' is not a valid regular expression" in result.log
    assert "Traceback" not in result.log


def test_a_homepage_set_in_start_is_mapped(fixture_site: SiteFactory, tmp_path: Path) -> None:
    site = with_pages(fixture_site({"/robots.txt": robots("{base}/s.xml"), "/s.xml": urlset("{base}/a")}), "/a")
    body = f"""
        async def start(self):
            self.homepage = "{site.base}"
            async for request in super().start():
                yield request
    """
    result = run_spider(tmp_path, spider_source("sitemap_crawl", body))
    assert visits(result) == [("parse", site.url("/a"))]


def test_docs_rules_example(fixture_site: SiteFactory, tmp_path: Path) -> None:
    site = with_pages(
        fixture_site(
            {
                "/sitemap.xml": urlset(
                    "{base}/product/1",
                    "{base}/category/shoes",
                    "{base}/product/2",
                    "{base}/about",
                    "{base}/x/product/3",
                )
            }
        ),
        "/product/1",
        "/product/2",
        "/category/shoes",
        "/about",
        "/x/product/3",
    )
    body = f"""
    sitemap_urls = ["{site.url("/sitemap.xml")}"]
    sitemap_rules = [
        ("/product/", "parse_product"),
        ("/category/", "parse_category"),
    ]
    """
    theirs, ours = crawl_both(tmp_path, body)
    assert ours == theirs
    assert ("parse_product", site.url("/x/product/3")) in ours  # regexes search, not match
    assert all(url != site.url("/about") for _, url in ours)  # no rule: not requested


def test_docs_robots_and_follow_example(fixture_site: SiteFactory, tmp_path: Path) -> None:
    site = with_pages(
        fixture_site(
            {
                "/robots.txt": robots("{base}/sitemap_index.xml", "{base}/sitemap_blog.xml"),
                "/sitemap_index.xml": sitemapindex("{base}/sitemap_shops.xml", "{base}/sitemap_other.xml"),
                "/sitemap_shops.xml": urlset("{base}/shop/1", "{base}/shop/2", "{base}/misc"),
                "/sitemap_other.xml": urlset("{base}/shop/3"),
                "/sitemap_blog.xml": urlset("{base}/shop/4", "{base}/blog/1"),
            }
        ),
        "/shop/1",
        "/shop/2",
        "/shop/3",
        "/shop/4",
        "/misc",
        "/blog/1",
    )
    body = f"""
    sitemap_urls = ["{site.url("/robots.txt")}"]
    sitemap_rules = [("/shop/", "parse_shop")]
    sitemap_follow = ["/sitemap_shops"]
    """
    theirs, ours = crawl_both(tmp_path, body)
    assert ours == theirs
    # follow applies to index entries only: robots.txt's sitemap_blog.xml is read
    assert ours == [("parse_shop", site.url(p)) for p in ("/shop/1", "/shop/2", "/shop/4")]


def test_a_start_that_asks_for_sitemaps_with_parse_sitemap_as_scrapy(fixture_site: SiteFactory, tmp_path: Path) -> None:
    # Scrapy's private callback, used to give sitemap requests headers or cookies: ours had none
    site = with_pages(
        fixture_site(
            {
                "/robots.txt": robots("{base}/sitemap_index.xml"),
                "/sitemap_index.xml": sitemapindex("{base}/sitemap_shops.xml", "{base}/sitemap_other.xml"),
                "/sitemap_shops.xml": urlset("{base}/shop/1", "{base}/shop/2", "{base}/misc", "{base}/shop/1"),
                "/sitemap_other.xml": urlset("{base}/shop/3"),
            }
        ),
        "/shop/1",
        "/shop/2",
        "/shop/3",
        "/misc",
    )
    body = f"""
    sitemap_rules = [("/shop/", "parse_shop")]
    sitemap_follow = ["/sitemap_shops"]

    async def start(self):
        yield Request("{site.url("/robots.txt")}", callback=self._parse_sitemap, headers={{"X-Token": "t"}})
    """
    theirs, ours = crawl_both(tmp_path, body)
    assert ours == theirs == [("parse_shop", site.url(p)) for p in ("/shop/1", "/shop/2")]
    robots_asked = [request for request in site.requests if request.path == "/robots.txt"]
    assert robots_asked and all(request.headers.get("X-Token") == "t" for request in robots_asked)


def test_parse_sitemap_gives_sitemap_filter_no_robots_lines(fixture_site: SiteFactory, tmp_path: Path) -> None:
    # robots.txt's Sitemap: lines went to sitemap_filter: Scrapy's documented filter (it
    # reads entry["lastmod"]) raised KeyError and nothing was crawled
    site = with_pages(
        fixture_site(
            {
                "/robots.txt": robots("{base}/index.xml"),
                "/index.xml": sitemapindex(
                    {"loc": "{base}/new.xml", "lastmod": "2025-01-01"},
                    {"loc": "{base}/old.xml", "lastmod": "2019-01-01"},
                ),
                "/new.xml": urlset(
                    {"loc": "{base}/a", "lastmod": "2025-01-02"}, {"loc": "{base}/b", "lastmod": "2018-01-01"}
                ),
                "/old.xml": urlset({"loc": "{base}/c", "lastmod": "2025-01-02"}),
            }
        ),
        "/a",
        "/b",
        "/c",
    )
    body = f"""
    def sitemap_filter(self, entries):
        for entry in entries:
            if entry["lastmod"] >= "2024":
                yield entry

    async def start(self):
        yield Request("{site.url("/robots.txt")}", callback=self._parse_sitemap)
    """
    theirs, ours = crawl_both(tmp_path, body)
    assert ours == theirs == [("parse", site.url("/a"))]


def test_docs_combine_with_other_sources_example(fixture_site: SiteFactory, tmp_path: Path) -> None:
    site = with_pages(
        fixture_site(
            {
                "/robots.txt": robots("{base}/sitemap.xml"),
                "/sitemap.xml": urlset("{base}/shop/1", "{base}/about"),
            }
        ),
        "/shop/1",
        "/about",
        "/other",
    )
    body = f"""
    sitemap_urls = ["{site.url("/robots.txt")}"]
    sitemap_rules = [("/shop/", "parse_shop")]
    other_urls = ["{site.url("/other")}"]

    async def start(self):
        async for item_or_request in super().start():
            yield item_or_request
        for url in self.other_urls:
            yield Request(url, self.parse_other)
    """
    theirs, ours = crawl_both(tmp_path, body)
    assert ours == theirs == [("parse_other", site.url("/other")), ("parse_shop", site.url("/shop/1"))]


def test_docs_sitemap_filter_by_lastmod_example(fixture_site: SiteFactory, tmp_path: Path) -> None:
    site = with_pages(
        fixture_site(
            {
                "/sitemap.xml": urlset(
                    {"loc": "{base}/old", "lastmod": "2004-12-31"},
                    {"loc": "{base}/new", "lastmod": "2005-01-01"},
                    {"loc": "{base}/newer", "lastmod": "2019-07-01"},
                    {"loc": "http://localhost:1/offsite", "lastmod": "2020-01-01"},
                )
            }
        ),
        "/old",
        "/new",
        "/newer",
    )
    body = f"""
    allowed_domains = ["127.0.0.1"]
    sitemap_urls = ["{site.url("/sitemap.xml")}"]

    def sitemap_filter(self, entries):
        for entry in entries:
            date_time = datetime.strptime(entry["lastmod"], "%Y-%m-%d")
            if date_time.year >= 2005:
                yield entry
    """
    theirs, ours = crawl_both(tmp_path, body)
    assert ours == theirs == [("parse", site.url("/new")), ("parse", site.url("/newer"))]


def test_sitemap_filter_gets_the_texts_as_written_as_in_scrapy(fixture_site: SiteFactory, tmp_path: Path) -> None:
    # Scrapy's documented filter parses the site's own lastmod format: entries carry the
    # texts as written (stripped), a key only for an element present ("" when empty)
    site = with_pages(
        fixture_site(
            {
                "/index.xml": sitemapindex(
                    {"loc": "{base}/new.xml", "lastmod": "2024-05-01T10:00:00Z"},
                    {"loc": "{base}/old.xml", "lastmod": "2001-05-01T10:00:00Z"},
                ),
                "/new.xml": urlset(
                    {
                        "loc": "{base}/new",
                        "lastmod": " 2024-05-01T10:00:00Z ",
                        "changefreq": "Daily",
                        "priority": "high",
                        "extra": "<image:image><image:loc>{base}/i.png</image:loc></image:image>",
                    },
                    {"loc": "{base}/old", "lastmod": "2001-05-01T10:00:00Z"},
                    {"loc": "{base}/undated", "extra": "<priority></priority>"},
                ),
                "/old.xml": urlset("{base}/in-old-sitemap"),
            }
        ),
        "/new",
        "/old",
        "/undated",
        "/in-old-sitemap",
    )
    body = f"""
    sitemap_urls = ["{site.url("/index.xml")}"]

    def sitemap_filter(self, entries):
        import json
        for entry in entries:
            self.logger.info("ENTRY %s", json.dumps(entry, sort_keys=True))
            if "lastmod" not in entry or datetime.strptime(entry["lastmod"], "%Y-%m-%dT%H:%M:%SZ").year >= 2005:
                yield entry
    """
    theirs = run_spider(tmp_path / "scrapy", spider_source("scrapy.spiders", body))
    ours = run_spider(tmp_path / "ours", spider_source("sitemap_crawl", body))

    def entries(result: CrawlResult) -> list[dict[str, Any]]:
        return sorted(
            (json.loads(line.split("ENTRY ", 1)[1]) for line in result.log_lines("INFO") if "ENTRY " in line), key=str
        )

    assert visits(ours) == visits(theirs) == [("parse", site.url("/new")), ("parse", site.url("/undated"))]
    assert entries(ours) == entries(theirs)
    assert {"loc": site.url("/undated"), "priority": ""} in entries(ours)
    assert "Error while reading the sitemap" not in ours.log


@pytest.mark.parametrize("alternate", [True, False])
def test_docs_alternate_links_example(fixture_site: SiteFactory, tmp_path: Path, alternate: bool) -> None:
    link = '<xhtml:link rel="alternate" hreflang="de" href="{base}/de"/>'
    site = with_pages(fixture_site({"/sitemap.xml": urlset({"loc": "{base}/", "extra": link})}), "/", "/de")
    body = f"""
    sitemap_urls = ["{site.url("/sitemap.xml")}"]
    sitemap_alternate_links = {alternate}
    """
    theirs, ours = crawl_both(tmp_path, body)
    expected = [("parse", site.url("/"))] + ([("parse", site.url("/de"))] if alternate else [])
    assert ours == theirs == sorted(expected)


def test_alternate_links_follow_every_link_as_scrapy_does(fixture_site: SiteFactory, tmp_path: Path) -> None:
    # Scrapy's sitemap_alternate_links follows every xhtml:link href: a mobile link without
    # hreflang too, though the page item's alternates (hreflang only) leave it out
    links = (
        '<xhtml:link rel="alternate" media="only screen and (max-width: 640px)" href="{base}/m/"/>'
        '<xhtml:link rel="alternate" hreflang="nl" href="{base}/nl/"/>'
    )
    site = with_pages(fixture_site({"/sitemap.xml": urlset({"loc": "{base}/", "extra": links})}), "/", "/m/", "/nl/")
    body = f"""
    sitemap_urls = ["{site.url("/sitemap.xml")}"]
    sitemap_alternate_links = True
    sitemap_rules = [("", "parse_with_page")]

    def parse_with_page(self, response):
        page = response.meta.get("sitemap_page")
        alternates = [[a.hreflang, a.href] for a in page.alternates] if page is not None else None
        yield {{"cb": "parse", "url": response.url, "alternates": alternates}}
    """
    theirs = run_spider(tmp_path / "scrapy", spider_source("scrapy.spiders", body))
    ours = run_spider(tmp_path / "ours", spider_source("sitemap_crawl", body))
    expected = sorted(("parse", site.url(path)) for path in ("/", "/m/", "/nl/"))
    assert visits(ours) == visits(theirs) == expected
    alternates = {row["url"]: row["alternates"] for row in ours.pages}
    assert alternates[site.url("/")] == [["nl", site.url("/nl/")]]


def test_an_alternate_listed_as_an_entry_gets_its_own_values(fixture_site: SiteFactory, tmp_path: Path) -> None:
    # /de, an alternate of /en listed after it, was requested as /en's alternate with /en's
    # lastmod and priority (its own entry dropped as a repeat); /fr, listed nowhere, still is
    links = (
        '<xhtml:link rel="alternate" hreflang="de" href="{base}/de"/>'
        '<xhtml:link rel="alternate" hreflang="fr" href="{base}/fr"/>'
    )
    entries = (
        {"loc": "{base}/en", "lastmod": "2024-01-01", "priority": "0.9", "extra": links},
        {"loc": "{base}/de", "lastmod": "2024-02-02", "priority": "0.1"},
    )
    site = with_pages(fixture_site({"/sitemap.xml": urlset(*entries)}), "/en", "/de", "/fr")
    body = f"""
    sitemap_urls = ["{site.url("/sitemap.xml")}"]
    sitemap_alternate_links = True
    sitemap_rules = [("", "parse_with_page")]

    def parse_with_page(self, response):
        page = response.meta["sitemap_page"]
        yield {{"cb": "parse", "url": response.url, "values": [page.last_modified, page.priority]}}
    """
    ours = run_spider(tmp_path / "ours", spider_source("sitemap_crawl", body))
    values = {row["url"]: row["values"] for row in ours.pages}
    assert values == {
        site.url("/en"): ["2024-01-01", 0.9],
        site.url("/de"): ["2024-02-02", 0.1],
        site.url("/fr"): [None, 0.5],
    }


def test_index_gzip_and_sitemap_filter_on_index_entries(fixture_site: SiteFactory, tmp_path: Path) -> None:
    site = with_pages(
        fixture_site(
            {
                "/index.xml": sitemapindex(
                    {"loc": "{base}/a.xml.gz", "lastmod": "2024-01-01"},
                    {"loc": "{base}/b.xml", "lastmod": "2001-01-01"},
                ),
                "/a.xml.gz": Route(urlset("{base}/a1", "{base}/a2"), gzip_file=True),
                "/b.xml": urlset("{base}/b1"),
            }
        ),
        "/a1",
        "/a2",
        "/b1",
    )
    body = f"""
    sitemap_urls = ["{site.url("/index.xml")}"]

    def sitemap_filter(self, entries):
        for entry in entries:
            if entry.get("lastmod", "2024") >= "2002":
                yield entry
    """
    theirs, ours = crawl_both(tmp_path, body)
    assert ours == theirs == [("parse", site.url("/a1")), ("parse", site.url("/a2"))]


@pytest.mark.parametrize("filter_duplicates", [False, True])
def test_allowed_domains_for_sitemaps_and_page_redirects_as_scrapy(
    fixture_site: SiteFactory, tmp_path: Path, filter_duplicates: bool
) -> None:
    # Scrapy's spider never fetches an off-site sitemap and drops a page's off-site redirect
    # (its OffsiteMiddleware); the dropped page counts as handled at once, not written off
    site = with_pages(
        fixture_site(
            {
                "/index.xml": sitemapindex("http://other.test:{port}/offsite.xml", "{base}/sm.xml"),
                "//other.test/offsite.xml": urlset("{base}/from-offsite-sitemap"),
                "/sm.xml": urlset("{base}/ok", "{base}/moves", "http://other.test:{port}/listed-offsite"),
                "/moves": Route(redirect_to="http://other.test:{port}/landed"),
                "//other.test/landed": Route(HTML, content_type="text/html"),
            }
        ),
        "/ok",
        "/from-offsite-sitemap",
    )
    body = f"""
    allowed_domains = ["127.0.0.1"]
    sitemap_urls = ["{site.url("/index.xml")}"]
    sitemap_filter_duplicates = {filter_duplicates}
    """
    settings = {"TWISTED_DNS_RESOLVER": "tests.support.dns.LoopbackResolver", "LOG_LEVEL": "DEBUG"}
    theirs = run_spider(tmp_path / "scrapy", spider_source("scrapy.spiders", body), settings=settings)
    fetched_by_scrapy = sorted(request.path for request in site.requests)
    site.reset()
    ours = run_spider(tmp_path / "ours", spider_source("sitemap_crawl", body), settings=settings)
    assert visits(ours) == visits(theirs) == [("parse", site.url("/ok"))]
    assert sorted(request.path for request in site.requests) == fetched_by_scrapy
    assert not [r for r in site.requests if (r.header("Host") or "").startswith("other.test")]
    assert "Filtered offsite request to 'other.test'" in ours.log
    assert not [line for line in ours.log_lines("WARNING") if "offsite" in line.lower()]
    assert "ended without a callback" not in ours.log
    assert ours.stats["sitemap_crawl/loader/pages_handled"] == ours.stats["sitemap_crawl/loader/pages_queued"] == 2
    # the page the sitemap lists off-site is counted as Scrapy's OffsiteMiddleware counts it
    offsite = ("offsite/filtered", "offsite/domains")
    assert [ours.stats.get(key) for key in offsite] == [theirs.stats.get(key) for key in offsite]


@pytest.mark.parametrize("policy", ["disabled", "own should_follow"])
def test_listed_pages_follow_the_crawls_offsite_policy_as_scrapy(
    fixture_site: SiteFactory, tmp_path: Path, policy: str
) -> None:
    # ours applied allowed_domains with a regex of its own: with Scrapy's OffsiteMiddleware
    # disabled, or replaced by a project's subclass, it still left the other host's page out
    site = with_pages(fixture_site({"/sm.xml": urlset("{base}/a", "http://other.test:{port}/b")}), "/a")
    site["//other.test/b"] = Route(HTML, content_type="text/html")
    body = f"""
    allowed_domains = ["127.0.0.1"]
    sitemap_urls = ["{site.url("/sm.xml")}"]
    """
    middlewares: dict[str, int | None] = {"scrapy.downloadermiddlewares.offsite.OffsiteMiddleware": None}
    if policy != "disabled":
        middlewares["tests.support.spiders.OffsiteAlsoOtherTest"] = 50
    settings = {"TWISTED_DNS_RESOLVER": "tests.support.dns.LoopbackResolver", "DOWNLOADER_MIDDLEWARES": middlewares}
    theirs, ours = crawl_both(tmp_path, body, settings=settings)
    assert ours == theirs == [("parse", site.url("/a")), ("parse", f"http://other.test:{site.port}/b")]


@pytest.mark.parametrize("depth_limit", [0, 2])
def test_page_requests_have_scrapys_referer_and_depth(
    fixture_site: SiteFactory, tmp_path: Path, depth_limit: int
) -> None:
    # Scrapy's page request: Referer the sitemap, depth robots.txt (0) -> sitemap (1) -> page
    # (2); DEPTH_LIMIT applies to pages and to the requests their callbacks yield
    site = with_pages(
        fixture_site(
            {
                "/robots.txt": robots("{base}/near.xml", "{base}/index.xml"),
                "/near.xml": urlset("{base}/near"),
                "/index.xml": sitemapindex("{base}/far.xml"),
                "/far.xml": urlset("{base}/far"),
            }
        ),
        "/near",
        "/far",
        "/more",
    )
    body = f"""
    sitemap_urls = ["{site.url("/robots.txt")}"]
    sitemap_rules = [("", "parse_page")]

    def parse_page(self, response):
        referer = (response.request.headers.get("Referer") or b"").decode()
        yield {{"url": response.url, "referer": referer, "depth": response.meta.get("depth")}}
        if not response.url.endswith("/more"):
            yield response.follow("/more", self.parse_page, dont_filter=True)
    """
    settings = {"DEPTH_LIMIT": depth_limit}
    theirs = run_spider(tmp_path / "scrapy", spider_source("scrapy.spiders", body), settings=settings)
    fetched_by_scrapy = {request.path for request in site.requests}
    site.reset()
    ours = run_spider(tmp_path / "ours", spider_source("sitemap_crawl", body), settings=settings)
    theirs.assert_ok()
    ours.assert_ok()

    def rows(result: CrawlResult) -> list[tuple[str, str, int]]:
        return sorted((row["url"], row["referer"], row["depth"]) for row in result.pages)

    near, far, more = site.url("/near"), site.url("/far"), site.url("/more")
    expected = [(far, site.url("/far.xml"), 3), (more, far, 4), (more, near, 3), (near, site.url("/near.xml"), 2)]
    if depth_limit:
        expected = [(near, site.url("/near.xml"), 2)]
    assert rows(ours) == rows(theirs) == expected
    if depth_limit:  # far.xml's pages would be deeper than the limit: not read (Scrapy reads it)
        assert "/far.xml" in fetched_by_scrapy and site.hits("/far.xml") == 0


def test_duplicate_filtering_parity_is_available(fixture_site: SiteFactory, tmp_path: Path) -> None:
    site = with_pages(
        fixture_site(
            {
                "/index.xml": sitemapindex("{base}/a.xml", "{base}/b.xml"),
                "/a.xml": urlset("{base}/p1", "{base}/shared"),
                "/b.xml": urlset("{base}/shared", "{base}/p2"),
            }
        ),
        "/p1",
        "/p2",
        "/shared",
    )
    body = f'sitemap_urls = ["{site.url("/index.xml")}"]\n'
    theirs, ours = crawl_both(tmp_path, body + "sitemap_filter_duplicates = True\n")
    assert ours == theirs and Counter(url for _, url in ours)[site.url("/shared")] == 1
    # the default: a page URL is requested once per sitemap that lists it (bounded memory)
    default = visits(run_spider(tmp_path / "default", spider_source("sitemap_crawl", body)))
    assert Counter(url for _, url in default)[site.url("/shared")] == 2


# -- what ours adds -------------------------------------------------------------------------


def test_every_format_and_the_page_item_in_meta(fixture_site: SiteFactory, tmp_path: Path) -> None:
    image = "<image:image><image:loc>{base}/img.png</image:loc><image:caption>A cap</image:caption></image:image>"
    site = with_pages(
        fixture_site(
            {
                "/robots.txt": robots("{base}/index.xml", "{base}/feed.rss", "{base}/atom.xml", "{base}/list.txt"),
                "/index.xml": sitemapindex("{base}/pages.xml.gz"),
                "/pages.xml.gz": Route(
                    urlset(
                        {"loc": "{base}/xml/1", "lastmod": "2024-05-01T10:00:00+02:00", "priority": 0.8, "extra": image}
                    ),
                    gzip_file=True,
                ),
                "/feed.rss": rss(
                    {"link": "{base}/rss/1", "title": "RSS one", "pubDate": "Wed, 01 May 2024 08:00:00 GMT"}
                ),
                "/atom.xml": atom({"link": "{base}/atom/1", "title": "Atom one", "updated": "2024-05-02T08:00:00Z"}),
                "/list.txt": text_sitemap("{base}/txt/1"),
            }
        ),
        "/xml/1",
        "/rss/1",
        "/atom/1",
        "/txt/1",
    )
    source = sitemap_spider(
        "formats",
        sitemap_urls=[site.url("/robots.txt")],
        parse="""
        page = response.meta["sitemap_page"]
        yield {"url": response.url, "page": page.to_dict()}
        """,
    )
    result = run_spider(tmp_path, source)
    result.assert_ok()
    pages = {row["url"]: row["page"] for row in result.pages}
    assert set(pages) == {site.url(p) for p in ("/xml/1", "/rss/1", "/atom/1", "/txt/1")}
    xml = pages[site.url("/xml/1")]
    assert xml["last_modified"] == "2024-05-01T10:00:00+02:00"
    assert xml["priority"] == 0.8
    assert xml["sitemap_url"] == site.url("/pages.xml.gz")
    assert xml["images"][0]["loc"] == site.url("/img.png") and xml["images"][0]["caption"] == "A cap"
    assert pages[site.url("/rss/1")]["news"]["title"] == "RSS one"
    assert pages[site.url("/atom/1")]["news"]["title"] == "Atom one"
    assert pages[site.url("/txt/1")]["sitemap_url"] == site.url("/list.txt")
    # Scrapy's own SitemapSpider sees only the XML urlset page
    theirs = run_spider(
        tmp_path / "scrapy",
        spider_source("scrapy.spiders", f'sitemap_urls = ["{site.url("/robots.txt")}"]\n'),
    )
    assert visits(theirs) == [("parse", site.url("/xml/1"))]


def test_homepage_discovery_and_progress_in_the_log(fixture_site: SiteFactory, tmp_path: Path) -> None:
    site = with_pages(
        fixture_site(
            {
                "/robots.txt": robots("{base}/sitemap_index.xml"),
                "/sitemap_index.xml": sitemapindex("{base}/products.xml"),
                "/products.xml": urlset("{base}/product/1", "{base}/product/2"),
                "/sitemap_news.xml": urlset("{base}/news/1"),
            }
        ),
        "/product/1",
        "/product/2",
        "/news/1",
    )
    source = sitemap_spider(
        "discover",
        homepage=site.url("/some/page"),
        parse='yield {"url": response.url, "sitemap": response.meta["sitemap_page"].sitemap_url}',
    )
    result = run_spider(tmp_path, source, settings={"SITEMAP_CRAWL_LOADER_LOG_INTERVAL": 0})
    result.assert_ok()
    assert sorted((r["url"], r["sitemap"]) for r in result.pages) == [
        (site.url("/news/1"), site.url("/sitemap_news.xml")),
        (site.url("/product/1"), site.url("/products.xml")),
        (site.url("/product/2"), site.url("/products.xml")),
    ]
    assert site.hits("/sitemap_index.xml") == 1  # not probed again as a well-known path
    assert site.hits("/sitemap.xml") == 1  # a known path that 404s
    log = result.log
    assert "Sitemap crawl progress: sitemaps:" in log and "pages: 3 queued, 3 handled" in log
    assert f"Sitemap {site.url('/products.xml')} read: 2 pages queued" in log
    assert result.stats["sitemap_crawl/loader/pages_handled"] == 3
    assert result.stats["sitemap_crawl/loader/completed"] is True
    assert not [line for line in result.log_lines("WARNING") if "sitemap" in line.lower()]


def test_homepage_as_a_spider_argument(fixture_site: SiteFactory, tmp_path: Path) -> None:
    site = with_pages(fixture_site({"/sitemap.xml": urlset("{base}/a")}), "/a")
    source = sitemap_spider("arg", parse='yield {"url": response.url}')
    result = run_spider(tmp_path, source, spider_args={"homepage": site.base, "sitemap_use_robots": "no"})
    result.assert_ok()
    assert result.urls() == [site.url("/a")]
    assert site.hits("/robots.txt") == 0


def test_follow_and_deny_given_as_spider_arguments_are_one_regex_each(
    fixture_site: SiteFactory, tmp_path: Path
) -> None:
    # a string was read a character at a time: -a sitemap_deny=archive denied every
    # sub-sitemap with an "a", "r", "c"... in its URL
    site = with_pages(
        fixture_site(
            {
                "/sitemap.xml": sitemapindex("{base}/shop.xml", "{base}/archive.xml", "{base}/news.xml"),
                "/shop.xml": urlset("{base}/s"),
                "/archive.xml": urlset("{base}/a"),
                "/news.xml": urlset("{base}/n"),
            }
        ),
        "/s",
        "/a",
        "/n",
    )
    source = sitemap_spider("args", sitemap_urls=[site.url("/sitemap.xml")], parse='yield {"url": response.url}')
    result = run_spider(tmp_path, source, spider_args={"sitemap_deny": "archive", "sitemap_follow": "shop|news"})
    result.assert_ok()
    assert sorted(result.urls()) == [site.url("/n"), site.url("/s")]
    # empty: not given (an empty deny denied every sub-sitemap, as an empty regex matches all)
    result = run_spider(tmp_path / "empty", source, spider_args={"sitemap_deny": "", "sitemap_follow": " "})
    result.assert_ok()
    assert sorted(result.urls()) == [site.url("/a"), site.url("/n"), site.url("/s")]


def test_a_homepage_that_cannot_be_reached_is_asked_once(fixture_site: SiteFactory, tmp_path: Path) -> None:
    # the unreachable-host middleware was the sitemaps spider's only: Scrapy retried the
    # refused robots.txt twice and logged "Gave up retrying" as an ERROR
    site = fixture_site({})
    site.stop()  # nothing listens there any more
    source = sitemap_spider("gone", parse='yield {"url": response.url}')
    result = run_spider(tmp_path, source, spider_args={"homepage": site.base}, settings={"RETRY_TIMES": 2})
    result.assert_ok()
    assert result.stats["downloader/request_count"] == 1
    assert "retry/count" not in result.stats
    assert "Gave up retrying" not in result.log


@pytest.mark.parametrize("first", ["/robots.txt", "/sitemap.xml"])
def test_a_first_request_redirected_to_a_dead_host_leaves_the_site_reachable(
    fixture_site: SiteFactory, tmp_path: Path, first: str
) -> None:
    # the site answered (a redirect): the drop-in called it unreachable and probed no
    # well-known path, where the sitemaps spider reads on (one discovery for both)
    gone = fixture_site({})
    gone.stop()
    site = with_pages(
        fixture_site({first: Route(redirect_to=gone.url("/x.xml")), "/sitemap_index.xml": urlset("{base}/a")}), "/a"
    )
    source = sitemap_spider("moved", parse='yield {"url": response.url}')
    arguments = {"homepage": site.base, **({"sitemap_use_robots": "no"} if first == "/sitemap.xml" else {})}
    result = run_spider(tmp_path, source, spider_args=arguments, settings={"RETRY_TIMES": 0})
    result.assert_ok()
    assert result.urls() == [site.url("/a")]
    assert "is unreachable" not in result.log


@pytest.mark.parametrize("left_out_by", ["since", "sitemap_filter"])
def test_a_child_under_robots_left_out_is_not_read_as_a_well_known_path(
    fixture_site: SiteFactory, tmp_path: Path, left_out_by: str
) -> None:
    # the drop-in left it out, then read it as a well-known path and requested its pages
    site = with_pages(
        fixture_site(
            {
                "/robots.txt": robots("{base}/index.xml"),
                "/index.xml": sitemapindex(
                    {"loc": "{base}/sitemap_news.xml", "lastmod": "2001-01-01"},
                    {"loc": "{base}/keep.xml", "lastmod": "2025-01-01"},
                ),
                "/sitemap_news.xml": urlset("{base}/old"),
                "/keep.xml": urlset("{base}/new"),
            }
        ),
        "/old",
        "/new",
    )
    members = ""
    arguments = {"homepage": site.base}
    if left_out_by == "since":
        arguments["since"] = "2010-01-01"
    else:
        members = "def sitemap_filter(self, entries):\n    return (e for e in entries if 'news' not in e['loc'])\n"
    result = run_spider(
        tmp_path, sitemap_spider("left", parse='yield {"url": response.url}', members=members), spider_args=arguments
    )
    result.assert_ok()
    assert result.urls() == [site.url("/new")]
    assert site.hits("/sitemap_news.xml") == 0


def test_no_url_of_a_redirect_chain_under_robots_is_probed_again_by_the_drop_in(
    fixture_site: SiteFactory, tmp_path: Path
) -> None:
    site = with_pages(
        fixture_site(
            {
                "/robots.txt": robots("{base}/old.xml"),
                "/old.xml": Route(redirect_to="/sitemap.xml"),
                "/sitemap.xml": Route(redirect_to="/sitemap_index.xml"),
                "/sitemap_index.xml": urlset("{base}/p"),
            }
        ),
        "/p",
    )
    result = run_spider(
        tmp_path, sitemap_spider("chain", parse='yield {"url": response.url}'), spider_args={"homepage": site.base}
    )
    result.assert_ok()
    assert result.urls() == [site.url("/p")]
    assert (site.hits("/sitemap.xml"), site.hits("/sitemap_index.xml")) == (1, 1)


def test_several_homepages_one_site_after_another(fixture_site: SiteFactory, tmp_path: Path) -> None:
    # three virtual hosts served by one fixture server (resolved by the test DNS resolver)
    site = fixture_site(
        {
            "//one.test/robots.txt": robots("http://one.test:{port}/map.xml"),
            "//one.test/map.xml": urlset("http://one.test:{port}/a", "http://one.test:{port}/b"),
            "//two.test/sitemap.xml": urlset("http://two.test:{port}/c"),
            "//three.test/robots.txt": robots("http://three.test:{port}/m.xml", "http://one.test:{port}/map.xml"),
            "//three.test/m.xml": urlset("http://three.test:{port}/d"),
            **{f"//{h}/{p}": Route(HTML, content_type="text/html") for h, p in PAGES_OF_THREE_HOSTS},
        }
    )
    homepages = ",".join(f"http://{name}.test:{site.port}/x" for name in ("one", "two", "three", "one"))
    source = sitemap_spider("many", parse='yield {"url": response.url}')
    result = run_spider(
        tmp_path,
        source,
        spider_args={"homepages": homepages},
        settings={"TWISTED_DNS_RESOLVER": "tests.support.dns.LoopbackResolver", "SITEMAP_CRAWL_LOADER_LOG_INTERVAL": 0},
    )
    result.assert_ok()
    assert sorted(result.urls()) == sorted(f"http://{h}:{site.port}/{p}" for h, p in PAGES_OF_THREE_HOSTS)
    fetched = Counter(
        f"{(request.header('Host') or '').split(':')[0]}{request.path}"
        for request in site.requests
        if not request.path.endswith(("/a", "/b", "/c", "/d"))
    )
    assert fetched["one.test/map.xml"] == 1  # listed by two sites' robots.txt: read once
    assert fetched["one.test/robots.txt"] == 1  # one.test is listed twice: mapped once
    assert sum(n for key, n in fetched.items() if key.startswith("two.test/")) == 1 + 14  # robots.txt, known paths
    assert "site 3 of 3 (http://three.test:" in result.log  # one.test once, though listed twice
    assert result.stats["sitemap_crawl/loader/pages_handled"] == 4


PAGES_OF_THREE_HOSTS = [("one.test", "a"), ("one.test", "b"), ("two.test", "c"), ("three.test", "d")]


def test_bad_homepage_is_one_error_line(tmp_path: Path) -> None:
    source = sitemap_spider("bad", homepage="ftp://example.org/")
    result = run_spider(tmp_path, source, feed=False)
    assert result.returncode != 0
    assert "Traceback" not in result.log
    errors = result.log_lines("ERROR")
    assert any(
        "Bad argument for the bad spider: homepage='ftp://example.org/' is not an http(s) URL" in e for e in errors
    )


def test_an_empty_boolean_argument_is_one_error_line(tmp_path: Path) -> None:
    # -a sitemap_use_robots= was taken for the default (true)
    source = sitemap_spider("empty", homepage="http://127.0.0.1:9/")
    result = run_spider(tmp_path, source, feed=False, spider_args={"sitemap_use_robots": ""})
    assert result.returncode != 0
    assert "Traceback" not in result.log
    assert any(
        "Bad argument for the empty spider: sitemap_use_robots='' is not a boolean" in e
        for e in result.log_lines("ERROR")
    )


def test_failed_and_dropped_pages_count_as_handled(fixture_site: SiteFactory, tmp_path: Path) -> None:
    site = with_pages(
        fixture_site(
            {
                "/sitemap.xml": urlset(
                    "{base}/ok",
                    "{base}/missing",
                    "{base}/flaky",
                    "{base}/boom",
                    "{base}/" + "x" * 2100,  # over URLLENGTH_LIMIT: dropped by a start middleware
                    "{base}/moved",
                ),
                "/flaky": Route(HTML, fail_times=5),
                "/moved": Route(redirect_to="/ok"),
            }
        ),
        "/ok",
        "/boom",
    )
    source = sitemap_spider(
        "failing",
        sitemap_urls=[site.url("/sitemap.xml")],
        parse="""
        if response.url.endswith("/boom"):
            raise ValueError("callback error")
        yield {"url": response.url}
        """,
    )
    jobdir = tmp_path / "job"
    result = run_spider(tmp_path, source, settings={"JOBDIR": jobdir, "RETRY_TIMES": 1})
    assert result.returncode == 0
    assert sorted(result.urls()) == [site.url("/ok"), site.url("/ok")]  # /moved lands on /ok
    state = read_saved_state(jobdir)
    assert state is not None and state.completed
    assert state.handled_count == state.total_count == 6
    assert not state.in_progress and not state.url_queue
    assert "ended without a callback" not in result.log  # every outcome was seen, none written off
    assert result.stats.get("scheduler/enqueued/disk") is None  # page requests stay out of requests.queue


def test_an_errback_that_yields_items_for_an_http_error(fixture_site: SiteFactory, tmp_path: Path) -> None:
    # its items came with the 404 response, not the failure the errback was given: they were
    # not counted to the page, which waited for the engine to go quiet and was written off
    site = fixture_site({"/sitemap.xml": urlset(*(f"{{base}}/gone/{i}" for i in range(12)))})
    body = f"""
    sitemap_urls = ["{site.url("/sitemap.xml")}"]

    def _page_request(self, page):
        return super()._page_request(page).replace(errback=self.failed)

    def failed(self, failure):
        yield {{"cb": "failed", "url": failure.request.url}}
    """
    settings = {"SITEMAP_CRAWL_LOADER_MAX_IN_FLIGHT": 4}
    result = run_spider(tmp_path, spider_source("sitemap_crawl", body), settings=settings)
    assert visits(result) == sorted(("failed", site.url(f"/gone/{i}")) for i in range(12))
    assert "sitemap_crawl/loader/pages_written_off" not in result.stats
    assert result.stats["sitemap_crawl/loader/pages_handled"] == 12


def test_handled_only_after_the_items_left_the_pipelines(fixture_site: SiteFactory, tmp_path: Path) -> None:
    site = with_pages(
        fixture_site({"/sitemap.xml": urlset(*(f"{{base}}/p/{i}" for i in range(30)))}), *(f"/p/{i}" for i in range(30))
    )
    source = sitemap_spider(
        "piped",
        sitemap_urls=[site.url("/sitemap.xml")],
        imports="import asyncio",
        preamble="""
        class SlowPipeline:
            async def process_item(self, item, spider=None):
                spider = self.crawler.spider
                before = item["url"] in spider.sitemap_loader.state.in_progress
                await asyncio.sleep(0.05)
                after = item["url"] in spider.sitemap_loader.state.in_progress
                item["in_progress_in_pipeline"] = before and after
                return item

            @classmethod
            def from_crawler(cls, crawler):
                pipeline = cls()
                pipeline.crawler = crawler
                return pipeline
        """,
        members='custom_settings = {"ITEM_PIPELINES": {SlowPipeline: 100}}',
        is_async=True,
        parse="""
        yield {"url": response.url, "n": 1}
        yield {"url": response.url, "n": 2}
        """,
    )
    result = run_spider(tmp_path, source)
    result.assert_ok()
    assert len(result.pages) == 60
    assert all(row["in_progress_in_pipeline"] for row in result.pages)
    assert result.stats["sitemap_crawl/loader/pages_handled"] == 30


def test_ctrl_c_then_resume_with_jobdir(tmp_path: Path) -> None:
    with FixtureServer(pages="/p/") as site:
        everything = [url for urls in serve_paged_sitemaps(site, [600, 600]).values() for url in urls]
        jobdir = tmp_path / "job"
        seen = tmp_path / "seen.txt"
        source = recording_spider(
            "resumable",
            site.url("/index.xml"),
            seen,
            imports="import asyncio",
            is_async=True,
            parse="await asyncio.sleep(0.01)",
        )
        settings = {"JOBDIR": jobdir, "CONCURRENT_REQUESTS": 8}
        with start_spider(tmp_path / "run1", source, settings=settings, feed=False) as first:
            deadline_ok = wait_for_lines(seen, 300, first, timeout=60, poll=0.05) >= 300
            first.interrupt()
            result1 = first.wait(60)
        assert deadline_ok
        assert "Closing spider (shutdown)" in result1.log
        handled_first = read_lines(seen)
        state = json.loads((jobdir / "sitemap_loader.json").read_text())
        assert list(state) == list(STATE_FIELDS)
        # a clean stop lets the downloads and callbacks in flight finish: what is still in
        # progress was only scheduled, never processed
        assert set(state["in_progress"]).isdisjoint(handled_first)
        assert state["handled_count"] == len(handled_first)
        result2 = run_spider(tmp_path / "run2", source, settings=settings, feed=False)
        result2.assert_ok()
        assert "Resuming the sitemap crawl saved in" in result2.log
        second = read_lines(seen)[len(handled_first) :]
        assert Counter(handled_first + second) == Counter(everything)  # each page exactly once
        final = read_saved_state(jobdir)
        assert final is not None and final.completed and final.handled_count == final.total_count == 1200


def test_follow_ups_that_copy_the_page_meta_are_resumed_with_jobdir(tmp_path: Path) -> None:
    # a follow-up made with meta=response.meta carried the loader's token: it was kept out of
    # JOBDIR's disk queue as a page request is, and those pending at a Ctrl-C were lost
    with FixtureServer(pages="/p/") as site:
        everything = [url for urls in serve_paged_sitemaps(site, [300, 300]).values() for url in urls]
        jobdir = tmp_path / "job"
        seen = tmp_path / "seen.txt"
        source = sitemap_spider(
            "following",
            sitemap_urls=[site.url("/index.xml")],
            members=f"fd = os.open({str(seen)!r}, os.O_WRONLY | os.O_APPEND | os.O_CREAT)",
            parse="""
                await asyncio.sleep(0.01)
                os.write(self.fd, response.url.encode() + b"\\n")
                if not response.url.endswith("/detail"):
                    yield Request(response.url + "/detail", meta=response.meta)
            """,
            is_async=True,
            imports="import asyncio\nimport os\nfrom scrapy import Request",
        )
        settings = {"JOBDIR": jobdir, "CONCURRENT_REQUESTS": 8}
        with start_spider(tmp_path / "run1", source, settings=settings, feed=False) as first:
            reached = wait_for_lines(seen, 200, first, timeout=60, poll=0.05) >= 200
            first.interrupt()
            first.wait(60)
        assert reached
        run_spider(tmp_path / "run2", source, settings=settings, feed=False).assert_ok()
        visited = set(read_lines(seen))
        assert visited == set(everything) | {url + "/detail" for url in everything}, len(visited)


def test_follow_ups_are_visited_as_they_come_with_jobdir(tmp_path: Path) -> None:
    # Scrapy's scheduler empties its memory queue (the loader's pages) before its disk queue
    # (their follow-ups): with JOBDIR every follow-up waited until every page was visited
    with FixtureServer(pages="/p/") as site:
        everything = [url for urls in serve_paged_sitemaps(site, [200]).values() for url in urls]
        seen = tmp_path / "seen.txt"
        source = sitemap_spider(
            "following",
            sitemap_urls=[site.url("/index.xml")],
            members=f"fd = os.open({str(seen)!r}, os.O_WRONLY | os.O_APPEND | os.O_CREAT)",
            parse="""
                os.write(self.fd, response.url.encode() + b"\\n")
                if not response.url.endswith("/detail"):
                    yield Request(response.url + "/detail")
            """,
            imports="import os\nfrom scrapy import Request",
        )
        settings = {"JOBDIR": tmp_path / "job", "CONCURRENT_REQUESTS": 2}
        run_spider(tmp_path / "run", source, settings=settings, feed=False).assert_ok()
    visited = read_lines(seen)
    assert len(visited) == 2 * len(everything)
    first_half = visited[: len(visited) // 2]
    assert sum(url.endswith("/detail") for url in first_half) > len(everything) // 4, first_half[:20]


def test_a_follow_up_made_by_replacing_the_page_request_goes_through_the_duplicate_filter(
    fixture_site: SiteFactory, tmp_path: Path
) -> None:
    # response.request.replace(url=...) kept the dont_filter the loader set: a page linking to
    # itself was fetched without end (Scrapy's spider filters the repeat)
    site = fixture_site({"/sitemap.xml": urlset("{base}/list/1")})
    site["/list/1"] = Route('<a rel="next" href="/list/2">next</a>', content_type="text/html")
    site["/list/2"] = Route('<a rel="next" href="/list/2">next</a>', content_type="text/html")
    body = f"""
        sitemap_urls = ["{site.url("/sitemap.xml")}"]
        sitemap_rules = [("/list/", "parse_list")]

        def parse_list(self, response):
            yield {{"cb": "parse_list", "url": response.url}}
            yield response.request.replace(url=response.urljoin(response.css("a::attr(href)").get()))
    """
    theirs, ours = crawl_both(tmp_path, body, settings={"CLOSESPIDER_PAGECOUNT": 20})
    assert ours == theirs == [("parse_list", site.url("/list/1")), ("parse_list", site.url("/list/2"))]


def test_a_callback_that_yields_its_own_request_again(fixture_site: SiteFactory, tmp_path: Path) -> None:
    # the page request itself, yielded again, lost its marks: its items no longer counted to
    # it, every page was written off after a stall (51 s for 160 pages)
    site = with_pages(fixture_site({"/sitemap.xml": urlset(*(f"{{base}}/p{i}" for i in range(20)))}))
    for i in range(20):
        site[f"/p{i}"] = Route(HTML, content_type="text/html")
    body = f"""
    sitemap_urls = ["{site.url("/sitemap.xml")}"]
    sitemap_rules = [("/p", "parse_again")]

    def parse_again(self, response):
        yield {{"cb": "parse_again", "url": response.url}}
        if "again" not in response.meta:
            response.meta["again"] = True
            yield response.request
    """
    result = run_spider(
        tmp_path, spider_source("sitemap_crawl", body), settings={"SITEMAP_CRAWL_LOADER_MAX_IN_FLIGHT": 4}
    )
    result.assert_ok()
    assert "sitemap_crawl/loader/pages_written_off" not in result.stats
    assert "ended without a callback" not in result.log
    assert result.stats["sitemap_crawl/loader/pages_handled"] == result.stats["sitemap_crawl/loader/pages_queued"] == 20


def test_after_a_resume_the_duplicate_filter_knows_the_pages_sent_past_it(tmp_path: Path) -> None:
    # sitemap_filter_duplicates: the pages a restart sends past the filter (the saved ones and
    # the rest of the sitemap read again) were not recorded in it, so the same pages listed by
    # a sitemap read later were visited a second time (197 visits for 120 URLs)
    with FixtureServer(pages="/p/") as site:
        urls = [site.url(f"/p/0/{i}") for i in range(120)]
        site["/a.xml"] = urlset(*urls).encode()
        site["/b.xml"] = urlset(*urls).encode()  # the same pages again
        site["/index.xml"] = sitemapindex(site.url("/a.xml"), site.url("/b.xml")).encode()
        jobdir = tmp_path / "job"
        seen = tmp_path / "seen.txt"
        source = recording_spider(
            "filtered",
            site.url("/index.xml"),
            seen,
            members="sitemap_filter_duplicates = True",
            imports="import asyncio",
            is_async=True,
            parse="await asyncio.sleep(0.01)",
        )
        settings = {"JOBDIR": jobdir, "CONCURRENT_REQUESTS": 4, "SITEMAP_CRAWL_LOADER_QUEUE_SIZE": 20}
        with start_spider(tmp_path / "run1", source, settings=settings, feed=False) as first:
            reached = wait_for_lines(seen, 30, first, timeout=60, poll=0.02) >= 30
            first.interrupt()
            first.wait(60)
        assert reached
        handled_first = read_lines(seen)
        assert len(handled_first) < len(urls)  # stopped while a.xml was read
        run_spider(tmp_path / "run2", source, settings=settings, feed=False).assert_ok()
        visits = Counter(read_lines(seen))
        assert sorted(visits) == sorted(urls)
        assert set(visits.values()) == {1}, [url for url, count in visits.items() if count > 1][:5]


def test_the_loader_in_a_plain_spider(fixture_site: SiteFactory, tmp_path: Path) -> None:
    site = with_pages(
        fixture_site(
            {
                "/robots.txt": robots("{base}/index.xml"),
                "/index.xml": sitemapindex("{base}/products.xml", "{base}/archive.xml"),
                "/products.xml": urlset("{base}/product/1", "{base}/about", "{base}/product/2"),
                "/archive.xml": urlset("{base}/product/old"),
            }
        ),
        "/product/1",
        "/product/2",
        "/product/old",
    )
    source = f"""
    from scrapy import Request, Spider
    from sitemap_crawl import SitemapRequestLoader

    class Pages(Spider):
        name = "pages"

        async def start(self):
            self.loader = SitemapRequestLoader.from_crawler(
                self.crawler, homepage="{site.base}", include=[r"/product/"], deny=[r"archive"],
                use_known_paths=False,
            )
            async for request in self.loader.requests(lambda page: Request(page.url, self.parse_page)):
                yield request

        def parse_page(self, response):
            yield {{"url": response.url, "sitemap": response.meta["sitemap_page"].sitemap_url}}

        def closed(self, reason):
            loader = self.loader
            self.logger.info("counts %s %s %s", loader.total_count, loader.handled_count, loader.completed)
    """
    result = run_spider(tmp_path, source)
    result.assert_ok()
    assert sorted(result.urls()) == [site.url("/product/1"), site.url("/product/2")]
    assert {row["sitemap"] for row in result.pages} == {site.url("/products.xml")}
    assert "counts 2 2 True" in result.log
    assert site.hits("/archive.xml") == 0


def test_sitemap_filter_entries_are_the_dicts_scrapy_reads() -> None:
    from scrapy.utils.sitemap import Sitemap

    from sitemap_crawl.items import SitemapPage, SitemapRef
    from sitemap_crawl.parsing import SitemapReader
    from sitemap_crawl.sitemap_spider import page_entry, sitemap_entry

    urlset_body = (
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
        b'xmlns:image="http://www.google.com/schemas/sitemap-image/1.1" xmlns:xhtml="http://www.w3.org/1999/xhtml">'
        b"<url><loc>https://a.test/x</loc><lastmod> 2024-05-01T10:00:00Z </lastmod><changefreq>Daily</changefreq>"
        b"<priority>high</priority><image:image><image:loc>https://a.test/i.png</image:loc></image:image>"
        b'<xhtml:link rel="alternate" hreflang="de" href="https://a.test/de/x"/>'
        b'<xhtml:link rel="alternate" media="handheld" href="https://a.test/m/x"/></url>'
        b"<url><loc>https://a.test/y</loc><lastmod/><priority></priority></url>"
        b"<url><loc>https://a.test/z</loc></url></urlset>"
    )
    reader = SitemapReader(urlset_body, "https://a.test/s.xml", every_link=True)
    ours = [page_entry(page, texts) for page, texts in reader.iter_with_texts() if isinstance(page, SitemapPage)]
    assert ours == list(Sitemap(urlset_body))
    assert ours[0].source.last_modified == "2024-05-01T10:00:00+00:00"  # the page item stays normalised
    assert ours[1] == {"loc": "https://a.test/y", "lastmod": "", "priority": ""}

    index_body = (
        b'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<sitemap><loc>https://a.test/s1.xml</loc><lastmod>2024-03-04T00:00:00Z</lastmod></sitemap>"
        b"<sitemap><loc>https://a.test/s2.xml</loc></sitemap></sitemapindex>"
    )
    reader = SitemapReader(index_body, "https://a.test/index.xml")
    refs = [sitemap_entry(ref, texts) for ref, texts in reader.iter_with_texts() if isinstance(ref, SitemapRef)]
    assert refs == list(Sitemap(index_body))
    assert refs[0].source.last_modified == "2024-03-04T00:00:00+00:00"

    # an RSS, Atom or text sitemap has no such texts: loc and the page's lastmod
    page = SitemapPage(url="https://a.test/r", sitemap_url="https://a.test/feed.rss", last_modified="2024-01-02")
    assert page_entry(page) == {"loc": "https://a.test/r", "lastmod": "2024-01-02"}


def test_page_requests_skip_the_disk_queue_unless_the_project_has_its_own_scheduler() -> None:
    from scrapy.settings import Settings

    from sitemap_crawl import SitemapSpider
    from sitemap_crawl.loader import SCHEDULER_PATH

    settings = Settings()
    SitemapSpider.update_settings(settings)
    assert settings["SCHEDULER"] == SCHEDULER_PATH
    custom = Settings({"SCHEDULER": "myproject.schedulers.Mine"}, priority="project")
    SitemapSpider.update_settings(custom)
    assert custom["SCHEDULER"] == "myproject.schedulers.Mine"
    forced = Settings()
    forced.set("SCHEDULER", "scrapy.core.scheduler.Scheduler", priority="cmdline")
    SitemapSpider.update_settings(forced)
    assert forced["SCHEDULER"] == "scrapy.core.scheduler.Scheduler"  # -s SCHEDULER=... wins


def test_the_audit_and_history_settings_with_the_drop_in_say_that_they_do_nothing(
    fixture_site: SiteFactory, tmp_path: Path
) -> None:
    # no file and no word: an auditor could take the silence for a clean site
    site = with_pages(fixture_site({"/sitemap.xml": urlset("{base}/a")}), "/a")
    findings, history = tmp_path / "findings.jsonl", tmp_path / "history.sqlite"
    source = sitemap_spider("audited", sitemap_urls=[site.url("/sitemap.xml")], parse='yield {"url": response.url}')
    settings = {"SITEMAP_CRAWL_AUDIT_FILE": str(findings), "SITEMAP_CRAWL_HISTORY": str(history)}
    result = run_spider(tmp_path, source, settings=settings)
    result.assert_ok()
    assert result.urls() == [site.url("/a")]
    warnings = [line for line in result.log_lines("WARNING") if "SITEMAP_CRAWL_AUDIT_FILE" in line]
    assert len(warnings) == 1 and "the audited spider is not it" in warnings[0], warnings
    warnings = [line for line in result.log_lines("WARNING") if "SITEMAP_CRAWL_HISTORY" in line]
    assert len(warnings) == 1 and "writes no history" in warnings[0], warnings
    assert not findings.exists() and not history.exists()
