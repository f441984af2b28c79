"""The exactly-once step (sitemap_crawl.queue.collect and ``scrapy sitemaps-collect``): for
each site, the rows of exactly one complete attempt, whatever crashes left in the files."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sitemap_crawl.queue.collect import attempt_order, collect, expand, tree_row_count
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
    assert kept == rows(A, 3, "a/3") + rows(C, 1, "c/2") + rows(B, 2, "b/2")  # B: the newer complete attempt
    assert [json.loads(line)["attempt"] for line in trees_out.read_text("utf-8").splitlines()] == ["a/3", "c/2", "b/2"]
    assert (report.sites, report.pages, report.left_out, report.repeated_attempts) == (3, 6, 6, 1)
    assert report.unreadable_lines == 1
    assert report.short_sites == {}


def test_the_newest_complete_attempt_is_kept_whatever_the_file_order(tmp_path: Path) -> None:
    # worker a was paused with A's requests in flight: b took A over (delivery 2), mapped it and
    # was acknowledged; a resumed, its downloads timed out, and it wrote a complete-looking line
    # for A too (unreachable, no pages), in a file that sorts first. The server acknowledges only
    # the newest delivery, so that is the attempt kept, in any file order.
    entry, other = "1764000000000-0", "1764000000000-1"
    timed_out = tree(A, 0, f"{entry}/1") | {"error": "unreachable: timeout", "sub_sitemaps": []}
    write(tmp_path / "trees-a.jsonl", [timed_out, tree(B, 1, f"{other}/1")])
    write(tmp_path / "trees-b.jsonl", [tree(A, 3, f"{entry}/2"), tree(A, 3, f"{entry}/2")])  # a line twice
    write(tmp_path / "trees-c.jsonl", [tree(C, 1, "1764000000000-2/1"), tree(C, 2, "1763999999999-9/4")])
    write(tmp_path / "pages-a.jsonl", rows(B, 1, f"{other}/1") + rows(C, 2, "1763999999999-9/4"))
    write(tmp_path / "pages-b.jsonl", rows(A, 3, f"{entry}/2") + rows(C, 1, "1764000000000-2/1"))
    out, trees_out = io.BytesIO(), io.BytesIO()
    report = collect(
        expand([str(tmp_path / "trees-*.jsonl")]), expand([str(tmp_path / "pages-*.jsonl")]), out, trees_out
    )
    kept = [json.loads(line) for line in out.getvalue().splitlines()]
    assert kept == rows(B, 1, f"{other}/1") + rows(A, 3, f"{entry}/2") + rows(C, 1, "1764000000000-2/1")
    assert [(line["url"], line["attempt"]) for line in map(json.loads, trees_out.getvalue().splitlines())] == [
        (B, f"{other}/1"),
        (A, f"{entry}/2"),
        (C, "1764000000000-2/1"),  # a later entry of the same site (the queue started afresh) is newer
    ]
    assert (report.sites, report.pages, report.left_out, report.repeated_attempts) == (3, 5, 2, 2)
    assert report.repeated_tree_lines == 1  # (A's line twice: one attempt)
    assert report.short_sites == {}


def test_attempts_are_ordered_by_entry_then_delivery() -> None:
    assert attempt_order("1764000000000-0/2") == (1764000000000, 0, 2)
    assert attempt_order("1764000000000-0/10") > attempt_order("1764000000000-0/9")
    assert attempt_order("1764000000000-10/1") > attempt_order("1764000000000-9/3")
    assert attempt_order("b/2") == (-1, -1, 2)  # not an entry id: the delivery still orders
    assert attempt_order("") == (-1, -1, -1)


def test_a_missing_feed_file_is_reported(tmp_path: Path) -> None:
    scenario(tmp_path)
    (tmp_path / "pages-1.jsonl").unlink()  # the rows of a/3 and c/2 are gone
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
    assert "3 sites, 2 pages kept; 2 rows of incomplete or repeated attempts left out" in result.stderr
    assert f"{A}: 0 rows but its tree counts 3 pages (a feed file missing?)" in result.stderr
    assert f"{C}: 0 rows but its tree counts 1 pages" in result.stderr
    assert [json.loads(line) for line in (tmp_path / "all.jsonl").read_text().splitlines()] == rows(B, 2, "b/2")


def test_rows_given_twice_are_reported_with_their_files(tmp_path: Path) -> None:
    write(tmp_path / "trees-1.jsonl", [tree(A, 2, "a/1"), tree(B, 1, "b/1")])
    write(tmp_path / "pages-w1.jsonl", rows(A, 2, "a/1") + rows(B, 1, "b/1"))
    write(tmp_path / "pages-all.jsonl", rows(A, 2, "a/1"))  # an earlier collect output the pattern matches
    result = subprocess.run(
        [
            sys.executable, "-m", "scrapy", "sitemaps-collect", "--trees", str(tmp_path / "trees-*.jsonl"),
            "--pages", str(tmp_path / "pages-*.jsonl"), "-O", str(tmp_path / "all.jsonl"),
        ],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1
    files = f"{tmp_path / 'pages-all.jsonl'}, {tmp_path / 'pages-w1.jsonl'}"
    assert f"{A}: 4 rows but its tree counts 2 pages; they came from {files}" in result.stderr
    assert B not in result.stderr


def test_tree_lines_given_twice_are_no_repeated_attempts(tmp_path: Path) -> None:
    # an earlier collect's --trees-out matched by --trees: its lines were counted as
    # repeated complete attempts (44 where there were none), and nothing said why
    write(tmp_path / "trees-1.jsonl", [tree(A, 2, "a/1"), tree(B, 1, "b/1"), tree(B, 1, "b/2")])
    write(tmp_path / "trees-all.jsonl", [tree(A, 2, "a/1"), tree(B, 1, "b/2")])
    write(tmp_path / "pages-1.jsonl", rows(A, 2, "a/1") + rows(B, 1, "b/1") + rows(B, 1, "b/2"))
    result = subprocess.run(
        [
            sys.executable, "-m", "scrapy", "sitemaps-collect", "--trees", str(tmp_path / "trees-*.jsonl"),
            "--pages", str(tmp_path / "pages-*.jsonl"), "-O", str(tmp_path / "all.jsonl"),
        ],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "(1 repeated complete attempts)" in result.stderr  # B's first attempt, b/1
    assert (
        f"2 tree lines repeat the site and attempt of one read before, in {tmp_path / 'trees-all.jsonl'}"
    ) in result.stderr
    kept = [json.loads(line) for line in (tmp_path / "all.jsonl").read_text("utf-8").splitlines()]
    assert kept == rows(A, 2, "a/1") + rows(B, 1, "b/2")


def test_the_tree_row_count_sums_every_node() -> None:
    nested = tree(A, 2, "x")
    nested["sub_sitemaps"][0]["sub_sitemaps"] = [tree(A, 5, None)]
    assert tree_row_count(nested) == 7


def test_a_history_runs_tree_counts_its_changes_not_its_pages(tmp_path: Path) -> None:
    # an unchanged site of a history run gives no row: it was reported short (a feed missing?)
    unchanged, changed = tree(A, 5, "a/1"), tree(B, 4, "b/1")
    unchanged["sub_sitemaps"][0] |= {"change": "unchanged", "changes": 0}
    changed["sub_sitemaps"][0] |= {"change": "changed", "changes": 2}
    write(tmp_path / "trees.jsonl", [unchanged, changed])
    write(tmp_path / "pages.jsonl", rows(B, 2, "b/1"))

    report = collect([tmp_path / "trees.jsonl"], [tmp_path / "pages.jsonl"], io.BytesIO())

    assert (report.sites, report.pages, report.short_sites) == (2, 2, {})
    write(tmp_path / "pages.jsonl", rows(B, 1, "b/1"))
    assert collect([tmp_path / "trees.jsonl"], [tmp_path / "pages.jsonl"], io.BytesIO()).short_sites == {B: (1, 2)}


def _collect_command(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "scrapy", "sitemaps-collect", "--trees", str(tmp_path / "trees-*.jsonl")]
    command += ["--pages", str(tmp_path / "pages-*.jsonl"), *extra]
    return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60)  # (a stray "-" lands here)


@pytest.mark.parametrize(
    ("outputs", "said"),
    [
        (["-O", "{tmp}/pages-2.jsonl"], "-O {tmp}/pages-2.jsonl is one of the files read"),
        (["-O", "{tmp}/all.jsonl", "--trees-out", "{tmp}/trees-1.jsonl"], "--trees-out {tmp}/trees-1.jsonl is one of"),
        (["-O", "{tmp}/all.jsonl", "--trees-out", "{tmp}/./all.jsonl"], "-O and --trees-out name the same file"),
        (["-O", "-", "--trees-out", "-"], "-O and --trees-out name the same file '-'"),
        (["-O", "-", "--trees-out", "/dev/stdout"], "-O and --trees-out name the same file '/dev/stdout'"),
        (["-O", "{tmp}/linked.jsonl"], "-O {tmp}/linked.jsonl is one of the files read"),  # a hard link
        # (-O was emptied before --trees-out was found unwritable)
        (["-O", "{tmp}/earlier.jsonl", "--trees-out", "{tmp}/no/t.jsonl"], "--trees-out {tmp}/no/t.jsonl cannot be"),
        (
            ["-O", "{tmp}/trees-1.jsonl/all.jsonl"],
            "-O {tmp}/trees-1.jsonl/all.jsonl cannot be written: Not a directory",
        ),
        (["-O", "{tmp}/no/such/all.jsonl"], "cannot be written: No such file or directory"),
    ],
)
def test_outputs_that_would_destroy_an_input_or_each_other_are_refused(
    tmp_path: Path, outputs: list[str], said: str
) -> None:
    # -O or --trees-out naming a file read (a worker's only copy of its pages) emptied it
    # before it was read; two outputs on one file mixed their lines (exit 0); a folder that
    # cannot be written gave a traceback
    scenario(tmp_path)
    os.link(tmp_path / "trees-2.jsonl", tmp_path / "linked.jsonl")
    (tmp_path / "earlier.jsonl").write_text('{"kept": true}\n')
    before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    result = _collect_command(tmp_path, *(value.format(tmp=tmp_path) for value in outputs))
    assert result.returncode == 2, result.stderr
    assert said.format(tmp=tmp_path) in result.stderr
    assert "Traceback" not in result.stderr
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == before


def test_an_output_that_is_no_regular_file_is_written_as_it_is(tmp_path: Path) -> None:
    # outputs are emptied once all are open: /dev/null (or /dev/stdout, a pipe) cannot be,
    # and the command ended in a traceback
    scenario(tmp_path)
    result = _collect_command(tmp_path, "-O", "/dev/null", "--trees-out", str(tmp_path / "t.jsonl"))
    assert result.returncode == 0, result.stderr
    assert len((tmp_path / "t.jsonl").read_text().splitlines()) == 3


def test_trees_out_may_be_standard_output(tmp_path: Path) -> None:
    scenario(tmp_path)
    result = _collect_command(tmp_path, "-O", str(tmp_path / "all.jsonl"), "--trees-out", "-")
    assert result.returncode == 0, result.stderr
    assert [json.loads(line)["attempt"] for line in result.stdout.splitlines()] == ["a/3", "c/2", "b/2"]
    assert not (tmp_path / "-").exists()  # (it was a file named "-")
