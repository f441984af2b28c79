"""The environment of the Python processes a crawl starts (parse workers, the audit process,
crawl helpers)."""

from __future__ import annotations

import os
import signal
import sys


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


_SHELL = "/bin/sh"


def child_command(*args: str) -> list[str]:
    """The command that starts ``args`` as a child the crawl process manages (a parse worker,
    the audit process, a crawl helper) with SIGINT ignored from its first instruction.

    A POSIX shell sets SIGINT ignored (``trap "" INT``) and replaces itself with the child
    (``exec``), which keeps it so: an ignored signal stays ignored across ``exec``, and
    Python then installs no handler of its own. So a Ctrl-C while the child still imports
    its modules does not kill it with a traceback: the crawl process stops it. Without that
    shell, ``args`` as they are (the child ignores SIGINT once its ``main()`` runs:
    :func:`ignore_terminal_interrupt`)."""
    if os.name == "posix" and os.path.exists(_SHELL):
        return [_SHELL, "-c", 'trap "" INT; exec "$@"', "sitemap-crawl-child", *args]
    return list(args)
