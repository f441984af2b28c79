"""The tree file, the text rendering at the end of the log and the stats, end to end
(see docs/tree.md), including crawls stopped early."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support import CrawlResult, FixtureServer, Route, robots, rss, sitemapindex, text_sitemap, urlset
from tests.support.crawl import CrawlRunner
from tests.support.fixture_server import SiteFactory
from tests.support.tree import node, robots_of, tree_of, website_node

FAST = {"RETRY_TIMES": 0, "DOWNLOAD_TIMEOUT": 5}
NODE_KEYS = ["url", "kind", "error", "page_count", "sub_sitemaps"]
KINDS = {"website", "robots_txt", "xml_index", "xml_urlset", "rss", "atom", "text", "invalid"}


def mixed_site(fixture_site: SiteFactory) -> FixtureServer:
    return fixture_site(
        {
            "/robots.txt": robots("{base}/index.xml", "{base}/news.rss"),
            "/index.xml": sitemapindex("{base}/pages.xml", "{base}/missing.xml", "{base}/words.txt"),
            "/pages.xml": urlset("{base}/a", "{base}/b", "{base}/c"),
            "/words.txt": text_sitemap("{base}/t"),
            "/news.rss": rss("{base}/story"),
            "/sitemap.xml": urlset("{base}/k"),
        }
    )


def assert_summary_at_the_end(result: CrawlResult) -> str:
    """The log's last record is the tree rendering with the counts; returns its text."""
    records = re.split(r"(?m)^(?=\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \[)", result.log.rstrip("\n"))
    last = records[-1]
    assert "Sitemap tree:" in last, result.log[-4000:]
    return last


def test_tree_file_log_rendering_and_stats(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    site = mixed_site(fixture_site)

    result = crawl({"homepage": site.base}, settings=FAST).assert_ok()

    url = site.url
    expected = website_node(
        site.base,
        node(
            url("/robots.txt"),
            "robots_txt",
            node(
                url("/index.xml"),
                "xml_index",
                node(url("/pages.xml"), "xml_urlset", pages=3),
                node(url("/missing.xml"), "invalid", error="HTTP 404"),
                node(url("/words.txt"), "text", pages=1),
            ),
            node(url("/news.rss"), "rss", pages=1),
        ),
        node(url("/sitemap.xml"), "xml_urlset", pages=1),
    )
    assert result.tree == expected, result.tree_text()

    # the file: nested objects with exactly these keys, in this order
    assert result.tree_path is not None
    raw = json.loads(result.tree_path.read_text("utf-8"), object_pairs_hook=lambda pairs: pairs)

    def check(pairs: Any) -> None:
        assert [key for key, _ in pairs] == NODE_KEYS
        values = dict(pairs)
        assert values["kind"] in KINDS
        assert isinstance(values["page_count"], int)
        assert values["error"] is None or isinstance(values["error"], str)
        for child in values["sub_sitemaps"]:
            check(child)

    check(raw)

    # the log ends with a text rendering of the tree and the counts
    summary = assert_summary_at_the_end(result)
    lines = summary.splitlines()
    for depth, found in result.walk():
        line = next((line for line in lines if line.strip().startswith(f"{found['kind']} {found['url']}")), None)
        assert line is not None, (found["url"], summary)
        assert line.startswith("  " * depth + found["kind"]), (line, depth)
        if found["error"]:
            assert found["error"] in line
    assert "Pages: 6" in summary
    assert "1 invalid" in summary and "2 xml_urlset" in summary and "HTTP 404" in summary

    # stats
    stats = result.stats
    assert stats["sitemap_crawl/pages"] == 6
    assert stats["sitemap_crawl/sitemaps"] == 7
    assert stats["sitemap_crawl/sitemaps/robots_txt"] == 1
    assert stats["sitemap_crawl/sitemaps/xml_index"] == 1
    assert stats["sitemap_crawl/sitemaps/xml_urlset"] == 2
    assert stats["sitemap_crawl/sitemaps/text"] == 1
    assert stats["sitemap_crawl/sitemaps/rss"] == 1
    assert stats["sitemap_crawl/sitemaps/invalid"] == 1
    assert stats["sitemap_crawl/errors/HTTP 404"] == 1
    assert "sitemap_crawl/sitemaps/website" not in stats
    assert stats["finish_reason"] == "finished"


def test_a_crawl_that_finds_no_page_has_a_page_count_of_0(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    # the stat was missing: a script reading stats["sitemap_crawl/pages"] got a KeyError
    site = fixture_site({"/robots.txt": "User-agent: *\nDisallow:\n"})
    result = crawl({"homepage": site.url("/")}).assert_ok()
    assert result.stats["sitemap_crawl/pages"] == 0


def test_without_a_tree_file_the_log_still_ends_with_the_tree(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    site = mixed_site(fixture_site)

    result = crawl(
        {"homepage": site.base, "use_known_paths": "no"},
        settings={**FAST, "SITEMAP_CRAWL_TREE_FILE": None, "LOG_LEVEL": "INFO"},
    ).assert_ok()

    assert result.tree is None
    assert not list(tmp_path.rglob("*tree*"))
    summary = assert_summary_at_the_end(result)
    assert f"  robots_txt {site.url('/robots.txt')}" in summary
    assert "Pages: 5" in summary


def test_tree_file_is_written_when_the_crawl_stops_early_on_an_item_count(
    fixture_site: SiteFactory, crawl: CrawlRunner
) -> None:
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/first.xml", "{base}/slow.xml", "{base}/third.xml"),
            "/first.xml": urlset("{base}/a", "{base}/b", "{base}/c"),
            "/slow.xml": Route(urlset("{base}/late"), delay=2),
            "/third.xml": urlset("{base}/never"),
        }
    )

    result = crawl(
        {"homepage": site.base},
        settings={**FAST, "CLOSESPIDER_ITEMCOUNT": 1, "SITEMAP_CRAWL_BATCH_SIZE": 1, "CONCURRENT_REQUESTS": 1},
    ).assert_ok()

    assert result.stats["finish_reason"] == "closespider_itemcount"
    # what was not fetched yet never is
    assert site.hits("/third.xml") == 0
    assert site.hits("/sitemap.xml") == 0
    assert result.tree is not None
    assert result.tree["url"] == site.base + "/"
    # third.xml is not in it: the website node says the tree is incomplete (it said nothing)
    assert result.tree["error"] == "interrupted"
    robots_node = robots_of(tree_of(result))
    assert (robots_node["url"], robots_node["kind"]) == (site.url("/robots.txt"), "robots_txt")
    first = robots_node["sub_sitemaps"][0]
    assert (first["url"], first["kind"]) == (site.url("/first.xml"), "xml_urlset")
    assert site.url("/third.xml") not in result.kinds()
    assert site.url("/a") in result.urls()
    assert set(result.urls()) <= {site.url("/a"), site.url("/b"), site.url("/c"), site.url("/late")}
    assert_summary_at_the_end(result)


def test_tree_file_is_written_when_the_crawl_is_interrupted(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/fast.xml", "{base}/slow.xml", "{base}/later.xml"),
            "/fast.xml": urlset("{base}/a", "{base}/b"),
            "/slow.xml": Route(urlset("{base}/late"), delay=3),
            "/later.xml": urlset("{base}/never"),
        }
    )

    running = crawl.start({"homepage": site.base}, settings={**FAST, "CONCURRENT_REQUESTS": 1})
    assert site.wait_for("/slow.xml", timeout=30)
    assert running.wait_for_log(f"Scraped from <200 {site.url('/fast.xml')}>", timeout=30), running.log()[-3000:]
    running.interrupt()
    result = running.wait(60)

    assert result.log_has("Received SIGINT")
    assert "Traceback" not in result.log
    assert result.stats["finish_reason"] == "shutdown"
    # a graceful shutdown finishes the request in flight, and fetches nothing more
    assert site.hits("/later.xml") == 0
    assert site.hits("/sitemap.xml") == 0
    assert result.tree is not None
    assert result.tree["error"] == "interrupted"
    robots_node = robots_of(tree_of(result))
    assert robots_node["url"] == site.url("/robots.txt")
    assert robots_node["sub_sitemaps"][0] == node(site.url("/fast.xml"), "xml_urlset", pages=2)
    assert site.url("/later.xml") not in result.kinds()
    assert result.urls()[:2] == [site.url("/a"), site.url("/b")]
    assert_summary_at_the_end(result)


def test_tree_file_is_written_when_a_second_ctrl_c_forces_the_shutdown(
    fixture_site: SiteFactory, crawl: CrawlRunner
) -> None:
    # Scrapy stops the reactor at once, without spider_closed: no tree file was written
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/fast.xml", "{base}/slow.xml"),
            "/fast.xml": urlset("{base}/a", "{base}/b"),
            "/slow.xml": Route(urlset("{base}/late"), delay=20),
        }
    )
    running = crawl.start({"homepage": site.base}, settings={**FAST, "CONCURRENT_REQUESTS": 1})
    assert site.wait_for("/slow.xml", timeout=30)
    assert running.wait_for_log(f"Scraped from <200 {site.url('/fast.xml')}>", timeout=30), running.log()[-3000:]
    running.interrupt()
    assert running.wait_for_log("shutting down gracefully", timeout=30), running.log()[-3000:]
    running.interrupt()
    result = running.wait(15)  # (the slow sitemap is not waited for)

    assert result.log_has("forcing unclean shutdown")
    assert "Traceback" not in result.log
    assert result.tree is not None and result.tree["error"] == "interrupted"
    robots_node = robots_of(tree_of(result))
    assert robots_node["sub_sitemaps"][0] == node(site.url("/fast.xml"), "xml_urlset", pages=2)


def test_dict_settings_given_on_the_command_line_keep_the_crawls_components(
    fixture_site: SiteFactory, crawl: CrawlRunner
) -> None:
    # scrapy crawl merges the command line's settings into the crawler's again, after the
    # spider added its components: -s EXTENSIONS=... dropped the tree extension (no tree file)
    site = fixture_site({"/robots.txt": robots("{base}/s.xml"), "/s.xml": urlset("{base}/a", "{base}/b")})
    settings = {
        **FAST,
        "EXTENSIONS": {"scrapy.extensions.telnet.TelnetConsole": None},
        "DOWNLOADER_MIDDLEWARES": {"scrapy.downloadermiddlewares.useragent.UserAgentMiddleware": 400},
        "FEED_EXPORTERS": {"xml": "scrapy.exporters.XmlItemExporter"},
    }
    result = crawl({"homepage": site.base}, settings=settings).assert_ok()
    assert result.tree is not None and result.kinds()[site.url("/s.xml")] == "xml_urlset"
    assert result.urls() == [site.url("/a"), site.url("/b")]
    assert "UnreachableHostMiddleware" in result.log  # (in the enabled downloader middlewares)


def test_a_tree_file_the_disabled_tree_extension_cannot_write_is_said(
    fixture_site: SiteFactory, crawl: CrawlRunner
) -> None:
    site = fixture_site({"/robots.txt": robots("{base}/s.xml"), "/s.xml": urlset("{base}/a")})
    settings = {**FAST, "EXTENSIONS": {"sitemap_crawl.extensions.tree.SitemapTreeExtension": None}}
    result = crawl({"homepage": site.base}, settings=settings).assert_ok()
    assert result.tree is None and result.urls() == [site.url("/a")]
    assert result.log_count("is not written: the tree extension") == 1
    plain = crawl({"homepage": site.base}, settings=FAST).assert_ok()
    assert plain.tree is not None and "is not written" not in plain.log


SCRAPY_SCHEDULER = "scrapy.core.scheduler.Scheduler"


@pytest.mark.parametrize(
    ("first_scheduler", "scheduler"),
    [(None, None), (SCRAPY_SCHEDULER, SCRAPY_SCHEDULER), (SCRAPY_SCHEDULER, None)],
    ids=["default", "project's", "JOBDIR of an older version"],
)
def test_a_run_with_the_jobdir_of_a_stopped_run_maps_the_site_again_once(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path, first_scheduler: str | None, scheduler: str | None
) -> None:
    # the stopped run leaves sitemap requests waiting: sitemap_crawl's scheduler keeps them in
    # memory; Scrapy's (the project's, or an older version's run) keeps them in JOBDIR and
    # resumes them in the next run, which must ignore them: it maps the site again
    count = 6
    routes: dict[str, Any] = {
        "/robots.txt": robots("{base}/index.xml"),
        "/index.xml": sitemapindex(*(f"{{base}}/s{n}.xml" for n in range(count))),
    }
    for n in range(count):
        routes[f"/s{n}.xml"] = Route(urlset(*(f"{{base}}/p{n}-{k}" for k in range(3))), delay=0.5)
    site = fixture_site(routes)
    settings: dict[str, Any] = {
        **FAST,
        "JOBDIR": str(tmp_path / "job"),
        "CONCURRENT_REQUESTS": 1,
        "SITEMAP_CRAWL_CONCURRENT_SITEMAPS": 4,
    }
    arguments = {"homepage": site.base, "use_known_paths": False}

    first_settings = settings if first_scheduler is None else {**settings, "SCHEDULER": first_scheduler}
    running = crawl.start(arguments, settings=first_settings)
    assert site.wait_for("/s1.xml", timeout=30), running.log()[-3000:]
    running.interrupt()
    assert running.wait(60).stats["finish_reason"] == "shutdown"
    site.reset()
    if scheduler is not None:
        settings["SCHEDULER"] = scheduler
    result = crawl(arguments, settings=settings).assert_ok()

    assert result.log_has("the sitemaps spider does not resume a stopped run, it maps its sites again from the start")
    # Scrapy's scheduler resumed the stopped run's requests only where it had kept them
    assert result.log_has("Resuming crawl") == (first_scheduler is not None)
    assert "Traceback" not in result.log
    assert result.log_lines("ERROR") == []
    expected = [site.url(f"/p{n}-{k}") for n in range(count) for k in range(3)]
    assert result.urls() == expected  # every page, once, in document order
    index = robots_of(tree_of(result))["sub_sitemaps"][0]
    assert index["sub_sitemaps"] == [node(site.url(f"/s{n}.xml"), "xml_urlset", pages=3) for n in range(count)]
    if scheduler is None:  # the stopped run's requests are not resumed: each sitemap is fetched once
        assert all(site.hits(f"/s{n}.xml") == 1 for n in range(count))


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full (a device every write to fails)")
@pytest.mark.parametrize("name", ["tree.json", "trees.jsonl"])
def test_a_tree_file_a_write_to_fails_is_said_once_and_the_crawl_ends_well(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path, name: str
) -> None:
    # a full disk when the tree was written: a traceback (one per site for a lines file),
    # and no summary in the log
    site = fixture_site({"/robots.txt": robots("{base}/a.xml"), "/a.xml": urlset("{base}/a", "{base}/b")})
    tree_file = tmp_path / name
    tree_file.symlink_to("/dev/full")  # (a link: written in place, as a device is)
    result = crawl({"homepage": site.base}, settings={**FAST, "SITEMAP_CRAWL_TREE_FILE": str(tree_file)})

    result.assert_ok()
    errors = [line for line in result.log.splitlines() if " ERROR: " in line]
    assert len(errors) == 1 and errors[0].endswith(
        f"The sitemap tree file {tree_file} could not be written (No space left on device): no more is written to it"
    )
    assert "Traceback" not in result.log and "Sitemap tree:" in result.log
    assert result.stats["sitemap_crawl/tree_file_failed"] == 1
    assert result.urls() == [site.url("/a"), site.url("/b")]


def test_a_tree_file_that_cannot_be_written_stops_the_crawl_at_start(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    # it was found out when the crawl closed: a traceback, the tree lost, exit code 0
    site = fixture_site({"/robots.txt": robots("{base}/a.xml"), "/a.xml": urlset("{base}/a")})
    result = crawl({"homepage": site.base}, settings={"SITEMAP_CRAWL_TREE_FILE": str(tmp_path)})
    assert result.returncode == 1
    errors = [line for line in result.log.splitlines() if " ERROR: " in line]
    assert len(errors) == 1, errors
    assert errors[0].endswith(f"SITEMAP_CRAWL_TREE_FILE: {str(tmp_path)!r} is a directory")
    assert "Traceback" not in result.log and site.paths() == []


@pytest.mark.parametrize("other", ["SITEMAP_CRAWL_AUDIT_FILE", "FEEDS"])
def test_a_tree_file_that_another_output_also_names_stops_the_crawl_at_start(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path, other: str
) -> None:
    # the last one written held the file alone: the tree or the findings lost, exit code 0
    site = fixture_site({"/robots.txt": robots("{base}/a.xml"), "/a.xml": urlset("{base}/a")})
    path = str(tmp_path / "out.json")
    value: object = {path: {"format": "json"}} if other == "FEEDS" else path
    result = crawl({"homepage": site.base}, settings={"SITEMAP_CRAWL_TREE_FILE": path, other: value})
    assert result.returncode == 1
    errors = [line for line in result.log.splitlines() if " ERROR: " in line]
    assert len(errors) == 1, errors
    assert "SITEMAP_CRAWL_TREE_FILE and " in errors[0] and errors[0].endswith(
        f"name the same file {path!r}: give each its own"
    )
    assert "Traceback" not in result.log and site.paths() == []
