"""CPU of the audit alone on a generated site: every file fed to CrawlAudit, in one process.

    .venv/bin/python benchmarks/audit_site.py benchmarks/.work/sites/1m-1 [--runs 3]

The site is one ``benchmarks/run.py --keep-site`` generated (robots.txt, the index, the
sitemaps, the feeds). Each file is audited as the audit process would audit it when
served from ``http://127.0.0.1:8931/``; the findings go to a file (``--findings``) and
their count is printed. Prints the least CPU time of ``--runs`` runs, of the whole
audit and of the scan alone (the second parse of each body: ``scan``), so that a change
to the checks can be timed without a crawl around it. Run it on two checkouts to
compare them (``PYTHONPATH=<other checkout>``: the path printed says which code ran).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import sitemap_crawl
from sitemap_crawl.audit.crawl_audit import CrawlAudit, ResponseFacts
from sitemap_crawl.audit.scan import SitemapFacts, scan
from sitemap_crawl.discovery.rules import CHILD, ROBOTS

BASE = "http://127.0.0.1:8931/"


def site_files(root: Path) -> list[tuple[str, bytes]]:
    """(URL, body) of the site's robots.txt, index, sitemaps and feeds, in that order: an index
    before the sitemaps it lists, as the crawl reads them (the audit knows a sitemap's index
    from it: a sitemap under an index robots.txt declares may list any page of the host)."""
    files = [root / "robots.txt", root / "sitemap_index.xml"]
    for folder in ("sitemaps", "feeds"):
        found = sorted(path for path in (root / folder).rglob("*") if path.is_file())
        files += sorted(found, key=lambda path: "index" not in path.name)  # (stable: sorted within each)
    return [(BASE + str(path.relative_to(root)), path.read_bytes()) for path in files if path.exists()]


def served_type(url: str) -> str:
    """The Content-Type benchmarks/serve.py sends for ``url`` (a .gz file as the file it is,
    without Content-Encoding: what the crawl's audit is told)."""
    if url.endswith(".gz"):
        return "application/x-gzip"
    return "text/plain" if url.endswith(".txt") else "application/xml"


def audit_all(files: list[tuple[str, bytes]], findings: str) -> int:
    """Audit every file as one site; the number of findings."""
    audit = CrawlAudit(findings, None, "*")
    count = 0
    for url, body in files:
        role = ROBOTS if url.endswith("/robots.txt") else CHILD
        facts = ResponseFacts(BASE, url, role, 200, url, served_type(url))
        count += sum(audit.audit(facts, body).values())
    count += sum(audit.finish().values())
    return count


def scan_all(files: list[tuple[str, bytes]]) -> int:
    """Scan every body (no check); the number of entries."""
    return sum(1 for _url, body in files for _entry in scan(body, SitemapFacts()))


def least_cpu(runs: int, work: object) -> tuple[float, int]:
    """The least process CPU time of ``runs`` calls of ``work`` and its result."""
    best, result = float("inf"), 0
    for _ in range(runs):
        start = time.process_time()
        result = work()  # type: ignore[operator]
        best = min(best, time.process_time() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("site", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--findings", default="/dev/null")
    args = parser.parse_args()
    files = site_files(args.site)
    print(f"code: {Path(sitemap_crawl.__file__).parent}")
    audit_s, found = least_cpu(args.runs, lambda: audit_all(files, args.findings))
    scan_s, entries = least_cpu(args.runs, lambda: scan_all(files))
    print(f"{len(files)} files, {entries:,} entries, {found:,} findings")
    print(f"audit: {audit_s:.2f} CPU s ({audit_s / max(1, entries) * 1e6:.1f} µs an entry); scan alone: {scan_s:.2f}")


if __name__ == "__main__":
    main()
