"""Peak memory of a SitemapSpider crawl (the resumable loader) as the site grows.

Crawls every page of a generated site (a sitemap index of 50,000-URL urlsets; every
page answered by a tiny local server running in its own process) with
``sitemap_crawl.SitemapSpider`` and reports the crawl process's peak RSS
(``ru_maxrss`` from ``wait4``). The claim it checks: memory does not grow with the
number of pages (the 1,000,000-page run stays within 20 % of the 100,000-page run).

    .venv/bin/python benchmarks/loader_memory.py                   # 100k and 1M, compared
    .venv/bin/python benchmarks/loader_memory.py --pages 100k      # one run
    .venv/bin/python benchmarks/loader_memory.py --pages 100k --spider scrapy   # Scrapy's own SitemapSpider

Options: ``--no-jobdir`` (no persistence), ``--scrapy-defaults`` (stock Scrapy settings
instead of the lean profile used to keep a million-page run to ~15 minutes),
``--json FILE`` (write the results). Work files go to benchmarks/.work/loader_memory/.
Not a test: nothing here is timed against a threshold, except the final 20 % check
whose outcome is printed (and is the exit status).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
WORK = REPO_ROOT / "benchmarks" / ".work" / "loader_memory"
PER_SITEMAP = 50_000
PAGE = b"<!DOCTYPE html><html><head><title>p</title></head><body>ok</body></html>"

LEAN_SETTINGS: dict[str, Any] = {
    "DOWNLOADER_MIDDLEWARES_BASE": {
        "scrapy.downloadermiddlewares.downloadtimeout.DownloadTimeoutMiddleware": 350,
        "scrapy.downloadermiddlewares.retry.RetryMiddleware": 550,
        "scrapy.downloadermiddlewares.redirect.RedirectMiddleware": 600,
        "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware": 810,
        "scrapy.downloadermiddlewares.stats.DownloaderStats": 850,
    },
    "SPIDER_MIDDLEWARES_BASE": {
        "scrapy.spidermiddlewares.start.StartSpiderMiddleware": 25,
        "scrapy.spidermiddlewares.httperror.HttpErrorMiddleware": 50,
    },
    "EXTENSIONS_BASE": {
        "scrapy.extensions.corestats.CoreStats": 0,
        "scrapy.extensions.logstats.LogStats": 0,
    },
    "COOKIES_ENABLED": False,
    "CONCURRENT_ITEMS": 1,
    "CONCURRENT_REQUESTS": 32,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 32,
}
COMMON_SETTINGS: dict[str, Any] = {
    "LOG_LEVEL": "INFO",
    "TELNETCONSOLE_ENABLED": False,
    "REMOTE_CONTROL_ENABLED": False,
    "ROBOTSTXT_OBEY": False,
    "LOGSTATS_INTERVAL": 30,
}


# -- the site -------------------------------------------------------------------------------


def _sitemap_count(pages: int) -> int:
    return -(-pages // PER_SITEMAP)


def _body(path: str, base: str, pages: int) -> tuple[bytes, bytes, bytes] | None:
    if path == "/index.xml":
        locs = "".join(f"<sitemap><loc>{base}/s{k}.xml</loc></sitemap>\n" for k in range(_sitemap_count(pages)))
        xml = f'<?xml version="1.0"?>\n<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n{locs}</sitemapindex>\n'
        return b"200 OK", b"application/xml", xml.encode()
    if path.startswith("/s") and path.endswith(".xml") and path[2:-4].isdigit():
        k = int(path[2:-4])
        first, last = k * PER_SITEMAP, min(pages, (k + 1) * PER_SITEMAP)
        if first >= last:
            return None
        locs = "".join(
            f"<url><loc>{base}/p/{k}/{i}</loc><lastmod>2024-01-01</lastmod></url>\n" for i in range(first, last)
        )
        xml = f'<?xml version="1.0"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n{locs}</urlset>\n'
        return b"200 OK", b"application/xml", xml.encode()
    if path.startswith("/p/"):
        return b"200 OK", b"text/html", PAGE
    return None


class _Protocol(asyncio.Protocol):
    def __init__(self, base: str, pages: int) -> None:
        self.base, self.pages, self.buffer = base, pages, b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            head, self.buffer = self.buffer[:end], self.buffer[end + 4 :]
            parts = head.split(b"\r\n", 1)[0].split(b" ")
            path = parts[1].decode("latin-1") if len(parts) > 1 else "/"
            answer = _body(path, self.base, self.pages) or (b"404 Not Found", b"text/html", b"not found")
            status, content_type, body = answer
            assert self.transport is not None
            self.transport.write(
                b"HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s"
                % (status, content_type, len(body), body)
            )


def serve(pages: int) -> None:
    """The --serve mode: print the port, then answer until killed."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        holder: dict[str, str] = {}
        server = await loop.create_server(lambda: _Protocol(holder["base"], pages), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        holder["base"] = f"http://127.0.0.1:{port}"
        print(f"READY {port}", flush=True)
        await server.serve_forever()

    asyncio.run(main())


class SiteProcess:
    def __init__(self, pages: int) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve", "--pages", str(pages)], stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("READY "):
            self.process.kill()
            raise RuntimeError(f"the site did not start: {line!r}")
        self.base = f"http://127.0.0.1:{int(line.split()[1])}"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


# -- the crawl ------------------------------------------------------------------------------

SPIDER = """
from {module} import SitemapSpider

class Bench(SitemapSpider):
    name = "bench"
    sitemap_urls = [{index!r}]

    def parse(self, response):
        pass
"""


def _setting(value: Any) -> str:
    return json.dumps(value) if isinstance(value, dict) else str(value)


def _rss_sampler(pid: int, samples: list[tuple[float, int]], stop: threading.Event) -> None:
    status = Path(f"/proc/{pid}/status")
    started = time.monotonic()
    while not stop.wait(2.0):
        try:
            for line in status.read_text().splitlines():
                if line.startswith("VmRSS:"):
                    samples.append((time.monotonic() - started, int(line.split()[1])))
        except OSError:
            return


def crawl(pages: int, *, spider: str, jobdir: bool, scrapy_defaults: bool) -> dict[str, Any]:
    run_dir = WORK / f"{spider}-{pages}"
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    site = SiteProcess(pages)
    try:
        module = "sitemap_crawl" if spider == "ours" else "scrapy.spiders"
        (run_dir / "bench.py").write_text(SPIDER.format(module=module, index=site.base + "/index.xml"))
        settings = {**COMMON_SETTINGS, **({} if scrapy_defaults else LEAN_SETTINGS)}
        if jobdir:
            settings["JOBDIR"] = str(run_dir / "job")
        command = [sys.executable, "-m", "scrapy", "runspider", str(run_dir / "bench.py")]
        for name, value in settings.items():
            command += ["-s", f"{name}={_setting(value)}"]
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PYTHONUNBUFFERED": "1"}
        started = time.monotonic()
        with (run_dir / "crawl.log").open("wb") as log:
            process = subprocess.Popen(command, cwd=run_dir, env=env, stdout=log, stderr=log)
            samples: list[tuple[float, int]] = []
            stop = threading.Event()
            sampler = threading.Thread(target=_rss_sampler, args=(process.pid, samples, stop), daemon=True)
            sampler.start()
            _, status, usage = os.wait4(process.pid, 0)
            process.returncode = os.waitstatus_to_exitcode(status)
            stop.set()
        elapsed = time.monotonic() - started
    finally:
        site.stop()
    log_text = (run_dir / "crawl.log").read_text("utf-8", errors="replace")
    crawled = _stat(log_text, "response_received_count")
    return {
        "spider": spider,
        "pages": pages,
        "sitemaps": _sitemap_count(pages),
        "jobdir": jobdir,
        "settings": "scrapy defaults" if scrapy_defaults else "lean",
        "exit_code": process.returncode,
        "responses": crawled,
        "elapsed_s": round(elapsed, 1),
        "pages_per_s": round(pages / elapsed, 1),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "rss_samples_mb": [(round(t), round(kb / 1024, 1)) for t, kb in samples[:: max(1, len(samples) // 20)]],
        "log": str(run_dir / "crawl.log"),
    }


def _stat(log: str, name: str) -> int | None:
    marker = f"'{name}': "
    index = log.rfind(marker)
    if index < 0:
        return None
    digits = log[index + len(marker) :].split(",", 1)[0].split("}", 1)[0].strip()
    return int(digits) if digits.isdigit() else None


def parse_count(text: str) -> int:
    text = text.strip().lower().replace("_", "")
    factor = 1
    if text.endswith("k"):
        factor, text = 1_000, text[:-1]
    elif text.endswith("m"):
        factor, text = 1_000_000, text[:-1]
    return int(float(text) * factor)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--pages", action="append", help="page count (100k, 1m, 250000); repeatable")
    parser.add_argument("--spider", choices=["ours", "scrapy"], default="ours")
    parser.add_argument("--no-jobdir", action="store_true")
    parser.add_argument("--scrapy-defaults", action="store_true")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(parse_count(args.pages[0]))
        return 0
    sizes = [parse_count(p) for p in (args.pages or ["100k", "1m"])]
    results = []
    for pages in sizes:
        print(f"crawling {pages:,} pages with {args.spider} ...", flush=True)
        result = crawl(pages, spider=args.spider, jobdir=not args.no_jobdir, scrapy_defaults=args.scrapy_defaults)
        results.append(result)
        print(textwrap.indent(json.dumps(result, indent=2), "  "), flush=True)
    print()
    print("| spider | pages | sitemaps | responses | elapsed s | pages/s | peak RSS MB |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(
            f"| {r['spider']} | {r['pages']:,} | {r['sitemaps']} | {r['responses']} | {r['elapsed_s']} "
            f"| {r['pages_per_s']} | {r['peak_rss_mb']} |"
        )
    status = 0 if all(r["exit_code"] == 0 and r["responses"] == r["pages"] + r["sitemaps"] + 1 for r in results) else 1
    if len(results) >= 2:
        smallest, largest = min(results, key=lambda r: r["pages"]), max(results, key=lambda r: r["pages"])
        growth = largest["peak_rss_mb"] / smallest["peak_rss_mb"] - 1
        verdict = "within" if growth <= 0.20 else "NOT within"
        print(
            f"\npeak RSS {largest['pages']:,} pages / {smallest['pages']:,} pages: "
            f"{largest['peak_rss_mb']} / {smallest['peak_rss_mb']} MB = {growth:+.1%} ({verdict} 20%)"
        )
        status = status or (0 if growth <= 0.20 else 1)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return status


if __name__ == "__main__":
    sys.exit(main())
