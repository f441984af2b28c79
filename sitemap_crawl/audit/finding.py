"""The finding record: one rule broken at one place."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Finding:
    """One broken rule: where (site, sitemap, page or child sitemap) and why."""

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
