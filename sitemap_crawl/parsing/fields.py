"""Normalisation of single sitemap field values (dates, priority, change frequency, URLs)."""

from __future__ import annotations

import math
import os
import posixpath
import re
from datetime import UTC, date, datetime
from functools import lru_cache
from urllib.parse import quote, unquote, urljoin, urlsplit

CHANGE_FREQUENCIES = frozenset({"always", "hourly", "daily", "weekly", "monthly", "yearly", "never"})
DEFAULT_PRIORITY = 0.5

_REDUCED_PRECISION_DATE = re.compile(r"\d{4}(-\d{2})?")
_SPACE_BEFORE_OFFSET = re.compile(r"\s+(?=[+-]\d{2}:?\d{2}$|Z$)")
_INVISIBLE = "\ufeff\u200b\u200c\u200d\u2060"
"""Invisible format characters (a byte order mark, zero-width spaces and joiners) that an
editor or an export may leave around a URL."""
_URL_EDGES = "".join(chr(code) for code in range(0x3001) if chr(code).isspace() or code < 0x20) + _INVISIBLE
"""What is dropped around a URL: whitespace (every character ``str.strip()`` drops: none is
past U+3000), C0 control characters and invisible format characters. One ``str.strip`` with
them costs about half a check of the ends after a plain ``strip()``."""


@lru_cache(maxsize=8192)
def normalize_date(text: str | None) -> str | None:
    """Return an ISO 8601 form of a W3C datetime or RFC 822 date, or None.

    A date stays a date (``2024-05-01``), a datetime keeps its UTC offset when it
    has one (``Z`` becomes ``+00:00``), a year or year-month stays as written (a month
    out of 01-12 is no date: None).
    """
    if text is None:
        return None
    value = text.strip()
    if not value or len(value) > 64:
        return None
    if len(value) == 10:
        try:
            return date.fromisoformat(value).isoformat()
        except ValueError:
            return None
    canonical = value[:19] + "+00:00" if len(value) == 20 and value[19] == "Z" else value
    if _is_canonical_datetime(canonical):
        try:
            datetime.fromisoformat(canonical)  # checks the ranges; the text is already what isoformat() gives
        except ValueError:
            return None
        return canonical
    if value[0].isdigit():
        if _REDUCED_PRECISION_DATE.fullmatch(value):
            if value[:4] == "0000":
                return None  # no year 0 (as date() has none)
            return value if len(value) == 4 or "01" <= value[5:] <= "12" else None
        if len(value) == 8 and value.isdigit():  # ISO 8601 basic date: still a date
            try:
                return date.fromisoformat(value).isoformat()
            except ValueError:
                return None
        if ":" not in value:  # an ISO 8601 date of another form (2024-W18, 2024-W18-3, 2024-122): a date
            try:
                return date.fromisoformat(value).isoformat()
            except ValueError:
                pass
        candidate = _SPACE_BEFORE_OFFSET.sub("", value)
        try:
            return datetime.fromisoformat(candidate).isoformat()
        except ValueError:
            pass
    from email.utils import parsedate_to_datetime  # here: the email package costs 1.5 MiB a process

    try:
        parsed = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if parsed.tzinfo is None and value.endswith("-0000"):
        # RFC 2822: "-0000" is a UTC time whose local zone is unknown; the instant is UTC
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.isoformat()


def _is_canonical_datetime(value: str) -> bool:
    """Whether ``value`` has the exact shape of ``datetime.isoformat()`` with an offset
    (``2024-05-01T10:20:30+02:00``), the form most sitemaps use."""
    return (
        len(value) == 25
        and value[10] == "T"
        and value[4] == value[7] == "-"
        and value[13] == value[16] == value[22] == ":"
        and value[19] in "+-"
        and value.isascii()
        and not value.endswith("-00:00")  # isoformat() writes +00:00
    )


@lru_cache(maxsize=1024)
def normalize_priority(text: str | None) -> float:
    """Priority as a float in [0, 1]; missing or invalid values give 0.5."""
    if text is None:
        return DEFAULT_PRIORITY
    try:
        value = float(text.strip())
    except ValueError:
        return DEFAULT_PRIORITY
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        return DEFAULT_PRIORITY
    return value or 0.0  # (-0 is 0: "-0.0" in a feed is no priority a reader expects)


def normalize_change_frequency(text: str | None) -> str | None:
    """One of the protocol's change frequencies (case-insensitive), or None."""
    if text is None:
        return None
    value = text.strip().lower()
    return value if value in CHANGE_FREQUENCIES else None


def is_alternate_rel(rel: str | None) -> bool:
    """Whether an ``xhtml:link``'s ``rel`` names the alternate relation: HTML reads it as a set
    of space-separated tokens, case-insensitive (``alternate``, ``Alternate``, ``alternate
    nofollow``)."""
    if rel == "alternate":
        return True
    return rel is not None and "alternate" in rel.lower().split()


def clean_text(text: str | None) -> str | None:
    """Stripped text, or None when empty."""
    if text is None:
        return None
    value = text.strip()
    return value or None


def split_list(text: str | None) -> list[str]:
    """Comma-separated list (news genres, keywords, stock tickers) as stripped items."""
    if not text:
        return []
    return [item for item in (part.strip() for part in text.split(",")) if item]


MAX_DURATION = 2**63 - 1
"""The longest video duration kept (seconds): a feed's JSON encoder writes 64-bit integers."""


def parse_duration(text: str | None) -> int | None:
    """Video duration in whole seconds (0 to :data:`MAX_DURATION`), or None."""
    if text is None:
        return None
    text = text.strip()
    try:
        value = int(text) if text.isdigit() else int(float(text))
    except (ValueError, OverflowError):
        return None
    return value if 0 <= value <= MAX_DURATION else None


def parse_yes_no(text: str | None) -> bool | None:
    """``yes``/``no`` (also true/false, 1/0) as a bool, or None."""
    if text is None:
        return None
    value = text.strip().lower()
    if value in ("yes", "true", "1"):
        return True
    if value in ("no", "false", "0"):
        return False
    return None


MAX_URL_LENGTH = 64 * 1024
"""The longest URL kept (characters; a text sitemap's longest line is as long): a longer
``<loc>`` names nothing (the protocol's limit is 2,048; one of megabytes cost a hundred
times its size once made a request)."""


def resolve_url(text: str | None, base_url: str) -> str | None:
    """An absolute http(s) URL from a loc/href value, resolved against ``base_url``; None
    for one longer than ``MAX_URL_LENGTH``.

    Whitespace and control characters around the value are dropped; inside it tabs and
    newlines are removed, and a space or a character that is not printable (other
    whitespace, a control or format character, a noncharacter such as U+FFFE) is
    percent-encoded as its UTF-8 bytes, as w3lib's ``safe_url_string`` does; a capitalised
    scheme is lowered.
    Values that do not resolve to http or https (``javascript:``, ``mailto:``,
    empty) give None.
    """
    if text is None:
        return None
    value = text.strip(_URL_EDGES)  # (strip_url_text, without a call: the crawl's hot path)
    if len(value) > MAX_URL_LENGTH:
        return None
    if not value.startswith(_HTTP_SCHEMES):  # (the common case is: already absolute)
        if not value[:8].lower().startswith(_HTTP_SCHEMES):
            return _resolve_relative(value, base_url)
        scheme, _, rest = value.partition(":")
        value = scheme.lower() + ":" + rest
    url = _quote_unprintable(value) if _has_unprintable(value) else value
    return url if usable_url(url) else None


def strip_url_text(text: str) -> str:
    """A URL's text without the whitespace (Unicode's too), C0 control characters and
    invisible format characters (U+FEFF, U+200B...) around it."""
    return text.strip(_URL_EDGES)


_AS_REQUESTED = str.maketrans({"\\": "/", "\t": None, "\n": None, "\r": None})


def local_child_url(text: str | None, index_url: str) -> str | None:
    """A child sitemap a local index (a ``file:`` URL) names as a local file: a ``file:`` URL
    (relative ones resolved against the index) at or below the index's own folder, or None.

    Only a local index may name local files, and only its folder's: an index downloaded
    from a site cannot make the crawl read other files of the machine. The one place the
    parser looks at the file system: the paths are compared with their symbolic links
    resolved (a link in the folder may point outside it).
    """
    if text is None or not index_url.startswith("file:"):
        return None
    try:  # as the URL parser Scrapy requests through reads it: ..\x is ../x, a tab or newline nothing
        url = urljoin(index_url, text.strip().translate(_AS_REQUESTED))
        path = urlsplit(url).path
    except ValueError:
        return None
    if not url.startswith("file:") or not path:
        return None
    folder = os.path.realpath(posixpath.dirname(unquote(urlsplit(index_url).path)))
    file_path = os.path.realpath(unquote(path))  # (symbolic links followed: one may point outside)
    return url if file_path.startswith(folder.rstrip("/") + "/") else None


_BEYOND_ASCII = re.compile(r"[^\x00-\x7f]+")


def same_url_key(url: str) -> str:
    """What two spellings of one URL share, for deduplication: ``url`` with its characters
    beyond ASCII percent-encoded as UTF-8 (``café.xml`` and ``caf%C3%A9.xml`` are one URL:
    Scrapy requests both as the second). The URL kept is the first spelling met. A host name
    beyond ASCII and its IDNA form stay two (as ultimate-sitemap-parser keeps them)."""
    if url.isascii():
        return url
    return _BEYOND_ASCII.sub(lambda match: quote(match.group(), safe="", errors="surrogatepass"), url)


def child_sitemap_url(text: str | None, index_url: str) -> str | None:
    """The URL the crawl fetches for a sub-sitemap an index at ``index_url`` lists as ``text``:
    :func:`resolve_url` (or, from a local index, :func:`local_child_url`) without its
    fragment; None when it names none."""
    url = resolve_url(text, index_url) or local_child_url(text, index_url)
    return None if url is None else without_fragment(url)


def without_fragment(url: str) -> str:
    """``url`` without its ``#fragment``: what a request for it asks (for sitemap URLs, so that
    ``s.xml`` and ``s.xml#top`` are one sitemap, fetched once)."""
    return url.partition("#")[0] if "#" in url else url


def _resolve_relative(value: str, base_url: str) -> str | None:
    if not value:
        return None
    if _has_unprintable(value):
        value = _quote_unprintable(value)
    try:
        if ";" in value:  # (urljoin drops an empty ;params: "x;" -> "x"; a noncharacter it leaves
            # alone, and the value has none: _quote_unprintable escaped it)
            resolved = urljoin(base_url, value.replace(";", "\ufffe")).replace("\ufffe", ";")
        else:
            resolved = urljoin(base_url, value)
    except ValueError:  # an unbalanced [ or ] in the host
        return None
    if (resolved.startswith("http://") or resolved.startswith("https://")) and usable_url(resolved):
        return resolved
    return None


def usable_url(url: str) -> bool:
    """Whether ``url`` splits into parts with a port that is a number from 0 to 65535: what a
    Scrapy Request needs (it raises ValueError otherwise, as for ``https://[host/`` or
    ``https://host:99999/``).

    Only a URL with a second colon, a bracket or a character beyond ASCII is looked at
    further (the others cannot fail: a few C-speed scans), and then only its
    ``scheme://netloc`` part, once per distinct one: what urlsplit can fail on is there.
    """
    if url.count(":") < 2 and "[" not in url and "]" not in url and url.isascii():
        return True
    end = url.find("/", 8)  # the first slash after "https://" and the netloc's first character
    return _usable_origin(url if end < 0 else url[:end])


@lru_cache(maxsize=4096)
def _usable_origin(origin: str) -> bool:
    try:
        urlsplit(origin).port  # noqa: B018 - raises on a port that is not one
    except ValueError:
        return False
    return True


_HTTP_SCHEMES = ("http://", "https://")
DEFAULT_PORTS = {"http": 80, "https": 443}
"""The port a URL of each scheme has when it names none."""


def _has_unprintable(value: str) -> bool:
    # str.isprintable() is False for every whitespace character but the space, and for
    # control, format, private-use and unassigned code points: two C-speed scans.
    return " " in value or not value.isprintable()


_TAB_AND_NEWLINES = dict.fromkeys(map(ord, "\t\r\n"))
"""Removed from inside a URL, as w3lib's ``safe_url_string`` (and a browser's URL parser) removes them."""


def _quote_unprintable(value: str) -> str:
    """``value`` without tabs and newlines, each space or other unprintable character
    percent-encoded as its UTF-8 bytes."""
    value = value.translate(_TAB_AND_NEWLINES)
    return "".join(
        character
        if character.isprintable() and character != " "
        else "".join(f"%{byte:02X}" for byte in character.encode("utf-8", "surrogatepass"))
        for character in value
    )
