"""sitemap_crawl.tree_file: one tree object, a JSON array of trees, or one JSON line per site."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from sitemap_crawl.tree_file import TreeFile
from tests.support.disk import file_size_limit


def tree(site: str) -> dict[str, object]:
    return {"url": site, "kind": "website", "error": None, "page_count": 0, "sub_sitemaps": []}


def test_lines_are_appended_as_sites_finish(tmp_path: Path) -> None:
    path = tmp_path / "trees.jsonl"
    path.write_text("left from an earlier run\n", encoding="utf-8")
    writer = TreeFile(path, many_sites=True)
    writer.add(tree("https://a.example/"))
    # readable before the run ends: a run stopped here keeps the finished site
    assert [json.loads(line)["url"] for line in path.read_text("utf-8").splitlines()] == ["https://a.example/"]
    writer.add(tree("https://b.example/"))
    writer.close()
    assert [json.loads(line)["url"] for line in path.read_text("utf-8").splitlines()] == [
        "https://a.example/",
        "https://b.example/",
    ]


def test_a_many_site_json_file_is_one_array_written_on_close(tmp_path: Path) -> None:
    path = tmp_path / "trees.json"
    writer = TreeFile(path, many_sites=True)
    writer.add(tree("https://a.example/"))
    writer.add(tree("https://b.example/"))
    assert not path.exists()  # renamed into place when the crawl closes
    writer.close()
    assert [item["url"] for item in json.loads(path.read_text("utf-8"))] == ["https://a.example/", "https://b.example/"]
    assert list(tmp_path.iterdir()) == [path]


def test_single_site_json_is_the_tree_object_and_an_empty_run_an_empty_array(tmp_path: Path) -> None:
    single = TreeFile(tmp_path / "tree.json", many_sites=False)
    single.add(tree("https://a.example/"))
    single.close()
    assert json.loads((tmp_path / "tree.json").read_text("utf-8"))["url"] == "https://a.example/"
    empty = TreeFile(tmp_path / "none.json", many_sites=True)
    empty.close()
    assert json.loads((tmp_path / "none.json").read_text("utf-8")) == []


def test_an_appending_lines_file_keeps_earlier_lines_and_ends_a_cut_one(tmp_path: Path) -> None:
    path = tmp_path / "trees.jsonl"
    path.write_text(
        '{"url": "http://a.test/"}\n{"url": "http://b.test/", "sub_sitemaps": [{"url": "http://b.té', "utf-8"
    )
    trees = TreeFile(path, many_sites=True, append=True)
    trees.add({"url": "http://c.test/"})
    trees.close()
    lines = path.read_text("utf-8").splitlines()
    assert lines[0] == '{"url": "http://a.test/"}' and lines[1].endswith("b.té")  # kept as they were
    assert json.loads(lines[2]) == {"url": "http://c.test/"}
    fresh = TreeFile(tmp_path / "new.jsonl", many_sites=True, append=True)
    fresh.add({"url": "http://d.test/"})
    fresh.close()
    assert (tmp_path / "new.jsonl").read_text("utf-8") == '{"url": "http://d.test/"}\n'


def test_a_json_tree_file_gets_the_mode_the_umask_gives_like_the_feeds(tmp_path: Path) -> None:
    old_umask = os.umask(0o022)
    try:
        writer = TreeFile(tmp_path / "tree.json", many_sites=False)
        writer.add(tree("https://a.example/"))
        writer.close()
    finally:
        os.umask(old_umask)
    # the temporary file it is written to and renamed from was 0600 (mkstemp's mode)
    assert stat.S_IMODE((tmp_path / "tree.json").stat().st_mode) == 0o644


def test_a_json_tree_file_that_cannot_be_renamed_into_place_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "tree.json"
    tree_file = TreeFile(target, many_sites=False)
    tree_file.add(tree("https://a.example/"))
    target.mkdir()  # (made after the check at start)
    try:
        tree_file.close()
    except OSError:
        pass
    else:
        raise AssertionError("replacing a directory by the tree file should fail")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["tree.json"]


def test_a_lines_file_that_fills_up_keeps_only_whole_lines(tmp_path: Path) -> None:
    # the file ended in a JSON line cut short: a reader of lines met a corrupt last one
    path = tmp_path / "trees.jsonl"
    writer = TreeFile(path, many_sites=True)
    writer.add(tree("https://a.example/"))
    whole = path.read_bytes()
    large = {**tree("https://b.example/"), "sub_sitemaps": [tree(f"https://b.example/{n}") for n in range(200)]}
    with file_size_limit(len(whole) + 4096):
        with pytest.raises(OSError):
            writer.add(large)
        assert len(path.read_bytes()) > len(whole)  # (the limit let part of the line through)
        writer.abandon()
    assert path.read_bytes() == whole
    assert [json.loads(line)["url"] for line in path.read_text("utf-8").splitlines()] == ["https://a.example/"]


def test_a_json_tree_file_whose_temporary_file_cannot_be_made_is_abandoned_quietly(tmp_path: Path) -> None:
    # the temporary file's name was set before it was made; abandon then removed a file that
    # was never there, and on a file system turned read-only that raised (EROFS): the closing
    # log lines were lost. Here its name is too long to be made.
    target = tmp_path / ("t" * 240 + ".json")
    tree_file = TreeFile(target, many_sites=False)
    tree_file.add(tree("https://a.example/"))
    with pytest.raises(OSError):
        tree_file.close()
    tree_file.abandon()
    assert list(tmp_path.iterdir()) == []
