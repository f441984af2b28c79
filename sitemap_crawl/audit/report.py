"""The audit's HTML report: one self-contained page (inline CSS, no script), aggregates only.

Per site: findings by rule with a few examples, entries per sitemap, a histogram of page
lastmod by month. What it keeps per site is bounded (examples and sitemaps capped), so a
report of 10,000 sites stays light.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from html import escape

from sitemap_crawl.audit.finding import Finding
from sitemap_crawl.audit.rules import RULES_BY_ID

EXAMPLES_PER_RULE = 3
SITEMAPS_PER_SITE = 100

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;margin-top:2em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:2px 8px;text-align:left}
.error{color:#b00}.warning{color:#a60}.notice{color:#06a}
.bar{background:#4a8;height:12px;display:inline-block}
code{font-size:12px;word-break:break-all}
"""


@dataclass(slots=True)
class SiteSummary:
    """What the report keeps of one site."""

    website: str
    counts: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[Finding]] = field(default_factory=dict)
    sitemap_pages: dict[str, int] = field(default_factory=dict)
    months: Counter[str] = field(default_factory=Counter)


class Report:
    """Findings and per-sitemap facts of every site, folded into bounded summaries."""

    def __init__(self) -> None:
        self.sites: dict[str, SiteSummary] = {}

    def site(self, website: str) -> SiteSummary:
        """The summary of ``website`` (made on first use)."""
        summary = self.sites.get(website)
        if summary is None:
            summary = self.sites[website] = SiteSummary(website)
        return summary

    def add_finding(self, finding: Finding) -> None:
        """Count a finding; keep it as an example if its rule has few yet."""
        summary = self.site(finding.website or "")
        summary.counts[finding.rule] += 1
        examples = summary.examples.setdefault(finding.rule, [])
        if len(examples) < EXAMPLES_PER_RULE:
            examples.append(finding)

    def add_site_facts(self, website: str, sitemap_pages: dict[str, int], months: Counter[str]) -> None:
        """Entries per sitemap (the first ones, capped) and the lastmod months of a site."""
        summary = self.site(website)
        for url, count in sitemap_pages.items():
            if len(summary.sitemap_pages) >= SITEMAPS_PER_SITE:
                break
            summary.sitemap_pages[url] = count
        summary.months.update(months)

    def render(self) -> str:
        """The whole HTML page."""
        total: Counter[str] = Counter()
        for summary in self.sites.values():
            total.update(summary.counts)
        parts = [
            "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>Sitemap audit</title>",
            f"<style>{_CSS}</style></head><body><h1>Sitemap audit</h1>",
            f"<p id='totals'>{len(self.sites)} site(s), {sum(total.values())} finding(s).</p>",
            _rule_table(total, "all-rules"),
        ]
        parts += [_site_section(summary) for summary in self.sites.values()]
        parts.append("</body></html>")
        return "".join(parts)


def _rule_table(counts: Counter[str], table_id: str) -> str:
    rows = []
    for rule_id, count in counts.most_common():
        rule = RULES_BY_ID[rule_id]
        rows.append(
            f"<tr><td><code>{rule_id}</code></td><td class='{rule.severity.value}'>{rule.severity.value}</td>"
            f"<td>{count}</td><td>{escape(rule.doc)}</td><td>{rule.source.value}</td></tr>"
        )
    head = "<tr><th>rule</th><th>severity</th><th>findings</th><th>what it checks</th><th>source</th></tr>"
    return f"<table class='rules' id='{table_id}'>{head}{''.join(rows)}</table>"


def _site_section(summary: SiteSummary) -> str:
    website = escape(summary.website)
    parts = [f"<section class='site'><h2>{website}</h2><h3>Findings by rule</h3>"]
    parts.append(_rule_table(summary.counts, ""))
    for rule_id, examples in summary.examples.items():
        items = "".join(
            f"<li><code>{escape(f.url or f.sitemap_url)}</code> in <code>{escape(f.sitemap_url)}</code>: "
            f"{escape(f.detail)}</li>"
            for f in examples
        )
        parts.append(f"<details class='examples'><summary>{rule_id}</summary><ul>{items}</ul></details>")
    parts.append("<h3>Entries per sitemap</h3><table class='sitemaps'><tr><th>sitemap</th><th>entries</th></tr>")
    parts += [
        f"<tr><td><code>{escape(url)}</code></td><td>{count}</td></tr>" for url, count in summary.sitemap_pages.items()
    ]
    parts.append("</table><h3>Pages by lastmod month</h3><table class='months'>")
    top = max(summary.months.values(), default=1)
    for month in sorted(summary.months):
        count = summary.months[month]
        width = max(1, round(300 * count / top))
        bar = f"<span class='bar' style='width:{width}px'></span>"
        parts.append(f"<tr><td>{escape(month)}</td><td>{count}</td><td>{bar}</td></tr>")
    parts.append("</table></section>")
    return "".join(parts)
