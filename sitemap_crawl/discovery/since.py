"""``-a since``: keep only what changed at or after a moment. Pure: no Scrapy.

A lastmod is compared as an instant: a date is its first moment, a datetime without an
offset and the moment given without one are read as UTC, a year or a year-month is its
first day. A lastmod that cannot be read counts as undated. One within a day of the
calendar's ends whose offset takes it beyond them in UTC (``9999-12-31T23:59:59-12:00``) is
the first or last instant UTC can hold.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

KEEP = "keep"
DROP = "drop"
UNDATED_RULES = (KEEP, DROP)
"""What ``since_undated`` may say about pages without a lastmod."""

_DURATION = re.compile(r"(\d+)\s*([smhdw])", re.IGNORECASE)
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_YEAR_MONTH = re.compile(r"(\d{4})(?:-(\d{2}))?")
_FIRST_INSTANT = datetime.min.replace(tzinfo=UTC)
_LAST_INSTANT = datetime.max.replace(tzinfo=UTC)


class SinceError(ValueError):
    """A ``since`` or ``since_undated`` value that cannot be read."""


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """The moment ``text`` names, as an aware UTC datetime.

    ``2024-05-01``, ``2024-05-01T10:00:00+02:00`` (no offset: UTC), or a duration
    back from ``now``: ``7d``, ``12h``, ``30m``, ``2w``, ``90s``.
    """
    value = text.strip()
    match = _DURATION.fullmatch(value)
    if match:
        amount, unit = int(match.group(1)), match.group(2).lower()
        try:
            return (now or datetime.now(UTC)).astimezone(UTC) - timedelta(**{_UNITS[unit]: amount})
        except OverflowError:
            raise SinceError(f"since={text!r} reaches back before year 1") from None
    moment = to_instant(value)
    if moment is None:
        raise SinceError(
            f"since={text!r} is not an ISO 8601 date or datetime or a duration "
            "(examples: 2024-05-01, 2024-05-01T10:00:00+02:00, 7d, 12h)"
        )
    return moment


def to_instant(value: str | None) -> datetime | None:
    """A lastmod (as the parsers normalise it) as an aware UTC datetime, or None."""
    if not value:
        return None
    text = value.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            return datetime(day.year, day.month, day.day, tzinfo=UTC)
        moment = datetime.fromisoformat(text)
    except ValueError:
        match = _YEAR_MONTH.fullmatch(text)
        if not match:
            return None
        month = int(match.group(2) or 1)
        if not 1 <= month <= 12:
            return None
        return datetime(int(match.group(1)), month, 1, tzinfo=UTC)
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:  # beyond year 9999 or before year 1 in UTC: the edge of time
        return _LAST_INSTANT if moment.year == datetime.max.year else _FIRST_INSTANT


def parse_undated(text: str | None) -> bool:
    """``since_undated``: whether pages without a lastmod are kept (``keep``, the default)."""
    if text is None or str(text).strip() == "":
        return True
    value = str(text).strip().lower()
    if value not in UNDATED_RULES:
        raise SinceError(f"since_undated={text!r} must be keep or drop")
    return value == KEEP


@dataclass(frozen=True, slots=True)
class Since:
    """The filter: pages at or after ``moment``; undated pages kept when ``keep_undated``."""

    moment: datetime
    keep_undated: bool = True

    def keeps_page(self, last_modified: str | None) -> bool:
        """Whether a page with this lastmod reaches the feed."""
        instant = to_instant(last_modified)
        if instant is None:
            return self.keep_undated
        return instant >= self.moment

    def skips_sitemap(self, last_modified: str | None) -> bool:
        """Whether an index child with this lastmod is left unfetched: only one that says
        it last changed before ``moment`` (a child without a lastmod is fetched)."""
        instant = to_instant(last_modified)
        return instant is not None and instant < self.moment
