"""Value checks: lastmod, priority, changefreq, news dates, image counts, hreflang."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from itertools import chain
from operator import attrgetter, itemgetter

from sitemap_crawl.audit import rules
from sitemap_crawl.audit.languages import is_hreflang
from sitemap_crawl.audit.rules import Rule
from sitemap_crawl.audit.scan import RawEntry
from sitemap_crawl.parsing.fields import CHANGE_FREQUENCIES

# W3C Datetime (https://www.w3.org/TR/NOTE-datetime): YYYY, YYYY-MM, YYYY-MM-DD, or a
# date and a time (hh:mm, hh:mm:ss, hh:mm:ss.s) with a zone designator (Z or +hh:mm)
_W3C_DATETIME = re.compile(r"\d{4}(-\d{2}(-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2}))?)?)?")
_W3C_STRICT = (
    r"\d{4}(-(0[1-9]|1[0-2])(-\d{2}(T([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d+)?)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d))?)?)?"
)
_W3C_LINES = re.compile(rf"(?:{_W3C_STRICT}\n)*{_W3C_STRICT}")
"""W3C Datetimes whose time and zone are in range, one a line (a batch's lastmods joined):
with their days (:func:`_days_exist`), what :func:`parse_w3c` accepts."""
_FUTURE_SLACK = timedelta(days=1)  # time zones and clocks: a day ahead is not "the future"
NEWS_MAX_AGE = timedelta(days=2)


def parse_w3c(text: str) -> datetime | None:
    """The instant a W3C Datetime names (UTC; a date alone is midnight UTC), or None if it is not one."""
    if not _W3C_DATETIME.fullmatch(text):
        return None
    padded = text + "-01-01"[len(text) - 4 :] if len(text) < 10 else text
    try:
        value = datetime.fromisoformat(padded.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def lastmod_period_end(text: str, value: datetime) -> datetime:
    """The end of the period a W3C Datetime names: a year, month or day names all of it
    (``2024-05`` ends on 2024-06-01); a date and time is an instant."""
    if len(text) == 4:
        return value.replace(year=value.year + 1)
    if len(text) == 7:
        return value.replace(year=value.year + value.month // 12, month=value.month % 12 + 1)
    if len(text) == 10:
        return value + timedelta(days=1)
    return value


def newer_than_said(said: str, said_value: datetime, newest: tuple[str, datetime], latest: str) -> str | None:
    """The page lastmod of a sitemap that is after what an index's lastmod for it (``said``,
    parsed: ``said_value``) covers, or None. ``newest``: the sitemap's newest page lastmod
    (text, instant); ``latest``: the one latest on its own clock (text). After the instant a
    date and time names (the same instant is not), or, for a year, month or day, in a later
    one on the page's own clock (a date has no time zone: ``2024-06-01`` covers
    ``2024-06-01T23:00:00-05:00``)."""
    if len(said) > 10:
        return newest[0] if newest[1] > said_value else None
    local = parse_w3c(latest)
    end = lastmod_period_end(said, said_value).replace(tzinfo=None)
    return latest if local is not None and local.replace(tzinfo=None) >= end else None


def check_lastmod(text: str, now: datetime) -> Iterator[tuple[Rule, str]]:
    """A lastmod that is not a W3C Datetime, or that is in the future."""
    value = parse_w3c(text)
    if value is None:
        yield rules.LASTMOD_FORMAT, f"lastmod {text[:100]!r}"
    elif value > now + _FUTURE_SLACK:
        crawled = now.isoformat(timespec="minutes")
        yield rules.LASTMOD_FUTURE, f"lastmod {text} is more than a day after the crawl ({crawled})"


def check_entry(entry: RawEntry, now: datetime) -> Iterator[tuple[Rule, str]]:
    """The value rules one <url> entry breaks."""
    if entry.lastmod is not None:
        yield from check_lastmod(entry.lastmod, now)
    if entry.priority is not None and not _priority_ok(entry.priority):
        yield rules.PRIORITY_RANGE, f"priority {entry.priority[:50]!r}"
    if entry.changefreq is not None and entry.changefreq not in CHANGE_FREQUENCIES:
        yield rules.CHANGEFREQ_VALUE, f"changefreq {entry.changefreq[:50]!r}"
    yield from _check_extras(entry, now)


def _check_extras(entry: RawEntry, now: datetime) -> Iterator[tuple[Rule, str]]:
    """The rules of an entry's news dates, images and hreflangs."""
    for text in entry.news_dates:
        published = parse_w3c(text)
        if published is None:
            yield rules.LASTMOD_FORMAT, f"news publication_date {text[:100]!r}"
        elif lastmod_period_end(text, published) < now - NEWS_MAX_AGE:  # a date: all of its day
            yield rules.NEWS_TOO_OLD, f"published {text}"
    if entry.image_count > rules.MAX_IMAGES:
        yield rules.TOO_MANY_IMAGES, f"{entry.image_count:,} images"
    for hreflang, _href in entry.hreflangs:
        if hreflang is None or not is_hreflang(hreflang):
            yield rules.HREFLANG_VALUE, f"hreflang {hreflang!r}"


_LASTMOD = attrgetter("lastmod")
_NEWS_DATES = attrgetter("news_dates")
_IMAGE_COUNT = attrgetter("image_count")
_HREFLANGS = attrgetter("hreflangs")
_HREFLANG = itemgetter(0)
_PRIORITY = attrgetter("priority")
_CHANGEFREQ = attrgetter("changefreq")


class LastmodSummary:
    """What the page lastmods of a sitemap add up to: count by month, the newest (not in the future)."""

    __slots__ = ("latest", "months", "newest")

    def __init__(self, months: Counter[str]) -> None:
        self.months = months
        self.newest: tuple[str, datetime] | None = None
        """The newest lastmod (text, instant)."""
        self.latest: tuple[str, str] | None = None
        """The lastmod latest on its own clock (its date and time as written, without the
        zone; its text): what a date in the index is compared with."""

    def add(self, text: str, value: datetime | None, now: datetime) -> None:
        """One lastmod (its value: None if it is no W3C Datetime, or no day of the calendar:
        not counted) counts."""
        if value is not None and len(text) >= 7 and text[4] == "-":
            self.months[text[:7]] += 1
            self.consider(text, value, now)

    def uncount(self, text: str) -> None:
        """Take back a lastmod counted by :meth:`add` or :func:`check_entries` (a page listed again)."""
        month = text[:7]
        if len(text) >= 7 and text[4] == "-" and month in self.months and parse_w3c(text) is not None:
            self.months[month] -= 1
            if self.months[month] <= 0:
                del self.months[month]

    def consider(self, text: str, value: datetime | None, now: datetime) -> None:
        """``text`` (its instant ``value``) is the newest if it is newer than the newest yet and not after ``now``."""
        if value is not None and value <= now:
            if self.newest is None or value > self.newest[1]:
                self.newest = (text, value)
            self.consider_clock(text)

    def consider_clock(self, text: str) -> None:
        """``text`` (a W3C Datetime, not in the future) is the latest on its own clock if it is
        later there than the latest yet (compared as written: ``YYYY-MM-DDThh:mm:ss``)."""
        clock = text[:19]
        if self.latest is None or clock > self.latest[0]:
            self.latest = (clock, text)


def check_entries(entries: list[RawEntry], now: datetime, lastmods: LastmodSummary) -> list[tuple[int, Rule, str]]:
    """:func:`check_entry` of each <url> entry: (position, rule, detail); their lastmods go to ``lastmods``.

    A batch whose lastmods are all W3C Datetimes (one regular expression over them joined,
    each distinct day checked once), none of them after ``now`` (:func:`_newest` parses
    few), and whose distinct priorities, changefreqs and hreflangs are valid, is checked
    without a look at each entry but the news and images of those that have some. Any
    other batch is checked entry by entry.
    """
    texts = list(map(_LASTMOD, entries))
    if None in texts:
        texts = [text for text in texts if text is not None]
    priorities = set(map(_PRIORITY, entries))
    priorities.discard(None)
    changefreqs = set(map(_CHANGEFREQ, entries))
    changefreqs.discard(None)
    if (
        (texts and not (_W3C_LINES.fullmatch("\n".join(texts)) and _days_exist(texts)))
        or not changefreqs <= CHANGE_FREQUENCIES
        or not all(_priority_ok(text) for text in priorities)
    ):
        return _check_each(entries, now, lastmods)
    dated = texts if not texts or min(map(len, texts)) >= 7 else [text for text in texts if len(text) >= 7]
    newest = _newest(dated)
    if newest is not None and newest[1] > now:  # in the future (or nearly): each is looked at
        return _check_each(entries, now, lastmods)
    if dated:  # "YYYY-MM..." (a year alone counts for neither)
        lastmods.months.update(map(_MONTH, dated))
        assert newest is not None
        lastmods.consider(*newest, now)
        lastmods.consider_clock(max(dated))  # (as written, the latest date and time come last)
    # (the tests below run in C over the batch: most batches need no look at each entry)
    languages = set(map(_HREFLANG, chain.from_iterable(map(_HREFLANGS, entries))))
    odd_language = any(hreflang is None or not is_hreflang(hreflang) for hreflang in languages)
    many_images = max(map(_IMAGE_COUNT, entries), default=0) > rules.MAX_IMAGES
    if not (odd_language or many_images or any(map(_NEWS_DATES, entries))):
        return []
    return [
        (position, *broken)
        for position, entry in enumerate(entries)
        if entry.news_dates or entry.image_count > rules.MAX_IMAGES or (odd_language and entry.hreflangs)
        for broken in _check_extras(entry, now)
    ]


def _newest(texts: list[str]) -> tuple[str, datetime] | None:
    """The newest of valid W3C Datetimes (each at least a month), with its instant; None if none.

    Parses few: all of one form (length and zone) compare as text; otherwise only those
    within three days of the latest date as written can be the newest (a zone offset
    moves an instant by less than a day).
    """
    if not texts:
        return None
    if min(map(len, texts)) == max(map(len, texts)) and (
        len(texts[0]) <= 10 or len(set(map(_ZONE, texts))) == 1 or "\n".join(texts).count("Z") == len(texts)
    ):
        newest = max(texts)
        value = parse_w3c(newest)
        assert value is not None
        return newest, value
    latest = max(map(_DAY, texts))
    floor = (datetime.fromisoformat(latest + "-01"[len(latest) - 7 :]) - _WINDOW).strftime("%Y-%m-%d")
    candidates = [(value, text) for text in texts if text >= floor and (value := parse_w3c(text)) is not None]
    value, text = max(candidates)
    return text, value


def _days_exist(texts: list[str]) -> bool:
    """Whether the date of each (``YYYY``, ``YYYY-MM`` or ``YYYY-MM-DD``) is a day of the
    calendar (each distinct one asked once; those seen before are known)."""
    days = set(map(_DAY, texts)).difference(_REAL_DAYS)  # (not -=: that walks all of _REAL_DAYS)
    try:
        for day in days:
            date.fromisoformat(day + "-01-01"[len(day) - 4 :] if len(day) < 10 else day)
    except ValueError:
        return False
    if len(_REAL_DAYS) < _REAL_DAYS_LIMIT:
        _REAL_DAYS.update(days)
    return True


_REAL_DAYS: set[str] = set()
"""Dates found to be days of the calendar (a site's lastmods fall on a few thousand days)."""
_REAL_DAYS_LIMIT = 20_000


_WINDOW = timedelta(days=3)
_DAY = itemgetter(slice(0, 10))
_MONTH = itemgetter(slice(0, 7))
_ZONE = itemgetter(slice(-6, None))


def _priority_ok(text: str) -> bool:
    """Whether ``text`` is the protocol's priority: an xsd:decimal (ASCII digits, no exponent)
    from 0.0 to 1.0."""
    return _DECIMAL.fullmatch(text) is not None and 0.0 <= float(text) <= 1.0


_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")
"""xsd:decimal's lexical form (``float`` also takes ``1e-1``, ``nan``, ``1_0`` and other digits)."""


def _check_each(entries: list[RawEntry], now: datetime, lastmods: LastmodSummary) -> list[tuple[int, Rule, str]]:
    found: list[tuple[int, Rule, str]] = []
    for position, entry in enumerate(entries):
        found.extend((position, *broken) for broken in check_entry(entry, now))
        if entry.lastmod:
            lastmods.add(entry.lastmod, parse_w3c(entry.lastmod), now)
    return found
