"""Value checks: lastmod, priority, changefreq, news dates, image counts, hreflang."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from sitemap_crawl.audit import rules
from sitemap_crawl.audit.rules import Rule
from sitemap_crawl.audit.scan import RawEntry
from sitemap_crawl.parsing.fields import CHANGE_FREQUENCIES

# W3C Datetime (https://www.w3.org/TR/NOTE-datetime): YYYY, YYYY-MM, YYYY-MM-DD, or a
# date and a time (hh:mm, hh:mm:ss, hh:mm:ss.s) with a zone designator (Z or +hh:mm)
_W3C_DATETIME = re.compile(r"\d{4}(-\d{2}(-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2}))?)?)?")
_HREFLANG = re.compile(r"(?i)x-default|[a-z]{2,3}(-[a-z]{4})?(-([a-z]{2}|\d{3}))?")
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


def check_lastmod(text: str, now: datetime) -> Iterator[tuple[Rule, str]]:
    """A lastmod that is not a W3C Datetime, or that is in the future."""
    value = parse_w3c(text)
    if value is None:
        yield rules.LASTMOD_FORMAT, f"lastmod {text[:100]!r}"
    elif value > now + _FUTURE_SLACK:
        yield rules.LASTMOD_FUTURE, f"lastmod {text} is after {now:%Y-%m-%d}"


def check_entry(entry: RawEntry, now: datetime) -> Iterator[tuple[Rule, str]]:
    """The value rules one <url> entry breaks."""
    if entry.lastmod is not None:
        yield from check_lastmod(entry.lastmod, now)
    if entry.priority is not None:
        try:
            priority = float(entry.priority)
        except ValueError:
            priority = float("nan")
        if not 0.0 <= priority <= 1.0:
            yield rules.PRIORITY_RANGE, f"priority {entry.priority[:50]!r}"
    if entry.changefreq is not None and entry.changefreq not in CHANGE_FREQUENCIES:
        yield rules.CHANGEFREQ_VALUE, f"changefreq {entry.changefreq[:50]!r}"
    for text in entry.news_dates:
        published = parse_w3c(text)
        if published is None:
            yield rules.LASTMOD_FORMAT, f"news publication_date {text[:100]!r}"
        elif published < now - NEWS_MAX_AGE:
            yield rules.NEWS_TOO_OLD, f"published {text}"
    if entry.image_count > rules.MAX_IMAGES:
        yield rules.TOO_MANY_IMAGES, f"{entry.image_count} images"
    for hreflang, _href in entry.hreflangs:
        if hreflang is None or not _HREFLANG.fullmatch(hreflang):
            yield rules.HREFLANG_VALUE, f"hreflang {hreflang!r}"
