"""The audit's batch checks give what the one-at-a-time checks give, on batches built to
take the fast paths and to fall off them.

The audit checks the entries of a sitemap a list at a time (sitemap_crawl.audit.location
``check_urls``, values ``check_entries``, discovery ``RobotsRules.disallowed``, hashset
``add_many``, report ``add_findings``, crawl_audit ``json_lines``); each is compared here
with the per-item function it stands for.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from datetime import UTC, datetime

import pytest

from sitemap_crawl.audit import rules
from sitemap_crawl.audit.crawl_audit import json_lines
from sitemap_crawl.audit.discovery import RobotsRules
from sitemap_crawl.audit.finding import Finding
from sitemap_crawl.audit.location import SitemapPlace, check_url, check_urls
from sitemap_crawl.audit.report import Report
from sitemap_crawl.audit.scan import RawEntry
from sitemap_crawl.audit.values import LastmodSummary, check_entries, check_entry, parse_w3c

NOW = datetime(2026, 6, 15, 12, 0, tzinfo=UTC)
PLACE = SitemapPlace("https://example.com/dir/sitemap.xml")


def one_at_a_time_urls(urls: list[str]) -> list[tuple[int, str, str]]:
    return [(i, rule.id, detail) for i, url in enumerate(urls) for rule, detail in check_url(url, PLACE)]


def batch_urls(urls: list[str]) -> list[tuple[int, str, str]]:
    return sorted((i, rule.id, detail) for i, rule, detail in check_urls(urls, PLACE))


CLEAN = [f"https://example.com/dir/p{i}" for i in range(50)]


@pytest.mark.parametrize(
    "odd",
    [
        [],  # all inside the directory: nothing found
        ["https://example.com/other/x", "https://example.com/x?q=1"],  # outside, found without urlsplit
        ["https://example.com", "https://example.com?x"],  # no path at all
        ["https://example.com:8080/dir/x", "https://example.community/dir/x"],  # another netloc
        ["http://example.com/dir/x", "https://other.org/dir/x", "/dir/relative"],
        ["https://example.com/dir/a#frag", "https://example.com/dir/a#"],
        ["https://example.com/dir/a b", "https://example.com/dir/é", "https://example.com/dir/a\nb"],
        ["https://example.com/dir/" + "x" * rules.MAX_URL_LENGTH],
    ],
)
def test_check_urls_finds_what_check_url_finds(odd: list[str]) -> None:
    urls = CLEAN[:20] + odd + CLEAN[20:]
    assert batch_urls(urls) == one_at_a_time_urls(urls)
    if odd:
        assert batch_urls(urls), "each odd batch breaks a rule"


LASTMOD_FORMS = [
    "2024-05-14",
    "2024-05",
    "2024",
    "2024-05-14T10:00Z",
    "2024-05-14T10:00:00Z",
    "2024-05-14T10:00:00+09:00",
    "2024-05-14T23:30:00-08:00",
    "2024-05-14T10:00:00.25+02:00",
]


def entries_with(lastmods: list[str | None], **fields: object) -> list[RawEntry]:
    return [RawEntry(f"https://example.com/dir/{i}", lastmod, **fields) for i, lastmod in enumerate(lastmods)]  # type: ignore[arg-type]


def one_at_a_time_values(entries: list[RawEntry]) -> tuple[list[tuple[int, str, str]], Counter[str], object]:
    found = [(i, rule.id, detail) for i, entry in enumerate(entries) for rule, detail in check_entry(entry, NOW)]
    summary = LastmodSummary(Counter())
    for entry in entries:
        if entry.lastmod:
            summary.add(entry.lastmod, parse_w3c(entry.lastmod), NOW)
    return found, summary.months, summary.newest


def batch_values(entries: list[RawEntry]) -> tuple[list[tuple[int, str, str]], Counter[str], object]:
    summary = LastmodSummary(Counter())
    found = sorted((i, rule.id, detail) for i, rule, detail in check_entries(entries, NOW, summary))
    return found, summary.months, summary.newest


@pytest.mark.parametrize("seed", range(12))
def test_check_entries_matches_check_entry_on_mixed_lastmods(seed: int) -> None:
    choices = random.Random(seed)
    forms = choices.sample(LASTMOD_FORMS, choices.randint(1, len(LASTMOD_FORMS)))
    lastmods: list[str | None] = []
    for _ in range(200):
        form = choices.choice(forms)
        year = choices.randint(2015, 2026)
        lastmods.append(None if choices.random() < 0.1 else f"{year}{form[4:]}")
    assert batch_values(entries_with(lastmods)) == one_at_a_time_values(entries_with(lastmods))


@pytest.mark.parametrize(
    "odd",
    [
        "2026-06-15T13:00:00Z",  # after now, within the day's slack: no finding, not the newest
        "2026-06-20",  # in the future: a finding
        "2024-13-01",  # not a date
        "14 May 2024",
        "",
    ],
)
def test_check_entries_falls_back_for_odd_lastmods(odd: str) -> None:
    lastmods: list[str | None] = ["2026-06-14T10:00:00Z", "2025-01-01T00:00:00Z", odd, "2026-06-15T11:00:00Z"]
    assert batch_values(entries_with(lastmods)) == one_at_a_time_values(entries_with(lastmods))


@pytest.mark.parametrize(
    "fields",
    [
        {"priority": "0.5", "changefreq": "daily"},
        {"priority": "1.5"},
        {"priority": "high"},
        {"changefreq": "sometimes"},
        {"news_dates": ["2026-06-15", "2020-01-01"]},
        {"image_count": rules.MAX_IMAGES + 1},
        {"hreflangs": [("en-GB", "https://example.com/dir/en"), ("english", "https://example.com/dir/x")]},
    ],
)
def test_check_entries_matches_check_entry_on_other_fields(fields: dict[str, object]) -> None:
    entries = entries_with(["2024-05-14"] * 5, **fields)
    assert batch_values(entries) == one_at_a_time_values(entries)


ROBOTS = {
    "plain": "User-agent: *\nDisallow: /cart/\nDisallow: /search\nAllow: /search/about\n",
    "other group blocks all": "User-agent: *\nDisallow: /cart/\n\nUser-agent: BadBot\nDisallow: /\n",
    "ours blocked": "User-agent: mybot\nDisallow: /dir/\n\nUser-agent: *\nDisallow: /cart/\n",
    "misspelt": "User-agent: *\nDissallow: /dir/p1\n",
    "no colon": "User-agent *\nDisallow /dir/p2\n",
    "wildcards": "User-agent: *\nDisallow: /dir/*.pdf$\nDisallow: /*?session=\n",
    "escaped": "User-agent: *\nDisallow: /dir/caf%C3%A9\nDisallow: /dir/na\u00efve\n",
    "absolute pattern": "User-agent: *\nDisallow: https://example.com/dir/p3\n",
    "before any group": "Disallow: /dir/p4\nUser-agent: *\nDisallow: /cart/\n",
    "nothing": "User-agent: *\nDisallow:\n",
}
PAGES = [
    *CLEAN[:10],
    "https://example.com/cart/1",
    "https://example.com/search?q=1",
    "https://example.com/search/about",
    "https://example.com/dir/doc.pdf",
    "https://example.com/dir/doc.pdf?x",
    "https://example.com/dir/x?session=1",
    "https://example.com/dir/café",
    "https://example.com/dir/caf%C3%A9",
    "https://example.com/dir/na%C3%AFve",
    "https://other.example/cart/1",  # another host: not judged by example.com's robots.txt
    "http://example.com/cart/1",
]


@pytest.mark.parametrize("name", list(ROBOTS))
@pytest.mark.parametrize("user_agent", ["mybot", "Scrapy/2.19 (+https://scrapy.org)"])
def test_disallowed_matches_protego_url_by_url(name: str, user_agent: str) -> None:
    robots = RobotsRules(ROBOTS[name].encode(), user_agent)
    expected = [i for i, page in enumerate(PAGES) if page.startswith("https://example.com/") and robots.disallows(page)]
    assert robots.disallowed(PAGES, "https://example.com") == expected


def test_disallowed_asks_protego_only_about_urls_a_rule_could_match(monkeypatch: pytest.MonkeyPatch) -> None:
    robots = RobotsRules(ROBOTS["plain"].encode(), "mybot")
    asked: list[str] = []
    original = robots.disallows

    def disallows(url: str) -> bool:
        asked.append(url)
        return original(url)

    monkeypatch.setattr(robots, "disallows", disallows)
    assert robots.disallowed(PAGES[:13], "https://example.com") == [10, 11]
    assert asked == PAGES[10:13]


def test_add_findings_counts_as_add_finding_does() -> None:
    site = "https://example.com/"
    found = [
        Finding(site, f"{site}s{i % 3}.xml", f"{site}p{i}", rule, "warning", f"detail {i}")
        for i, rule in enumerate(["outside-directory"] * 20 + ["url-fragment"] * 2 + ["redirected"])
    ]
    one, many = Report(), Report()
    for finding in found:
        one.add_finding(finding)
    many.add_findings(found[:7])
    many.add_findings(found[7:])
    for attribute in ("counts", "examples", "pending", "redirects"):
        assert getattr(many.sites[site], attribute) == getattr(one.sites[site], attribute), attribute


def test_json_lines_are_the_json_of_each_finding() -> None:
    found = [
        Finding("https://example.com/", "https://example.com/s.xml", None, "empty-sitemap", "warning", "no entry"),
        Finding(None, "https://example.com/s.xml", 'https://example.com/"q"', "unescaped-url", "error", "'\"' é\n"),
    ]
    assert json_lines(found) == "".join(json.dumps(f.to_dict(), ensure_ascii=False) + "\n" for f in found)
