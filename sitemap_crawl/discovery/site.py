"""The discovery of one site, Scrapy-free: which sitemaps wait, are in flight or settled, and
what the tree is told about each.

The ``sitemaps`` spider and the :class:`~sitemap_crawl.loader.SitemapRequestLoader`
both drive it (they fetch and read; this decides). The state is small and keyed by
nothing global, so one process can hold the discovery of many sites at once.

Order (docs/arguments.md, "What the spider reads, and in what order"): the start URLs, or robots.txt and every
sitemap under it; then the well-known paths, as soon as no sitemap left can declare
more (or when the driver would otherwise go idle), skipping URLs already seen under
robots.txt, also after redirects. At most ``concurrency`` sitemaps are in flight; the
others wait, in the order they were declared, as small :class:`Visit` objects.

Two ways to count a sitemap: as a place in the tree (the spider: a sitemap declared by
two indexes is read twice, a loop is an invalid node), or once per crawl
(``once_per_crawl``, the loader: a sitemap URL, or the URL a redirect led to, is read
once whoever declares it).
"""

from __future__ import annotations

import heapq
import itertools
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sitemap_crawl.discovery.rules import (
    ALWAYS,
    CHILD,
    FALLBACK,
    HOST_DOWN_REASONS,
    KNOWN,
    LOOP,
    REFUSAL_WORDS,
    ROBOTS,
    START,
    UNREACHABLE_REASONS,
    FollowRules,
    is_left_out,
    is_optional,
    is_robots_txt,
    is_server_error,
    known_path_urls,
    robots_txt_url,
)
from sitemap_crawl.items import NodeReport
from sitemap_crawl.kinds import ErrorReason, NodeKind
from sitemap_crawl.names import META_KEY, SITEMAP_META_KEY
from sitemap_crawl.parsing.fields import same_url_key

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Visit:
    """One place of a sitemap in the tree.

    ``path`` is the node's place: the indexes of its ancestors' children lists from the
    website node (robots.txt is ``(0,)``, known path i is ``(i,)`` from 1, start URL i
    is ``(i,)`` from 0); ``depth`` its nesting level (robots.txt, a known path or a start
    URL is 0); ``ancestors`` the URLs above it (declared and after redirects).
    """

    url: str
    path: tuple[int, ...]
    depth: int
    ancestors: frozenset[str]
    role: str  # ROBOTS, KNOWN, START or CHILD
    site: str = ""
    """The website URL of the site this sitemap belongs to (the tree it goes in)."""

    @property
    def under_robots(self) -> bool:
        return self.path[:1] == (0,) and self.role != START

    @property
    def optional(self) -> bool:
        """Left out of the tree when it fails or lists nothing (robots.txt, a known path)."""
        return is_optional(self.role)

    def left_out(self, error: str | None) -> bool:
        """Left out of the tree when it fails with ``error`` (None: lists nothing): :func:`is_left_out`."""
        return is_left_out(self.role, error)


def is_sitemap_meta(meta: Mapping[str, Any]) -> bool:
    """Whether a request's meta is a sitemap request's: the ``sitemaps`` spider's (it holds a
    :class:`Visit`) or a SitemapRequestLoader's (marked so)."""
    return isinstance(meta.get(META_KEY), Visit) or meta.get(SITEMAP_META_KEY) is True


Send = Callable[[Visit], None]
"""Starts fetching a sitemap (the driver's side)."""
Report = Callable[[NodeReport], None]
"""Tells the tree about a node."""


def _no_report(node: NodeReport) -> None:
    return None


class SiteDiscovery:
    """The sitemaps of one site: what to fetch next, and what each result means.

    ``send`` is called for each sitemap to fetch, at most ``concurrency`` in flight;
    the driver calls :meth:`settle` as soon as a sitemap can declare no more
    sub-sitemaps and :meth:`done` when it has been read or has failed.
    """

    def __init__(
        self,
        website_url: str,
        *,
        send: Send,
        rules: FollowRules,
        concurrency: int = 1,
        report: Report = _no_report,
        homepage: str | None = None,
        start_urls: Sequence[str] = (),
        use_robots: bool = True,
        known_paths: Sequence[str] = (),
        known_paths_mode: str = ALWAYS,
        once_per_crawl: bool = False,
    ) -> None:
        self.website_url = website_url
        self.homepage = homepage
        self.start_urls = list(start_urls)
        self.use_robots = use_robots
        self.known_urls: list[str] = known_path_urls(homepage, known_paths) if homepage else []
        self._known_set = frozenset(self.known_urls)
        self.rules = rules
        self.concurrency = max(1, concurrency)
        self.once_per_crawl = once_per_crawl
        self.known_paths_mode = known_paths_mode
        self.robots_declared = 0
        """Sub-sitemaps robots.txt declared (``fallback`` probes the known paths only without one)."""
        self._robots_declared_before = False
        """Resumed: robots.txt, read before the stop, led to sitemaps (fallback mode: no probes)."""
        self.unreachable: str | None = None
        """Why the site could not be reached (its robots.txt failed at the connection level, or
        without robots.txt its first well-known path), or None."""
        self._answered = False
        """Whether any of the site's requests got an answer (a response, an HTTP error)."""
        self._send = send
        self._report = report
        self._known_paths_sent = not self.known_urls
        # sitemaps requested that may still declare sub-sitemaps: while any is left, the set
        # of sitemaps under robots.txt is not final and known paths must wait
        self._unsettled: set[Visit] = set()
        self._seen_under_robots: set[str] = set()
        # the URLs known paths were redirected to (the first known path read keeps each)
        self._reached_by_known: set[str] = set()
        # the known paths whose own probe failed, and the known paths left out because they
        # lead to one of them (read after all if its own probe fails: a 503 that a redirect's
        # later fetch does not get)
        self._failed_known: set[str] = set()
        self._led_to_known: dict[str, list[Visit]] = {}
        self._in_flight: list[Visit] = []
        self._parked: set[Visit] = set()
        """Of those, the ones downloaded and waiting for their turn (:meth:`park`)."""
        self._followed: dict[Visit, set[str]] = {}
        """The children each index being read declared and are followed (:func:`same_url_key`
        of each: one URL written two ways is followed once, the first spelling that passes
        ``follow``/``deny``)."""
        self._waiting: list[tuple[tuple[int, ...], int, Visit]] = []
        """The sitemaps not sent yet: a heap by place in the tree (then by arrival), so that
        sitemaps go out in the tree's document order, depth first (see :meth:`is_first`)."""
        self._arrivals = itertools.count()
        # once per crawl: the sitemap URLs read (or being read), and those waiting
        self.read_urls: dict[str, None] = {}
        self._waiting_urls: set[str] = set()

    # -- what the driver asks ----------------------------------------------------------

    @property
    def waiting_urls(self) -> list[str]:
        """The sitemaps not yet sent, in the order they will be."""
        return [visit.url for _path, _arrival, visit in sorted(self._waiting)]

    def role_of(self, url: str) -> str:
        """The role of a sitemap known by its URL alone (the loader's restored sitemaps)."""
        if is_robots_txt(url):
            return ROBOTS
        if url in self._known_set:
            return KNOWN
        return CHILD

    # -- the driver's calls ------------------------------------------------------------

    def start(self) -> None:
        """Report the website node and queue the first sitemaps: the start URLs, and with a
        homepage its robots.txt (the known paths follow)."""
        self._report(NodeReport(path=(), url=self.website_url, kind=NodeKind.WEBSITE, finished=True))
        for index, url in enumerate(self.start_urls):
            role = ROBOTS if url.rstrip("/").endswith("/robots.txt") else START
            self._submit(Visit(url, (index,), 0, frozenset(), role, self.website_url))
        if self.homepage is not None and self.use_robots:
            self._submit(Visit(robots_txt_url(self.homepage), (0,), 0, frozenset(), ROBOTS, self.website_url))

    def resume(self, waiting: Iterable[str], read: Iterable[str], seen_under_robots: Iterable[str] = ()) -> None:
        """Start again from a saved state (once per crawl): ``read`` were read, ``waiting``
        wait in this order (their nesting levels count from 0 again); the known paths
        not read yet follow, but for those ``seen_under_robots`` (:meth:`seen_under_robots`)."""
        self.read_urls = dict.fromkeys(read)
        self._seen_under_robots.update(seen_under_robots)
        if self._seen_under_robots and self.homepage is not None and self.use_robots:
            # robots.txt was read before the stop and led to sitemaps: in fallback mode the
            # well-known paths stay unprobed, as in a crawl that was not stopped
            self._robots_declared_before = True
        for url in waiting:
            self._submit(Visit(url, (0,), 0, frozenset(), self.role_of(url), self.website_url))

    def seen_under_robots(self) -> list[str]:
        """The sitemap URLs robots.txt led to so far (declared, listed by an index below it,
        or on a redirect chain from one), read or not: no well-known path reads them."""
        return list(self._seen_under_robots)

    def idle(self) -> bool:
        """The driver has nothing left to do: probe the well-known paths if that was not
        done yet; whether any was queued."""
        return self._send_known_paths()

    def finish(self) -> bool:
        """Whether the site is done: nothing waits or is in flight, and the well-known paths
        were probed (they are sent now if they were still due: then it is not done)."""
        if self._waiting or self._in_flight:
            return False
        return not self._send_known_paths()

    def settle(self, visit: Visit) -> None:
        """``visit`` will declare no more sub-sitemaps (it failed, is not an index, or was read)."""
        self._unsettled.discard(visit)
        self._followed.pop(visit, None)
        if not self._unsettled and not self._waiting and not self._known_paths_sent:
            # Every sitemap under robots.txt has been requested and none can declare more:
            # the known paths can be probed now, while the last sitemaps are still parsed.
            self._send_known_paths()

    def done(self, visit: Visit) -> None:
        """``visit`` is done (read or failed): send the next waiting sitemap."""
        self._in_flight.remove(visit)
        self._parked.discard(visit)
        self._pump()

    def park(self, visit: Visit) -> None:
        """``visit`` is downloaded and waits for its turn (:meth:`is_first`): it gives its place
        among the sitemaps in flight back, so that the ones before it are not fetched fewer at
        a time. At most ``concurrency`` wait so (the bodies a site holds: twice that), but the
        first sitemap not sent yet always goes when it comes before every one waiting."""
        self._parked.add(visit)
        self._pump()

    def unpark(self, visit: Visit) -> None:
        """``visit``'s turn came: it is read, in flight again."""
        self._parked.discard(visit)

    def is_first(self, visit: Visit) -> bool:
        """Whether no sitemap of the site that is waiting or in flight comes before ``visit``
        in the tree (its place, :attr:`Visit.path`, is the smallest): its pages may go out
        now, in document order (the ``sitemaps`` spider holds a sitemap's pages until then)."""
        path = visit.path
        if self._waiting and self._waiting[0][0] < path:
            return False
        return all(other.path >= path for other in self._in_flight)

    def failed(self, visit: Visit, reason: str, after_redirect: bool = False) -> None:
        """``visit`` could not be fetched or read: an invalid node, unless it is optional. A
        homepage's robots.txt that fails at the connection level makes the site unreachable:
        the website node carries the error and the well-known paths are not probed (not when
        it failed ``after_redirect``: the site answered, the host it sent the crawl to did
        not). A robots.txt over the size cap is there but unread: a ``robots_txt`` node with
        the error."""
        if after_redirect:
            self._answered = True
        if self._makes_unreachable(visit, reason):
            self.unreachable = reason
            self._known_paths_sent = True
            for dropped in [entry for entry in self._waiting if entry[2].role == KNOWN]:
                self._waiting.remove(dropped)  # the other well-known paths are not probed
                self._waiting_urls.discard(dropped[2].url)
            heapq.heapify(self._waiting)
            logger.warning(
                "Site %s is unreachable (%s): its %swell-known paths are not probed",
                self.website_url,
                reason,
                "other " if visit.role == KNOWN else "",
            )
            self._report(
                NodeReport(
                    path=(), url=self.website_url, kind=NodeKind.WEBSITE, error=f"{ErrorReason.UNREACHABLE}: {reason}"
                )
            )
        if reason not in UNREACHABLE_REASONS:
            self._answered = True
        self.settle(visit)
        if visit.role == KNOWN:
            self._read_known_paths_led_to(visit.url)
            if is_left_out(visit.role, reason):
                logger.debug("Known path %s is not a sitemap: %s", visit.url, reason)
            else:
                logger.warning("Well-known path %s is over the size cap: not read (%s)", visit.url, reason)
                self.report(visit, NodeKind.INVALID, reason)
        elif visit.role == ROBOTS and reason.partition(" (")[0] == ErrorReason.SIZE_LIMIT:  # (and its detail)
            logger.warning("robots.txt %s is over the size cap: its Sitemap: lines are not read", visit.url)
            self.report(visit, NodeKind.ROBOTS_TXT, reason)
        elif visit.role == ROBOTS and is_server_error(reason):  # the server may be down: say so
            logger.warning(
                "robots.txt %s answered %s (after Scrapy's retries): left out of the tree, its Sitemap: "
                "lines unknown; a site that answers so to every request is mapped without sitemaps",
                visit.url,
                reason,
            )
        elif visit.role == ROBOTS:
            logger.info("robots.txt %s unavailable (%s); left out of the tree", visit.url, reason)
        elif reason == ErrorReason.OFFSITE:  # allowed_domains leaves it out: Scrapy says so at DEBUG
            logger.debug("Sitemap %s not fetched: off-site", visit.url)
            self.report(visit, NodeKind.INVALID, reason)
        else:
            logger.warning("Sitemap %s unusable: %s", visit.url, reason)
            self.report(visit, NodeKind.INVALID, reason)

    def redirected(self, visit: Visit, final_url: str, hops: Sequence[str] = ()) -> bool:
        """``visit`` answered from ``final_url`` after the redirect chain ``hops`` (the URLs
        redirected from, Scrapy's ``redirect_urls``); whether to read it. Every URL of the
        chain of a sitemap under robots.txt counts as seen there. Left out: a known path
        whose chain reaches a URL seen under robots.txt or another known path, or a final
        URL another known path reached first; a URL already read
        (once per crawl); a loop: a sitemap that leads to its ancestor."""
        logger.debug("Sitemap %s redirected to %s", visit.url, final_url)
        self._answered = True
        reached = [url for url in (*hops, final_url) if url != visit.url]
        if visit.under_robots:
            self._seen_under_robots.update(reached)
        elif visit.role == KNOWN and not self._known_path_reads(visit, reached, final_url):
            return False
        if self.once_per_crawl:
            if final_url in self.read_urls:
                logger.debug("Sitemap %s redirects to %s, already read", visit.url, final_url)
                return False
            self.read_urls[final_url] = None
        if final_url in visit.ancestors:
            logger.warning("Sitemap %s redirects to its ancestor %s: loop", visit.url, final_url)
            self.report(visit, NodeKind.INVALID, LOOP)
            return False
        return True

    def _read_known_paths_led_to(self, url: str) -> None:
        """The known path ``url``'s own probe failed: the known paths left out because they lead
        to it are read through their redirect after all (sent again)."""
        self._failed_known.add(url)
        for led_here in self._led_to_known.pop(url, ()):
            logger.debug("Known path %s failed: %s, which leads to it, is read", url, led_here.url)
            self._wait(led_here)
        self._pump()

    def _known_path_reads(self, visit: Visit, reached: Sequence[str], final_url: str) -> bool:
        """Whether the known path ``visit``, redirected through ``reached`` to ``final_url``,
        is read: not when a URL it reaches was seen under robots.txt or is another known path
        (probed on its own: it keeps the sitemap, whatever the order of the answers; unless that
        probe failed: then this one is read, now or, sent again, once it fails), nor when
        another known path was redirected to ``final_url`` before (the first one read keeps it)."""
        for url in reached:
            if url in self._seen_under_robots:
                logger.debug("Known path %s leads to %s, already seen under robots.txt", visit.url, url)
                return False
            if url in self._known_set and url not in self._failed_known:
                logger.debug("Known path %s leads to %s, another well-known path", visit.url, url)
                self._led_to_known.setdefault(url, []).append(visit)
                return False
        if final_url in self._reached_by_known:
            logger.debug("Known path %s leads to %s, reached by another well-known path", visit.url, final_url)
            return False
        self._reached_by_known.add(final_url)
        return True

    def listed(self, parent: Visit, url: str) -> bool:
        """``parent`` lists the sub-sitemap ``url``, fetched or not (``follow``/``deny``, ``-a
        since``, a ``sitemap_filter``, a loop or the depth limit): under robots.txt it counts as
        seen there, and no known path reads it. True (for use in a filter of the children)."""
        if parent.under_robots:
            self._seen_under_robots.add(url)
        return True

    def follows(self, parent: Visit, url: str, parent_kind: str) -> bool:
        """Whether a sub-sitemap ``url`` declared by ``parent`` (a sitemap of ``parent_kind``)
        is fetched; it is :meth:`listed` either way."""
        self.listed(parent, url)
        if parent_kind == NodeKind.ROBOTS_TXT:
            return True
        refusal = self.rules.refusal(url)
        if refusal is not None:
            logger.debug("Sub-sitemap %s %s; not fetched", url, REFUSAL_WORDS[refusal])
            return False
        followed = self._followed.setdefault(parent, set())
        key = same_url_key(url)
        if key in followed:  # the same URL written another way (café.xml, caf%C3%A9.xml)
            logger.debug("Sub-sitemap %s declared again by %s; not fetched twice", url, parent.url)
            return False
        followed.add(key)
        return True

    def declare(self, parent: Visit, url: str, index: int, lineage: frozenset[str]) -> None:
        """``parent`` declares the sub-sitemap ``url`` as its ``index``-th followed child:
        queued, or an invalid node (loop, depth limit)."""
        role = self.role_of(url) if self.once_per_crawl else CHILD
        child = Visit(url, (*parent.path, index), parent.depth + 1, lineage, role, self.website_url)
        if parent.role == ROBOTS and parent.path == (0,):
            self.robots_declared += 1
        problem = self.rules.child_problem(child.url, child.depth, child.ancestors)
        if problem is None:
            self._submit(child)
            return
        if problem == LOOP:
            logger.warning("Sitemap %s is its own ancestor: loop", child.url)
        else:
            logger.warning("Sitemap %s is nested deeper than %d levels: depth limit", child.url, self.rules.max_depth)
        self.report(child, NodeKind.INVALID, problem)

    def not_fetched(self, parent: Visit, url: str, index: int, reason: str) -> None:
        """``parent`` declares the sub-sitemap ``url`` as its ``index``-th child, which is not
        fetched (``-a since``): an ``invalid`` node saying why."""
        child = Visit(url, (*parent.path, index), parent.depth + 1, parent.ancestors, CHILD, self.website_url)
        self.report(child, NodeKind.INVALID, reason)

    def report(
        self,
        visit: Visit,
        kind: str,
        error: str | None = None,
        page_count: int = 0,
        finished: bool = True,
        change: str | None = None,
        changes: int | None = None,
    ) -> None:
        """Tell the tree about the node of ``visit`` (``change``/``changes``: history runs).

        A robots.txt is never an ``invalid`` node: the one that fails and is not left out is
        there but unread (a gzip body past the size cap once inflated), a ``robots_txt`` node
        with the error."""
        self._answered = True
        if kind == NodeKind.INVALID and visit.role == ROBOTS:
            kind = NodeKind.ROBOTS_TXT
        self._report(NodeReport(visit.path, visit.url, kind, error, page_count, finished, change, changes))

    # -- inside ------------------------------------------------------------------------

    def _makes_unreachable(self, visit: Visit, reason: str) -> bool:
        """Whether ``visit`` failing with ``reason`` makes the site unreachable: the homepage's
        robots.txt failing at the connection level (:data:`UNREACHABLE_REASONS`), or, robots.txt
        not read (``use_robots=false``), a well-known path failing as only a host that is down
        makes every request fail (:data:`HOST_DOWN_REASONS`), before any answer."""
        if self.homepage is None or self.unreachable is not None or self._answered:
            return False
        if visit.role == ROBOTS:
            return visit.path == (0,) and reason in UNREACHABLE_REASONS
        return visit.role == KNOWN and not self.use_robots and reason in HOST_DOWN_REASONS

    def _send_known_paths(self) -> bool:
        """Queue the well-known paths not seen under robots.txt, once; whether any was queued."""
        if self._known_paths_sent:
            return False
        self._known_paths_sent = True
        if self.known_paths_mode == FALLBACK and (self.robots_declared or self._robots_declared_before):
            logger.info(
                "robots.txt of %s declares sitemaps%s: the well-known paths are not probed (fallback mode)",
                self.homepage,
                f" ({self.robots_declared})" if self.robots_declared else " (read before the restart)",
            )
            return False
        sent = 0
        for index, url in enumerate(self.known_urls, start=1):
            if url in self._seen_under_robots:
                logger.debug("Known path %s already seen under robots.txt; skipped", url)
                continue
            sent += self._submit(Visit(url, (index,), 0, frozenset(), KNOWN, self.website_url))
        logger.info("Probing %d well-known sitemap paths of %s", sent, self.homepage)
        return sent > 0

    def _submit(self, visit: Visit) -> bool:
        if self.once_per_crawl:
            if visit.url in self.read_urls or visit.url in self._waiting_urls:
                return False
            self._waiting_urls.add(visit.url)
        if visit.under_robots:
            self._seen_under_robots.add(visit.url)
        self._wait(visit)
        self._pump()
        return True

    def _wait(self, visit: Visit) -> None:
        heapq.heappush(self._waiting, (visit.path, next(self._arrivals), visit))

    def _has_room(self) -> bool:
        """Whether the next waiting sitemap may be sent (:meth:`park`)."""
        parked = self._parked
        if len(self._in_flight) - len(parked) >= self.concurrency:
            return False
        return len(parked) < self.concurrency or all(self._waiting[0][0] < other.path for other in parked)

    def _pump(self) -> None:
        while self._waiting and self._has_room():
            _path, _arrival, visit = heapq.heappop(self._waiting)
            if self.once_per_crawl:
                self._waiting_urls.discard(visit.url)
                if visit.url in self.read_urls:  # read meanwhile, a redirect having led there
                    logger.debug("Sitemap %s already read through a redirect; not fetched again", visit.url)
                    continue
                self.read_urls[visit.url] = None
            self._in_flight.append(visit)
            if not self._known_paths_sent:
                self._unsettled.add(visit)
            self._send(visit)
