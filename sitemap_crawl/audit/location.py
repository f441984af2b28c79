"""Location checks on one <loc>: absolute, same site, inside the sitemap's directory, escaped."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import SplitResult, urlsplit

from sitemap_crawl.audit import rules
from sitemap_crawl.audit.rules import Rule
from sitemap_crawl.parsing.fields import DEFAULT_PORTS

_MUST_ESCAPE = re.compile(r"[\x00-\x20\x7f\"<>\\^`{|}]|[^\x00-\x7f]")
_FREE_TO_WRITE = bytes(code for code in range(128) if code == 0x0A or not _MUST_ESCAPE.match(chr(code)))
"""The ASCII bytes a URL may hold as they are, and the newline (that joins the URLs of a batch)."""


def _needs_escaping(joined: str) -> bool:
    """Whether any character of ``joined`` (URLs joined by newlines) is one :data:`_MUST_ESCAPE`
    finds: what is left once the bytes free to write are deleted (C speed, about 30 times a
    regular expression's search over a batch)."""
    return not joined.isascii() or bool(joined.encode("ascii").translate(None, _FREE_TO_WRITE))


def unescaped_detail(url: str) -> str | None:
    """The detail of an ``unescaped-url`` finding (the first character of ``url`` that must be
    percent-escaped, and where), or None when there is none."""
    bad = _MUST_ESCAPE.search(url)
    return None if bad is None else f"{bad.group()!r} at position {bad.start()}"


def host_and_port(parts: SplitResult) -> str:
    """The host a split URL names, as the audit compares hosts: its name in lower case (an
    internationalised one in its ASCII form: ``bücher.test`` is ``xn--bcher-kva.test``), and
    its port when one is written that is not the scheme's default (``example.com:8080``: another
    port is another site, with its own robots.txt). An IPv6 address is in brackets, as a URL
    writes it (``[2001:db8::1]:8080``: without them the port would read as part of it)."""
    name = (parts.hostname or "").lower()
    if not name.isascii():
        name = _ascii_host(name)
    elif ":" in name:
        name = f"[{name}]"
    try:
        port = parts.port
    except ValueError:  # not a number, or out of range: compared as written
        return f"{name}:{parts.netloc.rpartition(':')[2]}"
    if port is None or port == DEFAULT_PORTS.get(parts.scheme.lower()):
        return name
    return f"{name}:{port}"


def _ascii_host(name: str) -> str:
    """The ASCII (punycode) form of a host name (Python's IDNA 2003 codec), or the name as
    written when it has none."""
    try:
        return name.encode("idna").decode("ascii")
    except UnicodeError:
        return name


def url_host_and_port(url: str) -> str:
    """:func:`host_and_port` a URL ("" when it cannot be split)."""
    try:
        return host_and_port(urlsplit(url))
    except ValueError:
        return ""


class SitemapPlace:
    """Where a sitemap lives: its scheme, host and directory, worked out once.

    ``directory`` is the path its pages must start with: the sitemap's own directory (the
    protocol's rule), or ``/`` once :meth:`declared_on_host` (its host's robots.txt
    declares it: such a sitemap may live anywhere on the host and list any of its pages).
    """

    __slots__ = ("declarable", "directory", "host", "local", "names", "origin", "scheme", "url")

    def __init__(self, sitemap_url: str, requested_url: str | None = None) -> None:
        parts = urlsplit(sitemap_url)
        self.url = sitemap_url
        self.names: tuple[str, ...] = (
            (sitemap_url,) if requested_url in (None, sitemap_url) else (sitemap_url, requested_url)
        )
        """Its URL, and the one asked for when that redirected to it (robots.txt may declare either)."""
        self.declarable: tuple[str, ...] = self.names
        """The URLs whose declaration in a robots.txt vouches for this sitemap: :attr:`names`,
        and those of the indexes above it (set by the audit, which knows them)."""
        self.scheme = parts.scheme.lower()
        self.host = host_and_port(parts)
        """Its host (and port, unless the default: :func:`host_and_port`)."""
        self.directory = parts.path[: parts.path.rfind("/") + 1] or "/"
        self.origin = f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else None
        """``scheme://netloc`` as the sitemap writes them: a page URL that starts so is on its host."""
        self.local = self.scheme not in ("http", "https")
        """A sitemap read from a file (``-a sitemap_urls=file://...``): served from no host, so the
        rules that compare a page's host and folder with the sitemap's do not apply."""

    def declared_on_host(self) -> None:
        """The sitemap's host's robots.txt declares it: any page of the host may be listed."""
        self.directory = "/"


def check_url(url: str, place: SitemapPlace, cross_hosts: frozenset[str] = frozenset()) -> Iterator[tuple[Rule, str]]:
    """The location rules ``url`` (a <loc> as written) breaks, each with a detail.

    ``cross_hosts`` are the hosts whose robots.txt declares this sitemap
    (cross-submission): their pages may be listed.
    """
    if len(url) > rules.MAX_URL_LENGTH:
        yield rules.URL_TOO_LONG, f"{len(url):,} characters"
    path = _same_origin_path(url, place)
    if path is not None:  # the common case, without urlsplit: same scheme and host, nothing to escape
        if not path.startswith(place.directory):
            yield _outside(path, place)
        return
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # an unbalanced [ or ] in the host (or a netloc NFKC would change)
        yield rules.UNESCAPED_URL, f"not a URL: {exc}"
        return
    scheme = parts.scheme.lower()
    if not scheme or (not parts.netloc and scheme != "file"):
        yield rules.RELATIVE_URL, f"{url[:200]!r} is not an absolute URL (no scheme and host)"
        return
    if parts.fragment or url.endswith("#"):
        yield rules.URL_FRAGMENT, f"fragment #{parts.fragment[:100]}"
    unescaped = unescaped_detail(url)
    if unescaped is not None:
        yield rules.UNESCAPED_URL, unescaped
    if place.local:
        return
    if scheme == "file":
        yield rules.OTHER_HOST, f"a local file, the sitemap is on {place.host}"
        return
    host = host_and_port(parts)
    if host != place.host:
        if host in cross_hosts:
            return
        yield rules.OTHER_HOST, f"host {host}, the sitemap is on {place.host}"
    elif scheme != place.scheme:
        yield rules.MIXED_SCHEME, f"{scheme} page in an {place.scheme} sitemap"
    elif not (parts.path or "/").startswith(place.directory):
        yield _outside(parts.path, place)


def check_urls(
    urls: list[str], place: SitemapPlace, cross_hosts: frozenset[str] = frozenset()
) -> list[tuple[int, Rule, str]]:
    """:func:`check_url` of each of ``urls``: (position, rule, detail) of each rule broken.

    A batch whose URLs are all short, free of fragments and of characters to escape (one
    search over them joined) needs one test a URL: does it start with the sitemap's
    origin and directory. Only the URLs that do not are looked at one by one.
    """
    origin = place.origin
    joined = "\n".join(urls)
    if (
        origin is None
        or not urls
        or max(map(len, urls)) > rules.MAX_URL_LENGTH
        or "#" in joined
        or joined.count("\n") != len(urls) - 1
        or _needs_escaping(joined)
    ):
        return [
            (position, *broken) for position, url in enumerate(urls) for broken in check_url(url, place, cross_hosts)
        ]
    inside = origin + place.directory
    same_origin = origin + "/"
    after_origin = len(origin)
    found: list[tuple[int, Rule, str]] = []
    for position, url in enumerate(urls):
        if url.startswith(inside):
            continue
        if url.startswith(same_origin):  # on the sitemap's scheme and host, outside its directory
            found.append((position, *_outside(_path(url[after_origin:]), place)))
        else:
            found.extend((position, *broken) for broken in check_url(url, place, cross_hosts))
    return found


def _same_origin_path(url: str, place: SitemapPlace) -> str | None:
    """The path (``/`` if empty) of a URL on the sitemap's own scheme and netloc, with no
    fragment and no character to escape; None for any other URL (the full checks decide).

    Such a URL splits as ``urlsplit`` would split it: nothing for it to strip or drop.
    """
    origin = place.origin
    if origin is None or not url.startswith(origin) or "#" in url or _MUST_ESCAPE.search(url):
        return None
    rest = url[len(origin) :]
    if rest and rest[0] not in "/?":
        return None  # another netloc that starts like the sitemap's (a port, a longer host)
    return _path(rest) or "/"


def _path(rest: str) -> str:
    """The path of what follows ``scheme://netloc`` in a URL with no fragment (its query cut off)."""
    query = rest.find("?")
    return rest if query < 0 else rest[:query]


def _outside(path: str, place: SitemapPlace) -> tuple[Rule, str]:
    """``outside-directory`` for a page whose path is ``path``."""
    return rules.OUTSIDE_DIRECTORY, f"path {path[:200]} is outside {place.directory}"
