"""Each site's pages exactly once from the outputs of a queue's workers.

A queue run's page rows carry ``attempt`` (the stream entry and delivery that wrote
them) and a site's tree line names the attempt that completed it. Every worker
appends; after any crash the outputs may hold rows of attempts that never completed
(a killed worker) and two complete attempts of one site (a slow worker finishing a
site another had claimed). Collecting keeps, for each site, the rows of the first
complete attempt found in the tree files (files in name order, lines in order) and
nothing else. It holds because a tree line is written only after every row of its
attempt is in the feed file (flushed and synced), and a site is acknowledged only
after its tree line: every acknowledged site has a complete attempt, and the rows of
one attempt are all the rows of one full mapping of the site.

JSON lines in and out. The chosen tree lines can be written too. A site whose
chosen attempt has fewer rows than its tree counts is reported (a feed file lost or
overwritten). Pure: no Scrapy, no server.
"""

from __future__ import annotations

import glob
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson


@dataclass
class CollectReport:
    """What a collection found."""

    sites: int = 0
    pages: int = 0
    left_out: int = 0
    """Rows of attempts that did not complete, or of a second complete attempt."""
    repeated_attempts: int = 0
    """Complete attempts beyond the first of a site (kept: none of their rows)."""
    unreadable_lines: int = 0
    short_sites: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Sites whose chosen attempt has fewer rows than its tree counts: (rows, tree count)."""


def expand(patterns: Iterable[str]) -> list[Path]:
    """Files named by paths or glob patterns, each once, in name order."""
    paths: set[Path] = set()
    for pattern in patterns:
        found = glob.glob(pattern)
        paths.update(Path(name) for name in (found or [pattern]))
    return sorted(paths)


def _lines(paths: Iterable[Path], report: CollectReport) -> Iterator[dict[str, Any]]:
    for path in paths:
        with path.open("rb") as handle:
            for line in handle:
                if not line.strip():
                    continue
                try:
                    value = orjson.loads(line)
                except orjson.JSONDecodeError:  # a line cut short by a crash
                    report.unreadable_lines += 1
                    continue
                if isinstance(value, dict):
                    yield value


def tree_page_count(tree: dict[str, Any]) -> int:
    """The pages a site's tree counts (every node's page_count)."""
    return int(tree.get("page_count") or 0) + sum(tree_page_count(child) for child in tree.get("sub_sitemaps") or ())


def collect(
    tree_paths: Iterable[Path], page_paths: Iterable[Path], out: IO[bytes], trees_out: IO[bytes] | None = None
) -> CollectReport:
    """Write to ``out`` the rows of each site's first complete attempt (see the module docstring)."""
    report = CollectReport()
    chosen: dict[str, str] = {}
    expected: dict[str, int] = {}
    for tree in _lines(tree_paths, report):
        attempt, site = tree.get("attempt"), tree.get("url")
        if not isinstance(attempt, str) or not isinstance(site, str):
            continue  # a site a run stopped before it was finished: not complete
        if site in chosen:
            report.repeated_attempts += 1
            continue
        chosen[site] = attempt
        expected[site] = tree_page_count(tree)
        if trees_out is not None:
            trees_out.write(orjson.dumps(tree) + b"\n")
    report.sites = len(chosen)
    rows: Counter[str] = Counter()
    for row in _lines(page_paths, report):
        site = row.get("website")
        if isinstance(site, str) and row.get("attempt") == chosen.get(site):
            out.write(orjson.dumps(row) + b"\n")
            rows[site] += 1
        else:
            report.left_out += 1
    report.pages = sum(rows.values())
    for site, count in expected.items():
        if rows[site] < count:
            report.short_sites[site] = (rows[site], count)
    return report
