"""The audit process: runs a CrawlAudit on the responses the crawl process pipes to it.

Run as ``python -m sitemap_crawl.audit.process`` by the audit extension, so that the
audit's parsing and checks use a CPU core of their own instead of sharing the crawl
process's interpreter lock. Pure: no Scrapy.

Frames as the parse worker's (:mod:`sitemap_crawl.parsing.worker_protocol`). The crawl
process sends ``(OPEN, path, report_path, user_agent, append)`` once, then jobs in order:
``(RESPONSE, job_id, facts, body_length)`` followed by the body's raw bytes,
``(CALL, job_id, method, args)`` for a :data:`CALLS` method of the CrawlAudit, and last
``(FINISH, job_id)``. Each job is answered ``(DONE, job_id, {rule: count})`` once handled
(the findings are in the file by then), after an ``(OUTPUT_FAILED, output, path, reason,
written)`` for each output that could not be written while it was handled (a full disk:
see :class:`~sitemap_crawl.audit.crawl_audit.OutputFailure`); after FINISH's answer the
process ends. A
large body is spooled to a temporary file as it arrives (as the parse worker does), so
the process's memory does not grow with it.
"""

from __future__ import annotations

import gc
import os
import sys
import traceback
from typing import Any, BinaryIO

from sitemap_crawl.audit.crawl_audit import CrawlAudit, ResponseFacts
from sitemap_crawl.memory import CHILD_MMAP_THRESHOLD, trim, tune_malloc
from sitemap_crawl.parsing.stream import FileBody
from sitemap_crawl.parsing.worker import SPOOL_MIN_SIZE, receive_body
from sitemap_crawl.parsing.worker_protocol import read_frame, write_frame
from sitemap_crawl.processes import ignore_terminal_interrupt

AUDIT_MODULE = "sitemap_crawl.audit.process"
"""The module the crawl process runs (``python -m``)."""

OPEN = "open"
RESPONSE = "response"
CALL = "call"
FINISH = "finish"
DONE = "done"
OUTPUT_FAILED = "output_failed"

CALLS = frozenset({"forget", "undecodable", "add_tree", "forbidden", "download_failed"})
"""The CrawlAudit methods a CALL job may name."""


def serve(source: BinaryIO, sink: BinaryIO) -> None:
    """Handle jobs from ``source`` until FINISH (or until it closes)."""
    audit: CrawlAudit | None = None
    while True:
        message = read_frame(source)
        if message is None:
            break
        tag = message[0]
        if tag == OPEN:
            audit = CrawlAudit(*message[1:])
            continue
        assert audit is not None, "the first frame is OPEN"
        job_id = message[1]
        counts: dict[str, int] = {}
        body = receive_body(source, message[3]) if tag == RESPONSE else b""  # a large one: in a file
        if body is None:
            break  # the crawl process is gone mid-body
        try:
            if tag == RESPONSE:
                counts = dict(audit.audit(ResponseFacts(*message[2]), body))
            elif tag == CALL and message[2] in CALLS:
                counts = dict(getattr(audit, message[2])(*message[3]))
            elif tag == FINISH:
                counts = dict(audit.finish())
        except Exception:  # a bug in a check must not stop the audit of the rest
            print(f"Sitemap audit failed on {message[:3]!r}:", file=sys.stderr)
            traceback.print_exc()
        if isinstance(body, FileBody):
            body.close()
        del body
        for failure in audit.take_failures():
            write_frame(sink, (OUTPUT_FAILED, *failure))
        write_frame(sink, (DONE, job_id, counts))
        sink.flush()
        if tag == RESPONSE and message[3] >= SPOOL_MIN_SIZE:
            trim()  # what a large body's scan freed goes back to the system (as in the parse worker)
        if tag == FINISH:
            break


def main(argv: list[Any] | None = None) -> None:
    """The process's entry point: stdin and stdout are the pipes to the crawl process."""
    ignore_terminal_interrupt()
    gc.freeze()
    gc.set_threshold(50_000, 50, 1_000)  # few cycles here; many short-lived objects
    tune_malloc(CHILD_MMAP_THRESHOLD)  # blocks of 1 MiB and more in their own mappings (sitemap_crawl.memory)
    try:
        serve(sys.stdin.buffer, sys.stdout.buffer)
    except BrokenPipeError:  # the crawl process is gone (killed): nothing to say, nobody to say it to
        os._exit(0)


if __name__ == "__main__":
    main()
