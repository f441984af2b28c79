"""Benchmark runner: sitemap_crawl ("ours") vs ultimate-sitemap-parser vs Scrapy's
SitemapSpider vs an lxml-from-disk floor, on a generated site served locally.

Examples (from the repo root)::

    .venv/bin/python benchmarks/run.py --size 200k
    .venv/bin/python benchmarks/run.py --size 1m --runs 3 --keep-site
    .venv/bin/python benchmarks/run.py --size 200k --delay-ms 100 --tools ours,usp
    .venv/bin/python benchmarks/run.py --size 20000 --runs 1 --tools usp,floor

Each tool runs as a subprocess; the static server runs in another process (its CPU
is reported separately, not counted).  Per run: wall time, CPU (user+sys of the
process tree, from wait4), peak RSS of the process tree (sum over the process and
all its descendants, sampled from /proc every 50 ms; never below any one process's
VmHWM), time to first page (first complete line in the tool's output file) and
the exact page-set check against the generator's expected_urls.txt.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import generate_site  # benchmarks/ is on sys.path when run as a script
from serve import ServerProcess

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
WORK = BENCH / ".work"
TOOLS_DIR = BENCH / "tools"
VENV_PY = REPO / ".venv" / "bin" / "python"
USP_VENV = WORK / "venv-usp"
USP_REQUIREMENT = "ultimate-sitemap-parser==1.8.1"
ALL_TOOLS = ("ours", "ours_audit", "baseline", "baseline_audit", "usp", "scrapy_sitemapspider", "floor")
"""``ours_audit``: ours with the audit on (SITEMAP_CRAWL_AUDIT_FILE and SITEMAP_CRAWL_REPORT_FILE);
``baseline_audit``: the baseline with the audit on."""
BASELINE: list[Path] = []
"""A checkout of another commit of this repository (--baseline), run as the tool "baseline"."""
DEFAULT_PORT = 8931
CLK_TCK = os.sysconf("SC_CLK_TCK")
PROXY_VARS = (
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- process tree


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return kids
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                kids.extend(int(x) for x in f.read().split())
        except OSError:
            continue
    return kids


def process_tree(pid: int) -> list[int]:
    out = [pid]
    i = 0
    while i < len(out):
        out.extend(_children(out[i]))
        i += 1
    return out


def rss_and_hwm(pid: int) -> tuple[int, int]:
    """(current RSS, peak RSS of the current address space) in bytes, from /proc/PID/status.

    VmHWM is reset by exec, unlike ru_maxrss, which on Linux keeps the high-water mark
    of the pre-exec image: the forked copy of the (large) runner process."""
    rss = hwm = 0
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    hwm = int(line.split()[1]) * 1024
                elif line.startswith(b"VmRSS:"):
                    rss = int(line.split()[1]) * 1024
                    break
    except (OSError, IndexError, ValueError):
        pass
    return rss, hwm


def cpu_seconds(pid: int) -> float:
    """user+sys of a live process (not its children)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK
    except (OSError, IndexError, ValueError):
        return 0.0


def system_busy_seconds() -> float:
    """Non-idle CPU time of the whole machine, all cores (from /proc/stat)."""
    with open("/proc/stat", "rb") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal ...
    return (v[0] + v[1] + v[2] + v[5] + v[6] + (v[7] if len(v) > 7 else 0)) / CLK_TCK


def wait_for_idle(max_wait: float, threshold_cores: float = 0.25, window: float = 1.0) -> float:
    """Wait (up to max_wait s) until the machine's busy CPU over ``window`` is below
    ``threshold_cores``; other people's jobs on a shared box skew wall times.
    Returns the busy cores measured last."""
    deadline = time.monotonic() + max_wait
    while True:
        b0 = system_busy_seconds()
        time.sleep(window)
        busy = (system_busy_seconds() - b0) / window
        if busy < threshold_cores or time.monotonic() >= deadline:
            return busy


def has_complete_line(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return b"\n" in f.read(1 << 20)
    except OSError:
        return False


class TreeSampler(threading.Thread):
    """Samples the summed RSS of a process tree and watches the output file."""

    def __init__(self, pid: int, out_path: Path | None, t0: float, interval: float = 0.05) -> None:
        super().__init__(name="tree-sampler", daemon=True)
        self.pid = pid
        self.out_path = out_path
        self.t0 = t0
        self.interval = interval
        self.peak_rss = 0
        self.max_procs = 0
        self.samples = 0
        self.first_line_s: float | None = None
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            self.sample()
            self._stop_event.wait(self.interval)

    def sample(self) -> None:
        pids = process_tree(self.pid)
        stats = [rss_and_hwm(p) for p in pids]
        total = sum(rss for rss, _ in stats)
        hwms = [hwm for _, hwm in stats]
        self.peak_rss = max(self.peak_rss, total, max(hwms, default=0))
        self.max_procs = max(self.max_procs, len(pids))
        self.samples += 1
        if self.first_line_s is None and self.out_path is not None and has_complete_line(self.out_path):
            self.first_line_s = time.perf_counter() - self.t0

    def stop(self) -> None:
        self._stop_event.set()
        self.join()


@dataclass
class Measurement:
    exit_code: int
    wall_s: float
    user_s: float
    sys_s: float
    cpu_s: float
    peak_rss_mib: float
    ru_maxrss_mib: float
    first_page_s: float | None
    max_procs: int
    timed_out: bool


def measure(
    cmd: list[str],
    cwd: Path,
    env: dict[str, str],
    log_path: Path,
    out_path: Path | None,
    timeout: float,
) -> Measurement:
    with open(log_path, "wb") as logf:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=logf,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        sampler = TreeSampler(proc.pid, out_path, t0)
        sampler.start()
        timed_out = False

        def kill() -> None:
            nonlocal timed_out
            timed_out = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, ru = os.wait4(proc.pid, 0)
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            raise
        finally:
            timer.cancel()
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        sampler.stop()
    # ru_maxrss is NOT used for the peak: on Linux it includes the pre-exec image, i.e. the
    # forked runner itself (hundreds of MiB once it holds the expected page set)
    main_max = ru.ru_maxrss * 1024
    return Measurement(
        exit_code=proc.returncode,
        wall_s=round(wall, 3),
        user_s=round(ru.ru_utime, 3),
        sys_s=round(ru.ru_stime, 3),
        cpu_s=round(ru.ru_utime + ru.ru_stime, 3),
        peak_rss_mib=round(sampler.peak_rss / 2**20, 1),
        ru_maxrss_mib=round(main_max / 2**20, 1),
        first_page_s=None if sampler.first_line_s is None else round(sampler.first_line_s, 3),
        max_procs=sampler.max_procs,
        timed_out=timed_out,
    )


# --------------------------------------------------------------------------- outputs and checks

_JSON_URL_PREFIX = '{"url": "'


def iter_jsonl_urls(path: Path) -> Iterator[str]:
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            if line.startswith(_JSON_URL_PREFIX):
                end = line.find('"', len(_JSON_URL_PREFIX))
                url = line[len(_JSON_URL_PREFIX) : end]
                if end > 0 and "\\" not in url:
                    yield url
                    continue
            yield str(json.loads(line)["url"])


def iter_line_urls(path: Path) -> Iterator[str]:
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line:
                yield line


def load_expected(site_dir: Path) -> set[str]:
    return set(iter_line_urls(site_dir / generate_site.EXPECTED))


def check_pages(urls: Iterator[str], expected: set[str]) -> dict[str, Any]:
    seen: set[str] = set()
    items = 0
    for u in urls:
        items += 1
        seen.add(u)
    missing = expected - seen
    extra = seen - expected
    return {
        "items": items,
        "unique": len(seen),
        "duplicates": items - len(seen),
        "missing": len(missing),
        "extra": len(extra),
        "exact": not missing and not extra and items == len(seen),
        "missing_sample": sorted(missing)[:5],
        "extra_sample": sorted(extra)[:5],
    }


_ERROR_LINE = re.compile(r"\] (ERROR|CRITICAL):|^Traceback|^\S*Error: ", re.MULTILINE)
_STAT = re.compile(r"'(log_count/(?:ERROR|WARNING|CRITICAL)|item_scraped_count|finish_reason)': '?([\w.]+)'?")


def scan_log(path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8", errors="replace")
    errors = [m.group(0) for m in _ERROR_LINE.finditer(text)]
    error_lines = [line for line in text.splitlines() if _ERROR_LINE.search(line)]
    stats = {m.group(1): m.group(2) for m in _STAT.finditer(text)}
    return {
        "error_lines": len(errors),
        "first_errors": error_lines[:8],
        "scrapy_stats": stats,
        "tail": text.splitlines()[-6:],
    }


# --------------------------------------------------------------------------- setup


def ensure_usp_venv() -> Path:
    py = USP_VENV / "bin" / "python"
    probe = [
        str(py),
        "-c",
        "import importlib.metadata as m; print(m.version('ultimate-sitemap-parser'))",
    ]
    if py.exists():
        r = subprocess.run(probe, capture_output=True, text=True, check=False)
        if r.returncode == 0 and r.stdout.strip() == USP_REQUIREMENT.split("==")[1]:
            return py
    log(f"creating {USP_VENV} with {USP_REQUIREMENT}")
    if USP_VENV.exists():
        shutil.rmtree(USP_VENV)
    base_python = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base_python, "-m", "venv", str(USP_VENV)], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "-q", USP_REQUIREMENT], check=True)
    subprocess.run(probe, check=True)
    return py


def ensure_site(pages: int, seed: int, base: str) -> tuple[Path, dict[str, Any], bool]:
    name = f"{generate_site.size_label(pages)}-{seed}"
    port = base.rsplit(":", 1)[1]
    if port != str(DEFAULT_PORT):
        name += f"-p{port}"  # URLs inside the files carry the port
    site = WORK / "sites" / name
    manifest = generate_site.load_manifest(site)
    if (
        manifest is not None
        and manifest.get("base_url") == base
        and manifest.get("pages") == pages
        and manifest.get("generator_version") == generate_site.GENERATOR_VERSION
    ):
        log(f"reusing site {site}")
        return site, manifest, False
    log(f"generating {pages} pages (seed {seed}, base {base}) into {site} ...")
    manifest = generate_site.generate(site, pages, seed, base)
    log(f"generated in {manifest['generation_seconds']} s")
    return site, manifest, True


def warm_page_cache(site: Path) -> None:
    for p in site.rglob("*"):
        if p.is_file():
            with open(p, "rb") as f:
                while f.read(1 << 22):
                    pass


@dataclass
class Context:
    base: str
    site: Path
    run_dir: Path
    usp_python: Path | None
    spider_cwd: Path


def tool_command(tool: str, ctx: Context, out: Path) -> tuple[list[str], Path]:
    if tool in ("ours_audit", "baseline_audit"):
        command, cwd = tool_command(tool.removesuffix("_audit"), ctx, out)
        audit = ["-s", f"SITEMAP_CRAWL_AUDIT_FILE={out.parent / 'findings.jsonl'}"]
        return [*command, *audit, "-s", f"SITEMAP_CRAWL_REPORT_FILE={out.parent / 'report.html'}"], cwd
    if tool in ("ours", "baseline"):
        if tool == "baseline" and not BASELINE:
            raise SystemExit("the tool baseline needs --baseline DIR (a checkout of another commit)")
        # "python -m" puts the working directory first on sys.path: the baseline's package is
        # the one imported (and its parse workers follow it), with this venv's dependencies
        return [
            str(VENV_PY),
            "-m",
            "scrapy",
            "crawl",
            "sitemaps",
            "-a",
            f"homepage={ctx.base}/",
            "-O",
            str(out),
            "-s",
            "LOG_LEVEL=INFO",
        ], BASELINE[0] if tool == "baseline" else REPO
    if tool == "usp":
        assert ctx.usp_python is not None
        return [
            str(ctx.usp_python),
            str(TOOLS_DIR / "usp_driver.py"),
            f"{ctx.base}/",
            str(out),
        ], ctx.run_dir
    if tool == "scrapy_sitemapspider":
        return [
            str(VENV_PY),
            "-m",
            "scrapy",
            "runspider",
            str(TOOLS_DIR / "scrapy_sitemap_spider.py"),
            "-a",
            f"robots_url={ctx.base}/robots.txt",
            "-O",
            str(out),
            "-s",
            "LOG_LEVEL=INFO",
        ], ctx.spider_cwd
    if tool == "floor":
        return [
            str(VENV_PY),
            str(TOOLS_DIR / "floor.py"),
            str(ctx.site),
            ctx.base,
            str(out),
        ], ctx.run_dir
    raise ValueError(tool)


def output_name(tool: str) -> str:
    jsonl_tools = ("ours", "ours_audit", "baseline", "baseline_audit", "scrapy_sitemapspider")
    return "pages.jsonl" if tool in jsonl_tools else "pages.txt"


# --------------------------------------------------------------------------- reporting


@dataclass
class RunRecord:
    tool: str
    round: int
    measurement: Measurement
    check: dict[str, Any]
    server_cpu_s: float
    other_cpu_s: float
    log_file: str
    log_scan: dict[str, Any] = field(default_factory=dict)


def fmt(x: float | None, nd: int = 2) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


def median_or_none(xs: list[float | None]) -> float | None:
    vals = [x for x in xs if x is not None]
    return statistics.median(vals) if vals else None


def summarize(records: list[RunRecord], tools: list[str], expected: int) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for tool in tools:
        rs = [r for r in records if r.tool == tool]
        if not rs:
            continue
        wall = statistics.median(r.measurement.wall_s for r in rs)
        found = statistics.median(r.check["items"] for r in rs)
        out[tool] = {
            "runs": len(rs),
            "wall_s": wall,
            "cpu_s": statistics.median(r.measurement.cpu_s for r in rs),
            "peak_rss_mib": statistics.median(r.measurement.peak_rss_mib for r in rs),
            "first_page_s": median_or_none([r.measurement.first_page_s for r in rs]),
            "pages_found": found,
            "pages_per_s": found / wall if wall else None,
            "server_cpu_s": statistics.median(r.server_cpu_s for r in rs),
            "other_cpu_s": statistics.median(r.other_cpu_s for r in rs),
            "exact_all_runs": all(r.check["exact"] for r in rs),
            "failed_runs": sum(1 for r in rs if r.measurement.exit_code != 0 or r.measurement.timed_out),
            "missing": max(r.check["missing"] for r in rs),
            "extra": max(r.check["extra"] for r in rs),
            "duplicates": max(r.check["duplicates"] for r in rs),
            "expected": expected,
        }
    return out


def markdown_table(summary: dict[str, dict[str, Any]]) -> str:
    usp = summary.get("usp")
    lines = [
        (
            "| tool | wall s (median) | CPU s | peak RSS MiB | pages found | pages/s | speed vs USP "
            "| CPU vs USP | first page s | page set |"
        ),
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for tool, s in summary.items():
        vs = f"{usp['wall_s'] / s['wall_s']:.2f}x" if usp and s["wall_s"] else "n/a"
        cvs = f"{usp['cpu_s'] / s['cpu_s']:.2f}x" if usp and s["cpu_s"] else "n/a"
        if s["exact_all_runs"]:
            ok = "exact"
        else:
            ok = f"**wrong set** (missing {s['missing']}, extra {s['extra']}, dup {s['duplicates']})"
        if s["failed_runs"]:
            ok += f"; {s['failed_runs']} failed run(s)"
        lines.append(
            f"| {tool} | {fmt(s['wall_s'])} | {fmt(s['cpu_s'])} | {fmt(s['peak_rss_mib'], 0)} "
            f"| {int(s['pages_found']):,} | {fmt(s['pages_per_s'], 0)} | {vs} | {cvs} "
            f"| {fmt(s['first_page_s'])} | {ok} |"
        )
    return "\n".join(lines)


def raw_table(records: list[RunRecord]) -> str:
    lines = [
        (
            "| tool | round | exit | wall s | user s | sys s | peak RSS MiB | first page s | items | missing "
            "| extra | dup | server CPU s | other CPU s | error lines |"
        ),
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in records:
        m, c = r.measurement, r.check
        exit_s = "timeout" if m.timed_out else str(m.exit_code)
        lines.append(
            f"| {r.tool} | {r.round} | {exit_s} | {m.wall_s:.2f} | {m.user_s:.2f} | {m.sys_s:.2f} "
            f"| {m.peak_rss_mib:.0f} | {fmt(m.first_page_s)} | {c['items']} | {c['missing']} | {c['extra']} "
            f"| {c['duplicates']} | {r.server_cpu_s:.2f} | {r.other_cpu_s:.2f} | {r.log_scan.get('error_lines', 0)} |"
        )
    return "\n".join(lines)


def results_path(label: str, delay_label: str) -> Path:
    return WORK / f"results-{label}-{delay_label}.json"


def save_results(
    a: argparse.Namespace,
    tools: list[str],
    pages: int,
    label: str,
    manifest: dict[str, Any],
    started: dt.datetime,
    records: list[RunRecord],
    complete: bool,
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Write the results JSON (also after every run, so an interrupted benchmark keeps its data)."""
    summary = summarize(records, tools, pages)
    files = manifest.get("files", [])
    result: dict[str, Any] = {
        "date": started.isoformat(timespec="seconds"),
        "complete": complete,
        "size": label,
        "pages": pages,
        "seed": a.seed,
        "delay_ms": a.delay_ms,
        "runs": a.runs,
        "tools": tools,
        "site": {
            "sitemap_files": len(files) if isinstance(files, list) else None,
            "uncompressed_bytes": manifest.get("uncompressed_bytes"),
            "url_set_digest": manifest.get("url_set_digest"),
        },
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "summary": summary,
        "runs_raw": [asdict(r) for r in records],
    }
    path = results_path(label, f"{a.delay_ms:g}ms")
    path.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return summary, result


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="1m", help="200k, 1m, 5m or a page count (default 1m)")
    ap.add_argument("--seed", type=int, default=generate_site.DEFAULT_SEED)
    ap.add_argument("--delay-ms", type=float, default=0.0, help="server delay per response")
    ap.add_argument("--runs", type=int, default=3, help="rounds; each round runs every tool once")
    ap.add_argument(
        "--tools",
        default=",".join(t for t in ALL_TOOLS if t not in ("baseline", "ours_audit", "baseline_audit")),
        help=f"comma-separated subset of {ALL_TOOLS} (baseline and the _audit tools are not in the default set)",
    )
    ap.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help="port the site is generated for and served on",
    )
    ap.add_argument(
        "--keep-site",
        action="store_true",
        help="keep a site generated by this run for reuse",
    )
    ap.add_argument("--keep-output", action="store_true", help="keep each run's page output file")
    ap.add_argument(
        "--wait-idle",
        type=float,
        default=30.0,
        help="before each run wait up to this many seconds for other CPU load to drop (0: don't)",
    )
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per tool run")
    ap.add_argument(
        "--baseline",
        type=Path,
        help="a checkout of another commit (git worktree add DIR COMMIT), run as the tool 'baseline'",
    )
    a = ap.parse_args(argv)
    if a.baseline is not None:
        BASELINE.append(a.baseline.resolve())

    tools = [t.strip() for t in a.tools.split(",") if t.strip()]
    for t in tools:
        if t not in ALL_TOOLS:
            ap.error(f"unknown tool {t!r}; choose from {ALL_TOOLS}")
    pages = generate_site.parse_size(a.size)
    label = generate_site.size_label(pages)
    delay_label = f"{a.delay_ms:g}ms"
    base = f"http://127.0.0.1:{a.port}"

    WORK.mkdir(parents=True, exist_ok=True)
    usp_python = ensure_usp_venv() if "usp" in tools else None
    site, manifest, generated = ensure_site(pages, a.seed, base)
    run_dir = WORK / "runs" / f"{label}-{delay_label}"
    run_dir.mkdir(parents=True, exist_ok=True)
    spider_cwd = Path(tempfile.mkdtemp(prefix="sitemap-bench-"))  # no scrapy.cfg above it
    env = {k: v for k, v in os.environ.items() if k not in PROXY_VARS}
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    ctx = Context(
        base=base,
        site=site,
        run_dir=run_dir,
        usp_python=usp_python,
        spider_cwd=spider_cwd,
    )

    log("loading expected page set ...")
    expected = load_expected(site)
    assert len(expected) == pages, (len(expected), pages)
    warm_page_cache(site)
    started = dt.datetime.now(dt.UTC)
    records: list[RunRecord] = []
    try:
        with ServerProcess(site, port=a.port, delay_ms=a.delay_ms) as server:
            log(f"serving {site} at {server.base_url} (server pid {server.pid}, delay {delay_label})")
            for rnd in range(1, a.runs + 1):
                k = (rnd - 1) % len(tools)
                order = tools[k:] + tools[:k]  # rotate the order between rounds
                for tool in order:
                    out = run_dir / f"{tool}-r{rnd}-{output_name(tool)}"
                    log_path = run_dir / f"{tool}-r{rnd}.log"
                    out.unlink(missing_ok=True)
                    cmd, cwd = tool_command(tool, ctx, out)
                    log(f"[round {rnd}] {tool}: {' '.join(cmd)}")
                    if a.wait_idle > 0:
                        busy = wait_for_idle(a.wait_idle)
                        if busy >= 0.25:
                            log(f"    machine still busy ({busy:.2f} cores) after {a.wait_idle:g} s; running anyway")
                    srv_cpu0 = cpu_seconds(server.pid)
                    busy0 = system_busy_seconds()
                    m = measure(cmd, cwd, env, log_path, out, a.timeout)
                    srv_cpu = cpu_seconds(server.pid) - srv_cpu0
                    # CPU used by anything else on the machine meanwhile (contention)
                    other = max(0.0, system_busy_seconds() - busy0 - srv_cpu - m.cpu_s)
                    if out.exists():
                        urls = iter_jsonl_urls(out) if out.suffix == ".jsonl" else iter_line_urls(out)
                        check = check_pages(urls, expected)
                    else:
                        check = check_pages(iter(()), expected)
                    if not a.keep_output:
                        out.unlink(missing_ok=True)
                    rec = RunRecord(
                        tool,
                        rnd,
                        m,
                        check,
                        round(srv_cpu, 2),
                        round(other, 2),
                        str(log_path),
                        scan_log(log_path),
                    )
                    records.append(rec)
                    save_results(a, tools, pages, label, manifest, started, records, complete=False)
                    log(
                        f"    exit {m.exit_code}{' TIMEOUT' if m.timed_out else ''}  wall {m.wall_s:.2f} s  "
                        f"cpu {m.cpu_s:.2f} s  peak RSS {m.peak_rss_mib:.0f} MiB  first page "
                        f"{fmt(m.first_page_s)} s  items {check['items']}  missing {check['missing']}  "
                        f"extra {check['extra']}  dup {check['duplicates']}  server cpu {srv_cpu:.2f} s  "
                        f"other cpu {other:.2f} s  "
                        f"log error lines {rec.log_scan['error_lines']}"
                    )
                    if m.exit_code != 0 or m.timed_out or rec.log_scan["error_lines"]:
                        for line in rec.log_scan["first_errors"] or rec.log_scan["tail"]:
                            log(f"      | {line[:300]}")
                    if not check["exact"]:
                        for key in ("missing_sample", "extra_sample"):
                            for u in check[key][:3]:
                                log(f"      {key.split('_')[0]}: {u}")
    finally:
        shutil.rmtree(spider_cwd, ignore_errors=True)
        if generated and not a.keep_site:
            shutil.rmtree(site, ignore_errors=True)

    summary, result = save_results(a, tools, pages, label, manifest, started, records, complete=True)
    res_path = results_path(label, delay_label)

    print(f"\n## {label} pages ({pages:,}), server delay {delay_label}, {a.runs} round(s), {result['date']}\n")
    print(markdown_table(summary))
    print("\nspeed/CPU vs USP = USP median / tool median (higher is better).\n")
    print("### Raw runs\n")
    print(raw_table(records))
    print(f"\nresults: {res_path}")
    return 1 if any(s["failed_runs"] for s in summary.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
