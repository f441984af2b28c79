"""Peak memory of a SitemapSpider crawl (the resumable loader) as the site grows.

Crawls every page of a generated site (a sitemap index of 50,000-URL urlsets; every
page answered by the test harness' fixture server, tests/support/fixture_server.py, on
a thread of this process: the crawl runs in its own) with
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
import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))  # the shared test harness: tests.support

from tests.support.fixture_server import FixtureServer  # noqa: E402
from tests.support.spiders import LEAN_SETTINGS as TEST_LEAN_SETTINGS  # noqa: E402
from tests.support.spiders import serve_paged_sitemaps, spider_command  # noqa: E402

WORK = REPO_ROOT / "benchmarks" / ".work" / "loader_memory"
PER_SITEMAP = 50_000

LEAN_SETTINGS: dict[str, Any] = {
    **TEST_LEAN_SETTINGS,
    "DOWNLOADER_MIDDLEWARES_BASE": {
        **TEST_LEAN_SETTINGS["DOWNLOADER_MIDDLEWARES_BASE"],
        "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware": 810,
        "scrapy.downloadermiddlewares.stats.DownloaderStats": 850,
    },
    "EXTENSIONS_BASE": {
        **TEST_LEAN_SETTINGS["EXTENSIONS_BASE"],
        "scrapy.extensions.logstats.LogStats": 0,
    },
}
"""The tests' lean profile, plus compression, downloader stats and the progress lines."""
COMMON_SETTINGS: dict[str, Any] = {
    "LOGSTATS_INTERVAL": 30,
    # Scrapy's defaults (the test profile under them lowers both)
    "RETRY_TIMES": 2,
    "DOWNLOAD_TIMEOUT": 180,
}


# -- the site -------------------------------------------------------------------------------


def _sitemap_count(pages: int) -> int:
    return -(-pages // PER_SITEMAP)


def start_site(pages: int) -> FixtureServer:
    """The test harness' fixture server (generated pages on its fast path) with /index.xml
    listing urlsets of PER_SITEMAP pages each (lastmod on every URL)."""
    site = FixtureServer(pages="/p/").start()
    sizes = [min(PER_SITEMAP, pages - k * PER_SITEMAP) for k in range(_sitemap_count(pages))]
    serve_paged_sitemaps(site, sizes, lastmod="2024-01-01")
    return site


# -- the crawl ------------------------------------------------------------------------------

SPIDER = """
from {module} import SitemapSpider

class Bench(SitemapSpider):
    name = "bench"
    sitemap_urls = [{index!r}]

    def parse(self, response):
        pass
"""


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
    site = start_site(pages)
    try:
        module = "sitemap_crawl" if spider == "ours" else "scrapy.spiders"
        (run_dir / "bench.py").write_text(SPIDER.format(module=module, index=site.url("/index.xml")))
        settings = {**COMMON_SETTINGS, **({} if scrapy_defaults else LEAN_SETTINGS)}
        if jobdir:
            settings["JOBDIR"] = str(run_dir / "job")
        command = spider_command(run_dir / "bench.py", settings=settings)
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
    args = parser.parse_args()
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
