"""The main process's settings as plain JSON values, for its helper processes."""

from __future__ import annotations

import logging
from typing import Any

from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings

logger = logging.getLogger(__name__)

NOT_COPIED = frozenset({"FEEDS", "FEED_URI", "FEED_FORMAT", "JOBDIR", "SITEMAP_CRAWL_TREE_FILE"})
"""What a helper must not inherit: it writes no feed, tree or job state of its own."""


class NotPlain(ValueError):
    """A setting value that cannot travel as JSON."""


def plain(value: Any) -> Any:
    """``value`` as JSON-able data: classes and functions by import path, settings as dicts."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, BaseSettings):  # keys as stored (copy_to_dict would make "<class ...>" of a class)
        value = {key: value[key] for key in value}
    if isinstance(value, dict):
        return {_key(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain(v) for v in value]
    if isinstance(value, type) or callable(value):
        module, name = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
        if module and name and module != "__main__" and "<" not in name:
            return f"{module}.{name}"
    raise NotPlain(repr(value)[:100])


def _key(key: Any) -> str:
    result = plain(key)
    if not isinstance(result, str):
        result = str(result)
    return result


def copy_settings(settings: BaseSettings) -> dict[str, list[Any]]:
    """``{name: [value, priority]}`` of every setting given above Scrapy's defaults, but the
    single values the spider class set itself (priority ``spider``): the helper's spider sets
    them again, and must tell them from the project's (a component dict keeps its entries
    of every priority, so it travels whole)."""
    copied: dict[str, list[Any]] = {}
    for name in settings:
        priority = settings.getpriority(name) or 0
        if priority <= 0 or name in NOT_COPIED:
            continue
        if priority == SETTINGS_PRIORITIES["spider"] and not isinstance(settings[name], BaseSettings):
            continue
        try:
            copied[name] = [plain(settings[name]), priority]
        except NotPlain as exc:
            logger.debug("Setting %s is not passed to the helper crawl processes: %s", name, exc)
    return copied
