"""Tests of the test harness itself (tests/support): they need no sitemap spider."""

from __future__ import annotations

import gzip
import http.client
import json
import pprint
import socket
import textwrap
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from lxml import etree
from scrapy.exporters import BaseItemExporter, CsvItemExporter, JsonItemExporter, JsonLinesItemExporter, XmlItemExporter

from tests.support import (
    SITEMAP_NS,
    CrawlResult,
    FixtureServer,
    Route,
    atom,
    gzip_bytes,
    robots,
    rss,
    sitemapindex,
    text_sitemap,
    urlset,
)
from tests.support.crawl import FEED_FORMATS, CrawlRunner, build_command
from tests.support.fixture_server import NOT_FOUND_BODY, PAGE_BODY, SiteFactory


def fetch(site: FixtureServer, path: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", site.port, timeout=10)
    try:
        conn.request(method, path)
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


# -- the fixture server ----------------------------------------------------------------


def test_serves_routes_with_guessed_content_types(fixture_site: SiteFactory) -> None:
    site = fixture_site(
        {
            "/robots.txt": Route("Sitemap: {base}/sitemap.xml\n"),
            "/sitemap.xml": Route(b"<urlset/>"),
            "/s.xml.gz": Route(b"\x1f\x8b"),
            "/page": Route("<html></html>", headers={"X-Test": "{base}"}),
            "/plain.xml": Route("x", content_type="text/plain; charset=latin-1"),
            "/none.xml": Route("x", content_type=""),
        }
    )
    assert site.base == f"http://127.0.0.1:{site.port}"
    assert site.url("/x") == site.url("x") == site.base + "/x"

    status, headers, body = fetch(site, "/robots.txt")
    assert (status, headers["Content-Type"]) == (200, "text/plain")
    assert body == f"Sitemap: {site.base}/sitemap.xml\n".encode()
    assert headers["Content-Length"] == str(len(body))
    assert fetch(site, "/sitemap.xml")[1]["Content-Type"] == "application/xml"
    assert fetch(site, "/s.xml.gz")[1]["Content-Type"] == "application/x-gzip"
    status, headers, _ = fetch(site, "/page")
    assert headers["Content-Type"] == "text/html"
    assert headers["X-Test"] == site.base
    plain_headers = fetch(site, "/plain.xml")[1]
    assert plain_headers["Content-Type"] == "text/plain; charset=latin-1"
    assert "Content-Type" not in fetch(site, "/none.xml")[1]
    assert site.errors == []


def test_bare_bodies_query_strings_and_placeholders(fixture_site: SiteFactory) -> None:
    site = fixture_site(
        {
            "/sitemap.xml?page=2": "page two {base}",
            "/raw.bin": b"raw {base}",
            "/fmt.bin": Route(b"fmt {base}", format_bytes=True),
        }
    )
    assert fetch(site, "/sitemap.xml?page=2")[2] == f"page two {site.base}".encode()
    assert fetch(site, "/sitemap.xml")[0] == 404
    assert fetch(site, "/raw.bin")[2] == b"raw {base}"
    assert fetch(site, "/fmt.bin")[2] == f"fmt {site.base}".encode()
    site["/later"] = "added"
    assert fetch(site, "/later")[2] == b"added"


def test_unknown_path_is_404_html(fixture_site: SiteFactory) -> None:
    site = fixture_site(None)
    status, headers, body = fetch(site, "/nope")
    assert status == 404
    assert headers["Content-Type"] == "text/html"
    assert body == NOT_FOUND_BODY
    assert headers["Content-Length"] == str(len(body))


def test_head_and_keep_alive(fixture_site: SiteFactory) -> None:
    site = fixture_site({"/a.xml": "aaaa", "/b.xml": "bb"})
    conn = http.client.HTTPConnection("127.0.0.1", site.port, timeout=10)
    try:
        conn.request("HEAD", "/a.xml")
        response = conn.getresponse()
        assert response.status == 200
        assert response.getheader("Content-Length") == "4"
        assert response.read() == b""
        first_socket = conn.sock
        for path, body in [
            ("/a.xml", b"aaaa"),
            ("/nope", NOT_FOUND_BODY),
            ("/b.xml", b"bb"),
        ]:
            conn.request("GET", path)
            response = conn.getresponse()
            assert response.read() == body
            assert not response.will_close
        assert conn.sock is first_socket  # one connection served all four
    finally:
        conn.close()
    assert [(r.method, r.path) for r in site.requests] == [
        ("HEAD", "/a.xml"),
        ("GET", "/a.xml"),
        ("GET", "/nope"),
        ("GET", "/b.xml"),
    ]


def test_generated_pages_fast_path() -> None:
    with FixtureServer({"/s.xml": "<urlset/>"}, pages="/p/") as site:
        conn = http.client.HTTPConnection("127.0.0.1", site.port, timeout=10)
        try:
            conn.request("GET", "/p/1")
            first_socket = conn.sock
            for method, path, status, body in [
                ("GET", "/p/1", 200, PAGE_BODY),
                ("GET", "/s.xml", 200, b"<urlset/>"),
                ("GET", "/p/2/3?q=1", 200, PAGE_BODY),
                ("HEAD", "/p/4", 200, b""),  # not a GET: the usual path, recorded
                ("GET", "/nope", 404, NOT_FOUND_BODY),
            ]:
                if (method, path) != ("GET", "/p/1"):
                    conn.request(method, path)
                response = conn.getresponse()
                assert (response.status, response.read()) == (status, body), path
                assert not response.will_close
            assert conn.sock is first_socket  # keep-alive across both paths
            conn.request("GET", "/p/5", headers={"Connection": "close"})
            response = conn.getresponse()
            assert (response.read(), response.will_close) == (PAGE_BODY, True)
        finally:
            conn.close()
        assert site.page_hits == 4
        assert site.paths() == ["/s.xml", "/p/4", "/nope"]
        with pytest.raises(ValueError, match="generated pages"):
            site["/p/x"] = "a route under the prefix"
        del site["/s.xml"]
        assert urllib.request.urlopen(site.url("/p/6"), timeout=10).read() == PAGE_BODY
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(site.url("/s.xml"), timeout=10)
        assert site.errors == []


def test_redirects(fixture_site: SiteFactory) -> None:
    site = fixture_site(
        {
            "/old.xml": Route(redirect_to="/new.xml"),
            "/abs.xml": Route(redirect_to="{base}/new.xml", status=302),
            "/new.xml": "new",
        }
    )
    status, headers, _ = fetch(site, "/old.xml")
    assert (status, headers["Location"]) == (301, "/new.xml")
    status, headers, _ = fetch(site, "/abs.xml")
    assert (status, headers["Location"]) == (302, site.url("/new.xml"))
    with urllib.request.urlopen(site.url("/old.xml"), timeout=10) as response:
        assert (response.url, response.read()) == (site.url("/new.xml"), b"new")


def test_gzip_encoding_and_gzip_file(fixture_site: SiteFactory) -> None:
    site = fixture_site(
        {
            "/enc.xml": Route("<x>{base}</x>", gzip_encoding=True),
            "/file.xml.gz": Route("<x>{base}</x>", gzip_file=True),
            "/static.xml.gz": gzip_bytes("<x/>"),
        }
    )
    expected = f"<x>{site.base}</x>".encode()
    _, headers, body = fetch(site, "/enc.xml")
    assert headers["Content-Encoding"] == "gzip"
    assert headers["Content-Length"] == str(len(body))
    assert gzip.decompress(body) == expected
    _, headers, body = fetch(site, "/file.xml.gz")
    assert "Content-Encoding" not in headers
    assert headers["Content-Type"] == "application/x-gzip"
    assert gzip.decompress(body) == expected
    assert gzip.decompress(fetch(site, "/static.xml.gz")[2]) == b"<x/>"


def test_fail_times_then_normal(fixture_site: SiteFactory) -> None:
    site = fixture_site({"/flaky.xml": Route("ok", fail_times=2)})
    assert [fetch(site, "/flaky.xml")[0] for _ in range(4)] == [503, 503, 200, 200]
    assert fetch(site, "/flaky.xml")[2] == b"ok"
    assert site.hits("/flaky.xml") == 5
    site.reset()
    assert site.hits("/flaky.xml") == 0
    assert fetch(site, "/flaky.xml")[0] == 503  # reset also restarts fail_times


def test_drop_connection(fixture_site: SiteFactory) -> None:
    site = fixture_site(
        {
            "/gone": Route("x", drop_connection=True),
            "/once": Route("back", drop_connection=True, fail_times=1),
        }
    )
    with pytest.raises(http.client.RemoteDisconnected):
        fetch(site, "/gone")
    with pytest.raises(http.client.RemoteDisconnected):
        fetch(site, "/once")
    assert fetch(site, "/once")[2] == b"back"
    assert site.hits("/gone") == 1
    assert site.errors == []


def test_drop_after_breaks_the_body_off(fixture_site: SiteFactory) -> None:
    site = fixture_site({"/cut.xml": Route("0123456789", drop_after=4)})
    conn = http.client.HTTPConnection("127.0.0.1", site.port, timeout=10)
    try:
        conn.request("GET", "/cut.xml")
        response = conn.getresponse()
        assert response.getheader("Content-Length") == "10"
        with pytest.raises(http.client.IncompleteRead) as excinfo:
            response.read()
        assert excinfo.value.partial == b"0123"
    finally:
        conn.close()


def test_delay(fixture_site: SiteFactory) -> None:
    site = fixture_site({"/slow": Route("s", delay=0.2)})
    started = time.monotonic()
    assert fetch(site, "/slow")[2] == b"s"
    assert time.monotonic() - started >= 0.2


def test_trickle(fixture_site: SiteFactory) -> None:
    body = "0123456789"
    site = fixture_site(
        {
            "/t": Route(body, trickle=(3, 0.05)),
            "/tc": Route(body, trickle=(3, 0.05), chunked=True),
            "/c": Route(body, chunked=True),
        }
    )
    started = time.monotonic()
    status, headers, received = fetch(site, "/t")
    assert time.monotonic() - started >= 0.15  # 4 pieces, 3 pauses
    assert (status, received) == (200, body.encode())
    assert "Content-Length" not in headers
    assert headers["Connection"] == "close"

    conn = http.client.HTTPConnection("127.0.0.1", site.port, timeout=10)
    try:
        for path in ["/tc", "/c", "/tc"]:  # chunked keeps the connection alive
            conn.request("GET", path)
            response = conn.getresponse()
            assert response.getheader("Transfer-Encoding") == "chunked"
            assert response.read() == body.encode()
            assert not response.will_close
    finally:
        conn.close()


def test_client_hanging_up_mid_body_is_quiet(fixture_site: SiteFactory, capfd: pytest.CaptureFixture[str]) -> None:
    site = fixture_site(
        {
            "/big": Route(b"x" * 50_000, trickle=(1000, 0.01)),
            "/huge": b"y" * 20_000_000,
        }
    )
    for path in ["/big", "/huge"]:
        with socket.create_connection(("127.0.0.1", site.port), timeout=10) as sock:
            sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            assert sock.recv(100).startswith(b"HTTP/1.1 200")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    time.sleep(0.1)  # let the handlers hit the closed sockets
    assert fetch(site, "/nope")[0] == 404  # still serving
    site.stop()
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")
    assert site.errors == []


def test_records_requests(fixture_site: SiteFactory) -> None:
    site = fixture_site({"/a": "a"})
    before = time.monotonic()
    request = urllib.request.Request(site.url("/a"), headers={"User-Agent": "harness-test"})
    with urllib.request.urlopen(request, timeout=10) as response:
        response.read()
    fetch(site, "/b", method="HEAD")
    fetch(site, "/a")
    first = site.requests[0]
    assert (first.method, first.path) == ("GET", "/a")
    assert first.header("user-agent") == first.headers["User-Agent"] == "harness-test"
    assert first.header("x-missing") is None
    assert before <= first.time <= time.monotonic()
    assert site.paths() == ["/a", "/b", "/a"]
    assert site.hits("/a") == site.hits(site.url("/a")) == 2
    assert site.hits("/b", method="GET") == 0
    assert site.hits("/b", method="HEAD") == 1
    assert site.wait_for("/a", count=2, timeout=1)
    assert not site.wait_for("/a", count=3, timeout=0.05)


def test_context_manager_starts_and_stops() -> None:
    with FixtureServer({"/": "home"}) as site:
        port = site.port
        assert fetch(site, "/")[2] == b"home"
        # an idle keep-alive connection does not hold the shutdown up
        idle = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        idle.request("GET", "/")
        idle.getresponse().read()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=1)
    idle.close()
    assert site.base == f"http://127.0.0.1:{port}"  # still known after stop
    with pytest.raises(RuntimeError, match="not been started"):
        _ = FixtureServer().base


def test_route_validation() -> None:
    with pytest.raises(ValueError, match="trickle"):
        Route("x", trickle=(0, 1.0))
    with pytest.raises(ValueError, match="start with"):
        FixtureServer({"robots.txt": "x"})
    assert Route().effective_status == 200
    assert Route(redirect_to="/x").effective_status == 301
    assert Route(redirect_to="/x", status=307).effective_status == 307


# -- the builders ----------------------------------------------------------------------

NS = {"sm": SITEMAP_NS}


def xpath(root: etree._Element, expression: str, namespaces: Mapping[str, str] | None = None) -> list[Any]:
    result = root.xpath(expression, namespaces=namespaces or {})
    assert isinstance(result, list)
    return result


def parse(document: str | bytes) -> etree._Element:
    data = document.encode() if isinstance(document, str) else document
    return etree.fromstring(data)


def test_urlset() -> None:
    root = parse(
        urlset(
            "{base}/a?x=1&y=2",
            {
                "loc": "{base}/b",
                "lastmod": "2024-01-02",
                "changefreq": "daily",
                "priority": 0.8,
            },
            {"priority": None, "loc": "/c"},
        )
    )
    assert root.tag == f"{{{SITEMAP_NS}}}urlset"
    assert xpath(root, "sm:url/sm:loc/text()", NS) == [
        "{base}/a?x=1&y=2",
        "{base}/b",
        "/c",
    ]
    second = xpath(root, "sm:url", NS)[1]
    assert [child.tag.split("}")[1] for child in second] == [
        "loc",
        "lastmod",
        "changefreq",
        "priority",
    ]
    assert second.findtext("sm:priority", namespaces=NS) == "0.8"
    assert len(xpath(root, "sm:url[3]/*", NS)) == 1


def test_urlset_without_namespace_and_with_extensions() -> None:
    assert parse(urlset("/a", ns=False)).tag == "urlset"
    assert urlset() == (f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{SITEMAP_NS}">\n</urlset>\n')
    image = "<image:image><image:loc>/i.png</image:loc></image:image>"
    document = urlset({"loc": "/a", "extra": image}, "/b")
    assert 'xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"' in document
    assert "xmlns:news" not in document
    root = parse(document)
    assert xpath(
        root,
        "//image:loc/text()",
        {"image": "http://www.google.com/schemas/sitemap-image/1.1"},
    ) == ["/i.png"]


def test_sitemapindex() -> None:
    root = parse(sitemapindex("{base}/s1.xml", {"loc": "{base}/s2.xml", "lastmod": "2024-01-01"}))
    assert root.tag == f"{{{SITEMAP_NS}}}sitemapindex"
    assert xpath(root, "sm:sitemap/sm:loc/text()", NS) == [
        "{base}/s1.xml",
        "{base}/s2.xml",
    ]
    assert xpath(root, "sm:sitemap/sm:lastmod/text()", NS) == ["2024-01-01"]
    assert parse(sitemapindex("/x", ns=False)).tag == "sitemapindex"


def test_rss() -> None:
    root = parse(
        rss(
            "{base}/a",
            {
                "link": "{base}/b",
                "title": "B & C",
                "pubDate": "Tue, 02 Jan 2024 00:00:00 GMT",
            },
        )
    )
    assert (root.tag, root.get("version")) == ("rss", "2.0")
    assert xpath(root, "channel/item/link/text()") == ["{base}/a", "{base}/b"]
    assert xpath(root, "channel/item/title/text()") == ["B & C"]
    assert xpath(root, "channel/link") == []
    assert xpath(parse(rss(channel_link="/home")), "channel/link/text()") == ["/home"]


def test_atom() -> None:
    ns = {"a": "http://www.w3.org/2005/Atom"}
    root = parse(
        atom(
            "{base}/a",
            {
                "link": "{base}/b",
                "rel": "alternate",
                "title": "B",
                "updated": "2024-01-02T00:00:00Z",
            },
        )
    )
    assert root.tag == "{http://www.w3.org/2005/Atom}feed"
    assert xpath(root, "a:entry/a:link/@href", ns) == ["{base}/a", "{base}/b"]
    assert xpath(root, "a:entry[2]/a:link/@rel", ns) == ["alternate"]
    assert xpath(root, "a:entry[2]/a:updated/text()", ns) == ["2024-01-02T00:00:00Z"]
    old = parse(atom("/a", version="0.3"))
    assert (old.tag, old.get("version")) == ("{http://purl.org/atom/ns#}feed", "0.3")
    with pytest.raises(ValueError, match="Atom version"):
        atom(version="2.0")


def test_text_sitemap_robots_and_gzip() -> None:
    assert text_sitemap("{base}/a", "{base}/b") == "{base}/a\n{base}/b\n"
    assert robots("{base}/s.xml", "sitemap :  /rel.xml", extra="Disallow: /x\n") == (
        "User-agent: *\nDisallow:\n\nSitemap: {base}/s.xml\nsitemap :  /rel.xml\nDisallow: /x\n"
    )
    assert robots() == "User-agent: *\nDisallow:\n\n"
    packed = gzip_bytes("<urlset/>")
    assert packed[:2] == b"\x1f\x8b"
    assert packed == gzip_bytes(b"<urlset/>")  # deterministic
    assert gzip.decompress(packed) == b"<urlset/>"


# -- the crawl runner, without the real spider -----------------------------------------

PAGES: list[dict[str, Any]] = [
    {
        "url": "http://h/a",
        "sitemap_url": "http://h/s.xml",
        "priority": 0.5,
        "last_modified": None,
        "news": None,
        "images": [{"loc": "http://h/i.png", "caption": "c"}],
        "alternates": [],
    },
    {
        "url": "http://h/b",
        "sitemap_url": "http://h/s.xml",
        "priority": 0.8,
        "last_modified": "2024-01-02",
        "news": {"title": "T", "keywords": ["k1", "k2"]},
        "images": [],
        "alternates": [{"hreflang": "de", "href": "http://h/de/b"}],
    },
]

TREE: dict[str, Any] = {
    "url": "http://h/",
    "kind": "website",
    "error": None,
    "page_count": 0,
    "sub_sitemaps": [
        {
            "url": "http://h/robots.txt",
            "kind": "robots_txt",
            "error": None,
            "page_count": 0,
            "sub_sitemaps": [
                {
                    "url": "http://h/s.xml",
                    "kind": "xml_urlset",
                    "error": None,
                    "page_count": 2,
                    "sub_sitemaps": [],
                },
            ],
        },
        {
            "url": "http://h/s.xml",
            "kind": "xml_urlset",
            "error": None,
            "page_count": 2,
            "sub_sitemaps": [],
        },
        {
            "url": "http://h/bad.xml",
            "kind": "invalid",
            "error": "HTTP 500",
            "page_count": 0,
            "sub_sitemaps": [],
        },
    ],
}


def export(
    exporter_class: Callable[[Any], BaseItemExporter],
    path: Path,
    items: list[dict[str, Any]],
) -> None:
    with path.open("wb") as handle:
        exporter = exporter_class(handle)
        exporter.start_exporting()
        for item in items:
            exporter.export_item(item)
        exporter.finish_exporting()


def result_for(tmp_path: Path, output_format: str | None, *, stderr: str = "") -> CrawlResult:
    extension = FEED_FORMATS.get(output_format or "")
    return CrawlResult(
        command=["scrapy"],
        returncode=0,
        stdout="",
        stderr=stderr,
        feed_path=tmp_path / f"pages.{extension}" if extension else None,
        tree_path=tmp_path / "tree.json",
        output_format=output_format,
        tmp_dir=tmp_path,
        duration=0.0,
    )


@pytest.mark.parametrize(
    ("output_format", "exporter_class"),
    [("jsonl", JsonLinesItemExporter), ("json", JsonItemExporter)],
)
def test_reads_json_feeds(
    tmp_path: Path,
    output_format: str,
    exporter_class: Callable[[Any], BaseItemExporter],
) -> None:
    result = result_for(tmp_path, output_format)
    assert result.feed_path is not None
    export(exporter_class, result.feed_path, PAGES)
    assert result.pages == PAGES
    assert result.urls() == ["http://h/a", "http://h/b"]


def test_reads_csv_feed(tmp_path: Path) -> None:
    result = result_for(tmp_path, "csv")
    assert result.feed_path is not None
    flat = [{k: json.dumps(v) if isinstance(v, dict | list) else v for k, v in page.items()} for page in PAGES]
    export(CsvItemExporter, result.feed_path, flat)
    assert result.urls() == ["http://h/a", "http://h/b"]
    assert list(result.pages[0]) == list(PAGES[0])
    assert json.loads(result.pages[1]["news"]) == PAGES[1]["news"]
    assert result.pages[0]["last_modified"] == ""


def test_reads_xml_feed(tmp_path: Path) -> None:
    result = result_for(tmp_path, "xml")
    assert result.feed_path is not None
    export(XmlItemExporter, result.feed_path, PAGES)
    first, second = result.pages
    assert first["url"] == "http://h/a"
    assert first["images"] == [{"loc": "http://h/i.png", "caption": "c"}]
    assert second["news"] == {"title": "T", "keywords": ["k1", "k2"]}
    assert second["alternates"] == [{"hreflang": "de", "href": "http://h/de/b"}]
    assert second["priority"] == "0.8"


def test_missing_or_cut_feed(tmp_path: Path) -> None:
    result = result_for(tmp_path, "jsonl", stderr="2024-01-01 00:00:00 [x] ERROR: boom\n")
    with pytest.raises(AssertionError, match="wrote no feed"):
        _ = result.pages
    assert result.feed_path is not None
    result.feed_path.write_text('{"url": "http://h/a"}\n{"url": "http://h/b"}\n{"url": "ht')
    assert result.urls() == [
        "http://h/a",
        "http://h/b",
    ]  # a last line cut by a kill is skipped
    with pytest.raises(AssertionError, match="without a feed"):
        _ = result_for(tmp_path, None).pages


def test_tree_helpers(tmp_path: Path) -> None:
    result = result_for(tmp_path, None)
    assert result.tree is None
    assert list(result.walk()) == []
    (tmp_path / "tree.json").write_text(json.dumps(TREE))
    result = result_for(tmp_path, None)
    assert [(depth, node["url"]) for depth, node in result.walk()] == [
        (0, "http://h/"),
        (1, "http://h/robots.txt"),
        (2, "http://h/s.xml"),
        (1, "http://h/s.xml"),
        (1, "http://h/bad.xml"),
    ]
    assert len(result.node("http://h/s.xml")) == 2
    assert result.node("http://h/missing") == []
    assert result.kinds() == {
        "http://h/": "website",
        "http://h/robots.txt": "robots_txt",
        "http://h/s.xml": "xml_urlset",
        "http://h/bad.xml": "invalid",
    }
    assert "    xml_urlset http://h/s.xml pages=2" in result.tree_text()
    assert "invalid http://h/bad.xml pages=0 error='HTTP 500'" in result.tree_text()


def test_log_helpers(tmp_path: Path) -> None:
    stats = {
        "downloader/request_count": 3,
        "finish_reason": "finished",
        "elapsed_time_seconds": 0.25,
        "start_time": datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=UTC),
        "log_count/ERROR": 1,
    }
    log = (
        "2024-01-01 00:00:00 [scrapy.core.engine] INFO: Spider opened\n"
        "2024-01-01 00:00:01 [sitemaps] ERROR: boom\nTraceback (most recent call last):\n  x\n"
        f"2024-01-01 00:00:02 [scrapy.statscollectors] INFO: Dumping Scrapy stats:\n{pprint.pformat(stats)}\n"
        "2024-01-01 00:00:02 [scrapy.core.engine] INFO: Spider closed (finished)\n"
    )
    result = result_for(tmp_path, None, stderr=log)
    assert result.log == log
    assert result.log_has("Spider opened")
    assert not result.log_has("nothing like this")
    assert result.log_count("Spider") == 2
    assert result.log_lines("ERROR") == ["2024-01-01 00:00:01 [sitemaps] ERROR: boom"]
    assert len(result.log_lines()) == 4
    assert result.stats["downloader/request_count"] == 3
    assert result.stats["finish_reason"] == "finished"
    assert result.stats["start_time"].startswith("datetime.datetime(2024, 1, 2")
    with pytest.raises(AssertionError, match="traceback"):
        result.assert_ok()
    assert result_for(tmp_path, None, stderr="fine").assert_ok().returncode == 0


def test_build_command(tmp_path: Path) -> None:
    command, feed_path, tree_path = build_command(
        "homepage=http://h/",
        {"use_robots": False, "extra_known_paths": ["a.xml", "b.xml"]},
        tmp_dir=tmp_path,
        settings={
            "RETRY_TIMES": 0,
            "SOME_DICT": {"a": 1},
            "LOG_LEVEL": "INFO",
            "SOME_FLAG": True,
        },
        output_format="csv",
    )
    assert feed_path == tmp_path / "pages.csv"
    assert tree_path == tmp_path / "tree.json"
    assert command[1:5] == ["-m", "scrapy", "crawl", "sitemaps"]
    assert command[5:11] == [
        "-a",
        "homepage=http://h/",
        "-a",
        "use_robots=false",
        "-a",
        "extra_known_paths=a.xml,b.xml",
    ]
    assert command[11:15] == [
        "-O",
        str(feed_path),
        "-s",
        f"SITEMAP_CRAWL_TREE_FILE={tree_path}",
    ]
    pairs = [command[i + 1] for i, arg in enumerate(command) if arg == "-s"]
    assert pairs[1:] == [
        "LOG_LEVEL=INFO",  # the test's value replaces the default in place
        "TELNETCONSOLE_ENABLED=False",
        "RETRY_TIMES=0",
        'SOME_DICT={"a": 1}',
        "SOME_FLAG=True",
    ]
    command, feed_path, tree_path = build_command(
        tmp_dir=tmp_path, settings={"SITEMAP_CRAWL_TREE_FILE": None}, output_format=None
    )
    assert (feed_path, tree_path) == (None, None)
    assert "-O" not in command
    assert not any(arg.startswith("SITEMAP_CRAWL_TREE_FILE") for arg in command)
    with pytest.raises(ValueError, match="name=value"):
        build_command("homepage", tmp_dir=tmp_path)
    with pytest.raises(ValueError, match="output_format"):
        build_command(tmp_dir=tmp_path, output_format="parquet")


FAKE_SPIDER = '''
import json
from pathlib import Path

import scrapy


class FakeSitemapsSpider(scrapy.Spider):
    """Stands in for the real spider: reads robots.txt, emits one page per Sitemap: line."""

    name = "sitemaps"

    async def start(self):
        yield scrapy.Request(self.homepage.rstrip("/") + "/robots.txt")

    def parse(self, response):
        self.logger.info("fake spider got %s, flag=%s", response.url, getattr(self, "flag", None))
        for line in response.text.splitlines():
            if line.startswith("Sitemap:"):
                url = line.split(":", 1)[1].strip()
                yield {"url": url, "sitemap_url": response.url, "images": [{"loc": url + ".png"}]}
                if url.endswith("/slow"):
                    yield scrapy.Request(url, callback=self.parse)

    def closed(self, reason):
        path = self.settings.get("SITEMAP_CRAWL_TREE_FILE")
        if path:
            tree = {"url": self.homepage, "kind": "website", "error": None,
                    "page_count": 0, "sub_sitemaps": [], "reason": reason}
            Path(path).write_text(json.dumps(tree))
'''


@pytest.fixture(scope="module")
def fake_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fake_project")
    (root / "scrapy.cfg").write_text("[settings]\ndefault = fakeproj.settings\n")
    package = root / "fakeproj"
    (package / "spiders").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "settings.py").write_text(
        textwrap.dedent(
            """
            BOT_NAME = "fakeproj"
            SPIDER_MODULES = ["fakeproj.spiders"]
            ROBOTSTXT_OBEY = False
            """
        )
    )
    (package / "spiders" / "__init__.py").write_text("")
    (package / "spiders" / "fake.py").write_text(FAKE_SPIDER)
    return root


def test_run_crawl_end_to_end(fixture_site: SiteFactory, crawl: CrawlRunner, fake_project: Path) -> None:
    site = fixture_site({"/robots.txt": robots("{base}/a.xml", "{base}/b.xml")})
    result = crawl({"homepage": site.base + "/", "flag": True}, cwd=fake_project, timeout=60)
    result.assert_ok()
    assert result.urls() == [site.url("/a.xml"), site.url("/b.xml")]
    assert result.pages[0]["images"] == [{"loc": site.url("/a.xml.png")}]
    assert result.tree is not None and result.tree["reason"] == "finished"
    assert result.kinds() == {site.base + "/": "website"}
    assert result.log_has("fake spider got")
    assert result.log_has("flag=true")
    assert result.log_lines("DEBUG")  # LOG_LEVEL=DEBUG by default
    assert result.stats["item_scraped_count"] == 2
    assert site.hits("/robots.txt") == 1
    assert result.tmp_dir.parent == crawl.base_dir

    csv_result = crawl(
        {"homepage": site.base},
        cwd=fake_project,
        output_format="csv",
        settings={"LOG_LEVEL": "INFO"},
    )
    assert csv_result.tmp_dir != result.tmp_dir
    assert [row["url"] for row in csv_result.pages] == result.urls()
    # Scrapy's plain CSV exporter writes str() of a list; the real spider writes JSON
    assert csv_result.pages[0]["images"] == str([{"loc": site.url("/a.xml.png")}])
    assert not csv_result.log_lines("DEBUG")


def test_start_and_interrupt_a_crawl(fixture_site: SiteFactory, crawl: CrawlRunner, fake_project: Path) -> None:
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/slow"),
            "/slow": Route("", delay=1.0),
        }
    )
    running = crawl.start({"homepage": site.base}, cwd=fake_project)
    assert site.wait_for("/slow", timeout=30)
    assert running.running()
    running.interrupt()
    result = running.wait(timeout=60)
    assert result.log_has("Received SIGINT, shutting down gracefully")
    assert result.tree is not None and result.tree["reason"] == "shutdown"
    assert result.urls() == [site.url("/slow")]
