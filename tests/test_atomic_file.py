"""Files written whole or not at all, and what may not be renamed over (devices, pipes)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from sitemap_crawl.atomic_file import replaceable, write_atomically
from sitemap_crawl.tree_file import TreeFile


def _read_pipe(path: Path) -> tuple[threading.Thread, list[bytes]]:
    got: list[bytes] = []

    def read() -> None:
        with path.open("rb") as pipe:
            got.append(pipe.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader, got


def test_a_regular_file_is_replaced_whole(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    target.write_bytes(b"old")
    write_atomically(target, b"new")
    assert target.read_bytes() == b"new" and sorted(os.listdir(tmp_path)) == ["state.json"]
    assert replaceable(target) and replaceable(tmp_path / "not-yet")


def test_a_pipe_or_device_is_written_in_place_not_replaced(tmp_path: Path) -> None:
    # a report or tree file sent to /dev/null was renamed over: run as root, /dev/null
    # became a plain file
    pipe = tmp_path / "report.html"
    os.mkfifo(pipe)
    assert not replaceable(pipe) and not replaceable(Path("/dev/null"))
    reader, got = _read_pipe(pipe)
    write_atomically(pipe, b"<html/>")
    reader.join(5)
    assert got == [b"<html/>"] and not replaceable(pipe)


def test_the_tree_file_is_written_in_place_into_a_pipe(tmp_path: Path) -> None:
    pipe = tmp_path / "tree.json"
    os.mkfifo(pipe)
    reader, got = _read_pipe(pipe)
    tree_file = TreeFile(pipe, many_sites=False)
    tree_file.add({"url": "https://a.test/", "kind": "website"})
    tree_file.close()
    reader.join(5)
    assert b'"kind": "website"' in got[0] and not replaceable(pipe)


def test_a_symbolic_link_is_written_through_not_replaced(tmp_path: Path) -> None:
    # (/dev/stdout -> /proc/self/fd/1 with the output sent to a file: the rename put a plain
    # file in place of the link, for every later program)
    target = tmp_path / "target.txt"
    target.write_bytes(b"old")
    link = tmp_path / "link"
    link.symlink_to(target)
    write_atomically(link, b"new")
    assert link.is_symlink() and target.read_bytes() == b"new"
