"""The sitemap tree of one site as the audit's report shows it: bounded, with findings per node.

A finished site's tree (:class:`~sitemap_crawl.tree.TreeNode`, as the tree extension built
it) is folded once into :class:`NodeSummary` objects: the first ``CHILDREN_SHOWN`` children
of each node, at most a budget of nodes per site (given breadth first, so the top levels are
always shown), each with its pages (the node and all below it) and its findings by rule.
What does not fit becomes one :class:`HiddenNodes` line per parent: how many children, how
many pages and findings below them. The summary holds no page and at most the budget in nodes.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from html import escape

from sitemap_crawl.audit.rules import RULES_BY_ID, SEVERITIES, Severity
from sitemap_crawl.kinds import NodeKind
from sitemap_crawl.tree import TreeNode

_BIDI_CONTROLS = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_UNPRINTABLE = {
    code: f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    for code in (
        *range(0x09),
        0x0B,
        0x0C,
        *range(0x0E, 0x20),
        *range(0x7F, 0xA0),
        *range(0xD800, 0xE000),
        *_BIDI_CONTROLS,
    )
}
"""Control characters (HTML forbids them in text), lone surrogates (no UTF-8 for them) and
the bidirectional controls (a right-to-left override in a URL would show the rest of its
line reversed: ``/files/\u202egnp.exe`` read as ending in ``exe.png``)."""


def html_text(value: str) -> str:
    """``value`` escaped for the report's text and attributes; a control character a sitemap
    held is shown as ``\\xNN``."""
    return escape(value.translate(_UNPRINTABLE))


CHILDREN_SHOWN = 25
"""Children shown per node (the first ones, in document order); the rest are one line."""
NODES_PER_SITE = 100
"""Tree nodes shown per site (the website node included)."""
REPORT_NODES = 20_000
"""Tree nodes shown in the whole report before later sites get ``NODES_PER_SITE_BEYOND``."""
NODES_PER_SITE_BEYOND = 8
"""Tree nodes shown per site once the report shows ``REPORT_NODES``."""
OPEN_DEPTH = 2
"""Nodes above this depth are drawn open (the website node is depth 0)."""


@dataclass(slots=True)
class HiddenNodes:
    """The children of a node that are not shown, and everything below them."""

    sitemaps: int = 0
    """Children not shown."""
    nodes: int = 0
    """Nodes in their subtrees (those children included)."""
    pages: int = 0
    findings: Counter[str] = field(default_factory=Counter)
    """Findings in their subtrees, by rule id."""


@dataclass(slots=True)
class NodeSummary:
    """One node of the tree as the report shows it."""

    url: str
    kind: str
    error: str | None
    own_pages: int
    findings: Counter[str] = field(default_factory=Counter)
    """Findings of this node (its sitemap or robots.txt), by rule id."""
    children: list[NodeSummary] = field(default_factory=list)
    more: HiddenNodes | None = None
    pages: int = 0
    """Pages of this node and all below it (hidden nodes included)."""
    below: int = 0
    """Findings of all the nodes below it (hidden nodes included)."""
    parent: NodeSummary | None = field(default=None, repr=False)

    def add_finding(self, rule_id: str, count: int = 1) -> None:
        """Count ``count`` findings that came after the tree was folded (its ancestors count them below)."""
        self.findings[rule_id] += count
        above = self.parent
        while above is not None:
            above.below += count
            above = above.parent


def summarize_tree(
    root: TreeNode, findings: Mapping[str, Counter[str]], budget: int
) -> tuple[NodeSummary, dict[str, NodeSummary]]:
    """The bounded summary of a tree and its shown nodes by URL.

    ``findings`` maps a sitemap URL to its findings by rule; findings of a URL that is no
    node of the tree (a known path that failed, a robots.txt left out) go to the website node.
    """
    matched: set[str] = set()
    top = _summary(root, findings, matched)
    shown = [top]
    queue: deque[tuple[TreeNode, NodeSummary]] = deque([(root, top)])
    while queue:
        node, summary = queue.popleft()
        for index in sorted(node.children):
            child = node.children[index]
            if len(summary.children) < CHILDREN_SHOWN and len(shown) < budget:
                child_summary = _summary(child, findings, matched)
                child_summary.parent = summary
                summary.children.append(child_summary)
                shown.append(child_summary)
                queue.append((child, child_summary))
            else:
                if summary.more is None:
                    summary.more = HiddenNodes()
                _hide(child, findings, matched, summary.more)
    for url, by_rule in findings.items():
        if url not in matched:
            top.findings.update(by_rule)
    for summary in reversed(shown):  # children before their parents
        summary.pages = summary.own_pages + sum(child.pages for child in summary.children)
        summary.below = sum(child.below + child.findings.total() for child in summary.children)
        if summary.more is not None:
            summary.pages += summary.more.pages
            summary.below += summary.more.findings.total()
    by_url: dict[str, NodeSummary] = {}
    for summary in shown:
        by_url.setdefault(summary.url, summary)
    return top, by_url


def _every_node(root: TreeNode) -> Iterator[TreeNode]:
    """Every node of a tree (in no particular order)."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.children.values())


def tree_urls(root: TreeNode) -> set[str]:
    """The URL of every node of a tree."""
    return {node.url for node in _every_node(root)}


def feed_pages(root: TreeNode) -> int:
    """The pages of a tree's RSS and Atom nodes (the audit reads no lastmod of theirs)."""
    return sum(node.page_count for node in _every_node(root) if node.kind in _FEED_KINDS)


_FEED_KINDS = frozenset((NodeKind.RSS.value, NodeKind.ATOM.value))


def _own_findings(node: TreeNode, findings: Mapping[str, Counter[str]], matched: set[str]) -> Counter[str] | None:
    """The findings of a node's URL; only for the first node of that URL met (a sitemap two
    indexes list, or a loop's node under the sitemap it leads back to, is audited once)."""
    if node.url in matched:
        return None
    own = findings.get(node.url)
    if own is not None:
        matched.add(node.url)
    return own


def _summary(node: TreeNode, findings: Mapping[str, Counter[str]], matched: set[str]) -> NodeSummary:
    own = _own_findings(node, findings, matched)
    return NodeSummary(node.url, node.kind, node.error, node.page_count, Counter(own) if own else Counter())


def _hide(node: TreeNode, findings: Mapping[str, Counter[str]], matched: set[str], more: HiddenNodes) -> None:
    more.sitemaps += 1
    stack = [node]
    while stack:
        hidden = stack.pop()
        more.nodes += 1
        more.pages += hidden.page_count
        own = _own_findings(hidden, findings, matched)
        if own is not None:
            more.findings.update(own)
        stack.extend(hidden.children.values())


def render_tree(top: NodeSummary) -> str:
    """The tree as nested lists; nodes with children or findings fold (``<details>``)."""
    return f"<ul class='tree'>{_node(top, 0)}</ul>"


def _node(summary: NodeSummary, depth: int) -> str:
    kind = html_text(summary.kind)
    head = [f"<span class='kind'>{kind}</span> <code class='url'>{html_text(summary.url)}</code>"]
    head.append(f" <span class='pages'>{_count(summary.pages, 'page')}</span>")
    if summary.error:
        head.append(f" <span class='invalid'>{html_text(summary.error)}</span>")
    head.append(_findings(summary.findings))
    if summary.below:
        head.append(f" <span class='below'>{_count(summary.below, 'finding')} below</span>")
    if not summary.children and summary.more is None:
        return f"<li class='node' data-kind='{kind}'>{''.join(head)}</li>"
    items = [_node(child, depth + 1) for child in summary.children]
    if summary.more is not None:
        more = summary.more
        inside = f", {more.nodes:,} nodes" if more.nodes != more.sitemaps else ""
        items.append(
            f"<li class='more'>… and {more.sitemaps:,} more ({_count(more.pages, 'page')}{inside})"
            f"{_findings(more.findings)}</li>"
        )
    state = " open" if depth < OPEN_DEPTH else ""
    return (
        f"<li class='node' data-kind='{kind}'><details{state}><summary>{''.join(head)}</summary>"
        f"<ul>{''.join(items)}</ul></details></li>"
    )


def _findings(by_rule: Counter[str]) -> str:
    """Findings by severity, then the rule ids with their counts."""
    if not by_rule:
        return ""
    by_severity: Counter[str] = Counter()
    for rule_id, count in by_rule.items():
        rule = RULES_BY_ID.get(rule_id)
        by_severity[rule.severity.value if rule is not None else Severity.NOTICE.value] += count
    parts = [
        f" <span class='sev {severity}'>{_count(by_severity[severity], severity)}</span>"
        for severity in SEVERITIES
        if by_severity[severity]
    ]
    rules = " ".join(f"<code>{html_text(rule_id)}</code>&#215;{count:,}" for rule_id, count in by_rule.most_common())
    return "".join(parts) + f" <span class='rules'>{rules}</span>"


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}" if number == 1 else f"{number:,} {noun}s"
