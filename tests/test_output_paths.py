"""The files a crawl writes besides its feeds are checked writable at start."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sitemap_crawl.output_paths import feed_files, shared_file, unwritable_reason


def test_a_path_in_new_folders_is_writable_and_the_folders_are_made(tmp_path: Path) -> None:
    target = tmp_path / "new" / "deeper" / "tree.json"
    assert unwritable_reason(target) is None
    assert target.parent.is_dir() and list(target.parent.iterdir()) == []  # the probe file is gone


def test_a_directory_or_a_path_below_a_file_is_not(tmp_path: Path) -> None:
    assert unwritable_reason(tmp_path) == f"{str(tmp_path)!r} is a directory"
    (tmp_path / "file.txt").write_text("x")
    reason = unwritable_reason(tmp_path / "file.txt" / "deeper" / "tree.json")
    assert reason == (
        f"{str(tmp_path / 'file.txt' / 'deeper' / 'tree.json')!r} cannot be written: "
        f"{str(tmp_path / 'file.txt')!r} is a file, not a folder"
    )  # it said "File exists"


@pytest.mark.skipif(not Path("/proc/version").is_file(), reason="no /proc/version (not Linux)")
def test_a_file_in_a_folder_that_takes_no_new_file_says_so() -> None:
    # it said "(No such file or directory)" of a file that exists
    assert unwritable_reason("/proc/version") == (
        "'/proc/version' cannot be written: no file can be made in '/proc' (No such file or directory)"
    )


def test_two_outputs_naming_one_file_are_told(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    outputs = [("SITEMAP_CRAWL_TREE_FILE", "out/tree.json"), ("SITEMAP_CRAWL_AUDIT_FILE", None)]
    assert shared_file(outputs) is None
    outputs.append(("SITEMAP_CRAWL_REPORT_FILE", str(tmp_path / "out" / "." / "tree.json")))
    assert shared_file(outputs) == (
        f"SITEMAP_CRAWL_TREE_FILE and SITEMAP_CRAWL_REPORT_FILE name the same file "
        f"{str(tmp_path / 'out' / '.' / 'tree.json')!r}: give each its own"
    )


def test_the_feeds_written_to_fixed_local_files() -> None:
    feeds = {
        "pages.csv": {"format": "csv"},
        "file:///tmp/a%20b.jsonl": {"format": "jsonl"},
        "s3://bucket/pages.jsonl": {"format": "jsonl"},
        "pages-%(time)s.json": {"format": "json"},
        "%(name)s-out.jsonl": {"format": "jsonl"},  # (always the same name: it was left out)
        "%(name)s-%(batch_id)d.jsonl": {"format": "jsonl"},
    }
    assert list(feed_files(feeds, "sitemaps")) == [
        ("the feed 'pages.csv'", "pages.csv"),
        ("the feed 'file:///tmp/a%20b.jsonl'", "/tmp/a b.jsonl"),
        ("the feed '%(name)s-out.jsonl'", "sitemaps-out.jsonl"),
    ]


def test_a_tilde_is_a_folder_name_not_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # neither the tree file nor Scrapy's feeds expand it: ~/t.json and $HOME/t.json are two files
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert shared_file([("a", "~/t.json"), ("b", str(tmp_path / "home" / "t.json"))]) is None


def test_a_hard_link_of_another_output_is_the_same_file(tmp_path: Path) -> None:
    # a symlink or another spelling was told, a hard link was not (the last writer won)
    (tmp_path / "p.jsonl").write_text("")
    os.link(tmp_path / "p.jsonl", tmp_path / "hard.jsonl")
    assert shared_file([("the feed", str(tmp_path / "p.jsonl")), ("the audit", str(tmp_path / "hard.jsonl"))]) == (
        f"the feed and the audit name the same file {str(tmp_path / 'hard.jsonl')!r}: give each its own"
    )
