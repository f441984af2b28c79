"""When a site's pages have all been written: counts of pages yielded and pages exported.

Scrapy hands a callback's output to the item pipelines in parallel (CONCURRENT_ITEMS):
when the spider has read a site's last sitemap, up to a few batches of its pages may
still be on their way to the feed. A queue run must not write the site's tree line (nor
acknowledge it) before they are in the feed, so the worker waits until the pages that
left the item pipelines (scraped, dropped or failed) number as many as the site's
sitemaps reported (their pages; in a history run, the changes they exported). Pages are
told apart by their ``website`` field; a pipeline that replaces page items by other
objects makes the wait last until the crawl is idle.
"""

from __future__ import annotations

from typing import Any

from sitemap_crawl.items import NodeReport, PageBatch, SitemapPage


def pages_of(item: Any) -> tuple[str | None, int]:
    """The site and number of pages an item carries ((None, 0) for anything else)."""
    if isinstance(item, PageBatch):
        return item.website, len(item.pages)
    if isinstance(item, SitemapPage):
        return item.website, 1
    return None, 0


class PageLedger:
    """Pages yielded (by the sites' node reports) and pages written, per site."""

    def __init__(self) -> None:
        self.expected: dict[str, int] = {}
        self.written: dict[str, int] = {}

    def node(self, node: NodeReport, site: str | None = None) -> None:
        """A node report (the ``sitemap_node`` signal): a finished sitemap's rows are expected."""
        if site is not None and node.finished and node.rows:
            self.expected[site] = self.expected.get(site, 0) + node.rows

    def item(self, item: Any) -> str | None:
        """An item left the item pipelines; the site whose pages it carried, if any."""
        site, count = pages_of(item)
        if site is None or not count:
            return None
        self.written[site] = self.written.get(site, 0) + count
        return site

    def complete(self, site: str) -> bool:
        """Whether every page the site's sitemaps reported has left the item pipelines."""
        return self.written.get(site, 0) >= self.expected.get(site, 0)

    def pages(self, site: str) -> int:
        return self.written.get(site, 0)

    def forget(self, site: str) -> None:
        self.expected.pop(site, None)
        self.written.pop(site, None)
