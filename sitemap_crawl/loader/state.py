"""The loader's state: exactly the documented fields (docs/loader.md), and its JSON form derived from them."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from typing import Any


@dataclass
class LoaderState:
    """The loader's state, field for field as persisted (docs/loader.md, "Resuming")."""

    pending_sitemap_urls: deque[str] = field(default_factory=deque)
    in_progress_sitemap_url: str | None = None
    processed_sitemap_urls: set[str] = field(default_factory=set)
    current_sitemap_processed_urls: set[str] = field(default_factory=set)
    url_queue: deque[str] = field(default_factory=deque)
    in_progress: set[str] = field(default_factory=set)
    handled_count: int = 0
    total_count: int = 0
    completed: bool = False

    @property
    def pending_count(self) -> int:
        return self.total_count - self.handled_count

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the documented field names, deques and sets as lists."""
        return state_to_json({name: getattr(self, name) for name in STATE_FIELDS})

    @classmethod
    def from_dict(cls, data: Any) -> LoaderState:
        """Read the JSON form back; ValueError when it is not a loader state."""
        if not isinstance(data, dict) or set(data) != set(STATE_FIELDS):
            found = sorted(data) if isinstance(data, dict) else type(data).__name__
            raise ValueError(f"not a sitemap loader state (found {found})")
        return cls(**{item.name: _FROM_JSON[str(item.type)](item.name, data[item.name]) for item in fields(cls)})


STATE_FIELDS: tuple[str, ...] = tuple(item.name for item in fields(LoaderState))
"""The fields of the persisted state, in the order they are written."""


def state_to_json(values: dict[str, Any]) -> dict[str, Any]:
    """The JSON form of state values given by field name, in field order: deques, sets and
    insertion-ordered dicts (the loader's ordered sets) become lists."""
    return {name: list(value) if isinstance(value, deque | set | dict) else value for name, value in values.items()}


def _urls(name: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(url, str) for url in value):
        raise ValueError(f"{name} is not a list of URLs")
    return value


def _optional_url(name: str, value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{name} is not a URL or null")
    return value


def _count(name: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{name} is not a count")
    return value


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} is not a boolean")
    return value


_FROM_JSON: dict[str, Callable[[str, Any], Any]] = {
    "deque[str]": lambda name, value: deque(_urls(name, value)),
    "set[str]": lambda name, value: set(_urls(name, value)),
    "str | None": _optional_url,
    "int": _count,
    "bool": _flag,
}
"""How each field type of :class:`LoaderState` is read back from JSON (checked on the way)."""


def replay_journal(
    state: LoaderState, handled_urls: Iterable[str], copy_handled: Callable[[str], None] | None = None
) -> int:
    """Apply the handled-pages journal written after ``state`` was saved; returns how many
    lines counted. A URL leaves in_progress, else url_queue (its first copy there); a URL in
    neither was queued (from the sitemap being read) and handled after the snapshot.
    ``copy_handled(url)`` is called for each saved copy that leaves, in that order: the copy
    in progress first, then those of url_queue in queue order."""
    replayed = 0
    for url in handled_urls:
        if url in state.in_progress:
            state.in_progress.discard(url)
            if copy_handled is not None:
                copy_handled(url)
        elif url in state.url_queue:
            state.url_queue.remove(url)
            if copy_handled is not None:
                copy_handled(url)
        elif state.in_progress_sitemap_url is not None and url not in state.current_sitemap_processed_urls:
            state.current_sitemap_processed_urls.add(url)
            state.total_count += 1
        else:
            continue  # already counted in the snapshot
        state.handled_count += 1
        replayed += 1
    return replayed
