"""The naive baseline of the many-sites benchmark: one ``scrapy crawl sitemaps -a
homepage=...`` process per site, POOL at a time (run from the repository root).

Usage: python per_process_driver.py HOMEPAGES_FILE OUT_DIR POOL [SCRAPY SETTINGS...]

Each site's pages go to OUT_DIR/site-N.jsonl. Extra arguments are passed to every crawl
(the runner passes the test DNS resolver).
"""

from __future__ import annotations

import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def main() -> int:
    homepages_file, out_dir, pool = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    extra = sys.argv[4:]
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(homepages_file, encoding="utf-8") as f:
        homepages = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    t0 = time.perf_counter()

    def crawl(numbered: tuple[int, str]) -> int:
        n, homepage = numbered
        cmd = [sys.executable, "-m", "scrapy", "crawl", "sitemaps", "-a", f"homepage={homepage}"]
        cmd += ["-O", str(out_dir / f"site-{n}.jsonl"), "-s", "LOG_LEVEL=WARNING", *extra]
        return subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, check=False).returncode

    with ThreadPoolExecutor(pool) as executor:
        failed = sum(1 for code in executor.map(crawl, enumerate(homepages)) if code)
    print(f"per-process: {len(homepages)} sites, {failed} failed, {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
