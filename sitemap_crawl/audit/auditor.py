"""The audit of a site's sitemaps: runs every check on each body and keeps the per-site state.

Pure: it is given bodies (bytes), URLs and facts; it fetches nothing and imports no Scrapy.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Generator, Iterator
from datetime import UTC, datetime
from http import HTTPStatus
from itertools import repeat
from operator import attrgetter, is_, itemgetter
from urllib.parse import urljoin, urlsplit

from sitemap_crawl.audit import rules
from sitemap_crawl.audit.discovery import RobotsRules, SitemapDeclarations, check_robots
from sitemap_crawl.audit.duplicates import SitemapListing
from sitemap_crawl.audit.finding import Finding
from sitemap_crawl.audit.location import SitemapPlace, check_url, check_urls, url_host_and_port
from sitemap_crawl.audit.rules import SEVERITY_OF, Rule
from sitemap_crawl.audit.scan import (
    INDEX,
    SITEMAP_NAMESPACE,
    URLSET,
    RawEntry,
    SitemapFacts,
    scan_batches,
    text_lines,
)
from sitemap_crawl.audit.values import LastmodSummary, check_entries, check_lastmod, newer_than_said, parse_w3c
from sitemap_crawl.parsing.fields import child_sitemap_url
from sitemap_crawl.parsing.hashset import HashSet, url_hash
from sitemap_crawl.parsing.stream import GZIP_MAGIC, Body
from sitemap_crawl.parsing.text import MAX_LINE_LENGTH, page_from_line
from sitemap_crawl.parsing.xml.input import is_utf8

SITE_PAGE_LIMIT = 5_000_000
"""Pages remembered per site for ``duplicate-across-sitemaps`` (16 to 32 bytes each)."""

ALTERNATE_LIMIT = 50_000
"""hreflang alternates waiting for their back-link per site, for ``hreflang-not-reciprocal``
(past it, the rule is not checked for the site: a missing back-link could be one not
remembered). An alternate answered by its back-link is forgotten."""
LASTMOD_LIMIT = 100_000
"""Per site, for ``index-lastmod-older``: the (index, child) lastmods taken, and the children
whose newest page lastmod is remembered (for the indexes that list them later)."""

_FEEDS = ("rss", "feed")
_UNESCAPED = re.compile(r"EntityRef|Entity '[^']*' not defined")
"""libxml2's errors for a bare ``&`` and for an entity XML does not define (``&nbsp;``)."""
_INVALID_NAMESPACE = re.compile(r"xmlns(?::[^:\s]+)?: '(.*)' is not a valid URI")
"""libxml2's error for a namespace that is no URI (group 1: the namespace)."""
_NO_HOST = "not a URL (its host cannot be one)"
_XML_OR_TEXT = ("text/xml", "application/xml", "text/plain")


_LOC = attrgetter("loc")
_RULE = attrgetter("rule")
_POSITION = itemgetter(0)
_NEWS_DATES = attrgetter("news_dates")
_HREFLANGS = attrgetter("hreflangs")
_HREF = itemgetter(1)
_RULE_OF = itemgetter(1)


def _child_url(index_url: str, loc: str) -> str | None:
    """The URL the crawl fetches for an index's <loc> (made absolute and escaped as the crawl
    does, without its fragment), or None when it names none (its location finding says why)."""
    try:
        return child_sitemap_url(loc, index_url)
    except ValueError:
        return None


def is_error_status(status: int) -> bool:
    """Whether an HTTP status is an error for the audit: 4xx and 5xx, and a 304, which the
    crawl gets only when it sent no validator (a history run with the audit on asks without:
    the answer has no body, nothing to audit)."""
    return status >= 400 or status == HTTPStatus.NOT_MODIFIED


class SiteAudit:
    """The audit of one website: feed it each sitemap body; it yields findings.

    ``counts`` holds the findings by rule id.
    """

    def __init__(
        self,
        website: str | None,
        now: datetime | None = None,
        page_limit: int = SITE_PAGE_LIMIT,
        *,
        declarations: SitemapDeclarations | None = None,
    ) -> None:
        self.website = website
        self.now = now or datetime.now(UTC)
        self.counts: Counter[str] = Counter()
        self._site_pages = HashSet(page_limit)
        self.months: Counter[str] = Counter()
        """Pages by lastmod month (``YYYY-MM``), for the report."""
        self.urlset_pages = 0
        """Pages of the urlsets read (a page listed again in its sitemap once), dated or not:
        the report tells how many have no lastmod month."""
        self.sitemap_pages: dict[str, int] = {}
        """Entries of each sitemap read (pages of a urlset, children of an index)."""
        self.declared: set[str] = set()
        """The sitemap URLs robots.txt declares (absolute)."""
        self.parents: dict[str, str] = {}
        """The index that listed each child sitemap (for ``nested-index``)."""
        self._declarable: dict[str, tuple[str, ...]] = {}
        """The URLs whose declaration in a robots.txt vouches for each sitemap read (its own,
        and its indexes', up to the top: :meth:`_lineage`)."""
        self.kinds: dict[str, str] = {}
        """The root element of each sitemap read (``urlset``, ``sitemapindex``...)."""
        self.declarations = declarations if declarations is not None else SitemapDeclarations()
        """The Sitemap: lines of the robots.txt files read (shared by the sites of a run)."""
        self._robots: dict[str, RobotsRules] = {}
        self._index_lastmods: dict[str, list[tuple[str, str, datetime]]] = {}
        """What the indexes said of a child not read yet: (index, lastmod as written, its value)."""
        self._newest_inside: dict[str, tuple[tuple[str, datetime], str]] = {}
        """The newest page lastmod of each child read (for an index that lists it later)."""
        self._lastmod_claims: set[tuple[str, str]] = set()
        """(index, child) pairs whose lastmod was taken: an index listing a child again is not."""
        self._unanswered: dict[int, tuple[str, str, str]] = {}
        """Alternates (sitemap, page A, alternate B) whose back-link (B lists A) is not seen
        yet, by the hash of that back-link (``B\nA``)."""
        self._alternates_dropped = False
        self._repeated_waits: set[int] = set()
        """The back-links (hashes, as keys of ``_unanswered``) that pages listed again wait
        for: they answer a later page, and are never findings themselves (past
        ``ALTERNATE_LIMIT`` of them the rule is not checked for the site, as past that many
        in ``_unanswered``)."""
        self.responses_audited: set[tuple[str, str]] = set()
        """(URL asked for, URL answered from) of each response audited: a sitemap the site lists
        twice is fetched twice (it is twice in the tree) and audited once."""
        self.responses_forbidden: set[str] = set()
        """The sitemaps judged by :meth:`audit_forbidden` (one listed twice is one finding)."""
        self.downloads_failed: set[str] = set()
        """The URLs of :meth:`audit_download_failure` (one listed twice is one finding)."""
        self.bodies_audited: set[str] = set()
        """The URLs whose body was audited: a sitemap reached again under another URL (one that
        redirects to it) is one document, audited once (its redirect is still a finding)."""

    def finding(self, rule: Rule, sitemap_url: str, url: str | None, detail: str) -> Finding:
        """A finding of this site (counted)."""
        self.counts[rule.id] += 1
        return Finding(self.website, sitemap_url, url, rule.id, SEVERITY_OF[rule.id], detail)

    def audit_sitemap(
        self,
        body: Body,
        sitemap_url: str,
        *,
        parent_url: str | None = None,
        cross_hosts: frozenset[str] = frozenset(),
        requested_url: str | None = None,
    ) -> Iterator[Finding]:
        """Every finding of one sitemap body (an XML urlset or index, a text sitemap, a feed).

        ``body`` is bytes, or a FileBody (the audit process spools a large body to a file).

        ``parent_url`` is the index that listed it, if one did (read before it).
        ``requested_url``: the URL asked for, when it redirected to ``sitemap_url`` (the URL
        its index or robots.txt names: its parent, its index's lastmod for it and a
        cross-submission are found under either).
        """
        facts = SitemapFacts()
        place = self._place(sitemap_url, requested_url, cross_hosts)
        listing = SitemapListing(self._site_pages)
        robots = self._page_robots(place)
        news = 0
        lastmods = LastmodSummary(self.months)
        read = located = 0
        for batch in scan_batches(body, facts):
            entries = [entry for entry in batch if entry.loc]
            if len(entries) != len(batch):
                yield from self._missing_locs(batch, read, sitemap_url, facts.root)
            read += len(batch)
            located += len(entries)
            if facts.root == URLSET:
                yield from self._pages(entries, place, cross_hosts, listing, robots, lastmods)
                news += sum(map(bool, map(_NEWS_DATES, entries)))
                continue
            for entry in entries:
                loc = entry.loc
                assert loc is not None
                yield from self._location(loc, place, cross_hosts)
                child = _child_url(sitemap_url, loc)
                if child is not None:
                    self.parents.setdefault(child, sitemap_url)
                    yield from self._index_lastmod(sitemap_url, child, entry.lastmod)
                if entry.lastmod is not None:
                    for rule, detail in check_lastmod(entry.lastmod, self.now):
                        yield self.finding(rule, sitemap_url, loc, detail)
        newest, latest = lastmods.newest, lastmods.latest
        if facts.root is None and facts.error is None:
            yield from self._text_sitemap(body, sitemap_url, place, cross_hosts)
            return
        self.kinds[sitemap_url] = facts.root or ""
        self.sitemap_pages[sitemap_url] = facts.entry_count
        if newest is not None and latest is not None:
            for name in place.names:  # (its URL, and the one asked for when that redirected: an index lists either)
                yield from self._newest_lastmod(name, newest, latest[1])
        yield from self._document(facts, sitemap_url, news, located)
        parent_url = parent_url or next(filter(None, map(self.parents.get, place.names)), None)
        if parent_url is not None and facts.root == INDEX and self.kinds.get(parent_url) == INDEX:
            # (the child under the URL its index lists, not where that redirected)
            yield self.finding(rules.NESTED_INDEX, parent_url, place.names[-1], "a sitemap index listed by an index")

    def audit_robots(self, body: bytes, robots_url: str, user_agent: str | None = None) -> Iterator[Finding]:
        """The discovery findings of a robots.txt body (its Sitemap: lines).

        With ``user_agent``, the pages its host's sitemaps list are then checked against its
        rules (``page-disallowed``). Its Sitemap: lines go to :attr:`declarations`.
        """
        declared: set[str] = set()
        for rule, url, detail in check_robots(body, robots_url, declared):
            yield self.finding(rule, robots_url, url, detail)
        self.declared |= declared
        self.declarations.add(robots_url, declared)
        if user_agent is not None:
            self._robots[url_host_and_port(robots_url)] = RobotsRules(body, user_agent)

    def audit_robots_missing(self, robots_url: str, final_url: str, status: int) -> Iterator[Finding]:
        """A robots.txt answering 4xx: there is none (RFC 9309: every page may be crawled), so
        no Sitemap: line (``no-sitemap-in-robots``, not ``http-error``). It is read all the
        same: it declares no sitemap (cross-submission) and disallows nothing."""
        self.declarations.add(robots_url, set())
        where = f" at {final_url}" if final_url != robots_url else ""
        yield self.finding(
            rules.NO_SITEMAP_IN_ROBOTS, robots_url, None, f"no robots.txt (HTTP {status}{where}): no Sitemap: line"
        )

    def audit_fetch(
        self, url: str, final_url: str, status: int, content_type: str = "", *, known_path: bool = False
    ) -> Iterator[Finding]:
        """What the fetch of a sitemap says: ``http-error``, ``redirected``, ``served-as-html``,
        ``sitemap-disallowed`` (its host's robots.txt, when read with a user agent) and
        ``known-path-only`` (``known_path``: found at a well-known path; one that answers
        an HTTP error is only a probe that found nothing, not a finding)."""
        if is_error_status(status):
            if not known_path:  # a well-known path that is not there is no fault of the site
                if final_url != url:
                    yield self.finding(rules.HTTP_ERROR, url, final_url, f"HTTP {status} at {final_url} (redirected)")
                else:
                    yield self.finding(rules.HTTP_ERROR, url, None, f"HTTP {status}")
            return
        if final_url != url:
            yield self.finding(rules.REDIRECTED, url, final_url, f"redirects to {final_url}")
        if content_type.startswith("text/html"):
            yield self.finding(rules.SERVED_AS_HTML, final_url, None, f"Content-Type {content_type}")
        robots = self._robots.get(url_host_and_port(url))
        if robots is not None and robots.disallows(url):
            yield self.finding(rules.SITEMAP_DISALLOWED, url, None, f"disallowed for {robots.user_agent!r}")
        elif (
            final_url != url
            and (robots := self._robots.get(url_host_and_port(final_url)))
            and robots.disallows(final_url)
        ):
            detail = f"redirects to {final_url}, which is disallowed for {robots.user_agent!r}"
            yield self.finding(rules.SITEMAP_DISALLOWED, url, final_url, detail)
        if known_path and url not in self.declared:
            yield self.finding(rules.FOUND_AT_KNOWN_PATH, url, None, "not declared in robots.txt")

    def audit_served(self, body: bytes, url: str, content_type: str, content_encoding: str = "") -> Iterator[Finding]:
        """``gzip-mislabelled``: the body (as the HTTP client decoded it) against its name and headers.

        ``content_encoding`` is the Content-Encoding the server sent ("" when none or not known);
        ``content_type`` the Content-Type (lower case).
        """
        gzip_body = body.startswith(GZIP_MAGIC)
        encoded = "gzip" in content_encoding
        if urlsplit(url).path.lower().endswith(".gz") and not gzip_body:
            why = (
                "served with Content-Encoding: gzip: once decoded, the body is not gzip (a client saves XML as .gz)"
                if encoded
                else "whose body is not gzip"
            )
            yield self.finding(rules.GZIP_MISLABELLED, url, None, f"a .gz URL {why}")
        elif gzip_body and encoded:
            yield self.finding(rules.GZIP_MISLABELLED, url, None, "gzip twice: Content-Encoding: gzip over a gzip file")
        elif gzip_body and content_type.split(";")[0].strip() in _XML_OR_TEXT:
            yield self.finding(rules.GZIP_MISLABELLED, url, None, f"a gzip file served as Content-Type {content_type}")

    def audit_forbidden(self, url: str) -> Iterator[Finding]:
        """``sitemap-disallowed`` for a sitemap the crawl obeyed robots.txt not to fetch (as
        :meth:`audit_fetch` finds it for one fetched), when its host's robots.txt was read."""
        if url in self.responses_forbidden:
            return
        self.responses_forbidden.add(url)
        robots = self._robots.get(url_host_and_port(url))
        if robots is not None and robots.disallows(url):
            yield self.finding(rules.SITEMAP_DISALLOWED, url, None, f"disallowed for {robots.user_agent!r}")

    def audit_download_failure(self, url: str, reason: str) -> Iterator[Finding]:
        """``download-failed``: a sitemap (or the site, its robots.txt unreachable) that
        brought no answer to read; once per URL."""
        if url in self.downloads_failed:
            return
        self.downloads_failed.add(url)
        yield self.finding(rules.DOWNLOAD_FAILED, url, None, reason)

    def audit_undecodable(self, url: str, content_encoding: str) -> Iterator[Finding]:
        """``gzip-mislabelled``: Content-Encoding: gzip on a body that is not gzip (an HTTP client
        that honours the header cannot decode it: Scrapy fails the download)."""
        yield self.finding(
            rules.GZIP_MISLABELLED, url, None, f"Content-Encoding: {content_encoding} on a body that is not gzip"
        )

    def finish(self) -> Iterator[Finding]:
        """The findings known only once all of the site's sitemaps are read (``hreflang-not-reciprocal``)."""
        unanswered, self._unanswered = self._unanswered, {}
        self._repeated_waits = set()
        if self._alternates_dropped:
            return
        for sitemap_url, page, alternate in unanswered.values():
            if self._site_pages.has(url_hash(alternate)):
                yield self.finding(
                    rules.HREFLANG_NOT_RECIPROCAL, sitemap_url, page, f"alternate {alternate} does not list it back"
                )

    def _pages(
        self,
        entries: list[RawEntry],
        place: SitemapPlace,
        cross_hosts: frozenset[str],
        listing: SitemapListing,
        robots: tuple[str, RobotsRules] | None,
        lastmods: LastmodSummary,
    ) -> list[Finding]:
        """The findings of a batch of <url> entries (each with a loc), rule after rule."""
        sitemap_url = place.url
        locs: list[str] = list(map(_LOC, entries))
        broken = check_urls(locs, place, cross_hosts)
        if any(map(is_, map(_RULE_OF, broken), repeat(rules.OTHER_HOST))):  # (one test in C for most batches)
            broken = self._cross_submitted(broken, locs, place)
        repeated = listing.repeats(locs)
        entry_findings = check_entries(entries, self.now, lastmods)
        in_order = not (repeated or entry_findings)  # the location findings alone come in document order
        broken += repeated
        broken += entry_findings
        self.urlset_pages += len(entries)
        for position, rule, _detail in repeated:
            if rule is rules.DUPLICATE_IN_SITEMAP:  # a page listed again in its sitemap is one page of the histogram
                self.urlset_pages -= 1
                lastmod = entries[position].lastmod
                if lastmod is not None:
                    lastmods.uncount(lastmod)
        if any(map(_HREFLANGS, entries)):
            listed_before = {position for position, _rule, _detail in repeated}
            self._remember_alternates(sitemap_url, entries, listed_before)  # a page's alternates count once
        if robots is not None:
            disallowed = robots[1].disallowed(locs, robots[0][:-1])
            detail = f"disallowed for {robots[1].user_agent!r}"
            broken += [(position, rules.PAGE_DISALLOWED, detail) for position in disallowed]
            in_order = in_order and not disallowed
        if not broken:
            return []
        if not in_order:
            broken.sort(key=_POSITION)  # in document order, an entry's findings in the order of the rules above
        website = self.website
        new = tuple.__new__  # (a Finding made without the Python-level __new__ of a named tuple)
        found: list[Finding] = [
            new(Finding, (website, sitemap_url, locs[position], rule.id, SEVERITY_OF[rule.id], detail))
            for position, rule, detail in broken
        ]
        self.counts.update(map(_RULE, found))
        return found

    def _cross_submitted(
        self, broken: list[tuple[int, Rule, str]], locs: list[str], place: SitemapPlace
    ) -> list[tuple[int, Rule, str]]:
        """The location findings of a batch, less the ``other-host`` ones of a host that
        cross-submits the sitemap (the others with :meth:`_other_host`'s detail)."""
        kept: list[tuple[int, Rule, str]] = []
        for position, rule, detail in broken:
            if rule is rules.OTHER_HOST:
                other = self._other_host(locs[position], place.declarable, detail)
                if other is None:
                    continue
                detail = other
            kept.append((position, rule, detail))
        return kept

    def _location(self, loc: str, place: SitemapPlace, cross_hosts: frozenset[str]) -> Iterator[Finding]:
        for rule, detail in check_url(loc, place, cross_hosts):
            if rule is rules.OTHER_HOST:
                other = self._other_host(loc, place.declarable, detail)
                if other is None:
                    continue
                detail = other
            yield self.finding(rule, place.url, loc, detail)

    def _other_host(self, loc: str, names: tuple[str, ...], detail: str) -> str | None:
        """The detail of an ``other-host`` finding, or None when the host cross-submits the
        sitemap (under one of its ``names``: its URL, and the one asked for if it redirected)."""
        if loc[:5].lower() == "file:":
            return detail  # no host: no robots.txt to vouch for it
        host = url_host_and_port(loc)
        robots_url = urljoin(loc, "/robots.txt")
        if any(self.declarations.declares(host, name) for name in names):
            return None
        if self.declarations.read(host):
            return f"{detail}; {robots_url} was read and does not declare this sitemap"
        return f"{detail}; {robots_url} was not read before this sitemap (cross-submission not checked)"

    def _place(self, sitemap_url: str, requested_url: str | None, cross_hosts: frozenset[str]) -> SitemapPlace:
        """Where the sitemap lives; its directory is the whole host when the host's robots.txt
        declares it, under its URL or the one it redirected from, or declares an index above
        it (the protocol's cross-submission: the site owner vouches for the sitemap, and for
        the sitemaps an index it declares lists)."""
        place = SitemapPlace(sitemap_url, requested_url)
        place.declarable = self._lineage(place.names)
        self._declarable.setdefault(sitemap_url, place.declarable)
        if place.host in cross_hosts or any(self.declarations.declares(place.host, name) for name in place.declarable):
            place.declared_on_host()
        return place

    def _lineage(self, names: tuple[str, ...]) -> tuple[str, ...]:
        """``names`` (a sitemap's URLs) and those of the indexes above it: the index that listed
        it first, under every URL it was read at, and the indexes above that one."""
        parent = next(filter(None, map(self.parents.get, names)), None)
        if parent is None:
            return names
        above = self._declarable.get(parent, (parent,))
        return (*names, *(name for name in above if name not in names))

    def _page_robots(self, place: SitemapPlace) -> tuple[str, RobotsRules] | None:
        """The sitemap's origin and its host's robots.txt rules, if that robots.txt was read."""
        robots = self._robots.get(place.host)
        if robots is None or not robots.disallows_any:
            return None
        parts = urlsplit(place.url)
        return f"{parts.scheme}://{parts.netloc}/", robots

    def _remember_alternates(self, sitemap_url: str, entries: list[RawEntry], listed_before: set[int]) -> None:
        """Each page of ``entries`` lists each href of its hreflangs: it answers an alternate
        waiting for that back-link, or waits for its own (each pair A, B is met once: a
        page's hrefs are taken once).

        A page listed before (``listed_before``: its positions) may have had its alternates
        taken then: what its hrefs do not answer waits apart (:attr:`_repeated_waits`),
        never a finding, only a back-link a later page may be answered by (a page listed
        first with no alternates, then with them: its alternates' back-links were not seen).
        """
        unanswered = self._unanswered
        repeated = self._repeated_waits
        for position, entry in enumerate(entries):
            if not entry.hreflangs:
                continue
            if self._alternates_dropped:
                return
            page = entry.loc
            again = position in listed_before
            for href in dict.fromkeys(map(_HREF, entry.hreflangs)):
                if href is None or href == page:
                    continue
                answer = url_hash(f"{page}\n{href}")
                if unanswered.pop(answer, None) is not None:
                    continue  # B listed A first: both are answered
                if answer in repeated:
                    repeated.discard(answer)
                    continue
                if again:
                    repeated.add(url_hash(f"{href}\n{page}"))
                    if len(repeated) > ALTERNATE_LIMIT:  # (one dropped could answer a later page)
                        self._drop_alternates()
                        return
                    continue
                if len(unanswered) >= ALTERNATE_LIMIT:
                    self._drop_alternates()
                    return
                assert page is not None
                unanswered[url_hash(f"{href}\n{page}")] = (sitemap_url, page, href)

    def _drop_alternates(self) -> None:
        """Too many alternates wait: the rule is not checked for the site (a missing back-link
        could be one not remembered)."""
        self._alternates_dropped = True
        self._unanswered = {}
        self._repeated_waits = set()

    def _index_lastmod(self, index_url: str, child_url: str, text: str | None) -> Iterator[Finding]:
        """An index's lastmod for a child (``text``: None when its entry has none), judged against
        the child's pages now (the child was read) or once the child is read; each index that
        lists the child is judged, by its first entry for the child."""
        claim = (index_url, child_url)
        if claim in self._lastmod_claims or len(self._lastmod_claims) >= LASTMOD_LIMIT:
            return
        self._lastmod_claims.add(claim)
        if text is None:
            return
        value = parse_w3c(text)
        if value is None:
            return
        inside = self._newest_inside.get(child_url)
        if inside is not None:
            yield from self._compare_lastmods(index_url, child_url, text, value, *inside)
        else:
            self._index_lastmods.setdefault(child_url, []).append((index_url, text, value))

    def reached_again(self, url: str, audited_url: str) -> Iterator[Finding]:
        """A sitemap audited at ``audited_url`` is reached at ``url`` too (a redirect to it, or
        from it, read once): what the indexes say of ``url`` is judged against its pages."""
        inside = self._newest_inside.get(audited_url)
        if url != audited_url and inside is not None:
            yield from self._newest_lastmod(url, *inside)

    def _newest_lastmod(self, sitemap_url: str, newest: tuple[str, datetime], latest: str) -> Iterator[Finding]:
        for index_url, said, value in self._index_lastmods.pop(sitemap_url, ()):
            yield from self._compare_lastmods(index_url, sitemap_url, said, value, newest, latest)
        if len(self._newest_inside) < LASTMOD_LIMIT:
            self._newest_inside[sitemap_url] = (newest, latest)

    def _compare_lastmods(
        self, index_url: str, child_url: str, said: str, said_value: datetime, newest: tuple[str, datetime], latest: str
    ) -> Iterator[Finding]:
        page = newer_than_said(said, said_value, newest, latest)
        if page is not None:
            yield self.finding(
                rules.INDEX_LASTMOD_OLDER, index_url, child_url, f"the index says {said}, a page in it {page}"
            )

    def _bytes(self, facts: SitemapFacts, sitemap_url: str) -> Generator[Finding, None, bool]:
        """What a document's bytes say, XML or text: its encoding, a byte that is not UTF-8,
        where it breaks (the XML parser's or the gzip stream's error), its size. Returns True
        when the parser stopped on that byte (the document is not otherwise broken)."""
        if not is_utf8(facts.encoding):
            yield self.finding(rules.NOT_UTF8, sitemap_url, None, f"encoding {facts.encoding}")
        if facts.bad_utf8 is not None:
            yield self.finding(rules.NOT_UTF8, sitemap_url, None, f"the byte at offset {facts.bad_utf8:,} is not UTF-8")
            if facts.error is not None and "encoding" in facts.error:
                return True
        if facts.error is not None:
            rule = rules.UNESCAPED_ENTITY if _UNESCAPED.search(facts.error) else rules.INVALID_DOCUMENT
            yield self.finding(rule, sitemap_url, None, facts.error[:300])
        if facts.size > rules.MAX_BYTES:
            size = f"more than {facts.size:,}" if facts.cut else f"{facts.size:,}"
            yield self.finding(
                rules.TOO_LARGE, sitemap_url, None, f"{size} bytes uncompressed (at most {rules.MAX_BYTES:,})"
            )
        return False

    def _missing_locs(self, batch: list[RawEntry], read: int, sitemap_url: str, root: str | None) -> Iterator[Finding]:
        """``missing-loc`` for each entry of the batch without a <loc> text (``read``: entries before it)."""
        tag = "<sitemap>" if root == INDEX else "<url>"
        for position, entry in enumerate(batch, start=read + 1):
            if not entry.loc:
                what = "has no <loc>" if entry.loc is None else "has an empty <loc>"
                yield self.finding(rules.MISSING_LOC, sitemap_url, None, f"{tag} entry {position:,} {what}")

    def _document(self, facts: SitemapFacts, sitemap_url: str, news: int, located: int) -> Iterator[Finding]:
        if (yield from self._bytes(facts, sitemap_url)):
            return  # lxml stopped on the byte that is not UTF-8
        if facts.namespace_error is not None:
            yield self.finding(rules.BAD_NAMESPACE, sitemap_url, None, facts.namespace_error[:300])
        if facts.root in _FEEDS:
            return
        if facts.root not in (URLSET, INDEX):
            if facts.error is None:
                yield self.finding(rules.INVALID_DOCUMENT, sitemap_url, None, f"root element <{facts.root}>")
            return
        error = facts.namespace_error
        invalid = _INVALID_NAMESPACE.search(error) if error is not None else None
        told = error is not None and (not facts.namespace or (invalid is not None and invalid[1] == facts.namespace))
        if facts.namespace != SITEMAP_NAMESPACE and not told:
            # (told: the finding above is about the root's namespace: a root in none because its
            # prefix is not declared, or one that is no valid URI: one fault, one finding)
            yield self.finding(rules.BAD_NAMESPACE, sitemap_url, None, f"namespace {facts.namespace!r}")
        whole = facts.error is None and not facts.cut
        if facts.entry_count == 0 and whole:
            yield self.finding(rules.EMPTY_SITEMAP, sitemap_url, None, f"<{facts.root}> with no entry")
        elif located == 0 and whole:
            yield self.finding(rules.EMPTY_SITEMAP, sitemap_url, None, f"<{facts.root}> with no entry that has a <loc>")
        if facts.root == URLSET and located > rules.MAX_URLS:  # (an entry without a <loc> is no URL)
            yield self.finding(rules.TOO_MANY_URLS, sitemap_url, None, f"{located:,} URLs")
        if facts.root == INDEX and located > rules.MAX_URLS:
            yield self.finding(rules.TOO_MANY_CHILDREN, sitemap_url, None, f"{located:,} sitemaps")
        if news > rules.MAX_NEWS_URLS:
            yield self.finding(rules.TOO_MANY_NEWS, sitemap_url, None, f"{news:,} news URLs")

    def _not_pages(
        self, lines: list[str], pages: set[str], sitemap_url: str, place: SitemapPlace, cross_hosts: frozenset[str]
    ) -> Iterator[Finding]:
        """The lines of a text sitemap that are no page for the crawl, one finding each, saying
        so: a line that starts as an http(s) URL but is none (``http://h .test/x``,
        ``http://.h.test/``: its host cannot be one) is ``unescaped-url``; a comment or a
        relative path ``relative-url``; a URL of another scheme (``ftp:``, ``file:``) its first
        location finding (``mixed-scheme`` or ``other-host``)."""
        unread = ": the crawl reads no page from this line"
        for line in lines:
            if line in pages:
                continue
            if line[:8].lower().startswith(("http://", "https://")):
                said = next((detail for rule, detail in check_url(line, place) if rule is rules.UNESCAPED_URL), None)
                yield self.finding(rules.UNESCAPED_URL, sitemap_url, line, f"{said or _NO_HOST}{unread}")
                continue
            rule, detail = next(check_url(line, place), (rules.RELATIVE_URL, f"{line[:200]!r} is not a URL"))
            scheme = line.partition(":")[0]
            if rule is not rules.RELATIVE_URL and scheme.isalpha():
                detail = f"not an http(s) URL ({scheme.lower()}:)"
            yield self.finding(rule, sitemap_url, line, f"{detail}{unread}")

    def _text_sitemap(
        self, body: Body, sitemap_url: str, place: SitemapPlace, cross_hosts: frozenset[str]
    ) -> Iterator[Finding]:
        """A text sitemap: one URL a line (the location and duplicate rules apply, and the
        document's size, encoding and gzip stream), read a piece at a time."""
        self.kinds[sitemap_url] = "text"
        robots = self._page_robots(place)
        listing = SitemapListing(self._site_pages)
        lastmods = LastmodSummary(self.months)  # (a text sitemap has none)
        facts = SitemapFacts()
        count = 0
        for lines in text_lines(body, facts):
            locs = [line for line in lines if page_from_line(line.encode("utf-8", "surrogateescape"), sitemap_url)]
            if len(locs) != len(lines):  # lines the crawl reads no page from: a finding each, not pages
                yield from self._not_pages(lines, set(locs), sitemap_url, place, cross_hosts)
            count += len(locs)
            yield from self._pages(list(map(RawEntry, locs)), place, cross_hosts, listing, robots, lastmods)
        self.sitemap_pages[sitemap_url] = count
        if facts.long_lines:
            detail = f"{facts.long_lines:,} line(s) of more than {MAX_LINE_LENGTH:,} characters: the crawl skips them"
            yield self.finding(rules.URL_TOO_LONG, sitemap_url, None, detail)
        if count == 0 and facts.error is None and not facts.cut:
            what = "an empty body" if facts.size == 0 else "a text sitemap with no URL"
            yield self.finding(rules.EMPTY_SITEMAP, sitemap_url, None, what)
        yield from self._bytes(facts, sitemap_url)  # (its only error is the gzip stream's)
        if count > rules.MAX_URLS:
            yield self.finding(rules.TOO_MANY_URLS, sitemap_url, None, f"{count:,} URLs")
