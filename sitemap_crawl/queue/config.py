"""Where the shared queue lives and what its keys are called.

One queue is a handful of keys under one prefix (SITEMAP_CRAWL_QUEUE_KEY, default
``sitemap_crawl``): ``<prefix>:sites`` (the stream of homepages, consumer group
``workers``), ``<prefix>:seen`` (a set: every homepage ever added, so the same one is
mapped once), ``<prefix>:homepages`` (a hash: the site a worker maps, as it reduced the
homepage, and the entry that maps it), ``<prefix>:dead`` (the dead-letter stream) and
``<prefix>:counts`` (a hash: sites done, unreachable, duplicates, pages). Pure: no Scrapy,
no server.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from sitemap_crawl.arguments import SpiderArgumentError
from sitemap_crawl.default_settings import (
    SITEMAP_CRAWL_QUEUE_CLAIM_AFTER,
    SITEMAP_CRAWL_QUEUE_KEY,
    SITEMAP_CRAWL_QUEUE_MAX_ATTEMPTS,
)
from sitemap_crawl.settings_reader import SettingsReader

SCHEMES = ("redis", "rediss")
GROUP = "workers"
"""The consumer group every worker reads the stream of sites with."""


def parse_queue_url(value: object) -> str:
    """A ``redis://`` or ``rediss://`` URL, as given; SpiderArgumentError otherwise (also for
    what the Redis client would refuse: a port that is not a number from 0 to 65535, a bad
    option value such as ``?socket_timeout=abc``; and a path that is no database number,
    which the client would read as database 0)."""
    text = str(value or "").strip()
    try:
        parts = urlsplit(text)
        hostname = parts.hostname
    except ValueError as exc:  # (a bracket not closed: "Invalid IPv6 URL")
        raise SpiderArgumentError(f"queue={display_url(text)!r} is not a redis:// or rediss:// URL ({exc})") from None
    if parts.scheme.lower() not in SCHEMES or not hostname:
        raise SpiderArgumentError(
            f"queue={display_url(text)!r} is not a redis:// or rediss:// URL (redis://host:6379/0)"
        )
    from redis.connection import ConnectionPool, parse_url  # (the client: a dependency, imported only here)
    from redis.exceptions import RedisError

    try:
        options = parse_url(text)
        ConnectionPool.from_url(text).make_connection()  # (made, not connected: each option is checked)
    except (ValueError, TypeError, RedisError) as exc:
        unknown = _UNKNOWN_OPTION.search(str(exc)) if isinstance(exc, TypeError) else None
        why = f"the Redis client has no option {unknown[1]!r}" if unknown else str(exc)
        raise SpiderArgumentError(f"queue={display_url(text)!r}: {why}") from None
    database = parts.path.strip("/")
    if database and not (database.isascii() and database.isdigit()):  # (the client takes db 0 for it, silently)
        raise SpiderArgumentError(
            f"queue={display_url(text)!r}: the path is the database number ({database!r} is none: redis://host:6379/0)"
        )
    if database and "db" in parse_qs(parts.query) and options.get("db") != int(database):  # (the query wins)
        raise SpiderArgumentError(
            f"queue={display_url(text)!r}: two database numbers (the path's and ?db=): give it once, as the path"
        )
    return text


_UNKNOWN_OPTION = re.compile(r"unexpected keyword argument '(\w+)'")


def server_error(url: str, error: BaseException, key: str | None = None) -> str:
    """How a queue command or a starting worker says that the server failed it: ``The queue
    server URL cannot be reached: why`` (with a hint for a ``rediss://`` URL, whose TLS
    handshake a plain server never answers), or ``... refused the connection: why`` (a
    password, a database number: it was reached)."""
    from redis.exceptions import AuthenticationError, ResponseError, TimeoutError

    shown = display_url(url)
    if is_wrong_type(error):
        return f"The queue server {shown} holds other data at a key of the queue{key_words(key)}: {error}"
    if isinstance(error, AuthenticationError | ResponseError):
        return f"The queue server {shown} refused the connection: {str(error).rstrip('.')}"
    hint = ""
    if urlsplit(url).scheme.lower() == "rediss" and isinstance(error, TimeoutError):  # (refused: no hint)
        hint = " (a rediss:// URL: does the server speak TLS on that port?)"
    return f"The queue server {shown} cannot be reached: {str(error).rstrip('.')}{hint}"


def is_wrong_type(error: BaseException) -> bool:
    """Whether the server refused a command on a queue key that holds another kind of value
    (``WRONGTYPE``; from a pipeline or a script, the error names the command first)."""
    from redis.exceptions import ResponseError

    return isinstance(error, ResponseError) and "WRONGTYPE" in str(error)


def key_words(key: str | None) -> str:
    """How a message names the queue's keys (another application's keys may share the prefix)."""
    return f" (SITEMAP_CRAWL_QUEUE_KEY={key!r}: another application's keys?)" if key else ""


def display_url(url: str) -> str:
    """The URL without its passwords (for logs and status): the one before ``@`` and every
    query option whose name ends in ``password`` (``?password=``, ``?ssl_password=``, also
    percent-encoded: the client decodes the names), also in a URL that does not parse."""
    base, mark, query = url.partition("?")
    if mark:
        query = _QUERY_OPTION.sub(_hidden_option, query)
    scheme, separator, rest = base.partition("://")
    if separator:
        slash = rest.find("/")
        authority, path = (rest, "") if slash < 0 else (rest[:slash], rest[slash:])
        userinfo, at, host = authority.rpartition("@")  # (the last @: a password may hold one)
        if at and ":" in userinfo:
            authority = f"{userinfo.partition(':')[0]}:***@{host}"
        base = f"{scheme}://{authority}{path}"
    return f"{base}{mark}{query}"


def _hidden_option(match: re.Match[str]) -> str:
    name = match.group(1)
    return f"{name}=***" if unquote(name).lower().endswith("password") else match.group(0)


_QUERY_OPTION = re.compile(r"([^&=#]+)=([^&#]*)")


@dataclass(frozen=True)
class QueueConfig:
    """A queue's server URL, key prefix and the claim / dead-letter rules."""

    url: str
    key: str = SITEMAP_CRAWL_QUEUE_KEY
    claim_after: float = SITEMAP_CRAWL_QUEUE_CLAIM_AFTER
    max_attempts: int = SITEMAP_CRAWL_QUEUE_MAX_ATTEMPTS

    @classmethod
    def from_settings(cls, url: str, settings: Any) -> QueueConfig:
        """The queue at ``url`` with the SITEMAP_CRAWL_QUEUE_* settings of a Scrapy settings object
        (SettingError for a number out of range)."""
        config = SettingsReader(settings)
        return cls(
            parse_queue_url(url),
            str(settings.get("SITEMAP_CRAWL_QUEUE_KEY") or SITEMAP_CRAWL_QUEUE_KEY),
            config.queue_claim_after,
            config.queue_max_attempts,
        )

    @property
    def stream(self) -> str:
        return f"{self.key}:sites"

    @property
    def seen(self) -> str:
        return f"{self.key}:seen"

    @property
    def homepages(self) -> str:
        return f"{self.key}:homepages"

    @property
    def dead(self) -> str:
        return f"{self.key}:dead"

    @property
    def counts(self) -> str:
        return f"{self.key}:counts"

    @property
    def key_kinds(self) -> dict[str, str]:
        """Each key of the queue and the kind of value the server keeps there."""
        return {
            self.stream: "stream",
            self.seen: "set",
            self.homepages: "hash",
            self.dead: "stream",
            self.counts: "hash",
        }

    @property
    def claim_after_ms(self) -> int:
        return max(1, int(self.claim_after * 1000))

    @property
    def keep_interval(self) -> float:
        """Seconds between two renewals of a worker's hold on its sites (a quarter of CLAIM_AFTER)."""
        return self.claim_after / 4
