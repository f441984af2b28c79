"""Spider arguments: parsing, validation and the one-line error a user sees."""

from __future__ import annotations

import logging
import re
import unicodedata
from urllib.parse import SplitResult, urlsplit

from sitemap_crawl.discovery.rules import makes_known_path_url
from sitemap_crawl.discovery.since import Since, SinceError, parse_since, parse_undated
from sitemap_crawl.parsing.fields import DEFAULT_PORTS, same_url_key, usable_url, without_fragment

logger = logging.getLogger("sitemap_crawl")

_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})


class SpiderArgumentError(ValueError):
    """A spider argument is missing or wrong; the crawl stops before it starts."""


class BadHomepage(SpiderArgumentError):
    """A homepage that names no site to map; ``problem`` says why (a homepages file's line
    says it too, without the message's example)."""

    def __init__(self, homepage: str, problem: str, example: str = "") -> None:
        super().__init__(f"homepage={homepage!r} {problem}{example}")
        self.problem = problem


def parse_bool(name: str, value: object, default: bool) -> bool:
    """true/false/1/0/yes/no (any case) as a bool; ``default`` when not given (None). An
    empty value (``-a use_robots=``) is no boolean."""
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise SpiderArgumentError(f"{name}={value!r} is not a boolean (use true/false, 1/0 or yes/no)")


def parse_list(value: object) -> list[str]:
    """A comma-separated string (or a list) as a list of stripped, non-empty items."""
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else [str(item) for item in value]  # type: ignore[attr-defined]
    return [item.strip() for item in items if item.strip()]


def parse_regex(name: str, value: object) -> re.Pattern[str] | None:
    """A compiled regex, or None when not given."""
    if value is None or value == "":
        return None
    if isinstance(value, re.Pattern):
        return value
    try:
        return re.compile(str(value))
    except re.error as exc:
        raise SpiderArgumentError(f"{name}={value!r} is not a valid regular expression: {exc}") from None


def parse_homepage(value: object, normalize: bool) -> str:
    """An http(s) homepage URL, reduced to scheme://host[:port]/ when ``normalize``; a user
    and password are dropped either way (Scrapy's downloader fails on a URL that has them)."""
    text = str(value).strip()
    parts = urlsplit(text) if usable_url(text) else None  # an unbalanced [ or a bad port: none
    if parts is None:
        raise BadHomepage(text, f"is not a usable URL: {unusable_because(text)}")
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname or _NOT_IN_A_HOST.search(parts.hostname):
        raise BadHomepage(text, "is not an http(s) URL", " (example: https://www.example.org/)")
    scheme = parts.scheme.lower()
    host = _ascii_host(text, parts.hostname)
    if normalize:
        return f"{scheme}://{_site_host(host, parts, scheme)}/"
    path = parts.path or "/"
    if not path.endswith("/"):
        path += "/"
    host_and_port = parts.netloc.rpartition("@")[2].lower()  # (no user or password: Scrapy fails on them)
    return f"{scheme}://{host_and_port.replace(parts.hostname, host, 1)}{path}"


def unusable_because(url: str) -> str:
    """Why a URL that :func:`usable_url` refuses is no URL to request, as urlsplit says it
    (``Port out of range 0-65535``, ``Invalid IPv6 URL``...)."""
    try:
        urlsplit(url).port  # noqa: B018 (reading it is the check)
    except ValueError as exc:
        return str(exc)
    return "it does not split into a scheme, a host and a port"


_NOT_IN_A_HOST = re.compile(r"[\s%<>\"{}|\\^`/?#@]")
"""Characters no host name holds (a space, a percent escape...)."""


def _ascii_host(homepage: str, host: str) -> str:
    """``host`` as Scrapy requests it: a name beyond ASCII in its IDNA (punycode) form
    (``bücher.example`` -> ``xn--bcher-kva.example``), NFKC-normalised first, as w3lib's
    ``safe_url_string`` writes a request's host; an ASCII host as it is."""
    if host.isascii():
        return host
    try:
        return unicodedata.normalize("NFKC", host).encode("idna").decode("ascii").lower()  # (ℌ -> H -> h)
    except UnicodeError:
        raise BadHomepage(
            homepage, "is not an http(s) URL: its host is not a valid internationalised domain name"
        ) from None


def _site_host(host: str, parts: SplitResult, scheme: str) -> str:
    """host[:port] of a homepage reduced to its site: no user or password, no default port."""
    if ":" in host:  # IPv6
        host = f"[{host}]"
    port = parts.port
    return host if port is None or port == DEFAULT_PORTS[scheme] else f"{host}:{port}"


def parse_sitemap_urls(value: object) -> list[str]:
    """Start sitemap URLs: http(s) with a host (``https://host/...``), or file with an absolute
    path (``file:///...``, or ``file:/...`` (RFC 8089) written so; a relative one is no URL Scrapy
    requests). Each as given, but ``file:/...`` as ``file:///...``: the form Scrapy answers from;
    a URL given again is left out (read once, as a robots.txt's repeated ``Sitemap:`` line), also
    spelt otherwise (``café.xml`` / ``caf%C3%A9.xml``, with a ``#fragment``, the host in
    capitals): the first spelling is kept."""
    urls = []
    for url in parse_list(value):
        parts = urlsplit(url) if usable_url(url) else None
        if parts is None:
            raise SpiderArgumentError(f"sitemap_urls: {url!r} is not a usable URL: {unusable_because(url)}")
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https", "file"):
            raise SpiderArgumentError(f"sitemap_urls: {url!r} is not an http, https or file URL")
        if scheme == "file" and not parts.path.startswith("/"):
            raise SpiderArgumentError(
                f"sitemap_urls: {url!r} is not a file URL of an absolute path (example: file:///home/me/sitemap.xml)"
            )
        written_whole = url[len(scheme) : len(scheme) + 3] == "://"
        if scheme != "file" and not (written_whole and parts.hostname):
            raise SpiderArgumentError(
                f"sitemap_urls: {url!r} is not an http(s) URL with a host (example: https://www.example.org/sitemap.xml)"
            )
        if scheme == "file" and not written_whole:
            url = f"file://{url[len(scheme) + 1 :]}"  # (one sitemap read under two URLs otherwise)
        urls.append(url)
    kept: dict[str, str] = {}  # one URL in two spellings (café / caf%C3%A9, a #fragment, HOST) is read once
    for url in urls:
        kept.setdefault(_start_url_key(url), url)
    return list(kept.values())


def _start_url_key(url: str) -> str:
    """What two spellings of one start URL share: :func:`same_url_key` without the fragment,
    the scheme and host in lower case."""
    scheme, _, rest = without_fragment(url).partition("://")
    host, slash, path = rest.partition("/")
    return same_url_key(f"{scheme.lower()}://{host.lower()}{slash}{path}")


def parse_known_paths(value: object) -> list[str]:
    """``extra_known_paths``: paths that make an http(s) URL under a site."""
    paths = parse_list(value)
    for path in paths:
        if not makes_known_path_url(path):
            raise SpiderArgumentError(
                f"extra_known_paths: {path!r} is not a path or an http(s) URL (example: maps/sitemap.xml)"
            )
    return paths


def parse_since_arguments(since: object, since_undated: object) -> Since | None:
    """``since`` and ``since_undated`` as a :class:`Since` filter, or None without ``since``."""
    try:
        keep_undated = parse_undated(None if since_undated is None else str(since_undated))
        if since is None or str(since).strip() == "":
            if since_undated not in (None, ""):
                raise SpiderArgumentError("since_undated needs since (example: -a since=7d -a since_undated=drop)")
            return None
        return Since(parse_since(str(since)), keep_undated)
    except SinceError as exc:
        raise SpiderArgumentError(str(exc)) from None


class _HideArgumentErrorTracebacks(logging.Filter):
    """Drop the traceback Scrapy/asyncio would log for a SpiderArgumentError.

    The error itself has already been logged on one line by the spider.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if error is None:
            failure = getattr(record, "failure", None)
            error = getattr(failure, "value", None)
        return not isinstance(error, SpiderArgumentError)


_FILTER = _HideArgumentErrorTracebacks()


def install_traceback_filter() -> None:
    """Install the filter on the loggers that report a failed crawl start."""
    for name in ("asyncio", "twisted", "scrapy.crawler", "scrapy.utils.log", ""):
        target = logging.getLogger(name)
        if _FILTER not in target.filters:
            target.addFilter(_FILTER)
