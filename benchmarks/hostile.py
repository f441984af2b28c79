"""Run every hostile case as a real crawl and measure it: wall time, CPU time and peak RSS.

    .venv/bin/python benchmarks/hostile.py                 # every case (about 4 minutes)
    .venv/bin/python benchmarks/hostile.py --skip-slow     # without the 50,000-fetch index
    .venv/bin/python benchmarks/hostile.py --only gzip_bomb_file,robots_huge --json out.json

The cases are ``CASES`` of tests/test_hostile.py (the same sites, settings and checks as
the tests), so this table and the tests can't disagree. Each crawl is the real
``scrapy crawl sitemaps`` command in a subprocess against a local fixture server running
in this process. Peak RSS is the larger of the sum over the crawl's process tree (the
crawl and its parsing worker) of each process's PSS (shared pages counted once), sampled
every 20 ms from /proc, and the largest high-water mark (VmHWM) of one process. (Not
wait4()'s ru_maxrss: Linux carries it over from the forked copy of this process, so it
would report this script's own size.) CPU is user + system time of the crawl and its
children (from wait4(), or the last /proc samples of the tree if larger).

Prints a markdown table; exits 1 if a case's check fails, or a targeted case misses a
target (peak RSS under 300 MB, wall time under 30 s).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from tests.support import CrawlResult, FixtureServer  # noqa: E402
from tests.support.crawl import _crawl_env, build_command  # noqa: E402
from tests.support.fixture_server import RouteLike  # noqa: E402
from tests.test_hostile import (  # noqa: E402
    CASES,
    RSS_TARGET_MB,
    WALL_TARGET_S,
    Case,
    CaseEnv,
    RssSampler,
)


@dataclass
class Measured:
    case: str
    about: str
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    outcome: str
    passed: bool
    targeted: bool
    within_target: bool


def run(case: Case, work: Path) -> Measured:
    servers: list[FixtureServer] = []

    def start_site(routes: Mapping[str, RouteLike] | None = None) -> FixtureServer:
        server = FixtureServer(routes).start()
        servers.append(server)
        return server

    tmp = work / case.name
    tmp.mkdir(parents=True)
    try:
        site = case.build(CaseEnv(start_site, tmp))
        command, feed_path, tree_path = build_command(
            {"homepage": site.base, **case.args}, tmp_dir=tmp, settings=case.settings
        )
        started = time.monotonic()
        with (tmp / "stdout.txt").open("wb") as stdout, (tmp / "stderr.txt").open("wb") as stderr:
            process = subprocess.Popen(
                command,
                cwd=REPO_ROOT,
                env=_crawl_env(None),
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                start_new_session=True,
            )
        sampler = RssSampler(process.pid)
        deadline = started + case.timeout
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                process.kill()
                pid, status, usage = os.wait4(process.pid, 0)
                break
            sampler.sample()
            time.sleep(sampler.interval)
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here: tell Popen
        wall = time.monotonic() - started
        result = CrawlResult(
            command=command,
            returncode=process.returncode,
            stdout=(tmp / "stdout.txt").read_text("utf-8", errors="replace"),
            stderr=(tmp / "stderr.txt").read_text("utf-8", errors="replace"),
            feed_path=feed_path,
            tree_path=tree_path,
            output_format="jsonl",
            tmp_dir=tmp,
            duration=wall,
        )
        peak = sampler.peak_mb
        cpu = max(usage.ru_utime + usage.ru_stime, sampler.cpu_seconds)
        try:
            result.assert_ok()
            outcome = case.check(result, site)
            passed = True
        except AssertionError as error:
            outcome = "FAILED: " + " ".join(str(error).split())[:300]
            passed = False
        within = peak < RSS_TARGET_MB and wall < WALL_TARGET_S
        return Measured(case.name, case.about, wall, cpu, peak, outcome, passed, case.targeted, within)
    finally:
        for server in servers:
            server.stop()


def table(rows: list[Measured]) -> str:
    lines = [
        "| case | what the server sends | wall s | CPU s | peak RSS MB | outcome (tree node) |",
        "|---|---|---:|---:|---:|---|",
    ]
    for row in rows:
        mark = ""
        if not row.passed:
            mark = " **check failed**"
        elif row.targeted and not row.within_target:
            mark = " **over target**"
        elif not row.targeted:
            mark = " (not targeted)"
        lines.append(
            f"| `{row.case}`{mark} | {row.about} | {row.wall_s:.1f} | {row.cpu_s:.1f} | {row.peak_rss_mb:.0f} "
            f"| {row.outcome} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="comma-separated case names (default: all)")
    parser.add_argument("--skip-slow", action="store_true", help="leave out the minutes-long cases")
    parser.add_argument("--json", type=Path, help="also write the measurements here")
    parser.add_argument("--keep", action="store_true", help="keep each crawl's directory (logs, feed, tree)")
    options = parser.parse_args(argv)

    cases = CASES
    if options.only:
        wanted = {name.strip() for name in options.only.split(",") if name.strip()}
        unknown = wanted - {case.name for case in CASES}
        if unknown:
            parser.error(f"unknown case(s): {', '.join(sorted(unknown))}; known: {', '.join(c.name for c in CASES)}")
        cases = [case for case in CASES if case.name in wanted]
    if options.skip_slow:
        cases = [case for case in cases if not case.slow]

    work = Path(tempfile.mkdtemp(prefix="sitemap-hostile-"))
    load_before = os.getloadavg()
    rows: list[Measured] = []
    try:
        for case in cases:
            row = run(case, work)
            rows.append(row)
            status = "ok" if row.passed and (row.within_target or not row.targeted) else "MISSED"
            print(
                f"{status:6} {case.name:30} {row.wall_s:7.1f} s {row.cpu_s:7.1f} s CPU {row.peak_rss_mb:6.0f} MB"
                f"  {row.outcome}",
                file=sys.stderr,
                flush=True,
            )
    finally:
        if options.keep:
            print(f"crawl directories kept in {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    load_after = os.getloadavg()

    print(table(rows))
    print()
    print(
        f"{platform.python_implementation()} {platform.python_version()} on {platform.machine()}, "
        f"{os.cpu_count()} CPUs; load average {load_before[0]:.1f} before, {load_after[0]:.1f} after. "
        f"Targets: peak RSS < {RSS_TARGET_MB} MB and wall < {WALL_TARGET_S} s for every case not marked "
        f"'not targeted'."
    )
    if options.json:
        options.json.write_text(json.dumps([asdict(row) for row in rows], indent=1))
    failed = [row.case for row in rows if not row.passed or (row.targeted and not row.within_target)]
    if failed:
        print(f"\nmissed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
