"""One sitemap's pages against the stored ones. Pure: no Scrapy, no SQLite."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

ADDED = "added"
MODIFIED = "modified"
REMOVED = "removed"
CHANGES = (ADDED, MODIFIED, REMOVED)
"""The values of a history run's ``change`` field."""


@dataclass(slots=True)
class PageDiff:
    """Page URLs by change, each list in the order of the new listing (removed: stored order)."""

    added: list[str] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.added) + len(self.modified) + len(self.removed)


def diff_pages(stored: Mapping[str, str], current: Mapping[str, str], with_removed: bool = True) -> PageDiff:
    """Compare ``url -> record hash`` maps: what was added, modified, removed.

    ``with_removed=False`` (a sitemap read only in part) reports no removal: a page missing
    from a partial listing may still be there."""
    result = PageDiff()
    for url, digest in current.items():
        before = stored.get(url)
        if before is None:
            result.added.append(url)
        elif before != digest:
            result.modified.append(url)
    if with_removed:
        result.removed = [url for url in stored if url not in current]
    return result
