"""The sitemap tree: nodes placed by path, JSON form and a short text rendering."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from sitemap_crawl.kinds import ErrorReason, NodeKind

INTERRUPTED = ErrorReason.INTERRUPTED


@dataclass(slots=True)
class TreeNode:
    """One node of the tree as the tree file writes it."""

    url: str
    kind: str
    error: str | None = None
    page_count: int = 0
    finished: bool = True
    children: dict[int, TreeNode] = field(default_factory=dict)
    change: str | None = None
    """History runs only: ``unchanged`` / ``changed`` (written only when set)."""
    changes: int | None = None
    """History runs only: the rows a changed sitemap exported."""

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "url": self.url,
            "kind": self.kind,
            "error": self.error,
            "page_count": self.page_count,
        }
        if self.change is not None:
            data["change"] = self.change
            data["changes"] = self.changes or 0
        data["sub_sitemaps"] = [self.children[index].to_dict() for index in sorted(self.children)]
        return data


class SitemapTree:
    """Nodes of one crawl, assembled from node reports in any arrival order."""

    def __init__(self) -> None:
        self.root: TreeNode | None = None
        self._nodes: dict[tuple[int, ...], TreeNode] = {}
        self._orphans: dict[tuple[int, ...], TreeNode] = {}

    def report(
        self,
        path: tuple[int, ...],
        url: str,
        kind: str,
        error: str | None,
        page_count: int,
        finished: bool,
        change: str | None = None,
        changes: int | None = None,
    ) -> TreeNode:
        """Create or update the node at ``path``."""
        node = self._nodes.get(path)
        if node is None:
            node = TreeNode(url=url, kind=kind, error=error, page_count=page_count, finished=finished)
            self._nodes[path] = node
            self._attach(path, node)
        else:
            node.url, node.kind, node.error, node.finished = url, kind, error, finished
            node.page_count = page_count if finished else max(node.page_count, page_count)
        if change is not None:
            node.change, node.changes = change, changes
        return node

    def add_pages(self, path: tuple[int, ...], count: int) -> None:
        """Count pages of a node that has not finished yet."""
        node = self._nodes.get(path)
        if node is not None and not node.finished:
            node.page_count += count

    def _attach(self, path: tuple[int, ...], node: TreeNode) -> None:
        if not path:
            self.root = node
            for top_path in [p for p in self._orphans if len(p) == 1]:
                node.children[top_path[0]] = self._orphans.pop(top_path)
            return
        parent = self._nodes.get(path[:-1])
        if parent is None:
            self._orphans[path] = node
        else:
            parent.children[path[-1]] = node
        for child_path in [p for p in self._orphans if p[:-1] == path]:
            node.children[child_path[-1]] = self._orphans.pop(child_path)

    def close(self, stopped: bool = False) -> None:
        """Mark nodes still being read as interrupted and hang leftover orphans on the root;
        ``stopped``: the crawl ended before the site was finished, so the sitemaps it had not
        fetched yet are not in the tree: the website node is marked interrupted too."""
        for node in self._nodes.values():
            if not node.finished:
                node.error = node.error or INTERRUPTED
                node.finished = True
        if self.root is None:
            self.root = TreeNode(url="", kind=NodeKind.WEBSITE)
        if stopped:
            self.root.error = self.root.error or INTERRUPTED
        for index, (_path, orphan) in enumerate(sorted(self._orphans.items())):
            self.root.children[1_000_000 + index] = orphan
        self._orphans.clear()

    def nodes(self) -> list[TreeNode]:
        return list(self._nodes.values())

    def counts(self) -> dict[str, Any]:
        """Sitemaps by kind, invalid/incomplete by reason (and a website that could not be
        reached, as "unreachable"), and total pages."""
        by_kind: Counter[str] = Counter()
        by_error: Counter[str] = Counter()
        pages = 0
        for node in self._nodes.values():
            if node.kind == NodeKind.WEBSITE:
                if node.error:  # the site could not be reached
                    by_error[node.error.split(":", 1)[0]] += 1
                continue
            by_kind[node.kind] += 1
            if node.error:
                by_error[node.error.split(":", 1)[0]] += 1
            pages += node.page_count
        return {"by_kind": dict(by_kind), "by_error": dict(by_error), "pages": pages}

    def to_dict(self) -> dict[str, Any]:
        assert self.root is not None
        return self.root.to_dict()

    def render(self, max_lines: int = 200) -> str:
        """A short indented text picture of the tree, at most ``max_lines`` node lines."""
        lines: list[str] = []
        hidden = 0
        stack: list[tuple[int, TreeNode]] = [(0, self.root)] if self.root is not None else []
        while stack:
            depth, node = stack.pop()
            if len(lines) >= max_lines:
                hidden += 1
            else:
                detail = f"{node.page_count} pages" if node.kind != NodeKind.WEBSITE else ""
                if node.error:
                    detail = f"{detail}, {node.error}" if detail else node.error
                if node.change is not None:
                    change = node.change if not node.changes else f"{node.change}: {node.changes} rows"
                    detail = f"{detail}, {change}" if detail else change
                lines.append(f"{'  ' * depth}{node.kind} {node.url}" + (f" ({detail})" if detail else ""))
            stack.extend((depth + 1, node.children[index]) for index in sorted(node.children, reverse=True))
        if hidden:
            lines.append(f"... {hidden} more nodes (see SITEMAP_CRAWL_TREE_FILE for the whole tree)")
        return "\n".join(lines)
