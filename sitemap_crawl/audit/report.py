"""The audit's HTML report: one self-contained page (inline CSS, no script), aggregates only.

Per site: the sitemap tree with pages and findings per node (:mod:`.report_tree`; without a
tree, entries per sitemap), findings by rule with a few examples, a histogram of page
lastmod by month. What it keeps per site is bounded (tree nodes, examples and sitemaps
capped), so a report of 10,000 sites stays light.

A site's findings are counted per sitemap URL until its tree arrives (:meth:`Report.add_tree`),
then folded into the tree's nodes and dropped; a finding that comes later is put on its
node if shown, else on the website node (and counted below its ancestors).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from operator import itemgetter

from sitemap_crawl.audit.finding import Finding
from sitemap_crawl.audit.report_tree import (
    NODES_PER_SITE,
    NODES_PER_SITE_BEYOND,
    REPORT_NODES,
    NodeSummary,
    feed_pages,
    html_text,
    render_tree,
    summarize_tree,
    tree_urls,
)
from sitemap_crawl.audit.rules import REDIRECTED, RULES_BY_ID, SEVERITIES, SEVERITY_OF
from sitemap_crawl.tree import TreeNode

EXAMPLES_PER_RULE = 3
_WHERE = itemgetter(0, 1, 3)
"""(website, sitemap_url, rule) of a Finding."""
_SITE_RULE = itemgetter(0, 3)
SITEMAPS_PER_SITE = 100

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;margin-top:2em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:2px 8px;text-align:left}
.error{color:#b00}.warning{color:#a60}.notice{color:#06a}
.bar{background:#4a8;height:12px;display:inline-block}
code{font-size:12px;word-break:break-all}
ul.tree,ul.tree ul{list-style:none;margin:0;padding-left:1.2em}ul.tree{padding-left:0}
ul.tree ul{border-left:1px dotted #bbb}li.node,li.more{margin:2px 0}
li.node>span.kind,li.more{margin-left:1.1em}li.more{color:#666;font-style:italic}
.kind{font-size:11px;background:#eee;border-radius:3px;padding:0 4px}
.pages,.below{color:#555}.invalid{color:#fff;background:#b00;border-radius:3px;padding:0 4px}
.sev{font-weight:bold}.rules code{font-size:11px;color:#555}summary{cursor:pointer}
"""


@dataclass(slots=True)
class SiteSummary:
    """What the report keeps of one site."""

    website: str
    counts: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[Finding]] = field(default_factory=dict)
    sitemap_pages: dict[str, int] = field(default_factory=dict)
    months: Counter[str] = field(default_factory=Counter)
    pending: dict[str, Counter[str]] = field(default_factory=dict)
    """Findings by sitemap URL and rule, until the tree arrives."""
    redirects: dict[str, str] = field(default_factory=dict)
    """Final URL -> requested URL of redirected sitemaps (the tree has the requested one)."""
    tree: NodeSummary | None = None
    feed_pages: int = 0
    """Pages of the site's RSS and Atom feeds (not in ``months``: the audit reads no feed item)."""
    urlset_pages: int = 0
    """Pages of the site's urlsets, with a lastmod month (in ``months``) or not."""
    nodes: dict[str, NodeSummary] = field(default_factory=dict)
    """The shown tree nodes by URL."""


class Report:
    """Findings and per-sitemap facts of every site, folded into bounded summaries."""

    def __init__(self) -> None:
        self.sites: dict[str, SiteSummary] = {}
        self.nodes_shown = 0
        """Tree nodes shown so far (past ``REPORT_NODES``, later sites show fewer)."""

    def site(self, website: str) -> SiteSummary:
        """The summary of ``website`` (made on first use)."""
        summary = self.sites.get(website)
        if summary is None:
            summary = self.sites[website] = SiteSummary(website)
        return summary

    def add_finding(self, finding: Finding) -> None:
        """Count a finding; keep it as an example if its rule has few yet."""
        self.add_findings([finding])

    def add_findings(self, found: list[Finding]) -> None:
        """:meth:`add_finding` of each (counted by site, sitemap and rule; a sitemap with a
        finding on every page costs one count, not one per page)."""
        wanted = {key for key in set(map(_SITE_RULE, found)) if self._wants(*key)}
        for finding in found if wanted else ():  # examples, and the redirects the tree is told of
            key = (finding.website, finding.rule)
            if key not in wanted:
                continue
            summary = self.site(finding.website or "")
            if finding.rule == REDIRECTED.id and finding.url:
                # (the first URL that led to it: the one whose response had its body audited)
                summary.redirects.setdefault(finding.url, finding.sitemap_url)
            examples = summary.examples.setdefault(finding.rule, [])
            if len(examples) < EXAMPLES_PER_RULE:
                examples.append(finding)
            elif not self._wants(*key):
                wanted.discard(key)
                if not wanted:
                    break
        for (website, sitemap_url, rule), count in Counter(map(_WHERE, found)).items():
            summary = self.site(website or "")
            summary.counts[rule] += count
            if summary.tree is None:
                summary.pending.setdefault(sitemap_url, Counter())[rule] += count
            else:
                node = summary.nodes.get(summary.redirects.get(sitemap_url, sitemap_url), summary.tree)
                node.add_finding(rule, count)

    def _wants(self, website: str | None, rule: str) -> bool:
        """Whether findings of ``rule`` on ``website`` are still looked at one by one (for
        examples; redirects always, the tree needs them)."""
        return rule == REDIRECTED.id or len(self.site(website or "").examples.get(rule, ())) < EXAMPLES_PER_RULE

    def add_tree(self, website: str, root: TreeNode) -> None:
        """Fold a finished site's tree (and the findings counted so far) into its summary."""
        summary = self.site(website)
        if summary.redirects:  # a redirect's target with a node of its own keeps its findings
            in_tree = tree_urls(root)
            summary.redirects = {final: asked for final, asked in summary.redirects.items() if final not in in_tree}
        findings: dict[str, Counter[str]] = {}
        for url, by_rule in summary.pending.items():
            findings.setdefault(summary.redirects.get(url, url), Counter()).update(by_rule)
        budget = NODES_PER_SITE if self.nodes_shown < REPORT_NODES else NODES_PER_SITE_BEYOND
        summary.tree, summary.nodes = summarize_tree(root, findings, budget)
        summary.feed_pages = feed_pages(root)
        self.nodes_shown += len(summary.nodes)
        summary.pending.clear()
        summary.sitemap_pages.clear()

    def add_site_facts(
        self, website: str, sitemap_pages: dict[str, int], months: Counter[str], urlset_pages: int = 0
    ) -> None:
        """The lastmod months of a site (and how many of its ``urlset_pages`` have none) and,
        without a tree, entries per sitemap (the first ones)."""
        summary = self.site(website)
        summary.months.update(months)
        summary.urlset_pages += urlset_pages
        if summary.tree is not None:
            return  # the tree shows the pages of each sitemap
        for url, count in sitemap_pages.items():
            if len(summary.sitemap_pages) >= SITEMAPS_PER_SITE:
                break
            summary.sitemap_pages[url] = count

    def render(self) -> str:
        """The whole HTML page."""
        total: Counter[str] = Counter()
        for summary in self.sites.values():
            total.update(summary.counts)
        parts = [
            "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>Sitemap audit</title>",
            f"<style>{_CSS}</style></head><body><h1>Sitemap audit</h1>",
            f"<p id='totals'>{_totals(len(self.sites), total)}</p>",
            _rule_table(total, "all-rules"),
        ]
        parts += [_site_section(summary) for summary in self.sites.values()]
        parts.append("</body></html>")
        return "".join(parts)


def _totals(sites: int, counts: Counter[str]) -> str:
    """The report's first line: sites, findings, and findings by severity (worst first)."""
    by_severity: Counter[str] = Counter()
    for rule_id, count in counts.items():
        by_severity[SEVERITY_OF[rule_id]] += count
    line = f"{sites:,} site(s), {sum(counts.values()):,} finding(s)"
    severities = [f"{by_severity[severity]:,} {severity}(s)" for severity in SEVERITIES if by_severity[severity]]
    return f"{line}: {', '.join(severities)}." if severities else f"{line}."


def _rule_table(counts: Counter[str], table_id: str | None = None) -> str:
    """Findings by rule; the report's own table (``table_id``) also says what each rule checks."""
    full = table_id is not None
    rows = []
    for rule_id, count in counts.most_common():
        rule = RULES_BY_ID[rule_id]
        about = f"<td>{html_text(rule.doc)}</td><td>{rule.source.value}</td>" if full else ""
        rows.append(
            f"<tr><td><code>{rule_id}</code></td><td class='{rule.severity.value}'>{rule.severity.value}</td>"
            f"<td>{count:,}</td>{about}</tr>"
        )
    about_head = "<th>what it checks</th><th>source</th>" if full else ""
    head = f"<tr><th>rule</th><th>severity</th><th>findings</th>{about_head}</tr>"
    table_id = f" id='{table_id}'" if full else ""
    return f"<table class='rules'{table_id}>{head}{''.join(rows)}</table>"


EXAMPLE_URL_LENGTH = 300
"""Characters of a URL an example shows (a hostile <loc> of 50 MB made a 115 MB report)."""


def _example(finding: Finding) -> str:
    """Where a finding is: the page or child in its sitemap, or the sitemap alone (a finding
    of the whole document, whose url is null)."""
    where = f"<code>{html_text(_shortened(finding.sitemap_url))}</code>"
    return where if finding.url is None else f"<code>{html_text(_shortened(finding.url))}</code> in {where}"


def _shortened(url: str) -> str:
    return url if len(url) <= EXAMPLE_URL_LENGTH else f"{url[:EXAMPLE_URL_LENGTH]}… ({len(url):,} characters)"


def _site_section(summary: SiteSummary) -> str:
    website = html_text(summary.website)
    parts = [f"<section class='site'><h2>{website}</h2>"]
    if summary.tree is not None:
        parts.append(f"<h3>Sitemap tree</h3>{render_tree(summary.tree)}")
    if summary.counts:
        parts.append(f"<h3>Findings by rule</h3>{_rule_table(summary.counts)}")
    for rule_id, examples in summary.examples.items():
        items = "".join(f"<li>{_example(f)}: {html_text(_shortened(f.detail))}</li>" for f in examples)
        parts.append(f"<details class='examples'><summary>{rule_id}</summary><ul>{items}</ul></details>")
    if summary.tree is None:  # no tree extension: entries per sitemap, flat
        parts.append("<h3>Entries per sitemap</h3><table class='sitemaps'><tr><th>sitemap</th><th>entries</th></tr>")
        parts += [
            f"<tr><td><code>{html_text(url)}</code></td><td>{count:,}</td></tr>"
            for url, count in summary.sitemap_pages.items()
        ]
        parts.append("</table>")
    undated = summary.urlset_pages - sum(summary.months.values())
    if not summary.months and not summary.feed_pages and undated <= 0:
        parts.append("</section>")
        return "".join(parts)
    parts.append("<h3>Pages by lastmod month</h3>")
    if undated > 0:
        parts.append(
            f"<p class='note'>{undated:,} of the urlsets' {summary.urlset_pages:,} page(s) have no lastmod with"
            " a month (none, one that is not a W3C Datetime, or a year alone): not counted here.</p>"
        )
    if summary.feed_pages:
        parts.append(
            f"<p class='note'>{summary.feed_pages:,} page(s) of RSS and Atom feeds are not counted here: "
            "the audit reads the urlsets' lastmod only.</p>"
        )
    if summary.months:
        parts.append("<table class='months'>")
        top = max(summary.months.values())
        for month in sorted(summary.months):
            count = summary.months[month]
            width = max(1, round(300 * count / top))
            bar = f"<span class='bar' style='width:{width}px'></span>"
            parts.append(f"<tr><td>{html_text(month)}</td><td>{count:,}</td><td>{bar}</td></tr>")
        parts.append("</table>")
    parts.append("</section>")
    return "".join(parts)
