"""Page items in the feeds, end to end (see docs/output.md): one row per
page occurrence, fields in the documented order and types, in JSON, JSON lines, XML, CSV
(and Scrapy's other formats); no tree nodes; the per-page item mode gives the same feeds."""

from __future__ import annotations

import json
import marshal
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sitemap_crawl.items import PAGE_FIELDS
from tests.support import FixtureServer, robots, rss, urlset
from tests.support.crawl import CrawlRunner
from tests.support.feeds import read_feed
from tests.support.fixture_server import SiteFactory
from tests.support.tree import robots_of, tree_of

SETTINGS = {"RETRY_TIMES": 0, "DOWNLOAD_TIMEOUT": 5, "CONCURRENT_REQUESTS": 1}

NEWS_FIELDS = [
    "title",
    "publish_date",
    "publication_name",
    "publication_language",
    "access",
    "genres",
    "keywords",
    "stock_tickers",
]
IMAGE_FIELDS = ["loc", "caption", "title", "geo_location", "license"]
VIDEO_FIELDS = [
    "thumbnail_loc",
    "title",
    "description",
    "content_loc",
    "player_loc",
    "duration",
    "publication_date",
    "family_friendly",
    "tags",
]
NESTED = {"news", "images", "videos", "alternates"}

RICH_EXTRA = (
    "<news:news>"
    "<news:publication><news:name>The Paper</news:name><news:language>en</news:language></news:publication>"
    "<news:access>Subscription</news:access><news:genres>PressRelease, Blog</news:genres>"
    "<news:publication_date>2024-05-06T07:00:00+02:00</news:publication_date>"
    '<news:title>Big &amp; bold, "quoted"</news:title><news:keywords>alpha, beta</news:keywords>'
    "<news:stock_tickers>NASDAQ:A, NYSE:B</news:stock_tickers>"
    "</news:news>"
    "<image:image><image:loc>{base}/i1.png</image:loc><image:caption>Caf\u00e9</image:caption>"
    "<image:title>T</image:title><image:geo_location>Paris</image:geo_location>"
    "<image:license>{base}/lic</image:license></image:image>"
    "<image:image><image:loc>/i2.png</image:loc></image:image>"
    "<video:video><video:thumbnail_loc>{base}/th.jpg</video:thumbnail_loc><video:title>Vid</video:title>"
    "<video:description>Desc</video:description><video:content_loc>{base}/v.mp4</video:content_loc>"
    "<video:player_loc>{base}/player</video:player_loc><video:duration>600</video:duration>"
    "<video:publication_date>2024-01-01</video:publication_date>"
    "<video:family_friendly>yes</video:family_friendly><video:tag>t1</video:tag><video:tag>t2</video:tag>"
    "</video:video>"
    '<xhtml:link rel="alternate" hreflang="de" href="{base}/de/rich"/>'
    '<xhtml:link rel="alternate" hreflang="fr" href="/fr/rich"/>'
)


def feed_site(fixture_site: SiteFactory) -> FixtureServer:
    return fixture_site(
        {
            "/robots.txt": robots("{base}/pages.xml", "{base}/news.rss"),
            "/pages.xml": urlset(
                {
                    "loc": "{base}/rich",
                    "lastmod": "2024-05-06T07:08:09+02:00",
                    "changefreq": "Weekly",
                    "priority": "0.8",
                    "extra": RICH_EXTRA,
                },
                "relative/plain",
                {"loc": "{base}/odd", "priority": "high", "changefreq": "sometimes", "lastmod": "yesterday"},
                {"loc": "{base}/top", "priority": "1", "lastmod": "2024-02-03"},
                {"loc": "{base}/out-of-range", "priority": "1.5", "changefreq": "never"},
            ),
            "/news.rss": rss({"link": "{base}/story", "title": "Story", "pubDate": "Wed, 03 Jan 2024 10:00:00 +0100"}),
        }
    )


def expected_pages(base: str) -> list[dict[str, Any]]:
    sitemap = base + "/pages.xml"

    def plain(url: str, **fields: Any) -> dict[str, Any]:
        page: dict[str, Any] = {
            "url": url,
            "sitemap_url": sitemap,
            "priority": 0.5,
            "last_modified": None,
            "change_frequency": None,
            "news": None,
            "images": [],
            "videos": [],
            "alternates": [],
            "website": base + "/",  # the site being mapped, last, in every feed format
        }
        page.update(fields)
        return page

    rich = plain(
        base + "/rich",
        priority=0.8,
        last_modified="2024-05-06T07:08:09+02:00",
        change_frequency="weekly",
        news={
            "title": 'Big & bold, "quoted"',
            "publish_date": "2024-05-06T07:00:00+02:00",
            "publication_name": "The Paper",
            "publication_language": "en",
            "access": "Subscription",
            "genres": ["PressRelease", "Blog"],
            "keywords": ["alpha", "beta"],
            "stock_tickers": ["NASDAQ:A", "NYSE:B"],
        },
        images=[
            {
                "loc": base + "/i1.png",
                "caption": "Caf\u00e9",
                "title": "T",
                "geo_location": "Paris",
                "license": base + "/lic",
            },
            {"loc": base + "/i2.png", "caption": None, "title": None, "geo_location": None, "license": None},
        ],
        videos=[
            {
                "thumbnail_loc": base + "/th.jpg",
                "title": "Vid",
                "description": "Desc",
                "content_loc": base + "/v.mp4",
                "player_loc": base + "/player",
                "duration": 600,
                "publication_date": "2024-01-01",
                "family_friendly": True,
                "tags": ["t1", "t2"],
            }
        ],
        alternates=[{"hreflang": "de", "href": base + "/de/rich"}, {"hreflang": "fr", "href": base + "/fr/rich"}],
    )
    story_date = "2024-01-03T10:00:00+01:00"
    story = plain(
        base + "/story",
        sitemap_url=base + "/news.rss",
        last_modified=story_date,
        news={
            "title": "Story",
            "publish_date": story_date,
            "publication_name": None,
            "publication_language": None,
            "access": None,
            "genres": [],
            "keywords": [],
            "stock_tickers": [],
        },
    )
    return [
        rich,
        plain(base + "/relative/plain"),
        plain(base + "/odd"),
        plain(base + "/top", priority=1.0, last_modified="2024-02-03"),
        plain(base + "/out-of-range", change_frequency="never"),
        story,
    ]


def as_csv(value: Any, name: str) -> str:
    if name in NESTED:
        return json.dumps(value, ensure_ascii=False) if value else ""
    return "" if value is None else str(value)


def as_xml(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return {key: as_xml(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [as_xml(inner) for inner in value] if value else ""
    return str(value)


def feed_args(directory: Path) -> list[str]:
    return [
        "-O",
        str(directory / "extra.json"),
        "-O",
        str(directory / "extra.csv"),
        "-O",
        str(directory / "extra.xml"),
        "-O",
        str(directory / "extra.jl"),
        "-O",
        str(directory / "extra.pickle"),
        "-O",
        str(directory / "extra.marshal"),
    ]


FEED_FILES = ["pages.jsonl", "extra.json", "extra.csv", "extra.xml", "extra.jl", "extra.pickle", "extra.marshal"]


def read_pickles(path: Path, loader: Callable[[Any], Any]) -> list[Any]:
    rows = []
    with path.open("rb") as handle:
        while True:
            try:
                rows.append(loader(handle))
            except EOFError:
                return rows


def test_every_feed_format_gets_one_row_per_page(fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path) -> None:
    site = feed_site(fixture_site)
    tmp_path.joinpath("feeds").mkdir()

    result = crawl(
        {"homepage": site.base, "use_known_paths": False},
        settings=SETTINGS,
        extra_args=feed_args(tmp_path / "feeds"),
    ).assert_ok()

    expected = expected_pages(site.base)

    # JSON lines: the nesting kept, fields and nested fields in the documented order
    rows = result.pages
    assert rows == expected
    for row in rows:
        assert list(row) == list(PAGE_FIELDS)
        assert isinstance(row["priority"], float)
        for image in row["images"]:
            assert list(image) == IMAGE_FIELDS
        for video in row["videos"]:
            assert list(video) == VIDEO_FIELDS
        if row["news"] is not None:
            assert list(row["news"]) == NEWS_FIELDS
    assert isinstance(rows[0]["videos"][0]["duration"], int)
    assert rows[0]["videos"][0]["family_friendly"] is True

    feeds = tmp_path / "feeds"
    # JSON: the same objects, in the same order
    assert read_feed(feeds / "extra.json") == expected
    assert [list(row) for row in read_feed(feeds / "extra.json")] == [list(PAGE_FIELDS)] * 6
    # .jl is JSON lines too
    assert (feeds / "extra.jl").read_bytes() == result.feed_path.read_bytes()  # type: ignore[union-attr]

    # CSV: the columns in order, nested fields as JSON text, empty cells for null and empty lists
    csv_rows = read_feed(feeds / "extra.csv")
    assert [list(row) for row in csv_rows] == [list(PAGE_FIELDS)] * 6
    assert csv_rows == [{name: as_csv(page[name], name) for name in PAGE_FIELDS} for page in expected]
    assert json.loads(csv_rows[0]["images"]) == expected[0]["images"]
    assert csv_rows[1]["news"] == csv_rows[1]["images"] == csv_rows[1]["last_modified"] == ""

    # XML: nested elements
    xml_rows = read_feed(feeds / "extra.xml")
    assert [list(row) for row in xml_rows] == [list(PAGE_FIELDS)] * 6
    assert xml_rows == [as_xml(page) for page in expected]

    # Scrapy's binary formats get one record per page as well
    assert read_pickles(feeds / "extra.pickle", pickle.load) == expected
    assert read_pickles(feeds / "extra.marshal", marshal.load) == expected

    # only pages reach the feeds: tree nodes never do
    assert result.stats["sitemap_crawl/pages"] == 6
    for name in FEED_FILES:
        assert "xml_urlset" not in (feeds / name if name != "pages.jsonl" else result.feed_path).read_bytes().decode(
            "latin-1"
        ), name


def test_per_page_items_and_any_batch_size_give_the_same_feeds(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    site = feed_site(fixture_site)
    runs = {}
    for batch_size in (1000, 0, 2):
        directory = tmp_path / f"batch-{batch_size}"
        directory.mkdir()
        runs[batch_size] = (
            directory,
            crawl.start(
                {"homepage": site.base, "use_known_paths": False},
                settings={**SETTINGS, "SITEMAP_CRAWL_BATCH_SIZE": batch_size},
                extra_args=feed_args(directory),
            ),
        )
    results = {
        batch_size: (directory, running.wait(60).assert_ok()) for batch_size, (directory, running) in runs.items()
    }

    def feed_bytes(batch_size: int, name: str) -> bytes:
        directory, result = results[batch_size]
        path = result.feed_path if name == "pages.jsonl" else directory / name
        assert path is not None
        return path.read_bytes()

    assert results[0][1].pages == expected_pages(site.base)
    for name in FEED_FILES:
        assert feed_bytes(0, name) == feed_bytes(1000, name), name
        assert feed_bytes(2, name) == feed_bytes(1000, name), name
    for _, result in results.values():
        assert result.stats["sitemap_crawl/pages"] == 6
        assert result.tree is not None
        assert [node["page_count"] for node in robots_of(tree_of(result))["sub_sitemaps"]] == [5, 1]


def test_feed_export_fields_keep_their_meaning(fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path) -> None:
    site = feed_site(fixture_site)

    result = crawl(
        {"homepage": site.base, "use_known_paths": False},
        settings={**SETTINGS, "FEED_EXPORT_FIELDS": ["url", "images", "priority"]},
        output_format="csv",
        extra_args=["-O", str(tmp_path / "fields.jsonl")],
    ).assert_ok()

    expected = expected_pages(site.base)
    assert result.pages == [
        {"url": page["url"], "images": as_csv(page["images"], "images"), "priority": str(page["priority"])}
        for page in expected
    ]
    assert read_feed(tmp_path / "fields.jsonl") == [
        {"url": page["url"], "images": page["images"], "priority": page["priority"]} for page in expected
    ]


def test_a_feed_split_every_n_items_gets_n_rows_a_file(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    # Scrapy counts items: with batches of pages, a file held up to N batches (3,005 rows
    # in one file for N = 1,000)
    site = feed_site(fixture_site)
    template = tmp_path / "pages-%(batch_id)s.jsonl"

    crawl(
        {"homepage": site.base, "use_known_paths": False},
        settings={**SETTINGS, "FEED_EXPORT_BATCH_ITEM_COUNT": 2},
        output_format=None,
        extra_args=["-O", str(template)],
    ).assert_ok()

    files = sorted(tmp_path.glob("pages-*.jsonl"), key=lambda path: int(path.stem.split("-")[1]))
    rows = [read_feed(path) for path in files]
    assert [len(part) for part in rows] == [2, 2, 2]
    assert [row["url"] for part in rows for row in part] == [page["url"] for page in expected_pages(site.base)]


def test_closespider_itemcount_counts_pages(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    # pages travelled in batches: the one batch of each sitemap counted as one item, and
    # the crawl finished with every page
    sitemaps = [f"{{base}}/s{index}.xml" for index in range(5)]
    site = fixture_site(
        {
            "/robots.txt": robots(*sitemaps),
            **{f"/s{index}.xml": urlset(*[f"{{base}}/s{index}/{page}" for page in range(20)]) for index in range(5)},
        }
    )

    result = crawl(
        {"homepage": site.base, "use_known_paths": False}, settings={**SETTINGS, "CLOSESPIDER_ITEMCOUNT": 10}
    ).assert_ok()

    assert result.stats["finish_reason"] == "closespider_itemcount"
    assert 10 <= len(result.pages) < 100
    assert result.stats["item_scraped_count"] == len(result.pages)


def test_feed_item_classes_and_item_filter_see_pages(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    # a feed's filter saw page batches: both feeds came out empty
    site = feed_site(fixture_site)
    feeds = {
        str(tmp_path / "classes.jsonl"): {"format": "jsonlines", "item_classes": ["sitemap_crawl.items.SitemapPage"]},
        str(tmp_path / "news.jsonl"): {"format": "jsonlines", "item_filter": "tests.support.pipelines.NewsOnly"},
    }

    crawl(
        {"homepage": site.base, "use_known_paths": False},
        settings={**SETTINGS, "FEEDS": feeds},
        output_format=None,
    ).assert_ok()

    expected = expected_pages(site.base)
    assert read_feed(tmp_path / "classes.jsonl") == expected
    assert read_feed(tmp_path / "news.jsonl") == [page for page in expected if page["news"] is not None]
