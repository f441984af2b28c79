"""Helpers (no tests here) for the SitemapRequestLoader / SitemapSpider tests:

* :class:`FastSite`: a tiny asyncio HTTP/1.1 server on 127.0.0.1 that answers any
  ``/p/...`` path with a small HTML page (fast enough for 200,000-page crawls) and serves
  fixed routes (sitemaps) by exact path, counting hits;
* :func:`start_spider` / :func:`run_spider`: ``scrapy runspider`` of a spider module written
  by the test, in a subprocess, reusing the harness' RunningCrawl / CrawlResult.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import textwrap
import threading
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from tests.support.crawl import REPO_ROOT, CrawlResult, RunningCrawl

PAGE_PREFIX = "/p/"
PAGE_BODY = b"<!DOCTYPE html><html><head><title>page</title></head><body>ok</body></html>"

BASE_SETTINGS: dict[str, Any] = {
    "LOG_LEVEL": "INFO",
    "TELNETCONSOLE_ENABLED": False,
    "REMOTE_CONTROL_ENABLED": False,
    "ROBOTSTXT_OBEY": False,
    "RETRY_TIMES": 1,
    "DOWNLOAD_TIMEOUT": 30,
}
"""Every test crawl gets these (the test's own settings override them)."""

LEAN_SETTINGS: dict[str, Any] = {
    # big crawls: only what the test needs, for speed (Scrapy's per-request cost dominates)
    "DOWNLOADER_MIDDLEWARES_BASE": {
        "scrapy.downloadermiddlewares.downloadtimeout.DownloadTimeoutMiddleware": 350,
        "scrapy.downloadermiddlewares.retry.RetryMiddleware": 550,
        "scrapy.downloadermiddlewares.redirect.RedirectMiddleware": 600,
    },
    "SPIDER_MIDDLEWARES_BASE": {
        "scrapy.spidermiddlewares.start.StartSpiderMiddleware": 25,
        "scrapy.spidermiddlewares.httperror.HttpErrorMiddleware": 50,
    },
    "EXTENSIONS_BASE": {"scrapy.extensions.corestats.CoreStats": 0},
    "COOKIES_ENABLED": False,
    "CONCURRENT_ITEMS": 1,
    "CONCURRENT_REQUESTS": 32,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 32,
}


# -- the fast site ------------------------------------------------------------------------


class _Protocol(asyncio.Protocol):
    def __init__(self, site: FastSite) -> None:
        self.site = site
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            head, self.buffer = self.buffer[:end], self.buffer[end + 4 :]
            parts = head.split(b"\r\n", 1)[0].split(b" ")
            path = parts[1].decode("latin-1") if len(parts) > 1 else "/"
            status, content_type, body = self.site.answer(path)
            assert self.transport is not None
            self.transport.write(
                b"HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s"
                % (status, content_type, len(body), body)
            )


class FastSite:
    """A fast local site: ``routes`` (exact path -> body) plus a page under every ``/p/...``.

    ``site.url("/sitemap.xml")``, ``site.hits["/sitemap.xml"]``; a context manager.
    """

    def __init__(self, routes: Mapping[str, bytes | str] | None = None) -> None:
        self.routes: dict[str, bytes] = {}
        for path, body in (routes or {}).items():
            self[path] = body
        self.hits: Counter[str] = Counter()
        self.page_hits = 0
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    def __setitem__(self, path: str, body: bytes | str) -> None:
        self.routes[path] = body.encode("utf-8") if isinstance(body, str) else body

    def __delitem__(self, path: str) -> None:
        del self.routes[path]

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        return self.base + path

    def answer(self, path: str) -> tuple[bytes, bytes, bytes]:
        body = self.routes.get(path)
        if body is not None:
            self.hits[path] += 1
            kind = b"application/xml" if body.lstrip()[:1] == b"<" else b"text/plain"
            return b"200 OK", kind, body
        if path.startswith(PAGE_PREFIX):
            self.page_hits += 1
            return b"200 OK", b"text/html", PAGE_BODY
        self.hits[path] += 1
        return b"404 Not Found", b"text/html", b"<html>not found</html>"

    def start(self) -> Self:
        def serve() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            server = loop.run_until_complete(loop.create_server(lambda: _Protocol(self), "127.0.0.1", 0))
            self.port = server.sockets[0].getsockname()[1]
            self._ready.set()
            try:
                loop.run_forever()
            finally:
                server.close()
                loop.run_until_complete(server.wait_closed())
                loop.close()

        self._thread = threading.Thread(target=serve, name="fast-site", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def urlset_bytes(urls: list[str]) -> bytes:
    """A plain urlset (built fast, for big sitemaps)."""
    body = "".join(f"<url><loc>{url}</loc></url>\n" for url in urls)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n{body}</urlset>\n'
    ).encode()


def index_bytes(urls: list[str]) -> bytes:
    body = "".join(f"<sitemap><loc>{url}</loc></sitemap>\n" for url in urls)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n{body}</sitemapindex>\n'
    ).encode()


# -- running spiders --------------------------------------------------------------------


def _setting_value(value: object) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, dict):
        return json.dumps(value)
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def start_spider(
    tmp_dir: Path,
    source: str,
    *,
    settings: Mapping[str, object] | None = None,
    spider_args: Mapping[str, object] | None = None,
    feed: bool = True,
) -> RunningCrawl:
    """Write ``source`` (a module with one spider) to tmp_dir/spider.py and start
    ``scrapy runspider`` on it, outside any Scrapy project, with a JSON lines feed in
    tmp_dir/items.jsonl (unless feed=False)."""
    tmp_dir.mkdir(parents=True, exist_ok=True)
    spider_file = tmp_dir / "spider.py"
    spider_file.write_text(textwrap.dedent(source), "utf-8")
    command = [sys.executable, "-m", "scrapy", "runspider", str(spider_file)]
    feed_path = tmp_dir / "items.jsonl" if feed else None
    if feed_path is not None:
        command += ["-O", str(feed_path)]
    for name, value in (spider_args or {}).items():
        command += ["-a", f"{name}={_setting_value(value)}"]
    for name, value in {**BASE_SETTINGS, **(settings or {})}.items():
        command += ["-s", f"{name}={_setting_value(value)}"]
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy") and not k.startswith("SCRAPY_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    return RunningCrawl(
        command=command,
        cwd=tmp_dir,
        env=env,
        tmp_dir=tmp_dir,
        feed_path=feed_path,
        tree_path=None,
        output_format="jsonl" if feed else None,
    )


def run_spider(tmp_dir: Path, source: str, *, timeout: float = 120, **options: Any) -> CrawlResult:
    """:func:`start_spider` and wait for the end."""
    with start_spider(tmp_dir, source, **options) as running:
        return running.wait(timeout)


def read_lines(path: Path) -> list[str]:
    """Lines of a file written one ``write()`` per line (a cut last line is dropped)."""
    if not path.exists():
        return []
    text = path.read_text("utf-8")
    return text.split("\n")[:-1]
