"""sitemap_crawl.discovery: the Scrapy-free discovery of one site, driven by hand."""

from __future__ import annotations

import logging
import re

import pytest

from sitemap_crawl.discovery import KNOWN, ROBOTS, START, FollowRules, SiteDiscovery, Visit
from sitemap_crawl.items import SitemapNodeItem

HOME = "https://shop.test/"


class Driver:
    """Records what the discovery sends and reports, as the spider would see it."""

    def __init__(self, **options: object) -> None:
        self.sent: list[Visit] = []
        self.reports: list[SitemapNodeItem] = []
        defaults: dict[str, object] = {
            "rules": FollowRules(max_depth=2),
            "concurrency": 2,
            "homepage": HOME,
            "known_paths": ["sitemap.xml", "sitemap_index.xml"],
        }
        defaults.update(options)
        self.site = SiteDiscovery(HOME, send=self.sent.append, report=self.reports.append, **defaults)  # type: ignore[arg-type]

    def urls(self) -> list[str]:
        return [visit.url for visit in self.sent]

    def finish(self, visit: Visit) -> None:
        self.site.settle(visit)
        self.site.done(visit)


def test_robots_first_then_known_paths_once_robots_is_settled() -> None:
    driver = Driver()
    driver.site.start()
    assert [(r.path, r.kind) for r in driver.reports] == [((), "website")]
    (robots,) = driver.sent
    assert (robots.url, robots.role, robots.path) == (HOME + "robots.txt", ROBOTS, (0,))

    driver.site.declare(robots, HOME + "sitemap.xml", 0, frozenset({robots.url}))
    assert driver.urls() == [HOME + "robots.txt", HOME + "sitemap.xml"]
    driver.finish(robots)  # robots.txt read; its child still in flight: known paths wait
    assert len(driver.sent) == 2
    driver.finish(driver.sent[1])
    # the known path already seen under robots.txt is skipped; the other is probed
    assert driver.urls()[2:] == [HOME + "sitemap_index.xml"]
    assert (driver.sent[2].role, driver.sent[2].path) == (KNOWN, (2,))
    assert driver.site.idle() is False  # sent once only


def test_at_most_concurrency_in_flight_in_declaration_order() -> None:
    driver = Driver(known_paths=[])
    driver.site.start()
    (robots,) = driver.sent
    for index in range(5):
        driver.site.declare(robots, f"{HOME}s{index}.xml", index, frozenset({robots.url}))
    assert driver.urls() == [HOME + "robots.txt", HOME + "s0.xml"]
    driver.finish(robots)
    driver.finish(driver.sent[1])
    assert driver.urls()[2:] == [HOME + "s1.xml", HOME + "s2.xml"]


def test_loops_and_depth_become_invalid_nodes() -> None:
    driver = Driver(known_paths=[], start_urls=[HOME + "index.xml"], homepage=None)
    driver.site.start()
    (index,) = driver.sent
    assert index.role == START
    lineage = frozenset({index.url})
    driver.site.declare(index, index.url, 0, lineage)  # itself
    child = Visit(HOME + "a.xml", (0, 1), 2, lineage, "child")
    driver.site.declare(child, HOME + "b.xml", 0, lineage | {child.url})  # level 3 > max_depth 2
    assert [(r.url, r.kind, r.error) for r in driver.reports[1:]] == [
        (index.url, "invalid", "loop"),
        (HOME + "b.xml", "invalid", "depth limit"),
    ]
    assert len(driver.sent) == 1


def test_follow_and_deny_apply_to_index_children_only() -> None:
    rules = FollowRules(follow=[re.compile("products")], deny=[re.compile("old")])
    driver = Driver(rules=rules)
    driver.site.start()
    (robots,) = driver.sent
    index = Visit(HOME + "index.xml", (0, 0), 1, frozenset({robots.url}), "child")
    assert driver.site.follows(robots, HOME + "anything.xml", "robots_txt")
    assert driver.site.follows(index, HOME + "products-1.xml", "xml_index")
    assert not driver.site.follows(index, HOME + "news.xml", "xml_index")
    assert not driver.site.follows(index, HOME + "products-old.xml", "xml_index")


def test_a_known_path_redirected_to_a_sitemap_seen_under_robots_is_left_out() -> None:
    driver = Driver(known_paths=["sitemap.xml"])
    driver.site.start()
    (robots,) = driver.sent
    driver.site.declare(robots, HOME + "real.xml", 0, frozenset({robots.url}))
    child = driver.sent[1]
    assert driver.site.redirected(child, HOME + "moved.xml")  # under robots.txt: remembered
    driver.finish(robots)
    driver.finish(child)
    known = driver.sent[2]
    assert known.role == KNOWN
    assert not driver.site.redirected(known, HOME + "moved.xml")
    loop_child = Visit(HOME + "c.xml", (0, 1), 1, frozenset({robots.url}), "child")
    assert not driver.site.redirected(loop_child, robots.url)
    assert (driver.reports[-1].url, driver.reports[-1].error) == (HOME + "c.xml", "loop")


def test_a_failed_optional_sitemap_is_left_out_and_another_becomes_invalid() -> None:
    driver = Driver(known_paths=[])
    driver.site.start()
    (robots,) = driver.sent
    driver.site.declare(robots, HOME + "gone.xml", 0, frozenset({robots.url}))
    driver.site.failed(driver.sent[1], "HTTP 404")
    driver.site.failed(robots, "HTTP 500")
    assert [(r.url, r.kind, r.error) for r in driver.reports[1:]] == [(HOME + "gone.xml", "invalid", "HTTP 404")]


def test_a_robots_txt_over_the_size_cap_stays_in_the_tree_with_the_error() -> None:
    driver = Driver(known_paths=[])
    driver.site.start()
    (robots,) = driver.sent
    driver.site.failed(robots, "size limit")  # there, but its Sitemap: lines unread
    assert [(r.url, r.kind, r.error) for r in driver.reports[1:]] == [(robots.url, "robots_txt", "size limit")]


def test_once_per_crawl_reads_a_sitemap_once_whoever_declares_it() -> None:
    driver = Driver(concurrency=1, once_per_crawl=True, known_paths=["a.xml", "z.xml"])
    driver.site.start()
    (robots,) = driver.sent
    lineage = frozenset({robots.url})
    driver.site.declare(robots, HOME + "a.xml", 0, lineage)
    driver.site.declare(robots, HOME + "b.xml", 1, lineage)
    driver.site.declare(robots, HOME + "a.xml", 2, lineage)  # again: not queued twice
    driver.finish(robots)
    a = driver.sent[1]
    assert driver.site.redirected(a, HOME + "moved.xml")  # read from where it moved to
    driver.finish(a)
    b = driver.sent[2]
    assert not driver.site.redirected(b, HOME + "moved.xml")  # already read under another name
    driver.site.declare(b, HOME + "moved.xml", 0, lineage | {b.url})  # declared later: not queued
    driver.finish(b)
    # known paths: a.xml was read already; only z.xml is probed
    assert driver.urls() == [HOME + "robots.txt", HOME + "a.xml", HOME + "b.xml", HOME + "z.xml"]


def test_once_per_crawl_a_waiting_sitemap_a_redirect_led_to_is_not_fetched_again() -> None:
    # an index lists old.xml (which redirects to new.xml) then new.xml: new.xml, waiting when
    # the redirect was read, was fetched and read a second time (its pages visited twice)
    driver = Driver(concurrency=1, once_per_crawl=True, known_paths=[])
    driver.site.start()
    (robots,) = driver.sent
    lineage = frozenset({robots.url})
    driver.site.declare(robots, HOME + "old.xml", 0, lineage)
    driver.site.declare(robots, HOME + "new.xml", 1, lineage)
    driver.finish(robots)
    old = driver.sent[1]
    assert driver.site.redirected(old, HOME + "new.xml")
    driver.finish(old)
    assert driver.urls() == [HOME + "robots.txt", HOME + "old.xml"]
    assert driver.site.waiting_urls == [] and driver.site.finish()


def test_resume_reads_the_waiting_sitemaps_and_skips_the_read_ones() -> None:
    driver = Driver(concurrency=1, once_per_crawl=True, known_paths=["sitemap.xml"])
    driver.site.resume([HOME + "robots.txt", HOME + "x.xml", HOME + "done.xml"], read=[HOME + "done.xml"])
    assert [(v.url, v.role, v.depth) for v in driver.sent] == [(HOME + "robots.txt", ROBOTS, 0)]
    driver.finish(driver.sent[0])
    driver.finish(driver.sent[1])
    assert driver.urls() == [HOME + "robots.txt", HOME + "x.xml", HOME + "sitemap.xml"]
    assert driver.sent[2].role == KNOWN


def test_every_url_of_a_redirect_chain_under_robots_counts_as_seen() -> None:
    # robots.txt -> /old.xml -> /sitemap.xml -> /sitemap_index.xml: no hop is probed again
    driver = Driver()
    driver.site.start()
    (robots,) = driver.sent
    driver.site.declare(robots, HOME + "old.xml", 0, frozenset({robots.url}))
    child = driver.sent[1]
    hops = [HOME + "old.xml", HOME + "sitemap.xml"]
    assert driver.site.redirected(child, HOME + "sitemap_index.xml", hops)
    driver.finish(robots)
    driver.finish(child)
    assert driver.urls() == [HOME + "robots.txt", HOME + "old.xml"]


def test_a_known_path_leading_to_another_known_path_or_its_sitemap_is_left_out() -> None:
    # WordPress/Yoast: /sitemap.xml -> 301 /sitemap_index.xml, robots.txt without Sitemap:
    paths = ["sitemap.xml", "sitemap_index.xml", ".sitemap.xml", "sitemap", "a.xml", "b.xml"]
    driver = Driver(known_paths=paths, concurrency=10)
    driver.site.start()
    (robots,) = driver.sent
    driver.site.failed(robots, "HTTP 404")
    driver.site.done(robots)
    by_url = {visit.url: visit for visit in driver.sent[1:]}
    assert list(by_url) == [HOME + path for path in paths]
    # the known path reached keeps the sitemap, whichever answer comes first
    assert not driver.site.redirected(by_url[HOME + "sitemap.xml"], HOME + "sitemap_index.xml")
    assert not driver.site.redirected(
        by_url[HOME + ".sitemap.xml"], HOME + "elsewhere.xml", [HOME + ".sitemap.xml", HOME + "sitemap"]
    )
    # two known paths reaching the same other URL: the first one read keeps it
    assert driver.site.redirected(by_url[HOME + "b.xml"], HOME + "moved.xml")
    assert not driver.site.redirected(by_url[HOME + "a.xml"], HOME + "moved.xml")


def test_a_known_path_left_out_for_another_is_read_when_that_ones_own_probe_fails() -> None:
    # /sitemap_index.xml answered 503 to its own probe and 200 through /sitemap.xml's
    # redirect: /sitemap.xml was left out for it, and the site's only sitemap was lost
    driver = Driver(known_paths=["sitemap.xml", "sitemap_index.xml"], concurrency=10)
    driver.site.start()
    (robots,) = driver.sent
    driver.finish(robots)
    first, index = driver.sent[1:]
    assert not driver.site.redirected(first, HOME + "sitemap_index.xml", [HOME + "sitemap.xml"])
    driver.site.done(first)
    driver.site.failed(index, "HTTP 503")
    driver.site.done(index)
    assert driver.sent[3:] == [first]  # sent again: its redirect is read this time
    assert driver.site.redirected(first, HOME + "sitemap_index.xml", [HOME + "sitemap.xml"])
    # a known path whose target's probe failed before its answer came is read at once
    late = Driver(known_paths=["sitemap.xml", "sitemap_index.xml"], concurrency=10)
    late.site.start()
    late.finish(late.sent[0])
    first, index = late.sent[1:]
    late.site.failed(index, "HTTP 503")
    assert late.site.redirected(first, HOME + "sitemap_index.xml", [HOME + "sitemap.xml"])


def test_a_sitemap_listed_under_robots_but_not_fetched_is_not_probed_as_a_known_path() -> None:
    # an index child that deny matches (or older than -a since): not read as sitemap.xml either
    driver = Driver(rules=FollowRules(deny=[re.compile(r"sitemap\.xml")]), known_paths=["sitemap.xml", "s.xml"])
    driver.site.start()
    (robots,) = driver.sent
    driver.site.declare(robots, HOME + "idx.xml", 0, frozenset({robots.url}))
    index = driver.sent[1]
    assert not driver.site.follows(index, HOME + "sitemap.xml", "xml_index")
    assert driver.site.follows(index, HOME + "s.xml", "xml_index")
    driver.site.not_fetched(index, HOME + "s.xml", 1, "older than since")
    driver.finish(robots)
    driver.finish(index)
    assert driver.urls() == [HOME + "robots.txt", HOME + "idx.xml"]


def test_without_robots_txt_a_first_known_path_refused_makes_the_site_unreachable() -> None:
    # use_robots=false on a dead host: every probe refused, and the site was "mapped", no problem
    driver = Driver(use_robots=False, known_paths=["a.xml", "b.xml", "c.xml"], concurrency=2)
    driver.site.start()
    driver.site.idle()
    first, second = driver.sent
    driver.site.failed(first, "connection refused")
    assert driver.site.unreachable == "connection refused"
    assert [(r.path, r.kind, r.error) for r in driver.reports][-1] == ((), "website", "unreachable: connection refused")
    driver.site.done(first)
    driver.site.failed(second, "connection refused")  # in flight already: no second report
    driver.site.done(second)
    assert driver.urls() == [HOME + "a.xml", HOME + "b.xml"]  # c.xml is not probed
    assert len(driver.reports) == 2 and driver.site.finish()


@pytest.mark.parametrize(
    "failures",
    [
        ("connection error", "timeout"),  # one path's dropped connection: the site was "unreachable"
        ("HTTP 404", "connection refused"),  # refused after an answer: only a probe that failed
    ],
)
def test_without_robots_txt_not_every_failed_known_path_makes_the_site_unreachable(failures: tuple[str, str]) -> None:
    driver = Driver(use_robots=False, known_paths=["a.xml", "b.xml"], concurrency=2)
    driver.site.start()
    driver.site.idle()
    for visit, reason in zip(driver.sent, failures, strict=True):
        driver.site.failed(visit, reason)
    assert driver.site.unreachable is None


def test_a_robots_txt_redirected_to_a_dead_host_leaves_the_site_reachable() -> None:
    # the site answered (a redirect): the host it sent the crawl to is the one that failed;
    # the site was "unreachable" and its own well-known paths never probed
    driver = Driver()
    driver.site.start()
    (robots,) = driver.sent
    driver.site.failed(robots, "connection refused", after_redirect=True)
    driver.site.done(robots)
    assert driver.site.unreachable is None
    assert driver.urls()[1:] == [HOME + "sitemap.xml", HOME + "sitemap_index.xml"]


@pytest.mark.parametrize(("follow", "fetched"), [(None, "caf\u00e9.xml"), ([re.compile("%C3%A9")], "caf%C3%A9.xml")])
def test_a_child_written_raw_and_percent_encoded_is_followed_once(
    follow: list[re.Pattern[str]] | None, fetched: str
) -> None:
    # café.xml and caf%C3%A9.xml are one URL (Scrapy requests both as the second): it was
    # fetched twice; the first spelling that follow/deny let through is the one fetched
    driver = Driver(rules=FollowRules(max_depth=2, follow=follow))
    driver.site.start()
    (robots,) = driver.sent
    index = Visit(HOME + "index.xml", (0, 0), 1, frozenset({robots.url}), "child", HOME)
    for child in ("caf\u00e9.xml", "caf%C3%A9.xml", "caf\u00e9.xml"):
        if driver.site.follows(index, HOME + child, "xml_index"):
            driver.site.declare(index, HOME + child, 0, frozenset({robots.url, index.url}))
    queued = driver.urls()[1:] + driver.site.waiting_urls
    assert [url[len(HOME) :] for url in queued] == [fetched]


@pytest.mark.parametrize(("reason", "warned"), [("HTTP 503", True), ("HTTP 429", True), ("HTTP 404", False)])
def test_a_robots_txt_the_server_could_not_answer_is_a_warning(
    reason: str, warned: bool, caplog: pytest.LogCaptureFixture
) -> None:
    # a site answering 503 to everything was told from one without sitemaps by nothing
    driver = Driver()
    driver.site.start()
    (robots,) = driver.sent
    with caplog.at_level(logging.INFO, logger="sitemap_crawl.discovery.site"):
        driver.site.failed(robots, reason)
    levels = [record.levelname for record in caplog.records if robots.url in record.getMessage()]
    assert levels == (["WARNING"] if warned else ["INFO"])
