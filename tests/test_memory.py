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


MAPPED_BYTES_OF_A_BLOCK = """
import ctypes, sys
from sitemap_crawl.memory import tune_malloc
assert tune_malloc(int(sys.argv[1]))


class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


mallinfo2 = ctypes.CDLL("libc.so.6").mallinfo2
mallinfo2.restype = MallInfo2
before = mallinfo2().hblkhd
# blocks of about 300 KB (a batch's findings, its JSON lines); several of them, for a block
# can come from a free chunk of the heap whatever the threshold (glibc maps one only when
# the heap has no room for it)
blocks = [bytearray(300_000) for _ in range(40)]
print(mallinfo2().hblkhd - before)
"""


def _glibc_has_mallinfo2() -> bool:
    name, version = platform.libc_ver()
    return name == "glibc" and tuple(int(part) for part in version.split(".")[:2]) >= (2, 33)


@pytest.mark.skipif(not _glibc_has_mallinfo2(), reason="mallinfo2 is glibc 2.33 and later")
def test_the_child_processes_threshold_keeps_blocks_under_1_mib_on_the_heap() -> None:
    # a block of its own mapping is unmapped when freed, and its pages fault in again the next
    # time (measured: 14,800 page faults for 200 such blocks at 128 KiB, none at 1 MiB); glibc's
    # mallinfo2 tells which blocks are mappings on any kernel, page faults are not counted on all
    from sitemap_crawl.memory import CHILD_MMAP_THRESHOLD, MMAP_THRESHOLD

    def mapped_bytes(threshold: int) -> int:
        code = [sys.executable, "-c", MAPPED_BYTES_OF_A_BLOCK, str(threshold)]
        return int(subprocess.run(code, capture_output=True, text=True, check=True).stdout)

    assert mapped_bytes(MMAP_THRESHOLD) >= 300_000  # the crawl process's threshold maps it
    assert mapped_bytes(CHILD_MMAP_THRESHOLD) == 0
