"""processes.py: the children of a crawl import what the crawl process imports, and ignore
a terminal's Ctrl-C from their start."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sitemap_crawl.processes import child_command, child_process_env


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


@pytest.mark.parametrize("module", ["sitemap_crawl.parsing.worker", "sitemap_crawl.audit.process"])
def test_a_child_lives_through_a_terminal_ctrl_c_and_ends_when_its_input_does(module: str) -> None:
    # Ctrl-C reaches the whole process group: the crawl process ends its children itself
    child = subprocess.Popen(
        [sys.executable, "-m", module],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=child_process_env(),
    )
    try:
        time.sleep(1.0)  # (past its imports: the handler is set first thing in main())
        child.send_signal(signal.SIGINT)
        time.sleep(0.3)
        assert child.poll() is None, child.stderr.read() if child.stderr else ""
        _out, err = child.communicate(b"", timeout=10)  # its input ends: it ends
    finally:
        child.kill()
    assert child.returncode == 0
    assert b"KeyboardInterrupt" not in err


def test_a_child_started_by_child_command_ignores_sigint_from_its_start() -> None:
    code = "import signal; print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)"
    # (a test run in the background may ignore SIGINT itself: the children would inherit it)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        plain = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        started = subprocess.run(child_command(sys.executable, "-c", code), capture_output=True, text=True, check=True)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert (plain.stdout.strip(), started.stdout.strip()) == ("False", "True")
