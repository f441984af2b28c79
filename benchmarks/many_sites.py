"""Many-sites benchmark: one ``scrapy crawl sitemaps -a homepages_file=...`` against
ultimate-sitemap-parser in a thread pool and one Scrapy process per site, over a seeded
fleet of sites (``fleet.py``) served by one local server answering by Host header.

    .venv/bin/python benchmarks/many_sites.py --sites 10000 --delay-ms 0,100
    .venv/bin/python benchmarks/many_sites.py --sites 1000 --tools ours,ours_fallback --runs 3

Tools:

- ``ours``: ``scrapy crawl sitemaps -a homepages_file=...`` with default settings (the
  test DNS resolver, ``tests.support.dns.LoopbackResolver``, is the only setting given);
- ``ours_fallback``: the same with ``SITEMAP_CRAWL_KNOWN_PATHS_MODE=fallback``;
- ``usp``: ultimate-sitemap-parser's ``sitemap_tree_for_homepage`` in a pool of
  ``--usp-threads`` threads (``tools/usp_many_driver.py``);
- ``per_process``: one ``scrapy crawl sitemaps -a homepage=...`` per site, two at a time,
  over a sample of ``--per-process-sites`` sites; its wall time is also given scaled to
  the whole fleet (``wall_scaled_s``).

Every round runs each tool once (the order rotates between rounds). Per run: wall time,
CPU of the process tree, peak RSS of the tree, requests the server saw (and per site),
the largest number of requests any host had in flight at once and how many hosts went
over ``CONCURRENT_REQUESTS_PER_DOMAIN`` (8), and the page set of every site checked
against the fleet's. Results go to ``benchmarks/.work/results-many-<sites>-<delay>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import fleet  # benchmarks/ is on sys.path when run as a script
from run import PROXY_VARS, REPO, VENV_PY, WORK, ensure_usp_venv, log, measure, wait_for_idle

TOOLS = ("ours", "ours_fallback", "usp", "per_process")
PER_HOST_LIMIT = 8
"""Scrapy's default CONCURRENT_REQUESTS_PER_DOMAIN, which ours must hold at the server."""
RESOLVER = "tests.support.dns.LoopbackResolver"


@dataclass
class Run:
    tool: str
    delay_ms: float
    round: int
    sites: int
    exit_code: int
    wall_s: float
    cpu_s: float
    peak_rss_mib: float
    requests: int
    most_in_flight: int
    hosts_over_limit: int
    pages: int
    sites_checked: int
    sites_wrong: int
    wrong_examples: list[str] = field(default_factory=list)
    wall_scaled_s: float | None = None


def _control(port: int, path: str) -> dict[str, Any]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={"Host": fleet.CONTROL_HOST})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=30) as answer:
        result: dict[str, Any] = json.loads(answer.read())
        return result


class Server:
    """The fleet server in its own process."""

    def __init__(self, sites: int, seed: int, port: int, delay_ms: float) -> None:
        self.port = port
        cmd = [sys.executable, str(Path(__file__).with_name("fleet.py")), "serve"]
        cmd += ["--sites", str(sites), "--seed", str(seed), "--port", str(port), "--delay-ms", str(delay_ms)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if "fleet server" not in line:
            raise SystemExit(f"the fleet server did not start: {line!r}")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


def _pages_by_site_ours(out: Path) -> dict[str, set[str]]:
    found: dict[str, set[str]] = defaultdict(set)
    if out.exists():
        with open(out, "rb") as f:
            for line in f:
                row = json.loads(line)
                found[row["website"]].add(row["url"])
    return found


def _pages_by_site_usp(out: Path) -> dict[str, set[str]]:
    found: dict[str, set[str]] = defaultdict(set)
    if out.exists():
        with open(out, encoding="utf-8") as f:
            for line in f:
                website, _, url = line.rstrip("\n").partition("\t")
                found[website].add(url)
    return found


def _pages_by_site_dir(out_dir: Path) -> dict[str, set[str]]:
    found: dict[str, set[str]] = defaultdict(set)
    for path in out_dir.glob("site-*.jsonl"):
        for website, urls in _pages_by_site_ours(path).items():
            found[website] |= urls
    return found


def _check(found: dict[str, set[str]], sites: list[fleet.FleetSite], port: int) -> tuple[int, int, list[str]]:
    wrong = 0
    examples: list[str] = []
    for site in sites:
        expected = set(site.page_urls(port))
        got = found.get(site.homepage(port), set())
        if got != expected:
            wrong += 1
            if len(examples) < 5:
                examples.append(f"{site.host} ({site.shape}): {len(got)} pages, expected {len(expected)}")
    return len(sites), wrong, examples


def run_tool(tool: str, ctx: dict[str, Any], delay_ms: float, round_no: int) -> Run:
    run_dir: Path = ctx["run_dir"]
    port: int = ctx["port"]
    sites: list[fleet.FleetSite] = ctx["sites"]
    env = {k: v for k, v in os.environ.items() if k not in PROXY_VARS}
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    tag = f"{tool}-{delay_ms:g}ms-r{round_no}"
    out = run_dir / f"{tag}.out"
    checked = sites
    if tool in ("ours", "ours_fallback"):
        cmd = [str(VENV_PY), "-m", "scrapy", "crawl", "sitemaps", "-a", f"homepages_file={ctx['homepages']}"]
        cmd += ["-O", f"{out}:jsonlines", "-s", f"TWISTED_DNS_RESOLVER={RESOLVER}"]
        cmd += ["-s", f"SITEMAP_CRAWL_TREE_FILE={run_dir / (tag + '-trees.jsonl')}", "-s", "LOG_LEVEL=INFO"]
        if tool == "ours_fallback":
            cmd += ["-s", "SITEMAP_CRAWL_KNOWN_PATHS_MODE=fallback"]
        cwd = REPO
    elif tool == "usp":
        cmd = [str(ctx["usp_python"]), str(Path(__file__).parent / "tools" / "usp_many_driver.py")]
        cmd += [str(ctx["homepages"]), str(out), str(ctx["usp_threads"])]
        cwd = run_dir
    elif tool == "per_process":
        checked = ctx["sample"]
        out_dir = run_dir / f"{tag}-sites"
        cmd = [str(VENV_PY), str(Path(__file__).parent / "tools" / "per_process_driver.py")]
        cmd += [str(ctx["sample_file"]), str(out_dir), "2", "-s", f"TWISTED_DNS_RESOLVER={RESOLVER}"]
        cwd = REPO
    else:
        raise ValueError(tool)
    if ctx["wait_idle"]:
        wait_for_idle(ctx["wait_idle"])
    _control(port, "/__reset")
    log(f"{tag}: {' '.join(cmd[:6])} ...")
    m = measure(cmd, cwd, env, run_dir / f"{tag}.log", None, ctx["timeout"])
    stats = _control(port, "/__stats")
    if tool == "usp":
        found = _pages_by_site_usp(out)
    elif tool == "per_process":
        found = _pages_by_site_dir(out_dir)
    else:
        found = _pages_by_site_ours(out)
    n_checked, wrong, examples = _check(found, checked, port)
    most = stats["most_in_flight"]
    run = Run(
        tool=tool,
        delay_ms=delay_ms,
        round=round_no,
        sites=len(checked),
        exit_code=m.exit_code,
        wall_s=m.wall_s,
        cpu_s=m.cpu_s,
        peak_rss_mib=m.peak_rss_mib,
        requests=sum(stats["requests"].values()),
        most_in_flight=max(most.values(), default=0),
        hosts_over_limit=sum(1 for n in most.values() if n > PER_HOST_LIMIT),
        pages=sum(len(v) for v in found.values()),
        sites_checked=n_checked,
        sites_wrong=wrong,
        wrong_examples=examples,
    )
    if tool == "per_process":
        run.wall_scaled_s = round(m.wall_s * len(sites) / max(1, len(checked)), 1)
    if not ctx["keep_output"]:
        out.unlink(missing_ok=True)
    log(
        f"{tag}: exit {m.exit_code}, {m.wall_s:.1f} s, cpu {m.cpu_s:.1f} s, rss {m.peak_rss_mib:.0f} MiB, "
        f"{run.requests} requests, most in flight {run.most_in_flight}, {wrong}/{n_checked} sites wrong"
    )
    return run


def table(runs: list[Run], n_sites: int) -> str:
    rows = [
        "| tool | delay | sites | wall s | sites/min | CPU s | peak RSS MiB | requests/site | "
        "most in flight per host | hosts over 8 | pages | sites with a wrong page set | wall vs usp |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    grouped: dict[tuple[str, float], list[Run]] = defaultdict(list)
    for r in runs:
        grouped[(r.tool, r.delay_ms)].append(r)
    usp_wall = {d: statistics.median(x.wall_s for x in rs) for (t, d), rs in grouped.items() if t == "usp"}
    for (tool, delay), rs in sorted(grouped.items(), key=lambda kv: (kv[0][1], TOOLS.index(kv[0][0]))):
        wall = statistics.median(x.wall_scaled_s or x.wall_s for x in rs)
        scaled = " (scaled)" if rs[0].wall_scaled_s is not None else ""
        ratio = f"{wall / usp_wall[delay]:.2f}" if delay in usp_wall else "-"
        rows.append(
            f"| {tool} | {delay:g} ms | {rs[0].sites} | {wall:.1f}{scaled} | {n_sites / wall * 60:,.0f} | "
            f"{statistics.median(x.cpu_s for x in rs):.1f} | {max(x.peak_rss_mib for x in rs):.0f} | "
            f"{statistics.median(x.requests for x in rs) / rs[0].sites:.1f} | {max(x.most_in_flight for x in rs)} | "
            f"{max(x.hosts_over_limit for x in rs)} | {rs[0].pages:,} | {max(x.sites_wrong for x in rs)} | {ratio} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sites", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--port", type=int, default=8940)
    ap.add_argument("--delay-ms", default="0,100", help="comma-separated server delays per response")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--usp-threads", type=int, default=32)
    ap.add_argument("--per-process-sites", type=int, default=100, help="sample size of the per_process tool")
    ap.add_argument("--wait-idle", type=float, default=30.0)
    ap.add_argument("--timeout", type=float, default=3600.0)
    ap.add_argument("--keep-output", action="store_true")
    a = ap.parse_args(argv)
    tools = [t for t in a.tools.split(",") if t]
    for t in tools:
        if t not in TOOLS:
            ap.error(f"unknown tool {t!r}; choose from {TOOLS}")
    sites = fleet.fleet(a.sites, a.seed)
    run_dir = WORK / "runs" / f"many-{a.sites}"
    run_dir.mkdir(parents=True, exist_ok=True)
    homepages = run_dir / "homepages.txt"
    homepages.write_text("".join(s.homepage(a.port) + "\n" for s in sites))
    step = max(1, len(sites) // a.per_process_sites)
    sample = sites[::step][: a.per_process_sites]
    sample_file = run_dir / "sample.txt"
    sample_file.write_text("".join(s.homepage(a.port) + "\n" for s in sample))
    ctx: dict[str, Any] = {
        "run_dir": run_dir,
        "port": a.port,
        "sites": sites,
        "homepages": homepages,
        "sample": sample,
        "sample_file": sample_file,
        "usp_python": ensure_usp_venv() if "usp" in tools else None,
        "usp_threads": a.usp_threads,
        "wait_idle": a.wait_idle,
        "timeout": a.timeout,
        "keep_output": a.keep_output,
    }
    runs: list[Run] = []
    for delay in (float(d) for d in a.delay_ms.split(",")):
        server = Server(a.sites, a.seed, a.port, delay)
        try:
            for round_no in range(a.runs):
                order = tools[round_no % len(tools) :] + tools[: round_no % len(tools)]
                runs.extend(run_tool(tool, ctx, delay, round_no) for tool in order)
        finally:
            server.stop()
        result = WORK / f"results-many-{a.sites}-{delay:g}ms.json"
        result.write_text(json.dumps([asdict(r) for r in runs if r.delay_ms == delay], indent=1))
    print(f"\n{a.sites} sites ({sum(s.pages for s in sites):,} pages), seed {a.seed}, {time.strftime('%Y-%m-%d')}")
    print(table(runs, a.sites))
    return 1 if any(r.exit_code for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
