"""Build and take apart the sitemap tree a crawl writes (``result.tree``): ``node``,
the ``website_node`` / ``robots_txt_node`` of a site and ``robots_tree`` (both at once)
for whole-tree comparisons;
``tree_of(result)`` (the root, asserted present), ``robots_of(tree)``, ``children(node)``
((url, kind) pairs) and ``child_urls(node)`` for looking inside.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .crawl import CrawlResult

__all__ = [
    "child_urls",
    "children",
    "node",
    "robots_of",
    "robots_tree",
    "robots_txt_node",
    "tree_of",
    "website_node",
]

Node = dict[str, Any]
"""One tree node: url, kind, error, page_count, sub_sitemaps (and more at the root)."""


def node(url: str, kind: str, *children: Node, error: str | None = None, pages: int = 0) -> Node:
    """The node the crawl writes for ``url``, with these children."""
    return {"url": url, "kind": kind, "error": error, "page_count": pages, "sub_sitemaps": list(children)}


def website_node(base: str, *children: Node, error: str | None = None) -> Node:
    """The root node of a crawl of ``base`` (``http://127.0.0.1:PORT``): the website, ``base/``."""
    return node(base + "/", "website", *children, error=error)


def robots_txt_node(base: str, *children: Node, error: str | None = None) -> Node:
    """The node of ``base/robots.txt``."""
    return node(base + "/robots.txt", "robots_txt", *children, error=error)


def robots_tree(base: str, *children: Node, known: Sequence[Node] = ()) -> Node:
    """The whole tree of a site whose robots.txt lists ``children``: website -> robots.txt ->
    children, then the ``known`` nodes (well-known paths) beside robots.txt."""
    return website_node(base, robots_txt_node(base, *children), *known)


def tree_of(result: CrawlResult) -> Node:
    """The root (website) node of a crawl's tree; fails, with the log's tail, if there is none."""
    assert result.tree is not None, result.log[-3000:]
    return result.tree


def robots_of(tree: Node) -> Node:
    """The robots.txt node: the website's first child, where the crawl puts it."""
    first: Node = tree["sub_sitemaps"][0]
    return first


def children(parent: Node) -> list[tuple[str, str]]:
    """(url, kind) of each child of a node, in order."""
    return [(child["url"], child["kind"]) for child in parent["sub_sitemaps"]]


def child_urls(parent: Node) -> list[str]:
    """The URL of each child of a node, in order."""
    return [child["url"] for child in parent["sub_sitemaps"]]
