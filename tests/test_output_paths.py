"""The files a crawl writes besides its feeds are checked writable at start."""

from __future__ import annotations

from pathlib import Path

from sitemap_crawl.output_paths import unwritable_reason


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
