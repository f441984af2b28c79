"""Micro-benchmark of the page codec on its hot paths (ns per page, best of several rounds).

    .venv/bin/python benchmarks/codec.py

``page.to_dict()`` (public API), the exporters' dict (``page_to_dict``, CSV and the
non-orjson JSON feeds), the worker's tuple (``TO_TUPLE[type(entry)](entry)``, as
``run_job`` does) and the crawl process's batch decoding (``entries_from_tuples``),
on a page with two images and two alternates and on a bare page.
"""

from __future__ import annotations

import timeit
from collections.abc import Callable

from sitemap_crawl.codec import page_to_dict
from sitemap_crawl.items import Alternate, Image, SitemapPage
from sitemap_crawl.parsing.worker_protocol import TO_TUPLE, entries_from_tuples

BATCH = 250

RICH = SitemapPage(
    "https://www.example.org/products/blue-shirt",
    "https://www.example.org/sitemap.xml",
    0.8,
    "2024-05-01T10:00:00+00:00",
    "daily",
    None,
    [Image("https://cdn.example.org/a.jpg", "Blue shirt"), Image("https://cdn.example.org/b.jpg")],
    [],
    [
        Alternate("de", "https://www.example.org/de/blue-shirt"),
        Alternate("fr", "https://www.example.org/fr/blue-shirt"),
    ],
)
BARE = SitemapPage("https://www.example.org/about", "https://www.example.org/sitemap.xml")


def best_ns(function: Callable[[], object], number: int, per_call: int = 1, repeat: int = 15) -> float:
    """Best time of ``function`` in nanoseconds per item."""
    return min(timeit.repeat(function, number=number, repeat=repeat)) / number / per_call * 1e9


def measure(page: SitemapPage, number: int = 50_000) -> dict[str, float]:
    """Nanoseconds per page of each hot path, for ``page``."""
    to_tuple = TO_TUPLE[type(page)]
    batch = [to_tuple(page)] * BATCH
    url = page.sitemap_url
    return {
        "page.to_dict()": best_ns(page.to_dict, number),
        "page_to_dict": best_ns(lambda: page_to_dict(page), number),
        "to_tuple": best_ns(lambda: to_tuple(page), number),
        "entries_from_tuples": best_ns(lambda: entries_from_tuples(batch, url), number // BATCH, BATCH),
    }


def main() -> None:
    for label, page in (("rich", RICH), ("bare", BARE)):
        for name, value in measure(page).items():
            print(f"{label:5} {name:20} {value:7.0f} ns")


if __name__ == "__main__":
    main()
