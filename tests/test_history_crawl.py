"""SITEMAP_CRAWL_HISTORY end to end: the first run exports every page as ``added``; a
second run of an unchanged site sends conditional requests (304) or finds the same body
and exports nothing; a changed sitemap exports exactly its added / modified / removed
pages, in every feed format; a bad history file stops the crawl with one error line."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.support import Route, robots, sitemapindex, urlset
from tests.support.crawl import CrawlRunner
from tests.support.fixture_server import FixtureServer, SiteFactory
from tests.test_history_store import first_layout_history

FAST = {"RETRY_TIMES": 0, "DOWNLOAD_TIMEOUT": 5}
DATE = "Mon, 06 May 2024 10:00:00 GMT"


def _site(fixture_site: SiteFactory, validators: bool = True) -> FixtureServer:
    def route(body: str, tag: str) -> Route:
        return Route(body, etag=f'"{tag}"', last_modified=DATE) if validators else Route(body)

    return fixture_site(
        {
            "/robots.txt": robots("{base}/index.xml"),
            "/index.xml": route(sitemapindex("{base}/a.xml", "{base}/b.xml"), "i1"),
            "/a.xml": route(
                urlset(
                    {"loc": "{base}/a1", "lastmod": "2024-05-01"},
                    {"loc": "{base}/a2", "lastmod": "2024-05-01"},
                    {"loc": "{base}/a3", "priority": 0.3},
                ),
                "a1",
            ),
            "/b.xml": route(urlset("{base}/b1", "{base}/b2"), "b1"),
        }
    )


def _change_a(site: FixtureServer, validators: bool = True) -> None:
    body = urlset(
        {"loc": "{base}/a1", "lastmod": "2024-05-01"},  # unchanged
        {"loc": "{base}/a2", "lastmod": "2024-05-07"},  # modified
        {"loc": "{base}/a4"},  # added; a3 removed
    )
    site["/a.xml"] = Route(body, etag='"a2"', last_modified=DATE) if validators else Route(body)


def _run(crawl: CrawlRunner, site: FixtureServer, history: Path, output_format: str = "jsonl", **settings: Any):  # type: ignore[no-untyped-def]
    return crawl(
        {"homepage": site.base, "use_known_paths": False},
        settings={**FAST, "SITEMAP_CRAWL_HISTORY": str(history), **settings},
        output_format=output_format,
    ).assert_ok()


def _nodes(result: Any) -> list[tuple[str, dict[str, Any]]]:
    return [(node["url"], node) for _depth, node in result.walk() if node["kind"] != "website"]


def _changes(rows: list[dict[str, Any]], base: str) -> list[tuple[str, str]]:
    return sorted((row["url"].removeprefix(base), row["change"]) for row in rows)


def test_first_run_exports_every_page_as_added(fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path) -> None:
    site = _site(fixture_site)

    result = _run(crawl, site, tmp_path / "history.sqlite")

    assert _changes(result.pages, site.base) == [(f"/{p}", "added") for p in ("a1", "a2", "a3", "b1", "b2")]
    assert result.stats["sitemap_crawl/history/added"] == 5
    assert result.kinds()[site.url("/a.xml")] == "xml_urlset"


def test_a_history_run_leaves_scrapys_http_cache_right_for_runs_without_it(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    # Scrapy's cache keys a request without its headers: the 304s answering the conditional
    # requests were stored over the 200s, and a later run from the cache had no page at all
    site = _site(fixture_site)
    cache = {"HTTPCACHE_ENABLED": True, "HTTPCACHE_DIR": str(tmp_path / "httpcache")}
    history = tmp_path / "history.sqlite"
    _run(crawl, site, history)
    second = _run(crawl, site, history, **cache)  # conditional requests, the cache on
    assert second.stats["sitemap_crawl/history/not_modified"] == 3

    plain = crawl({"homepage": site.base, "use_known_paths": False}, settings={**FAST, **cache}).assert_ok()

    assert sorted(row["url"].removeprefix(site.base) for row in plain.pages) == ["/a1", "/a2", "/a3", "/b1", "/b2"]
    assert plain.kinds()[site.url("/a.xml")] == "xml_urlset"


def test_plain_runs_have_no_change_field(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    site = _site(fixture_site)

    result = crawl({"homepage": site.base, "use_known_paths": False}, settings=FAST).assert_ok()

    assert len(result.pages) == 5
    assert all("change" not in row for row in result.pages)


def test_an_unchanged_site_answers_304_and_exports_nothing(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    site = _site(fixture_site)
    history = tmp_path / "history.sqlite"
    first = _run(crawl, site, history)
    site.reset()

    second = _run(crawl, site, history)

    assert second.pages == []
    for path in ("/index.xml", "/a.xml", "/b.xml"):
        (request,) = site.requests_for(path)
        assert request.header("If-None-Match") == f'"{path[1]}1"', path
        assert request.header("If-Modified-Since") == DATE
    assert second.stats["sitemap_crawl/history/not_modified"] == 3
    changes = {url: (node["kind"], node["page_count"], node["change"], node["changes"]) for url, node in _nodes(second)}
    assert changes == {
        site.url("/robots.txt"): ("robots_txt", 0, "unchanged", 0),  # no validators: the same body
        site.url("/index.xml"): ("xml_index", 0, "unchanged", 0),
        site.url("/a.xml"): ("xml_urlset", 3, "unchanged", 0),
        site.url("/b.xml"): ("xml_urlset", 2, "unchanged", 0),
    }, second.tree_text()
    assert {url: node["change"] for url, node in _nodes(first)} == dict.fromkeys(changes, "changed")
    assert "(3 pages, unchanged)" in second.log


def test_the_same_body_without_validators_exports_nothing(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    site = _site(fixture_site, validators=False)
    history = tmp_path / "history.sqlite"
    _run(crawl, site, history)
    site.reset()

    second = _run(crawl, site, history)

    assert second.pages == []
    assert site.requests_for("/a.xml")[0].header("If-None-Match") is None
    assert second.stats["sitemap_crawl/history/unchanged"] == 4  # robots.txt too
    assert "sitemap_crawl/history/not_modified" not in second.stats


def _redirected_site(fixture_site: SiteFactory) -> FixtureServer:
    """/sitemap.xml redirects to /v2.xml; /v1.xml, another file, has the same Last-Modified."""
    return fixture_site(
        {
            "/robots.txt": robots("{base}/sitemap.xml"),
            "/sitemap.xml": Route(redirect_to="/v2.xml"),
            "/v2.xml": Route(urlset("{base}/p1", "{base}/p2"), last_modified=DATE),
            "/v1.xml": Route(urlset("{base}/p1", "{base}/old"), last_modified=DATE),
        }
    )


def test_a_redirected_sitemap_is_asked_conditionally_where_it_was_answered(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    site = _redirected_site(fixture_site)
    history = tmp_path / "history.sqlite"
    _run(crawl, site, history)
    site.reset()

    second = _run(crawl, site, history)

    assert second.pages == []
    assert site.requests_for("/sitemap.xml")[0].header("If-Modified-Since") is None
    assert site.requests_for("/v2.xml")[0].header("If-Modified-Since") == DATE
    assert second.stats["sitemap_crawl/history/not_modified"] == 1


def test_a_sitemap_redirected_to_another_file_exports_its_changes(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    site = _redirected_site(fixture_site)
    history = tmp_path / "history.sqlite"
    _run(crawl, site, history)
    site["/sitemap.xml"] = Route(redirect_to="/v1.xml")
    site.reset()

    second = _run(crawl, site, history)

    assert site.requests_for("/v1.xml")[0].header("If-Modified-Since") is None  # (v2's date says nothing of v1)
    assert _changes(second.pages, site.base) == [("/old", "added"), ("/p2", "removed")]
    third = _run(crawl, site, history)
    assert third.pages == []


def test_a_changed_sitemaps_rows_come_in_its_document_order_then_its_removals(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    # they came grouped: every added page, then every modified one, then the removed ones
    listing = [{"loc": "{base}/" + name, "lastmod": "2024-05-01"} for name in "abcdef"]
    site = fixture_site({"/robots.txt": robots("{base}/s.xml"), "/s.xml": urlset(*listing)})
    history = tmp_path / "history.sqlite"
    _run(crawl, site, history)
    new_date = {"lastmod": "2024-05-07"}
    site["/s.xml"] = urlset(
        "{base}/n1",
        listing[0],
        {**listing[1], **new_date},
        "{base}/n2",
        {**listing[3], **new_date},
        listing[4],
        "{base}/n3",
    )

    result = _run(crawl, site, history)

    assert [(row["url"].removeprefix(site.base), row["change"]) for row in result.pages] == [
        ("/n1", "added"),
        ("/b", "modified"),
        ("/n2", "added"),
        ("/d", "modified"),
        ("/n3", "added"),
        ("/c", "removed"),
        ("/f", "removed"),
    ]


@pytest.mark.parametrize("output_format", ["jsonl", "json", "csv", "xml"])
def test_a_changed_sitemap_exports_exactly_its_changes(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path, output_format: str
) -> None:
    site = _site(fixture_site)
    history = tmp_path / "history.sqlite"
    _run(crawl, site, history, output_format)
    _change_a(site)

    result = _run(crawl, site, history, output_format)

    assert _changes(result.pages, site.base) == [("/a2", "modified"), ("/a3", "removed"), ("/a4", "added")]
    assert [node["changes"] for url, node in _nodes(result) if url == site.url("/a.xml")] == [3]
    by_url = {row["url"]: row for row in result.pages}
    assert by_url[site.url("/a2")]["last_modified"] == "2024-05-07"
    assert str(by_url[site.url("/a3")]["priority"]) == "0.3"  # what was last known of it
    assert by_url[site.url("/a3")]["sitemap_url"] == site.url("/a.xml")

    third = _run(crawl, site, history, output_format)
    assert third.pages == []


def test_one_page_per_item_and_no_batches(fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path) -> None:
    site = _site(fixture_site, validators=False)
    history = tmp_path / "history.sqlite"
    _run(crawl, site, history, SITEMAP_CRAWL_BATCH_SIZE=0)
    _change_a(site, validators=False)

    result = _run(crawl, site, history, SITEMAP_CRAWL_BATCH_SIZE=0)

    assert _changes(result.pages, site.base) == [("/a2", "modified"), ("/a3", "removed"), ("/a4", "added")]


def test_an_unchanged_index_still_checks_its_children(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    site = _site(fixture_site)
    history = tmp_path / "history.sqlite"
    _run(crawl, site, history)
    site["/b.xml"] = Route(urlset("{base}/b1"), etag='"b2"', last_modified=DATE)

    result = _run(crawl, site, history)

    assert _changes(result.pages, site.base) == [("/b2", "removed")]
    assert result.stats["sitemap_crawl/history/not_modified"] == 2  # the index and a.xml


def test_an_unchanged_index_puts_its_children_through_this_runs_deny(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    # the stored children were replayed as they were: b.xml, denied now, was fetched anyway
    site = _site(fixture_site)
    history = tmp_path / "history.sqlite"
    _run(crawl, site, history)
    site.reset()

    denied = crawl(
        {"homepage": site.base, "use_known_paths": False, "deny": r"b\.xml"},
        settings={**FAST, "SITEMAP_CRAWL_HISTORY": str(history)},
    ).assert_ok()

    assert denied.pages == []
    assert site.hits("/b.xml") == 0
    assert site.url("/b.xml") not in dict(_nodes(denied))
    assert denied.stats["sitemap_crawl/not_followed"] == 1


def test_an_unchanged_index_gives_the_children_a_deny_run_left_out(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    # only the followed children were stored: b.xml was never fetched again, its pages never exported
    site = _site(fixture_site)
    history = tmp_path / "history.sqlite"
    crawl(
        {"homepage": site.base, "use_known_paths": False, "deny": r"b\.xml"},
        settings={**FAST, "SITEMAP_CRAWL_HISTORY": str(history)},
    ).assert_ok()

    second = _run(crawl, site, history)

    assert _changes(second.pages, site.base) == [("/b1", "added"), ("/b2", "added")]
    assert dict(_nodes(second))[site.url("/index.xml")]["change"] == "unchanged"
    assert site.url("/b.xml") in dict(_nodes(second))


def test_an_unchanged_index_gives_the_children_a_since_run_skipped(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    site = _site(fixture_site)
    site["/index.xml"] = Route(
        sitemapindex("{base}/a.xml", {"loc": "{base}/b.xml", "lastmod": "2020-01-01"}), etag='"i1"'
    )
    history = tmp_path / "history.sqlite"
    settings = {**FAST, "SITEMAP_CRAWL_HISTORY": str(history)}
    crawl({"homepage": site.base, "use_known_paths": False, "since": "2024-01-01"}, settings=settings).assert_ok()

    again = crawl({"homepage": site.base, "use_known_paths": False, "since": "2024-01-01"}, settings=settings)
    plain = _run(crawl, site, history)

    assert again.assert_ok().stats["sitemap_crawl/since/sitemaps_skipped"] == 1  # the stored lastmod, as read
    assert _changes(plain.pages, site.base) == [("/b1", "added"), ("/b2", "added")]


def test_the_history_holds_one_row_per_page(fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path) -> None:
    site = _site(fixture_site)
    history = tmp_path / "history.sqlite"
    _run(crawl, site, history)

    with sqlite3.connect(history) as db:
        pages = db.execute(
            "SELECT pages.url, record FROM pages JOIN sitemaps ON sitemaps.id = sitemap_id WHERE sitemaps.url = ?",
            (site.url("/a.xml"),),
        ).fetchall()
        children = db.execute("SELECT children FROM sitemaps WHERE url = ?", (site.url("/index.xml"),)).fetchone()
    assert sorted(url for url, _ in pages) == [site.url(f"/a{i}") for i in (1, 2, 3)]
    assert json.loads(children[0]) == [site.url("/a.xml"), site.url("/b.xml")]


def _foreign(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE customers (id INTEGER)")


def _garbage(path: Path) -> None:
    path.write_bytes(b"this is not a database\n" * 100)


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (_foreign, "not a sitemap_crawl history"),
        (_garbage, "not a usable"),
        (first_layout_history, "without column sitemaps.id"),
    ],
)
def test_a_bad_history_file_stops_the_crawl_with_one_error_line(
    crawl: CrawlRunner, tmp_path: Path, make: Any, says: str
) -> None:
    history = tmp_path / "history.sqlite"
    make(history)

    result = crawl(
        {"homepage": "http://127.0.0.1:9/"}, settings={**FAST, "SITEMAP_CRAWL_HISTORY": str(history)}, timeout=60
    )

    assert result.returncode == 1
    assert "Traceback" not in result.log, result.log
    errors = result.log_lines("ERROR") + result.log_lines("CRITICAL")
    assert len(errors) == 1, result.log
    assert says in errors[0] and "SITEMAP_CRAWL_HISTORY" in errors[0]


def test_since_filters_the_rows_of_a_history_run(fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path) -> None:
    site = _site(fixture_site)
    history = tmp_path / "history.sqlite"
    arguments = {"homepage": site.base, "use_known_paths": False, "since": "2024-05-05", "since_undated": "drop"}
    settings = {**FAST, "SITEMAP_CRAWL_HISTORY": str(history)}

    first = crawl(arguments, settings=settings).assert_ok()
    _change_a(site)
    second = crawl(arguments, settings=settings).assert_ok()

    assert first.pages == []  # every page is older than since or undated
    assert _changes(second.pages, site.base) == [("/a2", "modified")]  # a3 removed, a4 added: undated
    assert sum(node["changes"] for _url, node in _nodes(second)) == 1  # the rows exported (collect counts them)
    # the stats count the rows exported, as the tree does (they counted those since left out)
    rows = [f"sitemap_crawl/history/{change}" for change in ("added", "modified", "removed")]
    assert [first.stats.get(key) for key in rows] == [None, None, None]
    assert [second.stats.get(key) for key in rows] == [None, 1, None]
    assert crawl(arguments, settings=settings).assert_ok().pages == []


def test_a_sitemap_under_two_indexes_exports_nothing_when_unchanged(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/one.xml", "{base}/two.xml"),
            "/one.xml": sitemapindex("{base}/shared.xml"),
            "/two.xml": sitemapindex("{base}/shared.xml"),
            # slow: its two requests (one a place) are in flight at once
            "/shared.xml": Route(urlset("{base}/p1", "{base}/p2"), etag='"s1"', delay=0.5),
        }
    )
    history = tmp_path / "history.sqlite"
    _run(crawl, site, history)

    second = _run(crawl, site, history)

    assert second.pages == []
    # both places answered 304; the state read for the first was dropped when it ended, and
    # the second's 304 was taken for a failed download (an invalid node, "HTTP 304")
    shared = [node for url, node in _nodes(second) if url == site.url("/shared.xml")]
    assert [(node["kind"], node["error"], node["change"]) for node in shared] == [("xml_urlset", None, "unchanged")] * 2
    site["/shared.xml"] = Route(urlset("{base}/p1"), etag='"s2"')
    third = _run(crawl, site, history)
    assert {(row["url"], row["change"]) for row in third.pages} == {(site.url("/p2"), "removed")}


def test_with_the_audit_every_sitemap_is_read_again_and_audited_alike(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    # the audit took each 304's empty body for the sitemap: an empty-sitemap for every
    # sitemap, and a no-sitemap-in-robots, in the second run
    site = _site(fixture_site)
    history = tmp_path / "history.sqlite"
    findings = tmp_path / "findings.jsonl"
    first = _run(crawl, site, history, SITEMAP_CRAWL_AUDIT_FILE=str(findings))
    first_findings = findings.read_text("utf-8")
    site.reset()

    second = _run(crawl, site, history, SITEMAP_CRAWL_AUDIT_FILE=str(findings))

    assert first.pages and second.pages == []  # unchanged bodies: no rows
    assert all(request.header("If-None-Match") is None for request in site.requests)
    assert second.stats["sitemap_crawl/history/unchanged"] == 4
    assert findings.read_text("utf-8") == first_findings


def test_a_304_to_a_request_without_validators_is_an_http_error(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    # with the audit on the requests carry no validators; a server answering 304 all the same
    # had the sitemap "unchanged", not audited, and nothing said so
    site = _site(fixture_site)
    history = tmp_path / "history.sqlite"
    findings = tmp_path / "findings.jsonl"
    _run(crawl, site, history, SITEMAP_CRAWL_AUDIT_FILE=str(findings))
    site["/b.xml"] = Route("", status=304)

    second = _run(crawl, site, history, SITEMAP_CRAWL_AUDIT_FILE=str(findings))

    b = dict(_nodes(second))[site.url("/b.xml")]
    assert (b["kind"], b["error"]) == ("invalid", "HTTP 304")
    assert "sitemap_crawl/history/not_modified" not in second.stats
    found = [json.loads(line) for line in findings.read_text("utf-8").splitlines()]
    assert [(f["rule"], f["sitemap_url"], f["detail"]) for f in found if f["rule"] == "http-error"] == [
        ("http-error", site.url("/b.xml"), "HTTP 304")
    ]


def test_a_sitemap_its_index_drops_has_its_pages_removed_once(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    # the index changed, and b.xml's pages stayed in the history for good: never removed
    site = _site(fixture_site)
    history = tmp_path / "history.sqlite"
    _run(crawl, site, history)
    site["/index.xml"] = Route(sitemapindex("{base}/a.xml"), etag='"i2"', last_modified=DATE)

    second = _run(crawl, site, history)
    third = _run(crawl, site, history)

    assert _changes(second.pages, site.base) == [("/b1", "removed"), ("/b2", "removed")]
    assert {row["sitemap_url"] for row in second.pages} == {site.url("/b.xml")}
    assert site.hits("/b.xml") == 1  # (the first run only)
    assert third.pages == []
    with sqlite3.connect(history) as db:
        assert db.execute("SELECT count(*) FROM sitemaps WHERE url = ?", (site.url("/b.xml"),)).fetchone() == (0,)


def test_an_index_read_in_part_keeps_the_children_it_did_not_get_to(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    # the history stored only the children read before the size cap: a child the index had
    # dropped meanwhile was never reported removed, in that run or any later one
    children = [f"{{base}}/c{i:02d}.xml" for i in range(40)]
    routes: dict[str, Any] = {"/robots.txt": robots("{base}/index.xml.gz")}
    routes |= {f"/c{i:02d}.xml": urlset(f"{{base}}/p{i:02d}") for i in range(40)}
    routes["/index.xml.gz"] = Route(sitemapindex(*children), gzip_file=True)
    site = fixture_site(routes)
    history = tmp_path / "history.sqlite"
    _run(crawl, site, history)
    site["/index.xml.gz"] = Route(sitemapindex(*children[:39]), gzip_file=True)  # c39 dropped

    cut = _run(crawl, site, history, SITEMAP_CRAWL_MAX_SIZE=1500)  # the index read in part
    whole = _run(crawl, site, history)
    again = _run(crawl, site, history)

    index = dict(_nodes(cut))[site.url("/index.xml.gz")]
    assert index["error"] == "size limit" and len(index["sub_sitemaps"]) < 39
    assert cut.pages == []  # (nothing removed from a listing read in part)
    assert _changes(whole.pages, site.base) == [("/p39", "removed")]
    assert again.pages == []


def test_an_index_that_dropped_a_sitemap_is_in_the_tree_of_a_run_stopped_before_the_sites_end(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    # its node waited for the site's end (the rows of the sitemaps it dropped): a run stopped
    # before left it out of the tree, though it was read
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/one.xml", "{base}/two.xml"),
            "/one.xml": sitemapindex("{base}/a.xml"),
            "/two.xml": sitemapindex("{base}/b.xml"),
            "/a.xml": urlset("{base}/a1"),
            "/b.xml": urlset("{base}/b1"),
        }
    )
    history = tmp_path / "history.sqlite"
    _run(crawl, site, history)
    site["/one.xml"] = sitemapindex()  # a.xml dropped
    site["/two.xml"] = Route(sitemapindex("{base}/b.xml"), delay=4)  # in flight when the run stops

    stopped = _run(crawl, site, history, CLOSESPIDER_TIMEOUT=2)

    nodes = dict(_nodes(stopped))
    assert (nodes[site.url("/one.xml")]["change"], nodes[site.url("/one.xml")]["error"]) == ("changed", "interrupted")
    assert stopped.pages == []
    site["/two.xml"] = sitemapindex("{base}/b.xml")
    ended = _run(crawl, site, history)  # (one.xml not committed by the stopped run: its changes come now)
    assert _changes(ended.pages, site.base) == [("/a1", "removed")]
    assert dict(_nodes(ended))[site.url("/one.xml")]["error"] is None


def test_a_sitemap_its_index_drops_but_a_well_known_path_finds_is_not_removed(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    site = _site(fixture_site)
    history = tmp_path / "history.sqlite"
    known = {"SITEMAP_CRAWL_KNOWN_PATHS": "b.xml"}
    run = {"homepage": site.base}
    crawl(run, settings={**FAST, "SITEMAP_CRAWL_HISTORY": str(history), **known}).assert_ok()
    site["/index.xml"] = Route(sitemapindex("{base}/a.xml"), etag='"i2"', last_modified=DATE)

    second = crawl(run, settings={**FAST, "SITEMAP_CRAWL_HISTORY": str(history), **known}).assert_ok()

    assert second.pages == []  # read at /b.xml as a well-known path: unchanged


def test_a_robots_txt_that_answers_an_html_page_leaves_its_stored_state_alone(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    site = _site(fixture_site)
    site["/new.xml"] = urlset("{base}/n1")
    history = tmp_path / "history.sqlite"
    _run(crawl, site, history)
    site["/robots.txt"] = Route(
        "<!DOCTYPE html><html><body>Down for maintenance</body></html>", content_type="text/html"
    )

    failed = _run(crawl, site, history)
    site["/robots.txt"] = robots("{base}/new.xml")  # index.xml no longer declared
    third = _run(crawl, site, history)

    # it was stored as a robots.txt listing no sitemap (and counted changed): index.xml's
    # pages were never removed
    assert failed.pages == []
    assert "sitemap_crawl/history/changed" not in failed.stats
    assert _changes(third.pages, site.base) == [
        ("/a1", "removed"),
        ("/a2", "removed"),
        ("/a3", "removed"),
        ("/b1", "removed"),
        ("/b2", "removed"),
        ("/n1", "added"),
    ]


def test_each_place_of_a_sitemap_under_two_indexes_exports_the_same_changes(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    # the place under the slow two.xml was read after the first place's new state was
    # committed: compared with it, it exported nothing (or, timing aside, the same rows)
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/one.xml", "{base}/two.xml"),
            "/one.xml": sitemapindex("{base}/shared.xml"),
            "/two.xml": Route(sitemapindex("{base}/shared.xml"), delay=1.0),
            "/shared.xml": Route(urlset("{base}/p1"), etag='"s1"'),
        }
    )
    history = tmp_path / "history.sqlite"

    first = _run(crawl, site, history)
    site["/shared.xml"] = Route(urlset("{base}/p1", "{base}/p2"), etag='"s2"')
    second = _run(crawl, site, history)
    third = _run(crawl, site, history)

    assert _changes(first.pages, site.base) == [("/p1", "added")] * 2
    assert _changes(second.pages, site.base) == [("/p2", "added")] * 2
    shared = [node for url, node in _nodes(second) if url == site.url("/shared.xml")]
    assert [(node["change"], node["changes"]) for node in shared] == [("changed", 1)] * 2
    assert [request.header("If-None-Match") for request in site.requests_for("/shared.xml")][-4:-2] == ['"s1"'] * 2
    assert third.pages == []


def test_a_sitemap_that_moves_to_another_index_is_not_removed(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    # one.xml, read first, dropped moved.xml before the slow two.xml listed it: its pages were
    # exported removed, and the history forgot it (the next run exported them added)
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/one.xml", "{base}/two.xml"),
            "/one.xml": sitemapindex("{base}/moved.xml"),
            "/two.xml": Route(sitemapindex("{base}/other.xml"), delay=1.0),
            "/moved.xml": Route(urlset("{base}/m1", "{base}/m2"), etag='"m1"'),
            "/other.xml": urlset("{base}/o1"),
            "/new.xml": urlset("{base}/n1"),
        }
    )
    history = tmp_path / "history.sqlite"
    _run(crawl, site, history)
    site["/one.xml"] = sitemapindex("{base}/new.xml")
    site["/two.xml"] = Route(sitemapindex("{base}/other.xml", "{base}/moved.xml"), delay=1.0)

    second = _run(crawl, site, history)
    third = _run(crawl, site, history)

    assert _changes(second.pages, site.base) == [("/n1", "added")]
    nodes = _nodes(second)
    assert [(node["change"], node["changes"]) for url, node in nodes if url == site.url("/moved.xml")] == [
        ("unchanged", 0)
    ]
    assert [node["changes"] for url, node in nodes if url == site.url("/one.xml")] == [0]
    assert third.pages == []


def test_a_sitemap_listed_by_a_new_index_of_robots_txt_is_not_removed(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    # robots.txt dropped old.xml before new.xml (its child) was read: a.xml's pages were
    # exported removed, then added again
    site = _site(fixture_site)
    history = tmp_path / "history.sqlite"
    _run(crawl, site, history)
    site["/robots.txt"] = robots("{base}/new.xml")
    site["/new.xml"] = sitemapindex("{base}/a.xml", "{base}/b.xml")

    second = _run(crawl, site, history)
    third = _run(crawl, site, history)

    assert second.pages == [] and third.pages == []
    with sqlite3.connect(history) as db:
        assert db.execute("SELECT count(*) FROM sitemaps WHERE url = ?", (site.url("/index.xml"),)).fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM sitemaps WHERE url = ?", (site.url("/a.xml"),)).fetchone() == (1,)


def test_a_sitemap_both_its_indexes_drop_is_removed_at_each_place(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    # each index found the other still listing it (as stored): its pages stayed for good
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/one.xml", "{base}/two.xml"),
            "/one.xml": sitemapindex("{base}/shared.xml", "{base}/a.xml"),
            "/two.xml": Route(sitemapindex("{base}/shared.xml"), delay=0.5),
            "/shared.xml": urlset("{base}/s1"),
            "/a.xml": urlset("{base}/a1"),
        }
    )
    history = tmp_path / "history.sqlite"
    _run(crawl, site, history)
    site["/one.xml"] = sitemapindex("{base}/a.xml")
    site["/two.xml"] = Route(sitemapindex("{base}/a.xml"), delay=0.5)

    second = _run(crawl, site, history)
    third = _run(crawl, site, history)

    assert _changes(second.pages, site.base) == [("/s1", "removed")] * 2
    indexes = {url: node["changes"] for url, node in _nodes(second) if url.endswith(("/one.xml", "/two.xml"))}
    assert indexes == {site.url("/one.xml"): 1, site.url("/two.xml"): 1}
    assert second.stats["sitemap_crawl/history/removed"] == 2
    assert third.pages == []
    with sqlite3.connect(history) as db:
        assert db.execute("SELECT count(*) FROM sitemaps WHERE url = ?", (site.url("/shared.xml"),)).fetchone() == (0,)


def test_the_removed_rows_are_given_when_the_sites_last_sitemap_fails(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/one.xml", "{base}/two.xml"),
            "/one.xml": sitemapindex("{base}/gone.xml", "{base}/a.xml"),
            "/two.xml": sitemapindex("{base}/a.xml"),
            "/gone.xml": urlset("{base}/g1"),
            "/a.xml": urlset("{base}/a1"),
        }
    )
    history = tmp_path / "history.sqlite"
    _run(crawl, site, history)
    site["/one.xml"] = sitemapindex("{base}/a.xml")
    site["/two.xml"] = Route("", drop_connection=True, delay=1.0)  # its errback ends the site

    second = _run(crawl, site, history)

    assert _changes(second.pages, site.base) == [("/g1", "removed")]
    assert second.tree_text().count("invalid") == 1, second.tree_text()


def test_a_sitemap_two_sites_list_gives_each_site_its_own_changes(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    shared = fixture_site({"/shared.xml": urlset("{base}/s1", "{base}/s2")})
    sites = [fixture_site({"/robots.txt": robots(shared.url("/shared.xml"))}) for _ in range(2)]
    homepages = tmp_path / "sites.txt"
    homepages.write_text("".join(f"{site.base}/\n" for site in sites))
    history = tmp_path / "history.sqlite"

    def run() -> list[tuple[str, str, str]]:
        result = crawl(
            {"homepages_file": str(homepages), "use_known_paths": False},
            settings={**FAST, "SITEMAP_CRAWL_HISTORY": str(history)},
        ).assert_ok()
        return sorted((row["website"], row["url"].removeprefix(shared.base), row["change"]) for row in result.pages)

    first = run()
    assert first == sorted((site.url("/"), page, "added") for site in sites for page in ("/s1", "/s2"))
    shared["/shared.xml"] = urlset("{base}/s1", "{base}/s3")

    second = run()

    # s1 did not change: before, the site whose run wrote the history last had it (and s2
    # while it lasted) "modified", and both "removed" rows named that one site
    expected = [
        (site.url("/"), page, change) for site in sites for page, change in (("/s2", "removed"), ("/s3", "added"))
    ]
    assert second == sorted(expected)


def test_one_sitemap_spelled_two_ways_is_one_sitemap_of_the_history(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    site = fixture_site({"/robots.txt": robots("{base}/café.xml"), "/caf%C3%A9.xml": urlset("{base}/c1")})
    history = tmp_path / "history.sqlite"
    assert _changes(_run(crawl, site, history).pages, site.base) == [("/c1", "added")]
    site["/robots.txt"] = robots("{base}/caf%C3%A9.xml")  # the same request

    second = _run(crawl, site, history)

    # before: c1 "added" (under the new spelling), then "removed" (under the old one)
    assert second.pages == []
    assert [node["change"] for _url, node in _nodes(second) if node["kind"] == "xml_urlset"] == ["unchanged"]


def test_a_sitemap_spelled_another_way_and_changed_exports_only_its_changes(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    # its pages held the first spelling in their stored records: every one came out
    # "modified" when the body changed at all, its sitemap_url the only difference
    pages = [{"loc": f"{{base}}/c{number}", "lastmod": "2024-05-01"} for number in range(3)]
    site = fixture_site({"/robots.txt": robots("{base}/café.xml"), "/caf%C3%A9.xml": urlset(*pages)})
    history = tmp_path / "history.sqlite"
    _run(crawl, site, history)
    site["/robots.txt"] = robots("{base}/caf%C3%A9.xml")
    site["/caf%C3%A9.xml"] = urlset(*pages, "{base}/new")

    second = _run(crawl, site, history)

    assert _changes(second.pages, site.base) == [("/new", "added")]


def test_a_history_that_keyed_a_sitemap_by_its_iri_finds_it_again(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    site = fixture_site({"/robots.txt": robots("{base}/café.xml"), "/caf%C3%A9.xml": urlset("{base}/c1")})
    history = tmp_path / "history.sqlite"
    _run(crawl, site, history)
    with sqlite3.connect(history) as db:  # as files written before the URL key held it
        db.execute("UPDATE sitemaps SET url = ? WHERE url = ?", (site.url("/café.xml"), site.url("/caf%C3%A9.xml")))
    db.close()

    second = _run(crawl, site, history)

    assert second.pages == []
    with sqlite3.connect(history) as db:
        stored = {url for (url,) in db.execute("SELECT url FROM sitemaps")}
    assert stored == {site.url("/robots.txt"), site.url("/caf%C3%A9.xml")}
    db.close()
