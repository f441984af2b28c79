"""audit/duplicates.py: pages listed twice in one sitemap, and by two sitemaps of a site."""

from __future__ import annotations

import random

from sitemap_crawl.audit import rules
from sitemap_crawl.audit.duplicates import SitemapListing
from sitemap_crawl.parsing.hashset import HashSet

AGAIN = rules.DUPLICATE_IN_SITEMAP.id
ELSEWHERE = rules.DUPLICATE_ACROSS_SITEMAPS.id


def rule_ids(repeats: list[tuple[int, rules.Rule, str]]) -> list[tuple[int, str]]:
    return sorted((position, rule.id) for position, rule, _detail in repeats)


def reference(sitemaps: list[list[list[str]]]) -> list[list[list[tuple[int, str]]]]:
    """The rules as stated, with Python sets: per sitemap, per batch, (position, rule id)."""
    site: set[str] = set()
    result = []
    for batches in sitemaps:
        mine: set[str] = set()
        found = []
        for batch in batches:
            repeats = []
            for position, url in enumerate(batch):
                if url in mine:
                    repeats.append((position, AGAIN))
                elif url in site:
                    repeats.append((position, ELSEWHERE))
                mine.add(url)
                site.add(url)
            found.append(repeats)
        result.append(found)
    return result


def run(sitemaps: list[list[list[str]]], site: HashSet) -> list[list[list[tuple[int, str]]]]:
    result = []
    for batches in sitemaps:
        listing = SitemapListing(site)
        result.append([rule_ids(listing.repeats(batch)) for batch in batches])
    return result


def test_a_sitemap_without_repeats_keeps_only_an_array_of_hashes() -> None:
    site = HashSet()
    listing = SitemapListing(site)
    assert listing.repeats([f"https://example.com/{i}" for i in range(1_000)]) == []
    assert listing._hashes is not None and len(listing._hashes) == 1_000 and not listing._seen
    assert site.count == 1_000


def test_a_page_listed_elsewhere_then_again_here_is_each_finding_once() -> None:
    site = HashSet()
    assert SitemapListing(site).repeats(["/a", "/b"]) == []
    second = SitemapListing(site)
    assert rule_ids(second.repeats(["/c", "/a"])) == [(1, ELSEWHERE)]
    assert second._hashes is None  # now a set, to tell the two rules apart
    assert rule_ids(second.repeats(["/a", "/c", "/d", "/d"])) == [(0, AGAIN), (1, AGAIN), (3, AGAIN)]


def test_the_listing_agrees_with_sets_on_random_sitemaps() -> None:
    rng = random.Random(5)
    urls = [f"https://example.com/page/{i}" for i in range(400)]
    sitemaps = [
        [[rng.choice(urls) for _ in range(rng.randrange(1, 40))] for _ in range(rng.randrange(1, 6))] for _ in range(30)
    ]
    distinct = [[[f"{urls[0]}?s={s}&b={b}&p={p}" for p in range(30)] for b in range(3)] for s in range(3)]
    for case in (sitemaps, distinct + sitemaps):
        assert run(case, HashSet()) == reference(case)
        # a site's set just large enough: the last batches, which might not fit, are checked
        # one page at a time
        everything = {url for batches in case for batch in batches for url in batch}
        assert run(case, HashSet(capacity=len(everything))) == reference(case)


def test_a_full_site_set_still_finds_repeats_within_the_sitemap() -> None:
    site = HashSet(capacity=2)
    listing = SitemapListing(site)
    assert rule_ids(listing.repeats(["/a", "/b", "/c", "/c"])) == [(3, AGAIN)]
    assert rule_ids(SitemapListing(site).repeats(["/a", "/c"])) == [(0, ELSEWHERE)]  # /c found no room
