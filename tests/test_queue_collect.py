"""The exactly-once step (sitemap_crawl.queue.collect and ``scrapy sitemaps-collect``): for
each site, the rows of exactly one complete attempt, whatever crashes left in the files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from sitemap_crawl.queue.collect import collect, expand, tree_page_count
from tests.support.crawl import REPO_ROOT

A, B, C = "http://a.test/", "http://b.test/", "http://c.test/"


def tree(site: str, pages: int, attempt: str | None) -> dict[str, Any]:
    node = {"url": f"{site}map.xml", "kind": "xml_urlset", "error": None, "page_count": pages, "sub_sitemaps": []}
    data: dict[str, Any] = {"url": site, "kind": "website", "error": None, "page_count": 0, "sub_sitemaps": [node]}
    if attempt is not None:
        data["attempt"] = attempt
    return data


def rows(site: str, count: int, attempt: str) -> list[dict[str, Any]]:
    return [{"url": f"{site}p{i}", "website": site, "attempt": attempt} for i in range(count)]


def write(path: Path, items: list[dict[str, Any]], tail: str = "") -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in items) + tail, encoding="utf-8")
    return path


def scenario(tmp_path: Path) -> None:
    # worker 1 was killed while mapping A (rows, no tree line; its last row cut short), and
    # was slow on B: worker 2 claimed B and completed it, then worker 1 completed B too.
    # worker 2 was stopped (Ctrl-C) while mapping C: its tree line has no attempt; worker 1,
    # restarted with -o (appending), mapped A and C again.
    write(tmp_path / "trees-1.jsonl", [tree(B, 2, "b/1"), tree(A, 3, "a/3"), tree(C, 1, "c/2")])
    write(tmp_path / "trees-2.jsonl", [tree(B, 2, "b/2"), tree(C, 1, None)])
    write(
        tmp_path / "pages-1.jsonl",
        rows(A, 2, "a/1") + rows(B, 2, "b/1") + rows(A, 3, "a/3") + rows(C, 1, "c/2"),
        tail='{"url": "http://a.test/p2", "webs',
    )
    write(tmp_path / "pages-2.jsonl", rows(A, 1, "a/2") + rows(B, 2, "b/2") + rows(C, 1, "c/1"))


def test_each_site_keeps_the_rows_of_one_complete_attempt(tmp_path: Path) -> None:
    scenario(tmp_path)
    out = tmp_path / "all.jsonl"
    trees_out = tmp_path / "trees.jsonl"
    with out.open("wb") as handle, trees_out.open("wb") as trees_handle:
        report = collect(
            expand([str(tmp_path / "trees-*.jsonl")]), expand([str(tmp_path / "pages-*.jsonl")]), handle, trees_handle
        )
    kept = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert kept == rows(B, 2, "b/1") + rows(A, 3, "a/3") + rows(C, 1, "c/2")
    assert [json.loads(line)["attempt"] for line in trees_out.read_text("utf-8").splitlines()] == ["b/1", "a/3", "c/2"]
    assert (report.sites, report.pages, report.left_out, report.repeated_attempts) == (3, 6, 6, 1)
    assert report.unreadable_lines == 1
    assert report.short_sites == {}


def test_a_missing_feed_file_is_reported(tmp_path: Path) -> None:
    scenario(tmp_path)
    (tmp_path / "pages-1.jsonl").unlink()  # the rows of b/1, a/3 and c/2 are gone
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "scrapy",
            "sitemaps-collect",
            "--trees",
            str(tmp_path / "trees-*.jsonl"),
            "--pages",
            str(tmp_path / "pages-*.jsonl"),
            "-O",
            str(tmp_path / "all.jsonl"),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "3 sites, 0 pages kept; 4 rows of incomplete or repeated attempts left out" in result.stderr
    assert f"{A}: 0 rows but its tree counts 3 pages (a feed file missing?)" in result.stderr
    assert (tmp_path / "all.jsonl").read_text() == ""


def test_the_tree_page_count_sums_every_node() -> None:
    nested = tree(A, 2, "x")
    nested["sub_sitemaps"][0]["sub_sitemaps"] = [tree(A, 5, None)]
    assert tree_page_count(nested) == 7
