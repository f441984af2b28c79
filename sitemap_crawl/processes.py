"""The environment of the Python processes a crawl starts (parse workers, the audit process,
crawl helpers)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator


def child_process_env() -> dict[str, str]:
    """This process's environment, with PYTHONPATH naming every folder it imports from, so
    that a child imports what this process can: scrapyd, for one, puts the project's egg on
    ``sys.path``, not on PYTHONPATH (which is all a child inherits), and a crawl helper
    imports the project's spider and settings' classes."""
    import sitemap_crawl

    here = os.path.dirname(os.path.dirname(os.path.abspath(sitemap_crawl.__file__)))
    folders = [here, *(os.path.abspath(folder) for folder in sys.path if folder)]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(filter(None, [*folders, env.get("PYTHONPATH", "")])))
    return env


def ignore_terminal_interrupt() -> None:
    """In a child the crawl process manages (a parse worker, the audit process, a crawl
    helper): ignore SIGINT.

    A terminal's Ctrl-C goes to every process of its group: the crawl process then stops
    gracefully and ends its children itself (it closes their input once they have answered
    all it sent), where a KeyboardInterrupt would kill them mid-answer (a traceback, the
    audit's report never written)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def children_ignore_terminal_interrupt() -> Iterator[None]:
    """Start the children inside this block so that they ignore SIGINT from their first
    instruction, not only once their ``main()`` runs (:func:`ignore_terminal_interrupt`):
    an ignored signal stays ignored across ``exec`` (a handler does not), so a Ctrl-C while
    a child still imports its modules does not kill it with a traceback. This process
    ignores SIGINT for those few milliseconds; outside the main thread (where signals
    cannot be set) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
