"""Discovery checks: what robots.txt says about the sitemaps (and what it disallows)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from urllib.parse import urlsplit

from protego import Protego  # the robots.txt parser Scrapy ships (pure Python, no Scrapy)

from sitemap_crawl.audit import rules
from sitemap_crawl.audit.location import unescaped_detail, url_host_and_port
from sitemap_crawl.audit.rules import Rule
from sitemap_crawl.parsing.hashset import HashSet, url_hash
from sitemap_crawl.parsing.robots import declared_sitemap_url, decode_robots, iter_sitemap_values, robots_lines

DECLARATION_LIMIT = 1_000_000
"""(host, sitemap) pairs, and hosts, remembered for cross-submission (16 to 32 bytes each)."""

_DISALLOW_LINE = re.compile(r"^[\s\ufeff]*disallow\s*:[ \t]*[^\s#]", re.IGNORECASE | re.MULTILINE)
_NOT_A_PATH_LINE = re.compile(r"[\s\ufeff]*(user|crawl|request|visit|host|site)", re.IGNORECASE)
"""Lines whose value is no path pattern (user agent, delays, host, sitemaps)."""
_USER_AGENT_LINE = re.compile(r"[\s\ufeff]*user[-\s]?agent\s*:?(.*)", re.IGNORECASE)
_LITERAL = re.compile(r"[^*$%\x00-\x20\x7f-\U0010ffff]*")
"""The part of a pattern matched as written (before a wildcard, an anchor, an escape or a
character Protego would escape)."""


def check_robots(
    body: bytes, robots_url: str = "", declared: set[str] | None = None
) -> Iterator[tuple[Rule, str | None, str]]:
    """The discovery rules one robots.txt breaks: (rule, the URL concerned or None, detail).

    The sitemap URLs it declares (made absolute against ``robots_url``) are added to ``declared``.
    """
    count = 0
    for value in iter_sitemap_values(robots_lines(decode_robots(body))):  # the lines the crawl reads
        count += 1
        try:
            parts = urlsplit(value)
            url = declared_sitemap_url(value, robots_url) if value else None
        except ValueError as exc:  # an unbalanced [ or ] in the host: no URL at all
            yield rules.RELATIVE_SITEMAP_LINE, value, f"Sitemap: {value[:200]!r} is not a URL ({exc})"
            continue
        if declared is not None and url is not None:
            declared.add(url)  # as the crawl requests it (a space escaped: %20)
        if not parts.scheme or (not parts.netloc and parts.scheme.lower() != "file"):  # (file:/a: absolute)
            yield rules.RELATIVE_SITEMAP_LINE, value or None, f"Sitemap: {value[:200]!r} is not an absolute URL"
        elif (unescaped := unescaped_detail(value)) is not None:
            yield rules.UNESCAPED_URL, value, unescaped
    if count == 0:
        yield rules.NO_SITEMAP_IN_ROBOTS, None, "no Sitemap: line"


RULES_LIMIT = 500 * 1024
"""Bytes of a robots.txt its rules are read from (RFC 9309 2.5: a parsing limit of at least
500 KiB; Google reads that much): a robots.txt of a million rules took the audit minutes and
half a GiB (each page is asked of every rule). Its Sitemap: lines are read from all of it."""


class RobotsRules:
    """One host's robots.txt rules for the crawl's user agent (Protego), from its first
    :data:`RULES_LIMIT` bytes."""

    def __init__(self, body: bytes, user_agent: str) -> None:
        if len(body) > RULES_LIMIT:
            body = body[: body.rfind(b"\n", 0, RULES_LIMIT) + 1]  # (whole lines)
        text = decode_robots(body)
        self._parser = Protego.parse(text)
        self.user_agent = user_agent
        self.disallows_any = _DISALLOW_LINE.search(text) is not None
        """False when no Disallow: line has a value: nothing is disallowed (pages need no check)."""
        self.prefixes = _pattern_prefixes(text, user_agent)
        """Paths every URL the rules could disallow starts with (None: any URL could be)."""

    def disallows(self, url: str) -> bool:
        """Whether the crawl's user agent may not fetch ``url``."""
        return not self._parser.can_fetch(url, self.user_agent)

    def disallowed(self, urls: list[str], origin: str) -> list[int]:
        """The positions of the ``urls`` on ``origin`` (``scheme://netloc``) that are disallowed
        (those on another origin are not this robots.txt's to judge). Only URLs that start
        with one of :attr:`prefixes`, or that Protego would re-escape (``%``, characters
        beyond ASCII), are asked of Protego."""
        joined = "".join(urls)
        if self.prefixes is None or not joined.isascii() or "%" in joined:
            start = origin + "/"
            candidates: Iterable[int] = [position for position, url in enumerate(urls) if url.startswith(start)]
        else:
            starts = tuple(origin + prefix for prefix in self.prefixes)
            if not any(start in joined for start in starts):
                return []  # (no URL holds one, so none starts with one: a search in C for most batches)
            candidates = [position for position, url in enumerate(urls) if url.startswith(starts)]
        return [position for position in candidates if self.disallows(urls[position])]

    def check(self, url: str) -> Iterator[tuple[Rule, str]]:
        """``sitemap-disallowed`` when ``url`` is disallowed."""
        if self.disallows(url):
            yield rules.SITEMAP_DISALLOWED, f"robots.txt disallows it for {self.user_agent!r}"


def _pattern_prefixes(text: str, user_agent: str) -> tuple[str, ...] | None:
    """The literal start of every value that could be an Allow or Disallow pattern for
    ``user_agent``, or None when one could match any path.

    A superset of what Protego applies: the lines of every group naming ``*`` or a part
    of ``user_agent`` (and any before the first group), in any spelling Protego accepts
    (every line but those naming user agents, delays, hosts and sitemaps).
    """
    agent = user_agent.strip().lower()
    prefixes: set[str] = set()
    applies = True  # lines before any User-agent: line count too
    in_agents = False
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        named = _USER_AGENT_LINE.match(line)
        if named is not None:
            if not in_agents:
                applies, in_agents = False, True
            value = named.group(1).strip().lower()
            applies = applies or not value or value == "*" or value in agent
            continue
        in_agents = False
        if not applies or _NOT_A_PATH_LINE.match(line):
            continue
        _field, separator, value = line.partition(":")
        for token in value.split() if separator else line.split()[1:]:
            if token.lower().startswith(("http://", "https://")):
                slash = token.find("/", token.find("//") + 2)
                token = token[slash:] if slash >= 0 else "/"
            literal = _LITERAL.match(token)
            prefix = literal.group() if literal else ""
            if not prefix.startswith("/") or prefix == "/":
                return None
            prefixes.add(prefix)
    return tuple(sorted(prefixes))


class SitemapDeclarations:
    """What every robots.txt the audit read declares, by host (and port: :func:`url_host_and_port`):
    the cross-submission test.

    The protocol lets a sitemap list pages of another host when that host's robots.txt
    declares the sitemap. Shared by the audits of all sites of a run; it holds 64-bit
    hashes only, at most ``limit`` hosts and ``limit`` (host, sitemap) pairs.
    """

    def __init__(self, limit: int = DECLARATION_LIMIT) -> None:
        self._hosts = HashSet(limit)
        self._pairs = HashSet(limit)

    def add(self, robots_url: str, sitemap_urls: Iterable[str]) -> None:
        """Note that ``robots_url`` was read and declares ``sitemap_urls`` (absolute)."""
        host = url_host_and_port(robots_url)
        self._hosts.add(url_hash(host))
        for url in sitemap_urls:
            self._pairs.add(url_hash(f"{host} {url}"))

    def read(self, host: str) -> bool:
        """Whether a robots.txt of ``host`` was read."""
        return self._hosts.has(url_hash(host))

    def declares(self, host: str, sitemap_url: str) -> bool:
        """Whether ``host``'s robots.txt declares ``sitemap_url``."""
        return self._pairs.has(url_hash(f"{host} {sitemap_url}"))
