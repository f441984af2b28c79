"""What the crawl's engine is doing, as the components that start new work need to know it."""

from __future__ import annotations

from typing import Any


def is_closing(crawler: Any) -> bool:
    """Whether the crawl is closing its spider (Ctrl-C, a ``CLOSESPIDER_*`` limit, an
    ``engine.close_spider_async()``): the requests in flight finish, nothing new is
    downloaded, so no site should be started (Scrapy has no signal for it: its engine slot's
    ``closing`` is set from the first moment)."""
    try:
        engine = crawler.engine
    except RuntimeError:  # (Scrapy 2.19: no engine yet, or no longer)
        return False
    slot = getattr(engine, "_slot", None)
    return slot is not None and getattr(slot, "closing", None) is not None
