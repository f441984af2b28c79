"""Audit a folder of sitemap files (a MANIFEST.tsv lists them) with the pure checks; print counts by rule.

    python benchmarks/audit_corpus.py /work/shared/corpus/real [--show RULE]

Each file is audited as if served at https://<file's repo host>/<file name>: the
location rules compare page hosts to that, so the MANIFEST's ``url`` column is not
needed. Findings whose rule is ``--show`` are printed (to check they are right).
"""

from __future__ import annotations

import argparse
import csv
from collections import Counter
from itertools import chain
from pathlib import Path
from urllib.parse import urlsplit

from sitemap_crawl.audit.auditor import SiteAudit
from sitemap_crawl.audit.scan import SitemapFacts, scan


def first_host(body: bytes) -> str:
    """The host of the document's first <loc> (so the location rules judge the rest against it)."""
    facts = SitemapFacts()
    locs = [entry.loc for entry in scan(body, facts) if entry.loc]
    if facts.root is None:
        locs = body.decode("utf-8", "replace").split()
    for loc in locs:
        parts = urlsplit(loc)
        if parts.scheme and parts.hostname:
            return f"{parts.scheme}://{parts.hostname}"
    return "https://example.com"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("folder", type=Path)
    parser.add_argument("--show", action="append", default=[])
    args = parser.parse_args()
    totals: Counter[str] = Counter()
    files_with: Counter[str] = Counter()
    with open(args.folder / "MANIFEST.tsv", newline="") as manifest:
        rows = [(row["file"], row["kind"]) for row in csv.DictReader(manifest, delimiter="\t")]
    names = [name for name, _kind in rows]
    for name, kind in rows:
        body = (args.folder / name).read_bytes()
        audit = SiteAudit(name)
        # served at the root of the first page's site: a sitemap's directory is "/"
        if kind == "robots_txt":
            findings = audit.audit_robots(body, f"https://example.com/{name}")
        else:
            findings = audit.audit_sitemap(body, f"{first_host(body)}/{name}")
        for finding in chain(findings, audit.finish()):
            if finding.rule in args.show:
                print(finding)
        totals.update(audit.counts)
        files_with.update(audit.counts.keys())
    print(f"{len(names)} files")
    for rule, count in totals.most_common():
        print(f"| `{rule}` | {count:,} | {files_with[rule]} |")


if __name__ == "__main__":
    main()
