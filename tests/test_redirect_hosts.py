"""A redirected sitemap request counts at the host it goes to: its download slot, and its
place in the sitemaps spider's per-host limit."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from scrapy import Request
from scrapy.utils.test import get_crawler

from sitemap_crawl.discovery import CHILD, Visit
from sitemap_crawl.names import HOST_META_KEY, META_KEY
from sitemap_crawl.redirect_hosts import RedirectHostMiddleware
from sitemap_crawl.sites.hosts import HostGate, HostPermit

VISIT = Visit("https://a.test/sm.xml", (0, 0), 1, frozenset(), CHILD, "https://a.test/")
REDIRECTED = {META_KEY: VISIT, "redirect_urls": ["https://a.test/sm.xml"]}


def middleware(gate: HostGate[Any] | None = None) -> RedirectHostMiddleware:
    crawler = get_crawler()
    crawler.spider = SimpleNamespace(gate=gate)  # type: ignore[assignment]
    return RedirectHostMiddleware(crawler)


def slot_after(url: str, meta: dict[str, object]) -> object:
    request = Request(url, meta={"download_slot": "a.test", **meta})
    asyncio.run(middleware().process_request(request))
    return request.meta.get("download_slot")


def test_a_sitemap_redirected_to_another_host_loses_the_slot_it_came_from() -> None:
    # Scrapy copies the meta, download_slot too: cdn.test got no per-host limit nor delay
    assert slot_after("https://cdn.test/sm.xml", REDIRECTED) is None
    assert slot_after("https://a.test/moved.xml", REDIRECTED) == "a.test"  # the same host: its own


def test_other_requests_keep_their_slot() -> None:
    assert slot_after("https://cdn.test/sm.xml", {META_KEY: VISIT}) == "a.test"  # not redirected
    assert slot_after("https://cdn.test/page", {"redirect_urls": ["https://a.test/page"]}) == "a.test"  # a page


def test_a_redirected_request_waits_for_a_place_at_its_new_host_holding_none() -> None:
    async def scenario() -> list[str]:
        events: list[str] = []

        def admit(item: Any) -> None:
            if isinstance(item, HostPermit):
                events.append("permit")
                item.grant()
            else:
                events.append(item)

        gate: HostGate[Any] = HostGate(1, admit)
        gate.submit("a.test", "visit on a.test")
        gate.submit("cdn.test", "visit on cdn.test")
        request = Request("https://cdn.test/sm.xml", meta=dict(REDIRECTED))
        waiting = asyncio.ensure_future(middleware(gate).process_request(request))
        await asyncio.sleep(0)
        assert not waiting.done() and gate.in_flight("a.test") == 0  # a.test's place given up
        gate.submit("a.test", "next visit on a.test")  # goes at once
        gate.release("cdn.test")  # the visit on cdn.test is done: the redirected request goes
        await waiting
        assert request.meta[HOST_META_KEY] == "cdn.test" and gate.in_flight("cdn.test") == 1
        return events

    assert asyncio.run(scenario()) == ["visit on a.test", "visit on cdn.test", "next visit on a.test", "permit"]
