"""``duplicate-in-sitemap`` and ``duplicate-across-sitemaps``: the pages one sitemap lists,
against themselves and against the site's other sitemaps.

The site's pages are a :class:`~sitemap_crawl.parsing.hashset.HashSet` of URL hashes (one per
site). A sitemap's own pages are kept as a plain array of their hashes (8 bytes a page) as
long as none of them is already in the site's set: a page found there is either listed
again by this sitemap or listed by another one, and only then does the sitemap's array
become a set, to tell which. Most sitemaps never need the set (a Python set of 40,000
hashes is about 3 MiB; the array, 320 KB).
"""

from __future__ import annotations

from array import array

from sitemap_crawl.audit import rules
from sitemap_crawl.audit.rules import Rule
from sitemap_crawl.parsing.hashset import HashSet, url_hashes

IN_SITEMAP_LIMIT = 2 * rules.MAX_URLS
"""Pages remembered per sitemap for ``duplicate-in-sitemap``."""

_AGAIN = "listed again in this sitemap"
_ELSEWHERE = "also listed by another sitemap of the site"

Repeat = tuple[int, Rule, str]
"""A page listed before: its position in the batch, the rule and the finding's detail."""


class SitemapListing:
    """The pages of one sitemap read so far; :meth:`repeats` takes them a batch at a time."""

    def __init__(self, site_pages: HashSet, limit: int = IN_SITEMAP_LIMIT) -> None:
        self._site = site_pages
        self._limit = limit
        self._hashes: array[int] | None = array("Q")
        """This sitemap's page hashes while none was in the site's set (then None)."""
        self._seen: set[int] = set()
        """This sitemap's page hashes once one was (filled from ``_hashes``)."""

    def repeats(self, urls: list[str]) -> list[Repeat]:
        """The pages of the batch listed before (by this sitemap or another one of the site);
        every page of the batch is remembered (up to the bounds)."""
        keys = url_hashes(urls)
        hashes = self._hashes
        site = self._site
        if hashes is not None and site.count + len(keys) <= site.capacity:
            held = site.add_many(keys)
            if not held:
                room = self._limit - len(hashes)
                hashes.extend(keys if room >= len(keys) else keys[: max(room, 0)])
                return []
            self._take_hashes(hashes)
            return self._classify(keys, set(held))
        if hashes is not None:  # the site's set is (nearly) full: it no longer tells repeats
            self._take_hashes(hashes)
        return self._one_by_one(keys)

    def _take_hashes(self, hashes: array[int]) -> None:
        self._seen = set(hashes)
        self._hashes = None

    def _classify(self, keys: list[int], held: set[int]) -> list[Repeat]:
        """The repeats of a batch already added to the site's set (``held``: the positions
        of the pages the site's set had)."""
        seen = self._seen
        limit = self._limit
        found: list[Repeat] = []
        for position, key in enumerate(keys):
            if position in held:
                found.append(
                    (position, rules.DUPLICATE_IN_SITEMAP, _AGAIN)
                    if key in seen
                    else (position, rules.DUPLICATE_ACROSS_SITEMAPS, _ELSEWHERE)
                )
            if len(seen) < limit:
                seen.add(key)
        return found

    def _one_by_one(self, keys: list[int]) -> list[Repeat]:
        """The repeats of a batch, this sitemap's own first (the site's set is only asked about
        the pages new to the sitemap)."""
        seen = self._seen
        limit = self._limit
        found: list[Repeat] = []
        new: list[int] = []
        for position, key in enumerate(keys):
            if key in seen:
                found.append((position, rules.DUPLICATE_IN_SITEMAP, _AGAIN))
                continue
            if len(seen) < limit:
                seen.add(key)
            new.append(position)
        held = self._site.add_many([keys[position] for position in new])
        found += [(new[index], rules.DUPLICATE_ACROSS_SITEMAPS, _ELSEWHERE) for index in held]
        return found
