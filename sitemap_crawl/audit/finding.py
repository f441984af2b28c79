"""The finding record: one rule broken at one place."""

from __future__ import annotations

from typing import Any, NamedTuple


class Finding(NamedTuple):
    """One broken rule: where (site, sitemap, page or child sitemap) and why.

    A named tuple: an audit may make one for most pages of a site, and a tuple is made
    several times faster than a frozen dataclass."""

    website: str | None
    sitemap_url: str
    url: str | None
    rule: str
    severity: str
    detail: str

    def to_dict(self) -> dict[str, Any]:
        """The JSON lines form (the field order of the dataclass)."""
        return {
            "website": self.website,
            "sitemap_url": self.sitemap_url,
            "url": self.url,
            "rule": self.rule,
            "severity": self.severity,
            "detail": self.detail,
        }
