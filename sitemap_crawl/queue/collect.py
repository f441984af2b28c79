"""Each site's pages exactly once from the outputs of a queue's workers.

A queue run's page rows carry ``attempt`` (the stream entry and delivery that wrote
them, ``<entry id>/<delivery>``) and a site's tree line names the attempt that
completed it. Every worker appends; after any crash the outputs may hold rows of
attempts that never completed (a killed worker) and several complete attempts of one
site (a worker killed between its tree line and its acknowledgement; a slow worker
finishing a site another had taken over). Collecting keeps, for each site, the rows of
its newest complete attempt (the latest entry, then the highest delivery) and nothing
else. It holds because a tree line is written only after every row of its attempt is
in the feed file (flushed and synced), a site is acknowledged only after its tree line,
and the server acknowledges only the attempt that holds the site, which is its newest
delivery: the newest complete attempt is the acknowledged one, and every acknowledged
site has it on disk. Where the files come from workers of versions that acknowledged
any attempt, the newest complete one is still a full mapping of the site.

JSON lines in and out. The chosen tree lines can be written too. A site whose
chosen attempt has fewer rows than its tree counts (its pages; in a history run, its
changes) is reported (a feed file lost or overwritten), and so is one with more rows (the
files they came from named: a feed file given twice, or an earlier collect output among the
page files); such rows are not deduplicated, as a site's rows may repeat a page (two sitemaps
listing it). Pure: no Scrapy, no server.
"""

from __future__ import annotations

import glob
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

from sitemap_crawl.items import node_rows


@dataclass
class CollectReport:
    """What a collection found."""

    sites: int = 0
    pages: int = 0
    left_out: int = 0
    """Rows of attempts that did not complete, or of a complete attempt that is not the site's newest."""
    repeated_attempts: int = 0
    """Complete attempts of a site other than its newest (kept: none of their rows)."""
    repeated_tree_lines: int = 0
    """Tree lines of a site and attempt read before (counted once): a tree file given twice,
    or an earlier collect's ``--trees-out`` among the tree files."""
    repeating_tree_files: dict[str, None] = field(default_factory=dict)
    """The files those lines were read from (the second time)."""
    unreadable_lines: int = 0
    short_sites: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Sites whose chosen attempt has fewer rows than its tree counts: (rows, tree count)
    (see :func:`tree_row_count`)."""
    long_sites: dict[str, tuple[int, int, list[str]]] = field(default_factory=dict)
    """Sites whose chosen attempt has more rows than its tree counts: (rows, tree count, the
    files they came from): a feed file given twice, or an earlier collect output among the
    page files. Not deduplicated: a site's pages may repeat (two sitemaps listing a page)."""


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


def tree_row_count(tree: dict[str, Any]) -> int:
    """The rows a site's tree counts: every node's ``page_count``, or, for a node of a history
    run (one with ``change``), the rows it exported (``changes``): a history run's rows are
    the changes, not the pages."""
    own = node_rows(tree.get("page_count"), tree.get("change"), tree.get("changes"))
    return own + sum(tree_row_count(child) for child in tree.get("sub_sitemaps") or ())


def attempt_order(attempt: str) -> tuple[int, int, int]:
    """Where an attempt named ``<entry id>/<delivery>`` (:attr:`~sitemap_crawl.queue.stream.Lease.attempt`;
    an entry id is ``<milliseconds>-<sequence>``) stands among a site's attempts: newer is greater.
    A part that is not a number counts as -1."""
    entry, _, delivery = attempt.rpartition("/")
    milliseconds, _, sequence = entry.partition("-")
    return _number(milliseconds), _number(sequence), _number(delivery)


def _number(text: str) -> int:
    return int(text) if text.isascii() and text.isdigit() else -1


def _choose(chosen: dict[str, str], expected: dict[str, int], tree: dict[str, Any], site: str, attempt: str) -> None:
    """Keep ``attempt`` (its tree line ``tree``) for ``site`` if it is newer than the one kept."""
    if site not in chosen or attempt_order(attempt) > attempt_order(chosen[site]):
        chosen[site] = attempt
        expected[site] = tree_row_count(tree)


def collect(
    tree_paths: Iterable[Path], page_paths: Iterable[Path], out: IO[bytes], trees_out: IO[bytes] | None = None
) -> CollectReport:
    """Write to ``out`` the rows of each site's newest complete attempt (see the module docstring)."""
    report = CollectReport()
    trees = list(tree_paths)  # read twice with trees_out
    chosen: dict[str, str] = {}
    expected: dict[str, int] = {}
    complete: set[tuple[str, str]] = set()
    for path in trees:
        for tree in _lines([path], report):
            attempt, site = tree.get("attempt"), tree.get("url")
            if not isinstance(attempt, str) or not isinstance(site, str):
                continue  # a site a run stopped before it was finished: not complete
            if (site, attempt) in complete:
                report.repeated_tree_lines += 1
                report.repeating_tree_files[str(path)] = None
                continue
            complete.add((site, attempt))
            _choose(chosen, expected, tree, site, attempt)
    report.sites = len(chosen)
    report.repeated_attempts = len(complete) - len(chosen)
    if trees_out is not None:  # a second pass: tree lines can be large, so none is held meanwhile
        written: set[str] = set()
        for tree in _lines(trees, CollectReport()):
            site = tree.get("url")
            if isinstance(site, str) and site not in written and tree.get("attempt") == chosen.get(site):
                trees_out.write(orjson.dumps(tree) + b"\n")
                written.add(site)
    rows: Counter[str] = Counter()
    files: dict[str, dict[str, None]] = {}
    for path in page_paths:
        for row in _lines([path], report):
            site = row.get("website")
            if isinstance(site, str) and row.get("attempt") == chosen.get(site):
                out.write(orjson.dumps(row) + b"\n")
                rows[site] += 1
                files.setdefault(site, {})[str(path)] = None
            else:
                report.left_out += 1
    report.pages = sum(rows.values())
    for site, count in expected.items():
        if rows[site] < count:
            report.short_sites[site] = (rows[site], count)
        elif rows[site] > count:
            report.long_sites[site] = (rows[site], count, list(files[site]))
    return report
