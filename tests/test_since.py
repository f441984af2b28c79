"""``-a since`` / ``-a since_undated``: the pure filter, then end to end (pages kept by
lastmod, index children skipped by their own lastmod, bad values)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from sitemap_crawl.discovery.since import Since, SinceError, parse_since, parse_undated, to_instant
from sitemap_crawl.names import SINCE_PAGES_DROPPED_STAT, SINCE_SITEMAPS_SKIPPED_STAT
from tests.support import robots, sitemapindex, urlset
from tests.support.crawl import CrawlRunner
from tests.support.fixture_server import SiteFactory
from tests.support.tree import node, robots_tree

FAST = {"RETRY_TIMES": 0, "DOWNLOAD_TIMEOUT": 5}
NOW = datetime(2024, 5, 10, 12, 0, tzinfo=UTC)


# -- pure ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "moment"),
    [
        ("2024-05-01", datetime(2024, 5, 1, tzinfo=UTC)),
        ("2024-05-01T10:00:00", datetime(2024, 5, 1, 10, tzinfo=UTC)),
        ("2024-05-01T10:00:00+02:00", datetime(2024, 5, 1, 8, tzinfo=UTC)),
        ("2024-05-01T10:00:00Z", datetime(2024, 5, 1, 10, tzinfo=UTC)),
        ("7d", datetime(2024, 5, 3, 12, tzinfo=UTC)),
        ("12h", datetime(2024, 5, 10, 0, tzinfo=UTC)),
        ("2w", datetime(2024, 4, 26, 12, tzinfo=UTC)),
        (" 30m ", datetime(2024, 5, 10, 11, 30, tzinfo=UTC)),
    ],
)
def test_parse_since(text: str, moment: datetime) -> None:
    assert parse_since(text, now=NOW) == moment


@pytest.mark.parametrize("text", ["yesterday", "7", "2024-13-01", "d7", "", "7y", "99999999d"])
def test_parse_since_rejects(text: str) -> None:
    with pytest.raises(SinceError, match="since="):
        parse_since(text, now=NOW)


def test_lastmods_compare_as_instants_across_offsets() -> None:
    since = Since(parse_since("2024-05-01T10:00:00+02:00"))  # 08:00 UTC
    assert since.keeps_page("2024-05-01T09:30:00+01:00")  # 08:30 UTC
    assert not since.keeps_page("2024-05-01T09:30:00+02:00")  # 07:30 UTC
    assert since.keeps_page("2024-05-01T08:00:00+00:00")  # exactly: at or after
    assert not since.keeps_page("2024-04-30")
    assert since.keeps_page("2024-05-02")
    assert not since.keeps_page("2024-05")  # the first day of the month
    assert to_instant("not a date") is None


def test_undated_pages_follow_the_rule() -> None:
    moment = parse_since("2024-05-01")
    assert Since(moment).keeps_page(None)
    assert Since(moment).keeps_page("garbage")
    assert not Since(moment, keep_undated=False).keeps_page(None)
    assert parse_undated(None) and parse_undated("KEEP") and not parse_undated("drop")
    with pytest.raises(SinceError, match="since_undated"):
        parse_undated("maybe")


def test_only_a_dated_old_sitemap_is_skipped() -> None:
    since = Since(parse_since("2024-05-01"))
    assert since.skips_sitemap("2024-04-30T23:59:59+00:00")
    assert not since.skips_sitemap("2024-05-01")
    assert not since.skips_sitemap(None)


@pytest.mark.parametrize(
    ("lastmod", "kept"),
    [("9999-12-31T23:59:59-12:00", True), ("0001-01-01T00:00:00+01:00", False)],
)
def test_a_lastmod_beyond_the_calendar_in_utc_is_at_the_edge_of_time(lastmod: str, kept: bool) -> None:
    # its conversion to UTC raised OverflowError inside the callback: the whole sitemap was lost
    since = Since(parse_since("2024-01-01"))
    assert since.keeps_page(lastmod) is kept
    assert since.skips_sitemap(lastmod) is not kept
    assert to_instant(lastmod) == (datetime.max if kept else datetime.min).replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "moment"),
    [("9999-12-31T23:59:59-12:00", datetime.max), ("0001-01-01T00:00:00+01:00", datetime.min)],
)
def test_since_beyond_the_calendar_in_utc_is_the_edge_of_time(text: str, moment: datetime) -> None:
    # an uncaught OverflowError at spider creation
    assert parse_since(text) == moment.replace(tzinfo=UTC)


# -- end to end ----------------------------------------------------------------------------


def _site(fixture_site: SiteFactory):  # type: ignore[no-untyped-def]
    return fixture_site(
        {
            "/robots.txt": robots("{base}/index.xml"),
            "/index.xml": sitemapindex(
                {"loc": "{base}/old.xml", "lastmod": "2024-04-01"},
                {"loc": "{base}/new.xml", "lastmod": "2024-05-05T00:00:00+02:00"},
                "{base}/undated.xml",
            ),
            "/old.xml": urlset({"loc": "{base}/old-page", "lastmod": "2024-05-09"}),
            "/new.xml": urlset(
                {"loc": "{base}/fresh", "lastmod": "2024-05-03T01:00:00+02:00"},
                {"loc": "{base}/stale", "lastmod": "2024-05-02T23:00:00-02:00"},  # 05-03 01:00 UTC
                {"loc": "{base}/too-old", "lastmod": "2024-05-02T23:59:59+00:00"},
                "{base}/no-lastmod",
            ),
            "/undated.xml": urlset({"loc": "{base}/u1", "lastmod": "2024-06-01"}, "{base}/u2"),
        }
    )


def test_since_keeps_recent_and_undated_pages_and_skips_old_children(
    fixture_site: SiteFactory, crawl: CrawlRunner
) -> None:
    site = _site(fixture_site)

    result = crawl(
        {"homepage": site.base, "use_known_paths": False, "since": "2024-05-03T00:00:00+00:00"}, settings=FAST
    ).assert_ok()

    base = site.base
    assert sorted(result.urls()) == sorted(
        [base + "/stale", base + "/no-lastmod", base + "/u1", base + "/u2"]
    )  # /fresh is 2024-05-02T23:00 UTC
    assert site.hits("/old.xml") == 0
    assert result.tree == robots_tree(
        base,
        node(
            base + "/index.xml",
            "xml_index",
            node(base + "/old.xml", "invalid", error="older than since"),
            node(base + "/new.xml", "xml_urlset", pages=4),
            node(base + "/undated.xml", "xml_urlset", pages=2),
        ),
    ), result.tree_text()
    stats = result.stats
    assert stats[SINCE_SITEMAPS_SKIPPED_STAT] == 1
    assert stats[SINCE_PAGES_DROPPED_STAT] == 2


def test_since_undated_drop(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    site = _site(fixture_site)

    result = crawl(
        {"homepage": site.base, "use_known_paths": False, "since": "2024-05-03", "since_undated": "drop"},
        settings={**FAST, "SITEMAP_CRAWL_BATCH_SIZE": 0},
    ).assert_ok()

    assert sorted(result.urls()) == sorted([site.url("/stale"), site.url("/u1")])
    assert result.stats[SINCE_PAGES_DROPPED_STAT] == 4


def test_a_duration_keeps_everything_recent(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    site = _site(fixture_site)

    result = crawl({"homepage": site.base, "use_known_paths": False, "since": "36500d"}, settings=FAST).assert_ok()

    assert len(result.urls()) == 7
    assert SINCE_SITEMAPS_SKIPPED_STAT not in result.stats


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"since": "last tuesday"}, "since="),
        ({"since": "7d", "since_undated": "perhaps"}, "since_undated"),
        ({"since_undated": "drop"}, "since_undated needs since"),
    ],
)
def test_a_bad_since_stops_the_crawl_with_one_error_line(
    crawl: CrawlRunner, arguments: dict[str, str], named: str
) -> None:
    result = crawl({"homepage": "http://127.0.0.1:9/", **arguments}, settings=FAST, timeout=60)

    assert result.returncode == 1
    assert "Traceback" not in result.log, result.log
    errors = result.log_lines("ERROR") + result.log_lines("CRITICAL")
    assert len(errors) == 1, result.log
    assert named in errors[0]
