"""The parsing workers: same entries as inline parsing, several at once, nothing lost when one dies."""

from __future__ import annotations

import asyncio
import fcntl
import io
import os
import subprocess
import sys

import pytest
from scrapy.settings import Settings

from sitemap_crawl.audit.process import AUDIT_MODULE
from sitemap_crawl.config import SettingsReader
from sitemap_crawl.offload import InlineReader, SitemapReaders, WorkerReader, default_worker_count, usable_cpus
from sitemap_crawl.parsing import Limits, SitemapReader, parse_sitemap
from sitemap_crawl.parsing.stream import FileBody
from sitemap_crawl.parsing.worker import PIPE_SIZE, SPOOL_MIN_SIZE, receive_body, widen_pipe
from sitemap_crawl.parsing.worker_protocol import WORKER_MODULE, encode_frame, job_header
from tests.support import CORPUS_DIR, urlset

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
                readers.pool.workers[0].kill("test")  # type: ignore[union-attr]
                kill_after = None
        return type(reader), reader.kind, reader.error, entries


def _read_with_fresh_readers(body: bytes, url: str, chunk_size: int, workers: int = 1) -> tuple:
    """Read one body with readers of its own (a worker for any size), then close them."""

    async def run() -> tuple:
        readers = SitemapReaders(Limits(), chunk_size=chunk_size, workers=workers, worker_min_size=1)
        try:
            return await _read_all(readers, body, url)
        finally:
            await readers.close()

    return asyncio.run(run())


def test_worker_gives_what_inline_parsing_gives() -> None:
    body = _urlset(PAGE_COUNT)
    url = "https://www.example.org/sitemap.xml"

    reader_type, kind, error, entries = _read_with_fresh_readers(body, url, chunk_size=700)
    expected = parse_sitemap(body, url)
    assert reader_type is WorkerReader
    assert (kind, error) == (expected.kind, expected.error)
    assert entries == expected.pages


def test_small_bodies_and_robots_are_read_inline() -> None:
    async def run() -> list[type]:
        readers = SitemapReaders(Limits(), chunk_size=10, workers=1, worker_min_size=10_000)
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
        readers = SitemapReaders(Limits(), chunk_size=500, workers=1, worker_min_size=1)
        try:
            first = await _read_all(readers, body, url, kill_after=1000)
            second = await _read_all(readers, body, url)  # after a death: parsed inline from then on
            return first, second, readers.pool.broken  # type: ignore[union-attr]
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
    path = CORPUS_DIR / name
    if not path.exists():
        pytest.skip("corpus not available")
    body = path.read_bytes()
    url = f"https://www.example.org/{name}"

    _type, kind, error, entries = _read_with_fresh_readers(body, url, chunk_size=1000)
    expected = parse_sitemap(body, url)
    assert (kind, error, entries) == (expected.kind, expected.error, expected.pages)


def test_two_workers_parse_two_bodies_at_once() -> None:
    first_body, second_body = _urlset(3000), _urlset(4000)
    url = "https://www.example.org/sitemap.xml"

    async def run() -> tuple:
        readers = SitemapReaders(Limits(), chunk_size=500, workers=2, worker_min_size=1)
        try:
            first_opened = await readers.open(first_body, url, False)
            second_opened = await readers.open(second_body, url, False)
            async with first_opened as first, second_opened as second:
                # both are being parsed now, each by its own process
                both = [first, second]
                numbers = {reader._worker.number for reader in both}  # type: ignore[union-attr]
                entries: tuple[list, list] = ([], [])
                for reader, bucket in zip(both, entries, strict=True):
                    async for chunk in reader.chunks():
                        bucket.extend(chunk)
            started = [worker for worker in readers.pool.workers if worker._process is not None]  # type: ignore[union-attr]
            return [type(reader) for reader in both], numbers, entries, len(started)
        finally:
            await readers.close()

    types, numbers, (first_entries, second_entries), started = asyncio.run(run())
    assert types == [WorkerReader, WorkerReader] and numbers == {1, 2} and started == 2
    assert first_entries == parse_sitemap(first_body, url).pages
    assert second_entries == parse_sitemap(second_body, url).pages


def test_one_body_at_a_time_starts_one_worker_only() -> None:
    async def run() -> int:
        readers = SitemapReaders(Limits(), chunk_size=500, workers=3, worker_min_size=1)
        try:
            for count in (100, 200, 300):
                await _read_all(readers, _urlset(count), "https://www.example.org/a.xml")
            return sum(worker._process is not None for worker in readers.pool.workers)  # type: ignore[union-attr]
        finally:
            await readers.close()

    assert asyncio.run(run()) == 1


def test_the_other_worker_goes_on_when_one_dies() -> None:
    body = _urlset(PAGE_COUNT)
    url = "https://www.example.org/sitemap.xml"

    async def run() -> tuple:
        readers = SitemapReaders(Limits(), chunk_size=500, workers=2, worker_min_size=1)
        try:
            first = await _read_all(readers, body, url, kill_after=1000)  # kills worker 1
            second = await _read_all(readers, body, url)
            pool = readers.pool
            assert pool is not None
            return first, second, [worker.broken for worker in pool.workers], pool.broken
        finally:
            await readers.close()

    (first_type, _, error, entries), (second_type, _, _, second_entries), broken, all_broken = asyncio.run(run())
    expected = parse_sitemap(body, url).pages
    assert first_type is WorkerReader and error is None
    assert [page.url for page in entries] == [page.url for page in expected]
    assert broken == [True, False] and not all_broken
    assert second_type is WorkerReader and second_entries == expected


def test_a_large_body_is_spooled_to_a_file_and_parsed_from_it() -> None:
    body = _urlset(12_000)
    assert len(body) >= SPOOL_MIN_SIZE
    received = receive_body(io.BytesIO(body + b"next frame"), len(body))
    assert isinstance(received, FileBody) and len(received) == len(body)
    try:
        url = "https://www.example.org/sitemap.xml"
        from_file = SitemapReader(received, url)
        assert list(from_file) == parse_sitemap(body, url).pages
    finally:
        received.close()
    small = _urlset(3)
    assert receive_body(io.BytesIO(small), len(small)) == small


def test_a_damaged_spooled_body_is_read_again_from_the_file() -> None:
    # the recover pass reads the body a second time, from the start
    body = _urlset(12_000).replace(
        b"<loc>https://www.example.org/p/6000</loc>", b"<loc>https://www.example.org/p/6000</lox>"
    )
    received = receive_body(io.BytesIO(body), len(body))
    assert isinstance(received, FileBody)
    try:
        url = "https://www.example.org/sitemap.xml"
        reader = SitemapReader(received, url)
        entries = list(reader)
        expected = parse_sitemap(body, url)
        assert (reader.kind, reader.error) == (expected.kind, expected.error) == ("xml_urlset", "parse error")
        assert entries == expected.pages and len(entries) > 11_000
    finally:
        received.close()


@pytest.mark.parametrize("size", [10, SPOOL_MIN_SIZE + 10])
def test_a_body_cut_short_on_the_pipe_gives_none(size: int) -> None:
    assert receive_body(io.BytesIO(b"x" * (size - 1)), size) is None


@pytest.mark.skipif(not hasattr(fcntl, "F_GETPIPE_SZ"), reason="pipe sizes are Linux's")
@pytest.mark.parametrize("module", [WORKER_MODULE, AUDIT_MODULE])
def test_a_child_process_whose_crawl_process_is_gone_ends_quietly(module: str) -> None:
    # a kill -9 of the crawl while the child wrote its answers: two BrokenPipeError tracebacks
    # on the terminal (the second from writing a FAILED frame about the first)
    body = urlset(*(f"https://example.com/p{i}" for i in range(20_000))).encode()
    if module == WORKER_MODULE:
        frames = job_header(1, body, "https://example.com/s.xml", False, Limits(), 100) + body
    else:
        facts = ("https://example.com/", "https://example.com/s.xml", "child", 200, "https://example.com/s.xml", "")
        frames = encode_frame(("open", os.devnull, None, "*", False)) + encode_frame(("response", 1, facts, len(body)))
        frames += body
    child = subprocess.Popen(
        [sys.executable, "-m", module], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert child.stdout is not None and child.stdin is not None
    child.stdout.close()  # (as a killed crawl process's end of the pipe)
    try:
        child.stdin.write(frames)
        child.stdin.close()
    except BrokenPipeError:
        pass
    assert child.stderr is not None
    err = child.stderr.read().decode()
    assert (child.wait(timeout=60), err) == (0, "")


def test_worker_pipes_are_widened() -> None:
    read_end, write_end = os.pipe()
    try:
        widen_pipe(write_end)
        assert fcntl.fcntl(write_end, fcntl.F_GETPIPE_SZ) >= PIPE_SIZE // 4
    finally:
        os.close(read_end)
        os.close(write_end)


@pytest.mark.parametrize(
    ("settings", "workers", "in_flight"),
    [
        ({}, default_worker_count(), max(3, default_worker_count() + 2)),
        ({"SITEMAP_CRAWL_PARSE_WORKERS": 0}, 0, 3),
        ({"SITEMAP_CRAWL_PARSE_WORKERS": "false"}, 0, 3),
        ({"SITEMAP_CRAWL_PARSE_WORKERS": "3"}, 3, 5),
        ({"SITEMAP_CRAWL_PARSE_WORKERS": 3, "SITEMAP_CRAWL_CONCURRENT_SITEMAPS": 8}, 3, 8),
    ],
)
def test_worker_and_in_flight_settings(settings: dict, workers: int, in_flight: int) -> None:
    config = SettingsReader(Settings(settings))
    assert (config.parse_workers, config.concurrent_sitemaps) == (workers, in_flight)


def test_default_worker_count_leaves_a_core_to_the_crawl_process() -> None:
    assert default_worker_count() == max(1, min(4, usable_cpus() - 1))


@pytest.mark.parametrize(
    ("cpus", "processes", "workers"),
    [(2, 1, 1), (1, 1, 1), (2, 2, 0), (4, 2, 1), (8, 2, 3), (16, 4, 3), (64, 4, 4)],
)
def test_crawl_processes_of_a_many_site_run_share_the_cpus_they_leave(
    monkeypatch: pytest.MonkeyPatch, cpus: int, processes: int, workers: int
) -> None:
    monkeypatch.setattr("sitemap_crawl.cpus.usable_cpus", lambda: cpus)
    config = SettingsReader(Settings({}))
    assert config.parse_workers_among(processes) == workers
    # a count the project set is kept, whatever the processes
    assert SettingsReader(Settings({"SITEMAP_CRAWL_PARSE_WORKERS": 2})).parse_workers_among(processes) == 2


def test_pages_finished_in_the_crawl_process_match_inline_parsing() -> None:
    # the worker sends urlset pages with their fields as written; every field must come out
    # as inline parsing gives it: news, video, image and hreflang edge cases included
    entry = (
        "<url><loc> https://www.example.org/n/{i} </loc><lastmod>2024-05-0{d}T10:00:00Z</lastmod>"
        "<changefreq> Weekly </changefreq><priority>0.{d}</priority>"
        "<news:news><news:publication><news:name> Le Monde </news:name><news:language>fr</news:language>"
        "</news:publication><news:publication_date>2024-05-01</news:publication_date>"
        "<news:title>Title {i}</news:title><news:keywords>a, b,,c</news:keywords></news:news>"
        "<video:video><video:thumbnail_loc>/thumb/{i}.jpg</video:thumbnail_loc><video:title>V</video:title>"
        "<video:duration>61.7</video:duration><video:family_friendly>no</video:family_friendly>"
        "<video:tag> x </video:tag><video:tag></video:tag><video:tag>y</video:tag></video:video>"
        "<image:image><image:loc>javascript:alert(1)</image:loc></image:image>"
        "<image:image><image:loc>/img/{i}.png</image:loc><image:caption> c </image:caption></image:image>"
        '<xhtml:link rel="nofollow" hreflang="de" href="https://www.example.org/de/{i}"/>'
        '<xhtml:link rel=" Alternate " hreflang=" en " href="/en/{i}"/></url>\n'
    )
    rows = "".join(entry.format(i=i, d=1 + i % 9) for i in range(3000))
    rows += "<url><loc>https://www.example.org/n/1</loc></url>\n<url><priority>0.1</priority></url>\n"
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
        'xmlns:news="http://www.google.com/schemas/sitemap-news/0.9" '
        'xmlns:video="http://www.google.com/schemas/sitemap-video/1.1" '
        'xmlns:image="http://www.google.com/schemas/sitemap-image/1.1" xmlns:xhtml="http://www.w3.org/1999/xhtml">\n'
        f"{rows}</urlset>\n"
    ).encode()
    url = "https://www.example.org/sitemaps/news.xml"

    reader_type, kind, error, entries = _read_with_fresh_readers(body, url, chunk_size=250)
    expected = parse_sitemap(body, url)
    assert reader_type is WorkerReader and (kind, error) == (expected.kind, expected.error)
    assert entries == expected.pages and len(entries) == 3000
    first = entries[0]
    assert first.news is not None and first.news.keywords == ["a", "b", "c"]
    assert [image.loc for image in first.images] == ["https://www.example.org/img/0.png"]
    assert [(a.hreflang, a.href) for a in first.alternates] == [("en", "https://www.example.org/en/0")]
    assert first.videos[0].tags == ["x", "y"] and first.videos[0].duration == 61


def test_index_entries_finished_in_the_crawl_process_match_inline_parsing() -> None:
    # the worker sends index entries with their lastmod as written, as it sends urlset pages
    rows = "".join(
        f"<sitemap><loc> https://www.example.org/s/{i}.xml#top </loc><lastmod>2024-05-0{1 + i % 9}T10:00:00Z</lastmod>"
        "</sitemap>\n"
        for i in range(2000)
    )
    rows += "<sitemap><loc>https://www.example.org/bare.xml</loc><lastmod/></sitemap>\n"
    body = f'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n{rows}</sitemapindex>\n'.encode()
    url = "https://www.example.org/index.xml"

    reader_type, kind, error, entries = _read_with_fresh_readers(body, url, chunk_size=250)
    assert reader_type is WorkerReader and (kind, error) == ("xml_index", None)
    assert entries == list(SitemapReader(body, url)) and len(entries) == 2001
    assert (entries[0].url, entries[0].last_modified) == (
        "https://www.example.org/s/0.xml",
        "2024-05-01T10:00:00+00:00",
    )
    assert entries[-1].last_modified is None
