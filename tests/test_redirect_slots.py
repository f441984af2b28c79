"""A redirected sitemap request goes through the download slot of the host it goes to."""

from __future__ import annotations

from scrapy import Request

from sitemap_crawl.discovery import CHILD, Visit
from sitemap_crawl.names import META_KEY
from sitemap_crawl.redirect_slots import RedirectSlotMiddleware

VISIT = Visit("https://a.test/sm.xml", (0, 0), 1, frozenset(), CHILD, "https://a.test/")
REDIRECTED = {META_KEY: VISIT, "redirect_urls": ["https://a.test/sm.xml"]}


def slot_after(url: str, meta: dict[str, object]) -> object:
    request = Request(url, meta={"download_slot": "a.test", **meta})
    RedirectSlotMiddleware().process_request(request)
    return request.meta.get("download_slot")


def test_a_sitemap_redirected_to_another_host_loses_the_slot_it_came_from() -> None:
    # Scrapy copies the meta, download_slot too: cdn.test got no DOWNLOAD_DELAY nor per-host limit
    assert slot_after("https://cdn.test/sm.xml", REDIRECTED) is None
    assert slot_after("https://a.test/moved.xml", REDIRECTED) == "a.test"  # the same host: its own


def test_other_requests_keep_their_slot() -> None:
    assert slot_after("https://cdn.test/sm.xml", {META_KEY: VISIT}) == "a.test"  # not redirected
    assert slot_after("https://cdn.test/page", {"redirect_urls": ["https://a.test/page"]}) == "a.test"  # a page
