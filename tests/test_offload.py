"""The parsing worker: same entries as inline parsing, and nothing lost when it dies."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from sitemap_crawl.offload import InlineReader, SitemapReaders, WorkerReader
from sitemap_crawl.parsing import Limits, parse_sitemap

PAGE_COUNT = 5000


def _urlset(count: int) -> bytes:
    rows = "".join(
        f"<url><loc>https://www.example.org/p/{i}</loc><lastmod>2024-05-0{1 + i % 9}</lastmod>"
        f"<image:image><image:loc>https://cdn.example.org/{i}.jpg</image:loc></image:image>"
        f'<xhtml:link rel="alternate" hreflang="de" href="https://www.example.org/de/{i}"/></url>\n'
        for i in range(count)
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
        'xmlns:image="http://www.google.com/schemas/sitemap-image/1.1" xmlns:xhtml="http://www.w3.org/1999/xhtml">\n'
        f"{rows}</urlset>\n"
    ).encode()


async def _read_all(readers: SitemapReaders, body: bytes, url: str, kill_after: int | None = None) -> tuple:
    entries = []
    async with await readers.open(body, url, False) as reader:
        async for chunk in reader.chunks():
            entries.extend(chunk)
            if kill_after is not None and len(entries) >= kill_after and isinstance(reader, WorkerReader):
                readers.worker.kill("test")  # type: ignore[union-attr]
                kill_after = None
        return type(reader), reader.kind, reader.error, entries


def test_worker_gives_what_inline_parsing_gives() -> None:
    body = _urlset(PAGE_COUNT)
    url = "https://www.example.org/sitemap.xml"

    async def run() -> tuple:
        readers = SitemapReaders(Limits(), chunk_size=700, use_worker=True, worker_min_size=1)
        try:
            return await _read_all(readers, body, url)
        finally:
            await readers.close()

    reader_type, kind, error, entries = asyncio.run(run())
    expected = parse_sitemap(body, url)
    assert reader_type is WorkerReader
    assert (kind, error) == (expected.kind, expected.error)
    assert entries == expected.pages


def test_small_bodies_and_robots_are_read_inline() -> None:
    async def run() -> list[type]:
        readers = SitemapReaders(Limits(), chunk_size=10, use_worker=True, worker_min_size=10_000)
        try:
            small = await readers.open(_urlset(3), "https://www.example.org/a.xml", False)
            robots = await readers.open(b"Sitemap: /a.xml\n" * 1000, "https://www.example.org/robots.txt", True)
            return [type(small), type(robots)]
        finally:
            await readers.close()

    assert asyncio.run(run()) == [InlineReader, InlineReader]


def test_a_worker_that_dies_mid_sitemap_loses_nothing() -> None:
    body = _urlset(PAGE_COUNT)
    url = "https://www.example.org/sitemap.xml"

    async def run() -> tuple:
        readers = SitemapReaders(Limits(), chunk_size=500, use_worker=True, worker_min_size=1)
        try:
            first = await _read_all(readers, body, url, kill_after=1000)
            second = await _read_all(readers, body, url)  # after a death: parsed inline from then on
            return first, second, readers.worker.broken  # type: ignore[union-attr]
        finally:
            await readers.close()

    (first_type, kind, error, entries), (second_type, *_), broken = asyncio.run(run())
    expected = parse_sitemap(body, url).pages
    assert first_type is WorkerReader and (kind, error) == ("xml_urlset", None)
    assert [page.url for page in entries] == [page.url for page in expected]
    assert broken and second_type is InlineReader


@pytest.mark.parametrize(
    "name",
    [
        "shopify_products_dapperfam_large_2501_image.xml",
        "mkdocs_material_sitemap.xml.gz",
        "rss_guardian_uk_2016_media.xml",
    ],
)
def test_worker_matches_inline_on_real_files(name: str) -> None:
    path = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "real" / name
    if not path.exists():
        pytest.skip("corpus not available")
    body = path.read_bytes()
    url = f"https://www.example.org/{name}"

    async def run() -> tuple:
        readers = SitemapReaders(Limits(), chunk_size=1000, use_worker=True, worker_min_size=1)
        try:
            return await _read_all(readers, body, url)
        finally:
            await readers.close()

    _type, kind, error, entries = asyncio.run(run())
    expected = parse_sitemap(body, url)
    assert (kind, error, entries) == (expected.kind, expected.error, expected.pages)
