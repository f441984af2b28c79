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


FAULTS_OF_REUSED_BLOCKS = """
import resource, sys
from sitemap_crawl.memory import tune_malloc
assert tune_malloc(int(sys.argv[1]))
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
block = bytearray(300_000)  # the heap (or a mapping) has one such block once
del block
before = faults()
for _ in range(200):  # a block of 300 KB made, written and freed again and again (a batch's findings)
    block = bytearray(300_000)
    del block
print(faults() - before)
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc tuning is for glibc")
def test_the_child_processes_threshold_reuses_blocks_under_1_mib() -> None:
    from sitemap_crawl.memory import CHILD_MMAP_THRESHOLD, MMAP_THRESHOLD

    def faults(threshold: int) -> int:
        code = [sys.executable, "-c", FAULTS_OF_REUSED_BLOCKS, str(threshold)]
        return int(subprocess.run(code, capture_output=True, text=True, check=True).stdout)

    # the crawl process's threshold maps each block anew (its 74 pages fault again each time)
    assert faults(MMAP_THRESHOLD) > 200 * 50
    assert faults(CHILD_MMAP_THRESHOLD) < 200 * 5
