"""A seeded fleet of many small-to-large sites, and one local server that answers for all
of them by the Host header (the many-sites benchmark, ``many_sites.py``).

Every site is ``http://sNNNNN.test:PORT/`` (names that a test resolver maps to 127.0.0.1)
or, for the unreachable ones, ``http://sNNNNN.invalid:PORT/`` (names no resolver knows).
Each site has one shape (robots.txt naming an index, a urlset at a well-known path only,
a gzip urlset, a text or RSS sitemap, robots.txt without sitemaps, no sitemap at all, a
"soft 404" host answering every path with 200 and HTML, a slow host, a host that cannot
be resolved) and a page count; a few sites are large (50,000+ pages). Everything is
derived from the seed, so the runner knows each site's exact page set without asking the
server.

    python benchmarks/fleet.py serve --sites 10000 --port 8940 --delay-ms 100

The server (asyncio, HTTP/1.1 keep-alive) sleeps ``--delay-ms`` before every answer
(slow hosts sleep ``SLOW_EXTRA_S`` more) and records, per host, the requests it served
and the largest number it had in flight at once. ``GET /__stats`` and ``GET /__reset``
on host ``control.bench`` read and clear those records.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import random
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

CONTROL_HOST = "control.bench"
SLOW_EXTRA_S = 0.5
URLSET_MAX = 50_000
PAGES_PER_PART = 500
"""Pages per urlset in the small sites' indexes."""

# shape name -> weight (per 1,000 sites)
SHAPES: dict[str, int] = {
    "robots_index": 330,  # robots.txt -> /sitemap_index.xml -> urlsets
    "robots_urlset": 150,  # robots.txt -> /sitemap.xml
    "known_only": 150,  # robots.txt without Sitemap: lines; /sitemap.xml
    "no_robots_index": 80,  # robots.txt 404; /sitemap_index.xml
    "robots_gzip": 50,  # robots.txt -> /sitemap.xml.gz
    "robots_text": 20,  # robots.txt -> /sitemap.txt (plain text)
    "robots_rss": 20,  # robots.txt -> /feed.xml (RSS 2.0)
    "no_sitemap": 100,  # robots.txt without sitemaps, every known path 404
    "soft_404": 40,  # every path: 200 text/html
    "slow": 30,  # robots_index, every answer SLOW_EXTRA_S later
    "unresolvable": 30,  # a host name that does not resolve
}
PAGELESS = {"no_sitemap", "soft_404", "unresolvable"}
BIG_SITES_PER_10K = 8
"""Large sites (50,000 to 90,000 pages, an index of full urlsets) per 10,000 sites."""

SOFT_404_BODY = b"<!DOCTYPE html><html><head><title>Welcome</title></head><body>Hello</body></html>"
NOT_FOUND = b"<html><body>404</body></html>"


@dataclass(frozen=True)
class FleetSite:
    """One site of the fleet: its host, shape and page count."""

    number: int
    shape: str
    pages: int

    @property
    def host(self) -> str:
        return f"s{self.number:05d}.{'invalid' if self.shape == 'unresolvable' else 'test'}"

    def homepage(self, port: int) -> str:
        return f"http://{self.host}:{port}/"

    def page_urls(self, port: int) -> Iterator[str]:
        base = f"http://{self.host}:{port}"
        for n in range(self.pages):
            yield f"{base}/p/{n // 100}/page-{n}.html"


def fleet(sites: int, seed: int) -> list[FleetSite]:
    """The fleet of ``sites`` sites for ``seed`` (deterministic)."""
    rng = random.Random(seed)
    names = list(SHAPES)
    weights = [SHAPES[n] for n in names]
    big = {rng.randrange(sites) for _ in range(max(1, sites * BIG_SITES_PER_10K // 10_000))} if sites >= 50 else set()
    out = []
    for number in range(sites):
        shape = rng.choices(names, weights)[0]
        if number in big:
            out.append(FleetSite(number, "robots_index", rng.randrange(50_000, 90_000)))
            continue
        # mostly small, a long tail: median ~40 pages, some thousands
        pages = 0 if shape in PAGELESS else max(1, min(20_000, int(rng.lognormvariate(3.7, 1.3))))
        if shape in ("robots_text", "robots_rss", "robots_urlset", "known_only", "robots_gzip"):
            pages = min(pages, URLSET_MAX)
        out.append(FleetSite(number, shape, pages))
    return out


# --------------------------------------------------------------------------- site bodies


def _urlset(urls: list[str]) -> bytes:
    rows = "".join(f"<url><loc>{u}</loc><lastmod>2026-10-{1 + len(u) % 28:02d}</lastmod></url>" for u in urls)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{rows}</urlset>\n'
    ).encode()


def _index(urls: list[str]) -> bytes:
    rows = "".join(f"<sitemap><loc>{u}</loc></sitemap>" for u in urls)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{rows}</sitemapindex>\n'
    ).encode()


def _rss(urls: list[str]) -> bytes:
    items = "".join(f"<item><title>t{n}</title><link>{u}</link></item>" for n, u in enumerate(urls))
    return f'<?xml version="1.0"?><rss version="2.0"><channel><title>f</title>{items}</channel></rss>'.encode()


def _robots(sitemaps: list[str]) -> bytes:
    return ("User-agent: *\nDisallow: /private/\n" + "".join(f"Sitemap: {s}\n" for s in sitemaps)).encode()


def _part_size(site: FleetSite) -> int:
    return URLSET_MAX if site.pages >= URLSET_MAX else PAGES_PER_PART


def site_files(site: FleetSite, port: int) -> dict[str, tuple[bytes, str]]:
    """Path -> (body, content type) for every file the site serves (pageless sites: none)."""
    base = f"http://{site.host}:{port}"
    urls = list(site.page_urls(port))
    xml = "application/xml"
    files: dict[str, tuple[bytes, str]] = {}
    shape = site.shape
    if shape in ("robots_index", "slow", "no_robots_index"):
        size = _part_size(site)
        parts = [urls[i : i + size] for i in range(0, len(urls), size)] or [[]]
        part_urls = [f"{base}/sitemaps/part-{n}.xml" for n in range(len(parts))]
        files["/sitemap_index.xml"] = (_index(part_urls), xml)
        for n, part in enumerate(parts):
            files[f"/sitemaps/part-{n}.xml"] = (_urlset(part), xml)
        if shape != "no_robots_index":
            files["/robots.txt"] = (_robots([f"{base}/sitemap_index.xml"]), "text/plain")
    elif shape in ("robots_urlset", "known_only"):
        files["/sitemap.xml"] = (_urlset(urls), xml)
        files["/robots.txt"] = (_robots([f"{base}/sitemap.xml"] if shape == "robots_urlset" else []), "text/plain")
    elif shape == "robots_gzip":
        files["/sitemap.xml.gz"] = (gzip.compress(_urlset(urls), 1, mtime=0), "application/gzip")
        files["/robots.txt"] = (_robots([f"{base}/sitemap.xml.gz"]), "text/plain")
    elif shape == "robots_text":
        files["/sitemap.txt"] = (("\n".join(urls) + "\n").encode(), "text/plain")
        files["/robots.txt"] = (_robots([f"{base}/sitemap.txt"]), "text/plain")
    elif shape == "robots_rss":
        files["/feed.xml"] = (_rss(urls), "application/rss+xml")
        files["/robots.txt"] = (_robots([f"{base}/feed.xml"]), "text/plain")
    elif shape == "no_sitemap":
        files["/robots.txt"] = (_robots([]), "text/plain")
    return files


# --------------------------------------------------------------------------- the server


class FleetServer:
    """Answers every site of the fleet on one port, by Host header."""

    def __init__(self, sites: list[FleetSite], port: int, delay_s: float) -> None:
        self.port = port
        self.delay_s = delay_s
        self.by_host = {site.host: site for site in sites}
        self.in_flight: dict[str, int] = {}
        self.most_in_flight: dict[str, int] = {}
        self.requests: dict[str, int] = {}

    @lru_cache(maxsize=256)  # noqa: B019 - one server per process
    def _files(self, host: str) -> dict[str, tuple[bytes, str]]:
        return site_files(self.by_host[host], self.port)

    def answer(self, host: str, path: str) -> tuple[int, bytes, str]:
        if host == CONTROL_HOST:
            if path == "/__reset":
                self.most_in_flight.clear()
                self.requests.clear()
                return 200, b"{}", "application/json"
            stats = {"most_in_flight": self.most_in_flight, "requests": self.requests}
            return 200, json.dumps(stats).encode(), "application/json"
        site = self.by_host.get(host)
        if site is None:
            return 404, NOT_FOUND, "text/html"
        if site.shape == "soft_404":
            return 200, SOFT_404_BODY, "text/html"
        found = self._files(host).get(path)
        if found is None:
            return 404, NOT_FOUND, "text/html"
        return 200, found[0], found[1]

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                parts = lines[0].split(" ")
                path = parts[1] if len(parts) > 1 else "/"
                host = ""
                close = False
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    name = name.strip().lower()
                    if name == "host":
                        host = value.strip().rsplit(":", 1)[0].lower()
                    elif name == "connection" and value.strip().lower() == "close":
                        close = True
                await self._serve(writer, host, path, close)
                if close:
                    return
        except (ConnectionError, asyncio.CancelledError):  # a client gone, or the server stopping
            return
        finally:
            writer.close()

    async def _serve(self, writer: asyncio.StreamWriter, host: str, path: str, close: bool) -> None:
        counted = host != CONTROL_HOST
        if counted:
            now = self.in_flight.get(host, 0) + 1
            self.in_flight[host] = now
            if now > self.most_in_flight.get(host, 0):
                self.most_in_flight[host] = now
            self.requests[host] = self.requests.get(host, 0) + 1
        try:
            site = self.by_host.get(host)
            delay = self.delay_s + (SLOW_EXTRA_S if site is not None and site.shape == "slow" else 0.0)
            if delay and counted:
                await asyncio.sleep(delay)
            status, body, content_type = self.answer(host, path)
            reason = "OK" if status == 200 else "Not Found"
            head = (
                f"HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\n"
                f"Content-Length: {len(body)}\r\n{'Connection: close' + chr(13) + chr(10) if close else ''}\r\n"
            ).encode()
            writer.write(head + body)
            await writer.drain()
        finally:
            if counted:
                self.in_flight[host] -= 1

    async def serve_forever(self) -> None:
        server = await asyncio.start_server(self.handle, "127.0.0.1", self.port, backlog=4096, limit=1 << 16)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        print(f"fleet server on 127.0.0.1:{self.port}, {len(self.by_host)} sites", flush=True)
        async with server:
            await stop.wait()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve the fleet")
    serve.add_argument("--sites", type=int, default=10_000)
    serve.add_argument("--seed", type=int, default=1)
    serve.add_argument("--port", type=int, default=8940)
    serve.add_argument("--delay-ms", type=float, default=0.0)
    show = sub.add_parser("show", help="print the fleet's shapes and page counts")
    show.add_argument("--sites", type=int, default=10_000)
    show.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    sites = fleet(a.sites, a.seed)
    if a.command == "show":
        by_shape: dict[str, list[int]] = {}
        for site in sites:
            by_shape.setdefault(site.shape, []).append(site.pages)
        for shape, pages in sorted(by_shape.items()):
            print(f"{shape:16} {len(pages):6} sites {sum(pages):9} pages (largest {max(pages)})")
        print(f"{'total':16} {len(sites):6} sites {sum(s.pages for s in sites):9} pages")
        return 0
    asyncio.run(FleetServer(sites, a.port, a.delay_ms / 1000).serve_forever())
    return 0


if __name__ == "__main__":
    sys.exit(main())
