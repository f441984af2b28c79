"""``sitemap_crawl.parse_sitemap``: the pure parsing API for scripts and notebooks.

Checked on the real-world corpus (see docs/development.md and the
corpus's MANIFEST.tsv)
and against the spider itself: the same bodies served by a fixture site give the
same kinds, errors and pages as parse_sitemap.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from typing import Any

import pytest
from scrapy.settings import Settings

import sitemap_crawl
from sitemap_crawl import Limits, ParsedSitemap, SitemapPage, SitemapReader, parse_sitemap
from sitemap_crawl.config import DEFAULTS, SettingsReader
from sitemap_crawl.items import PAGE_FIELDS
from sitemap_crawl.parsing import DEFAULT_LIMITS
from tests.support import CORPUS_DIR, Route
from tests.support.crawl import CrawlRunner
from tests.support.fixture_server import SiteFactory

CORPUS = CORPUS_DIR

pytestmark = pytest.mark.skipif(not (CORPUS / "MANIFEST.tsv").exists(), reason="the shared corpus is not here")

BASE = "https://www.example.org/dir/"


def manifest() -> list[dict[str, str]]:
    if not (CORPUS / "MANIFEST.tsv").exists():
        return []
    with (CORPUS / "MANIFEST.tsv").open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


ROWS = manifest()

ROBOTS_FILES = {row["file"] for row in ROWS if row["kind"] == "robots_txt" or row["file"].endswith("robots.txt")}

EXPECTED_COUNT_DIFFERENCES = {
    # file: (URLs parse_sitemap returns, why it differs from the manifest's url_count)
    "magento1_sitemap_herbdoc_2015.xml": (529, "repeated <loc>s: a page is kept once per sitemap"),
    "video_sitemap_ns_prefixed_ns1_ns2_jaxb.xml": (1, "the same <loc> five times: kept once"),
    "robots_bokstart_mojibake_bom_sitemaps_plural.txt": (1, "the plural 'Sitemaps:' directive is read too"),
    "robots_dailyom_sitemaps_header_bare_urls.txt": (2, "bare sitemap URLs after a 'Sitemaps:' header are read"),
    "malformed_index_sitemap_without_loc.xml": (15, "bare URLs in <sitemap> without <loc> are read"),
}


def parse_corpus_file(name: str) -> ParsedSitemap:
    return parse_sitemap((CORPUS / name).read_bytes(), BASE + name, is_robots=name in ROBOTS_FILES)


@pytest.mark.parametrize("row", ROWS, ids=[row["file"] for row in ROWS])
def test_corpus_file(row: dict[str, str]) -> None:
    parsed = parse_corpus_file(row["file"])
    urls = [page.url for page in parsed.pages] + parsed.sub_sitemaps
    kind = row["kind"]
    if kind == "html":
        assert (parsed.kind, parsed.error, urls) == ("invalid", "not a sitemap", [])
        return
    if kind == "malformed":
        # a document that breaks keeps every entry before the break
        assert parsed.kind in ("xml_urlset", "xml_index", "rss"), parsed
        assert len(urls) >= int(row["url_count"])
    else:
        assert parsed.kind == kind
        assert parsed.error is None, parsed.error
    expected = EXPECTED_COUNT_DIFFERENCES.get(row["file"], (int(row["url_count"]), ""))[0]
    assert len(urls) == expected
    assert all(isinstance(url, str) and url.startswith(("http://", "https://")) for url in urls), urls[:5]
    if parsed.kind in ("xml_index", "robots_txt"):
        assert parsed.pages == []
    else:
        assert parsed.sub_sitemaps == []


def test_what_parse_sitemap_returns() -> None:
    parsed = parse_corpus_file("news-site_hebdenbridgetimes_articles_image_video_mobile.xml")
    assert isinstance(parsed, ParsedSitemap)
    assert parsed.url == BASE + "news-site_hebdenbridgetimes_articles_image_video_mobile.xml"
    assert all(type(page) is SitemapPage for page in parsed.pages)  # the spider's page item
    assert any(page.images for page in parsed.pages)
    assert any(page.videos for page in parsed.pages)
    row = parsed.pages[0].to_dict()
    assert tuple(row) == PAGE_FIELDS
    assert row["sitemap_url"] == parsed.url
    json.dumps(row)  # what a JSON feed writes

    hreflang = parse_corpus_file("drupal_simple_sitemap_hreflang_ja_en.xml")
    assert any(page.alternates for page in hreflang.pages)
    news = parse_corpus_file("rankmath_news_sitemap_motormahal.xml")
    assert all(page.news is not None and page.news.title for page in news.pages)


def test_the_package_exports_the_parse_api() -> None:
    for name in ("parse_sitemap", "ParsedSitemap", "SitemapReader", "SitemapPage", "Limits"):
        assert name in sitemap_crawl.__all__


def test_relative_locations_are_resolved_against_the_given_url() -> None:
    body = (CORPUS / "wpcore_posts_static_export_relative_locs.xml").read_bytes()
    parsed = parse_sitemap(body, "https://blog.example.net/wp-sitemap-posts-post-1.xml")
    assert parsed.pages
    assert all(page.url.startswith("https://blog.example.net/") for page in parsed.pages)


def test_the_format_comes_from_the_bytes_not_the_url() -> None:
    gz = (CORPUS / "mkdocs_material_sitemap.xml.gz").read_bytes()
    assert gz[:2] == b"\x1f\x8b"
    parsed = parse_sitemap(gz, "https://docs.example.org/sitemap")  # no .gz in the URL
    assert (parsed.kind, parsed.error, len(parsed.pages)) == ("xml_urlset", None, 83)

    xml_in_txt = parse_sitemap((CORPUS / "xml_urlset_served_as_sitemap_txt.txt").read_bytes(), BASE + "sitemap.txt")
    assert xml_in_txt.kind == "xml_urlset"

    text = parse_sitemap((CORPUS / "text_sitemap_0install_multi_host.txt").read_bytes(), BASE + "sitemap.xml")
    assert text.kind == "text"


def test_robots_txt_and_html_in_its_place() -> None:
    robots = parse_sitemap((CORPUS / "robots_nytimes_com.txt").read_bytes(), "https://www.nytimes.com/robots.txt",
                           is_robots=True)  # fmt: skip
    assert robots.kind == "robots_txt"
    assert len(robots.sub_sitemaps) == 17 and robots.pages == []
    html = parse_sitemap((CORPUS / "html_nginx_403_served_as_robots.txt").read_bytes(), BASE + "robots.txt",
                         is_robots=True)  # fmt: skip
    assert (html.kind, html.error) == ("invalid", "not a sitemap")


def test_the_default_limits_are_the_spiders() -> None:
    assert SettingsReader(Settings()).limits == DEFAULT_LIMITS == Limits()
    assert DEFAULT_LIMITS.max_size == DEFAULTS["SITEMAP_CRAWL_MAX_SIZE"]
    assert DEFAULT_LIMITS.max_index_children == DEFAULTS["SITEMAP_CRAWL_MAX_INDEX_CHILDREN"]
    settings = Settings({"SITEMAP_CRAWL_MAX_SIZE": 5000, "SITEMAP_CRAWL_MAX_INDEX_CHILDREN": 7})
    assert SettingsReader(settings).limits == Limits(max_size=5000, max_index_children=7)


def test_limits_cut_a_body_and_keep_what_came_before() -> None:
    body = (CORPUS / "large_blogs_sitemap_4623_urls_drberg.xml").read_bytes()
    whole = parse_sitemap(body, BASE + "blogs.xml")
    cut = parse_sitemap(body, BASE + "blogs.xml", limits=Limits(max_size=50_000))
    assert cut.kind == "xml_urlset" and cut.error == "size limit"
    assert 0 < len(cut.pages) < len(whole.pages)
    assert [page.to_dict() for page in cut.pages] == [page.to_dict() for page in whole.pages[: len(cut.pages)]]

    gz = (CORPUS / "mkdocs_material_sitemap.xml.gz").read_bytes()  # small gzip, inflated past the cap
    inflated = parse_sitemap(gz, BASE + "sitemap.xml.gz", limits=Limits(max_size=4_000))
    assert inflated.error == "size limit" and 0 < len(inflated.pages) < 83

    robots = parse_sitemap((CORPUS / "robots_booking_com_252_sitemaps.txt").read_bytes(), BASE + "robots.txt",
                           is_robots=True, limits=Limits(max_index_children=10))  # fmt: skip
    assert robots.error == "size limit" and len(robots.sub_sitemaps) == 10


def test_streaming_reader_gives_the_same_entries() -> None:
    body = (CORPUS / "rss_guardian_uk_2016_media.xml").read_bytes()
    reader = SitemapReader(body, BASE + "rss.xml")
    streamed = [entry.to_dict() for entry in reader if isinstance(entry, SitemapPage)]
    parsed = parse_sitemap(body, BASE + "rss.xml")
    assert streamed == [page.to_dict() for page in parsed.pages]
    assert (reader.kind, reader.error) == (parsed.kind, parsed.error) == ("rss", None)


# -- the same as the spider ----------------------------------------------------------------------

SERVED = {
    # path on the fixture site -> corpus file
    "/index.xml": "astro_sitemap_index.xml",
    "/pages-relative.xml": "google_xml_sitemaps_4123_pages_relative.xml",
    "/hreflang.xml": "drupal_simple_sitemap_hreflang_ja_en.xml",
    "/news.xml": "news-site_hebdenbridgetimes_articles_image_video_mobile.xml",
    "/products.xml": "shopify_products_dapperfam_large_2501_image.xml",  # large: the parsing worker's path
    "/magento.xml": "magento1_sitemap_herbdoc_2015.xml",
    "/feed.rss": "rss_guardian_uk_2016_media.xml",
    "/atom.xml": "pelican_atom_feed_relative_links.xml",
    "/sitemap.txt": "text_sitemap_0x_org_capitalized_scheme.txt",
    "/mkdocs": "mkdocs_material_sitemap.xml.gz",  # gzip at a URL without .gz
    "/broken.xml": "malformed_video_sitemap_unescaped_ampersand.xml",
    "/app.xml": "html_nextjs_page_exported_for_sitemap_route.html",
}


def _json(value: Any) -> Any:
    return json.loads(json.dumps(value))


def test_parse_sitemap_agrees_with_the_spider(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    site = fixture_site({path: Route((CORPUS / name).read_bytes()) for path, name in SERVED.items()})
    urls = [site.url(path) for path in SERVED]
    # deny=. : sub-sitemaps of the index are not fetched (they are on the real web)
    result = crawl({"sitemap_urls": urls, "deny": "."}).assert_ok()

    rows_by_sitemap: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in result.pages:
        rows_by_sitemap[row["sitemap_url"]].append(row)
    for path, name in SERVED.items():
        url = site.url(path)
        parsed = parse_sitemap((CORPUS / name).read_bytes(), url)
        (node,) = result.node(url)
        assert (node["kind"], node["error"]) == (parsed.kind, parsed.error), name
        assert node["page_count"] == len(parsed.pages), name
        # the spider adds the site it maps (the pure parser knows no site)
        website = {"website": site.base + "/"}
        assert rows_by_sitemap[url] == [_json({**page.to_dict(), **website}) for page in parsed.pages], name
    index = parse_sitemap((CORPUS / SERVED["/index.xml"]).read_bytes(), site.url("/index.xml"))
    assert result.stats["sitemap_crawl/not_followed"] == len(index.sub_sitemaps)


@pytest.mark.parametrize("body", ["<urlset/>", None, 42])
def test_a_body_that_is_not_bytes_is_a_clear_type_error(body: object) -> None:
    # it was "memoryview: a bytes-like object is required" from deep in the stream reader
    with pytest.raises(TypeError, match=r"a sitemap's body is bytes \(as downloaded\), not "):
        parse_sitemap(body, "https://example.com/sitemap.xml")  # type: ignore[arg-type]


def test_bytes_like_bodies_are_read() -> None:
    body = b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://e.com/a</loc></url></urlset>'
    for given in (body, bytearray(body), memoryview(body)):
        assert [page.url for page in parse_sitemap(given, "https://e.com/s.xml").pages] == ["https://e.com/a"]  # type: ignore[arg-type]
