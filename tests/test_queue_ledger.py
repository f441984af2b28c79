"""PageLedger: a queue worker commits a site once the rows its sitemaps reported have left
the item pipelines."""

from __future__ import annotations

from sitemap_crawl.items import NodeReport, PageBatch, SitemapPage
from sitemap_crawl.queue.ledger import PageLedger

SITE = "http://a.test/"


def test_a_site_is_complete_once_its_pages_are_written() -> None:
    ledger = PageLedger()
    ledger.node(NodeReport((0,), f"{SITE}map.xml", "xml_urlset", page_count=2), SITE)
    assert not ledger.complete(SITE)
    pages = [SitemapPage(f"{SITE}p{i}", f"{SITE}map.xml", website=SITE) for i in range(2)]
    ledger.item(PageBatch(f"{SITE}map.xml", (0,), pages, SITE))
    assert ledger.complete(SITE) and ledger.pages(SITE) == 2


def test_a_history_runs_site_waits_for_its_changes_not_its_pages() -> None:
    # it waited for rows that never come, until the crawl was idle (every site of a busy worker)
    ledger = PageLedger()
    ledger.node(NodeReport((0,), f"{SITE}a.xml", "xml_urlset", page_count=5, change="unchanged", changes=0), SITE)
    assert ledger.complete(SITE)
    ledger.node(NodeReport((1,), f"{SITE}b.xml", "xml_urlset", page_count=4, change="changed", changes=1), SITE)
    assert not ledger.complete(SITE)
    ledger.item(SitemapPage(f"{SITE}b1", f"{SITE}b.xml", website=SITE, change="removed"))
    assert ledger.complete(SITE)
