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
    """What changed in one sitemap's pages: the pages added or modified, with their change,
    in the order of the new listing (document order), then the pages removed (in the order
    of ``stored``: the history store gives them by URL)."""

    listed: list[tuple[str, str]] = field(default_factory=list)
    """``(url, ADDED or MODIFIED)`` in the order the sitemap now lists them."""
    removed: list[str] = field(default_factory=list)

    @property
    def added(self) -> list[str]:
        return [url for url, change in self.listed if change == ADDED]

    @property
    def modified(self) -> list[str]:
        return [url for url, change in self.listed if change == MODIFIED]

    def __len__(self) -> int:
        return len(self.listed) + len(self.removed)


def diff_pages(stored: Mapping[str, str], current: Mapping[str, str], with_removed: bool = True) -> PageDiff:
    """Compare ``url -> record hash`` maps: what was added, modified, removed.

    ``with_removed=False`` (a sitemap read only in part) reports no removal: a page missing
    from a partial listing may still be there."""
    result = PageDiff()
    listed = result.listed
    for url, digest in current.items():
        before = stored.get(url)
        if before is None:
            listed.append((url, ADDED))
        elif before != digest:
            listed.append((url, MODIFIED))
    if with_removed:
        result.removed = [url for url in stored if url not in current]
    return result
