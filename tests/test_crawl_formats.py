"""Formats and parser choice, end to end (see docs/arguments.md): the
parser is chosen by content at any URL, never by the URL suffix or the Content-Type."""

from __future__ import annotations

import gzip
from collections import defaultdict
from typing import Any

from tests.support import CrawlResult, Route, atom, gzip_bytes, robots, rss, sitemapindex, text_sitemap, urlset
from tests.support.crawl import CrawlRunner
from tests.support.fixture_server import SiteFactory

FAST = {"RETRY_TIMES": 0, "DOWNLOAD_TIMEOUT": 5}


def pages_by_sitemap(result: CrawlResult) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = defaultdict(list)
    for page in result.pages:
        grouped[page["sitemap_url"]].append(page["url"])
    return dict(grouped)


def only_node(result: CrawlResult, url: str) -> dict[str, Any]:
    nodes = result.node(url)
    assert len(nodes) == 1, (url, result.tree_text())
    return nodes[0]


def test_parser_is_chosen_by_content_at_any_url(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    declared = [
        "/gz-at-xml.xml",
        "/encoded.xml",
        "/double.xml.gz",
        "/xml-at-txt.txt",
        "/text-at-xml.xml",
        "/index.txt",
        "/news",
        "/feed.xml",
        "/feed03.atom",
        "/no-namespace.xml",
        "/wrong-namespace.xml",
        "/index-no-namespace",
        "/plain.gz",
    ]
    site = fixture_site(
        {
            "/robots.txt": robots(*("{base}" + path for path in declared)),
            # gzip recognised by its magic bytes at a .xml URL served as application/xml
            "/gz-at-xml.xml": Route(urlset("{base}/gz-1", "{base}/gz-2"), gzip_file=True),
            # Content-Encoding: gzip (undone by Scrapy) then plain XML
            "/encoded.xml": Route(urlset("{base}/enc-1"), gzip_encoding=True),
            # a .gz file sent with Content-Encoding: gzip as well: two layers
            "/double.xml.gz": Route(urlset("{base}/double-1"), gzip_file=True, gzip_encoding=True),
            # XML at a .txt URL served as text/plain
            "/xml-at-txt.txt": urlset("{base}/txt-1"),
            # a text sitemap at a .xml URL served as application/xml; other lines are ignored
            "/text-at-xml.xml": "# a comment\n{base}/text-1\nnot a url\n\n  {base}/text-2  \n/relative\n",
            # an index at a .txt URL; its child is gzip-compressed text
            "/index.txt": sitemapindex("{base}/child.gz"),
            "/child.gz": Route(text_sitemap("{base}/child-1"), gzip_file=True),
            # RSS 2.0 at an extension-less URL served as text/html
            "/news": rss(
                {"link": "{base}/story-1", "title": "First story", "pubDate": "Tue, 02 Jan 2024 10:00:00 GMT"},
                "{base}/story-2",
            ),
            "/feed.xml": atom(
                {
                    "link": "{base}/post-1",
                    "title": "Atom post",
                    "published": "2024-01-03T04:05:06+02:00",
                    "updated": "2024-01-04T00:00:00+02:00",
                },
            ),
            "/feed03.atom": atom(
                {"link": "{base}/old-post", "title": "Old post", "issued": "2005-06-07T08:09:10Z"},
                version="0.3",
            ),
            "/no-namespace.xml": urlset("{base}/nons-1", ns=False),
            "/wrong-namespace.xml": (
                '<?xml version="1.0"?>\n<urlset xmlns="http://www.google.com/schemas/sitemap/0.84">'
                "<url><loc>{base}/oldns-1</loc></url></urlset>\n"
            ),
            "/index-no-namespace": Route(sitemapindex("{base}/nons-child.xml", ns=False), content_type="text/plain"),
            "/nons-child.xml": urlset("{base}/nons-child-1"),
            # plain text at a .gz URL, not compressed at all
            "/plain.gz": text_sitemap("{base}/plain-1"),
        }
    )

    result = crawl({"homepage": site.base, "use_known_paths": False}, settings=FAST).assert_ok()

    kinds = {url.removeprefix(site.base): kind for url, kind in result.kinds().items()}
    assert kinds == {
        "/": "website",
        "/robots.txt": "robots_txt",
        "/gz-at-xml.xml": "xml_urlset",
        "/encoded.xml": "xml_urlset",
        "/double.xml.gz": "xml_urlset",
        "/xml-at-txt.txt": "xml_urlset",
        "/text-at-xml.xml": "text",
        "/index.txt": "xml_index",
        "/child.gz": "text",
        "/news": "rss",
        "/feed.xml": "atom",
        "/feed03.atom": "atom",
        "/no-namespace.xml": "xml_urlset",
        "/wrong-namespace.xml": "xml_urlset",
        "/index-no-namespace": "xml_index",
        "/nons-child.xml": "xml_urlset",
        "/plain.gz": "text",
    }, result.tree_text()
    assert all(node["error"] is None for _, node in result.walk()), result.tree_text()

    url = site.url
    assert pages_by_sitemap(result) == {
        url("/gz-at-xml.xml"): [url("/gz-1"), url("/gz-2")],
        url("/encoded.xml"): [url("/enc-1")],
        url("/double.xml.gz"): [url("/double-1")],
        url("/xml-at-txt.txt"): [url("/txt-1")],
        url("/text-at-xml.xml"): [url("/text-1"), url("/text-2")],
        url("/child.gz"): [url("/child-1")],
        url("/news"): [url("/story-1"), url("/story-2")],
        url("/feed.xml"): [url("/post-1")],
        url("/feed03.atom"): [url("/old-post")],
        url("/no-namespace.xml"): [url("/nons-1")],
        url("/wrong-namespace.xml"): [url("/oldns-1")],
        url("/nons-child.xml"): [url("/nons-child-1")],
        url("/plain.gz"): [url("/plain-1")],
    }
    assert only_node(result, url("/text-at-xml.xml"))["page_count"] == 2

    # RSS and Atom entries carry their title and publish date in `news`
    pages = {page["url"]: page for page in result.pages}
    story = pages[url("/story-1")]
    assert story["news"]["title"] == "First story"
    assert story["news"]["publish_date"] == "2024-01-02T10:00:00+00:00"
    assert story["last_modified"] == "2024-01-02T10:00:00+00:00"
    assert pages[url("/story-2")]["news"]["title"] is None
    post = pages[url("/post-1")]
    assert (post["news"]["title"], post["news"]["publish_date"]) == ("Atom post", "2024-01-03T04:05:06+02:00")
    assert post["last_modified"] == "2024-01-04T00:00:00+02:00"
    old_post = pages[url("/old-post")]
    assert (old_post["news"]["title"], old_post["news"]["publish_date"]) == ("Old post", "2005-06-07T08:09:10+00:00")


def test_encodings_are_honoured(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    site = fixture_site({"/robots.txt": robots("{base}/latin1.xml", "{base}/utf16.xml", "{base}/bom.xml")})
    site["/latin1.xml"] = Route(
        (
            '<?xml version="1.0" encoding="ISO-8859-1"?>\n<rss version="2.0"><channel>'
            f"<item><title>Caf\xe9 cr\xe8me</title><link>{site.base}/cafe</link></item></channel></rss>\n"
        ).encode("iso-8859-1")
    )
    site["/utf16.xml"] = Route(
        urlset({"loc": site.url("/seize"), "extra": "<!-- \u00e9t\u00e9 -->"})
        .replace('encoding="UTF-8"', 'encoding="UTF-16"')
        .encode("utf-16")  # with a BOM
    )
    # a UTF-8 BOM and blank lines before the root element
    site["/bom.xml"] = Route(b"\xef\xbb\xbf\n  \n" + urlset(site.url("/bom")).split("\n", 1)[1].encode())

    result = crawl({"homepage": site.base, "use_known_paths": False}, settings=FAST).assert_ok()

    kinds = result.kinds()
    assert kinds[site.url("/latin1.xml")] == "rss"
    assert kinds[site.url("/utf16.xml")] == "xml_urlset"
    assert kinds[site.url("/bom.xml")] == "xml_urlset"
    pages = {page["url"]: page for page in result.pages}
    assert set(pages) == {site.url("/cafe"), site.url("/seize"), site.url("/bom")}
    assert pages[site.url("/cafe")]["news"]["title"] == "Caf\xe9 cr\xe8me"


def test_gzip_is_decompressed_with_a_size_cap(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    site = fixture_site({"/robots.txt": robots("{base}/big.xml.gz", "{base}/small.xml.gz", "{base}/big-plain.xml")})
    big = urlset(*(f"{site.base}/p{i}" for i in range(2000))).encode()
    site["/big.xml.gz"] = gzip_bytes(big)
    site["/small.xml.gz"] = gzip_bytes(urlset(site.url("/small")))
    site["/big-plain.xml"] = big  # not compressed: over the cap as downloaded
    assert len(gzip.compress(big)) < 20_000 < len(big)

    result = crawl(
        {"homepage": site.base, "use_known_paths": False},
        settings={**FAST, "SITEMAP_CRAWL_MAX_SIZE": 20_000},
    ).assert_ok()

    capped = only_node(result, site.url("/big.xml.gz"))
    # the node keeps its kind and the pages read before the cap
    assert (capped["kind"], capped["error"]) == ("xml_urlset", "size limit"), result.tree_text()
    kept = [page["url"] for page in result.pages if page["sitemap_url"] == site.url("/big.xml.gz")]
    assert 0 < len(kept) < 2000
    assert kept == [f"{site.base}/p{i}" for i in range(len(kept))]
    assert capped["page_count"] == len(kept)
    assert only_node(result, site.url("/small.xml.gz"))["error"] is None
    # a plain body over the cap is cut at download time: bounded, recorded, and the crawl goes on
    plain = only_node(result, site.url("/big-plain.xml"))
    assert plain["error"] == "size limit"
    assert plain["kind"] in ("invalid", "xml_urlset")
    assert result.stats["sitemap_crawl/errors/size limit"] == 2
