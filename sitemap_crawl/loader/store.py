"""Where a loader persists: a snapshot of the state, the pages it names, and a journal.

All in one directory (JOBDIR under Scrapy):

``sitemap_loader.json``
    the state, exactly the documented fields (deques and sets as JSON lists),
    written atomically (temporary file, fsync, rename).
``sitemap_loader.handled``
    a journal: one line per page handled since the last snapshot, appended with one
    ``write()`` each, so a ``kill -9`` loses none of them. It is emptied when a
    snapshot is written and replayed on top of the snapshot on restart.
``sitemap_loader.pages.json``
    the page items (lastmod, images, news...) of the URLs in ``url_queue`` and
    ``in_progress`` at the snapshot, so that pages handed out again after a restart
    still carry their item; with the SHA-256 of the state file it goes with. The one
    of the previous snapshot is kept as ``sitemap_loader.pages.previous.json`` until
    the new state is in place, so that a kill between the two writes finds the items
    of the state it resumes from. It also holds the sitemap URLs robots.txt led to (read
    or left out): no well-known path among them is probed after a restart.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import time
from pathlib import Path
from typing import Any, cast

from sitemap_crawl.atomic_file import write_atomically
from sitemap_crawl.loader.state import LoaderState, replay_journal

logger = logging.getLogger(__name__)

DEFAULT_STATE_NAME = "sitemap_loader"
"""The name the loader's files start with."""


class StateStore:
    """The loader's files in one directory (see the module docstring)."""

    def __init__(self, directory: str | Path, name: str) -> None:
        self.directory = Path(directory)
        self.state_path = self.directory / f"{name}.json"
        self.pages_path = self.directory / f"{name}.pages.json"
        self.previous_pages_path = self.directory / f"{name}.pages.previous.json"
        self.journal_path = self.directory / f"{name}.handled"
        self._journal_fd: int | None = None

    def load(self) -> tuple[Any, dict[str, Any], list[str], list[str]] | None:
        """(state JSON, page items by URL, handled URLs of the journal, sitemap URLs seen
        under robots.txt), or None without a state."""
        if not self.state_path.exists():
            return None
        state_bytes = self.state_path.read_bytes()
        state = json.loads(state_bytes.decode("utf-8"))
        pages, seen = self._pages_of(_digest(state_bytes))
        journal: list[str] = []
        with contextlib.suppress(OSError):
            text = self.journal_path.read_bytes().decode("utf-8", "replace")
            # a line without its newline was cut by the kill: it does not count
            journal = [line for line in text.split("\n")[:-1] if line]
        return state, pages, journal, seen

    def set_aside(self, reason: str) -> Path:
        """Move an unreadable state file out of the way (kept for inspection)."""
        target = self.state_path.with_name(f"{self.state_path.name}.unreadable-{int(time.time())}")
        os.replace(self.state_path, target)
        logger.error("Sitemap loader state %s is unreadable (%s); moved to %s", self.state_path, reason, target)
        return target

    def _pages_of(self, state_digest: str) -> tuple[dict[str, Any], list[str]]:
        """The page items and the sitemap URLs seen under robots.txt saved with the state of
        digest ``state_digest`` (the current pages file, else the previous one); a pages file
        of an older version has no digest (nor seen URLs) and is taken as it is; ({}, [])
        when none fits."""
        for path in (self.pages_path, self.previous_pages_path):
            with contextlib.suppress(OSError, ValueError):
                loaded = json.loads(path.read_text("utf-8"))
                if not isinstance(loaded, dict):
                    continue
                if _PAGES_KEY not in loaded:
                    return (loaded if path == self.pages_path else {}), []
                if loaded.get(_DIGEST_KEY) == state_digest and isinstance(loaded[_PAGES_KEY], dict):
                    seen = loaded.get(_SEEN_KEY)
                    urls = [url for url in seen if isinstance(url, str)] if isinstance(seen, list) else []
                    return cast(dict[str, Any], loaded[_PAGES_KEY]), urls
        return {}, []

    def save(self, state: dict[str, Any], pages: dict[str, Any], seen: list[str] | None = None) -> None:
        """Write a snapshot: the pages (and the sitemap URLs ``seen`` under robots.txt) first,
        then the state, emptying the journal."""
        self.directory.mkdir(parents=True, exist_ok=True)
        state_bytes = json.dumps(state, ensure_ascii=False).encode("utf-8")
        with contextlib.suppress(FileNotFoundError):
            os.replace(self.pages_path, self.previous_pages_path)  # the items of the state still in place
        saved = {_DIGEST_KEY: _digest(state_bytes), _PAGES_KEY: pages, _SEEN_KEY: seen or []}
        write_atomically(self.pages_path, json.dumps(saved, ensure_ascii=False).encode("utf-8"))
        # Empty the journal before the rename: dying in between leaves the previous
        # snapshot and no journal, i.e. pages handled again, never pages lost.
        write_atomically(self.state_path, state_bytes, before_replace=lambda: os.ftruncate(self._journal(), 0))
        with contextlib.suppress(FileNotFoundError):
            self.previous_pages_path.unlink()

    def _journal(self) -> int:
        if self._journal_fd is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._journal_fd = os.open(self.journal_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        return self._journal_fd

    def record_handled(self, url: str) -> None:
        """Append one handled page URL to the journal."""
        os.write(self._journal(), url.encode("utf-8") + b"\n")

    def close(self) -> None:
        if self._journal_fd is not None:
            os.close(self._journal_fd)
            self._journal_fd = None


_DIGEST_KEY = "state_sha256"
_PAGES_KEY = "pages"
_SEEN_KEY = "seen_under_robots"
"""The pages file: {"state_sha256": SHA-256 of the state file it goes with, "pages": items by
URL, "seen_under_robots": the sitemap URLs the site's robots.txt led to, read or not (a
well-known path among them is not probed after a restart either)}."""


def _digest(state_bytes: bytes) -> str:
    return hashlib.sha256(state_bytes).hexdigest()


def read_saved_state(directory: str | Path, state_name: str = DEFAULT_STATE_NAME) -> LoaderState | None:
    """The state a loader persisting in ``directory`` (JOBDIR) would resume from: the last
    snapshot with the journal of handled pages applied (``in_progress`` still holds the
    pages that were handed out and not handled). None when nothing was saved there."""
    loaded = StateStore(directory, state_name).load()
    if loaded is None:
        return None
    data, _pages, journal, _seen = loaded
    state = LoaderState.from_dict(data)
    replay_journal(state, journal)
    return state
