"""Incremental mapping benchmark: SITEMAP_CRAWL_HISTORY on the 1M-page site, served by nginx.

    python benchmarks/incremental_runs.py --site DIR [--port 8947] [--nginx /usr/sbin/nginx]

DIR is a site written by ``generate_site.py --base-url http://127.0.0.1:PORT`` (it is
changed in place by phase 3: regenerate it before another run). Phases, in one run:

1. a full run with an empty history (every page exported as ``added``);
2. a second run with the history, nothing changed (target: <= 10% of 1, zero rows);
3. one urlset changed (some pages removed, some lastmods changed, some pages added):
   exactly those rows.

nginx answers conditional requests for static files (ETag, Last-Modified, 304); it runs
in the foreground with a configuration written to a temporary directory. Prints a
Markdown table and the history's size on disk per million pages.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NGINX_CONF = """
daemon off;
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log;
events {{ worker_connections 256; }}
http {{
    access_log off;
    sendfile on;
    keepalive_requests 100000;
    types {{ application/xml xml; text/plain txt; application/x-gzip gz; }}
    server {{
        listen 127.0.0.1:{port};
        root {root};
        etag on;
        if_modified_since exact;
    }}
}}
"""
_URL_LINE = re.compile(rb"^<url><loc>([^<]*)</loc>")
_LASTMOD = re.compile(rb"<lastmod>[^<]*</lastmod>")


def start_nginx(binary: str, root: Path, port: int, tmp: Path) -> subprocess.Popen[bytes]:
    conf = tmp / "nginx.conf"
    conf.write_text(NGINX_CONF.format(tmp=tmp, port=port, root=root))
    process = subprocess.Popen([binary, "-c", str(conf), "-p", str(tmp), "-e", str(tmp / "error.log")])
    time.sleep(0.5)
    if process.poll() is not None:
        raise SystemExit(f"nginx did not start: {(tmp / 'error.log').read_text()}")
    return process


def crawl(base: str, history: Path | None, out: Path) -> tuple[float, int, dict[str, int]]:
    """One run (``history`` None: a plain run): wall seconds, rows exported, rows by change."""
    command = [
        sys.executable, "-m", "scrapy", "crawl", "sitemaps", "-a", f"homepage={base}",
        "-O", str(out), "-s", "LOG_LEVEL=INFO", "-s", "TELNETCONSOLE_ENABLED=False",
    ]  # fmt: skip
    if history is not None:
        command += ["-s", f"SITEMAP_CRAWL_HISTORY={history}"]
    started = time.monotonic()
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    if result.returncode != 0:
        raise SystemExit(f"crawl failed:\n{result.stderr[-3000:]}")
    rows = 0
    by_change: dict[str, int] = {}
    with out.open("rb") as feed:
        for line in feed:
            if line.strip():
                rows += 1
                change = json.loads(line).get("change", "-")
                by_change[change] = by_change.get(change, 0) + 1
    return wall, rows, by_change


def change_one_urlset(root: Path, removed: int, modified: int, added: int) -> tuple[Path, dict[str, int]]:
    """Remove the first ``removed`` pages of a plain-XML urlset, give the next ``modified``
    a new lastmod, add ``added`` new pages: what the history run must export."""
    path = sorted((root / "sitemaps").glob("*/sitemap-*-0002.xml"))[0]
    lines = path.read_bytes().split(b"\n")
    first = next(i for i, line in enumerate(lines) if _URL_LINE.match(line))
    url_lines = [i for i, line in enumerate(lines) if _URL_LINE.match(line)]
    changed = 0
    for i in url_lines[removed : removed + modified]:
        new = _LASTMOD.sub(b"<lastmod>2031-01-01</lastmod>", lines[i])
        changed += new != lines[i]
        lines[i] = new
    base = _URL_LINE.match(lines[first]).group(1).decode().split("/", 3)[:3]  # type: ignore[union-attr]
    new_lines = [f"<url><loc>{'/'.join(base)}/incremental-new-{n}/</loc></url>".encode() for n in range(added)]
    kept = [line for i, line in enumerate(lines) if i not in set(url_lines[:removed])]
    close = kept.index(b"</urlset>")
    kept[close:close] = new_lines
    path.write_bytes(b"\n".join(kept))
    return path, {"added": added, "modified": changed, "removed": removed}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--site", type=Path, required=True)
    parser.add_argument("--port", type=int, default=8947)
    parser.add_argument("--nginx", default="/usr/sbin/nginx")
    args = parser.parse_args(argv)
    manifest = json.loads((args.site / "manifest.json").read_text())
    pages = int(manifest.get("pages") or manifest.get("count"))
    base = f"http://127.0.0.1:{args.port}/"
    with tempfile.TemporaryDirectory(prefix="incremental-bench-") as tmp_name:
        tmp = Path(tmp_name)
        nginx = start_nginx(args.nginx, args.site.resolve(), args.port, tmp)
        try:
            history = tmp / "history.sqlite"
            plain = crawl(base, None, tmp / "plain.jsonl")
            (tmp / "plain.jsonl").unlink()
            full = crawl(base, history, tmp / "full.jsonl")
            size = sum(p.stat().st_size for p in tmp.glob("history.sqlite*"))
            (tmp / "full.jsonl").unlink()
            same = crawl(base, history, tmp / "same.jsonl")
            changed_path, expected = change_one_urlset(args.site, 500, 1000, 500)
            changed = crawl(base, history, tmp / "changed.jsonl")
        finally:
            nginx.send_signal(signal.SIGQUIT)
            nginx.wait(10)
    print(f"site: {pages:,} pages, {len(manifest.get('files', []))} files; changed: {changed_path.name}")
    print("| run | wall (s) | % of full | rows | rows by change |")
    print("|---|---:|---:|---:|---|")
    for name, (wall, rows, by_change) in (
        ("0. plain run, no history (reference)", plain),
        ("1. full, empty history", full),
        ("2. nothing changed", same),
        ("3. one urlset changed", changed),
    ):
        print(f"| {name} | {wall:.1f} | {100 * wall / full[0]:.1f}% | {rows:,} | {by_change} |")
    print(f"expected in 3: {expected}; exact: {changed[2] == {k: v for k, v in expected.items() if v}}")
    print(f"history on disk: {size / 1e6:.0f} MB for {pages:,} pages ({size / 1e6 * 1e6 / pages:.0f} MB per million)")
    return 0 if same[1] == 0 and changed[2] == {k: v for k, v in expected.items() if v} else 1


if __name__ == "__main__":
    os.environ.pop("SCRAPY_SETTINGS_MODULE", None)
    raise SystemExit(main())
