"""memory.py: malloc tuning, and what the small child processes import."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

CHILD_MODULES = ("sitemap_crawl.parsing.worker", "sitemap_crawl.audit.process")


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc tuning is for glibc")
@pytest.mark.parametrize("module", CHILD_MODULES)
def test_a_child_process_tunes_malloc_without_ldconfig_or_the_email_package(module: str) -> None:
    # ctypes.util.find_library imports subprocess and runs `ldconfig -p`; the email package
    # (RFC 822 dates of RSS feeds) is loaded when a feed needs it: about 3 MiB a process
    code = (
        f"import sys, {module}\n"
        "from sitemap_crawl.memory import tune_malloc, trim\n"
        "assert tune_malloc()\n"
        "trim()\n"
        "print(sorted(m for m in ('ctypes.util', 'subprocess', 'email.utils') if m in sys.modules))\n"
    )
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert child.stdout == "[]\n"
