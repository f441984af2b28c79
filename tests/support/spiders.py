"""Run a spider module written by a test (``scrapy runspider``, in a subprocess, outside any
Scrapy project) and set up the big SitemapSpider / SitemapRequestLoader crawls:

    with FixtureServer(pages="/p/") as site:
        sitemaps = serve_paged_sitemaps(site, [600, 600])      # /index.xml -> /s0.xml, /s1.xml
        source = recording_spider("big", site.url("/index.xml"), tmp_path / "handled.txt")
        result = run_spider(tmp_path / "run", source, feed=False)
        handled = read_lines(tmp_path / "handled.txt")
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from scrapy import Request, Spider
from scrapy.downloadermiddlewares.offsite import OffsiteMiddleware

from .crawl import REPO_ROOT, CrawlResult, RunningCrawl
from .fixture_server import FixtureServer
from .sitemaps import sitemapindex, urlset

__all__ = [
    "BASE_SETTINGS",
    "LEAN_SETTINGS",
    "count_lines",
    "read_lines",
    "recording_spider",
    "run_spider",
    "serve_paged_sitemaps",
    "sitemap_spider",
    "spider_command",
    "start_spider",
    "wait_for_lines",
]

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
"""The lean profile of the big crawls (tests and benchmarks/loader_memory.py)."""


# -- the site ---------------------------------------------------------------------------------


def serve_paged_sitemaps(
    site: FixtureServer,
    sizes: Sequence[int],
    *,
    index: str = "/index.xml",
    lastmod: str | None = None,
) -> dict[str, list[str]]:
    """Serve a sitemap index at ``index`` listing ``/s0.xml``, ``/s1.xml``, ...: ``/sN.xml`` a
    urlset of ``sizes[N]`` generated pages ``/p/N/0``, ``/p/N/1``, ... (every ``<url>`` with
    ``lastmod`` if given). The site must serve pages under ``/p/``. Returns sitemap URL ->
    its page URLs, in index order."""
    if site.pages != "/p/":
        raise ValueError("serve_paged_sitemaps needs FixtureServer(pages='/p/')")
    sitemaps: dict[str, list[str]] = {}
    for n, size in enumerate(sizes):
        urls = [site.url(f"/p/{n}/{i}") for i in range(size)]
        entries = urls if lastmod is None else [{"loc": url, "lastmod": lastmod} for url in urls]
        site[f"/s{n}.xml"] = urlset(*entries).encode()
        sitemaps[site.url(f"/s{n}.xml")] = urls
    site[index] = sitemapindex(*sitemaps).encode()
    return sitemaps


# -- the spider -------------------------------------------------------------------------------


def _block(code: str, indent: int) -> str:
    """``code`` dedented, stripped and indented by ``indent`` spaces, with a final newline ("" stays "")."""
    code = textwrap.dedent(code).strip("\n")
    return textwrap.indent(code, " " * indent) + "\n" if code.strip() else ""


def sitemap_spider(
    name: str,
    *,
    sitemap_urls: Sequence[str] = (),
    homepage: str | None = None,
    members: str = "",
    parse: str | None = None,
    is_async: bool = False,
    imports: str = "",
    preamble: str = "",
    module: str = "sitemap_crawl",
) -> str:
    """The source of a module with one SitemapSpider subclass named ``name``, for
    :func:`run_spider`.

    sitemap_urls / homepage: class attributes (left out when empty); members: more class
    members; parse: the body of ``parse(self, response)`` (async with ``is_async``; no
    parse() when None); imports: import lines; preamble: module code before the class;
    module: where SitemapSpider comes from (``scrapy.spiders`` for Scrapy's own).
    """
    attributes = f"    name = {name!r}\n"
    if sitemap_urls:
        attributes += f"    sitemap_urls = {list(sitemap_urls)!r}\n"
    if homepage is not None:
        attributes += f"    homepage = {homepage!r}\n"
    method = ""
    if parse is not None:
        method = f"\n    {'async ' if is_async else ''}def parse(self, response):\n" + _block(parse, 8)
    return (
        _block(imports, 0)
        + f"from {module} import SitemapSpider\n\n"
        + (f"\n{_block(preamble, 0)}\n" if preamble.strip() else "")
        + f"\nclass {name.title().replace('_', '')}Spider(SitemapSpider):\n"
        + attributes
        + _block(members, 4)
        + method
    )


def recording_spider(
    name: str,
    sitemap_url: str,
    handled_file: Path,
    *,
    parse: str = "",
    members: str = "",
    imports: str = "",
    is_async: bool = False,
) -> str:
    """The source of a SitemapSpider reading ``sitemap_url`` whose ``parse()`` appends the URL
    of each page to ``handled_file``, one ``write()`` a line (a line survives kill -9).

    parse: statements run first in ``parse()`` (may await when ``is_async``); members: more
    class members; imports: more import lines (``os`` is imported).
    """
    return sitemap_spider(
        name,
        sitemap_urls=[sitemap_url],
        members=f"fd = os.open({str(handled_file)!r}, os.O_WRONLY | os.O_APPEND | os.O_CREAT)\n"
        + textwrap.dedent(members),
        parse=textwrap.dedent(parse).strip("\n") + '\nos.write(self.fd, response.url.encode() + b"\\n")\n',
        is_async=is_async,
        imports="import os\n" + textwrap.dedent(imports),
    )


# -- running it -------------------------------------------------------------------------------


def _setting_value(value: object) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, dict):
        return json.dumps(value)
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def spider_command(
    spider_file: Path,
    *,
    settings: Mapping[str, object] | None = None,
    spider_args: Mapping[str, object] | None = None,
    feed_path: Path | None = None,
) -> list[str]:
    """``python -m scrapy runspider spider_file [-O feed] -a ... -s ...`` with
    :data:`BASE_SETTINGS` under ``settings``."""
    command = [sys.executable, "-m", "scrapy", "runspider", str(spider_file)]
    if feed_path is not None:
        command += ["-O", str(feed_path)]
    for name, value in (spider_args or {}).items():
        command += ["-a", f"{name}={_setting_value(value)}"]
    for name, value in {**BASE_SETTINGS, **(settings or {})}.items():
        command += ["-s", f"{name}={_setting_value(value)}"]
    return command


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
    feed_path = tmp_dir / "items.jsonl" if feed else None
    command = spider_command(spider_file, settings=settings, spider_args=spider_args, feed_path=feed_path)
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy") and not k.startswith("SCRAPY_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    output_format = "jsonl" if feed else None
    return RunningCrawl(
        command=command, cwd=tmp_dir, env=env, tmp_dir=tmp_dir, feed_path=feed_path, output_format=output_format
    )


def run_spider(tmp_dir: Path, source: str, *, timeout: float = 120, **options: Any) -> CrawlResult:
    """:func:`start_spider` and wait for the end."""
    with start_spider(tmp_dir, source, **options) as running:
        return running.wait(timeout)


# -- what the spider wrote --------------------------------------------------------------------


def read_lines(path: Path) -> list[str]:
    """Lines of a file written one ``write()`` per line (a cut last line is dropped)."""
    if not path.exists():
        return []
    text = path.read_text("utf-8")
    return text.split("\n")[:-1]


def count_lines(path: Path) -> int:
    """How many whole lines a (possibly large, still growing) file has; 0 if it is missing."""
    if not path.exists():
        return 0
    with path.open("rb") as handle:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))


def wait_for_lines(path: Path, count: int, running: RunningCrawl, timeout: float, poll: float = 0.2) -> int:
    """Wait until ``path`` has ``count`` lines, the crawl ends or ``timeout`` passes; the
    number of lines last seen."""
    deadline = time.monotonic() + timeout
    lines = 0
    while time.monotonic() < deadline and running.running():
        lines = count_lines(path)
        if lines >= count:
            break
        time.sleep(poll)
    return lines


class OffsiteAlsoOtherTest(OffsiteMiddleware):
    """A project's own offsite policy (Scrapy's documented way: ``should_follow``): the
    spider's allowed_domains, and the host ``other.test`` too."""

    def should_follow(self, request: Request, spider: Spider) -> bool:
        return bool(request.url.startswith("http://other.test:")) or bool(super().should_follow(request, spider))
