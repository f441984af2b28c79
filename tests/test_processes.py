"""processes.py: the children of a crawl import what the crawl process imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sitemap_crawl.processes import child_process_env


def test_a_child_imports_a_module_only_on_the_parents_sys_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # as scrapyd does with a project's egg: on sys.path, not on PYTHONPATH
    (tmp_path / "egg_only_module.py").write_text("VALUE = 42\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("PYTHONPATH", raising=False)
    command = [sys.executable, "-c", "import egg_only_module, sitemap_crawl; print(egg_only_module.VALUE)"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    child = subprocess.run(command, env=child_process_env(), cwd=elsewhere, capture_output=True, text=True)
    assert (child.returncode, child.stdout) == (0, "42\n"), child.stderr
    without = subprocess.run(command, cwd=elsewhere, capture_output=True, text=True)
    assert "No module named 'egg_only_module'" in without.stderr  # what the helpers did before
