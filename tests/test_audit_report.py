"""The audit report's sitemap tree: nodes with their pages and findings, read back with lxml;
hostile URLs stay text; the caps hold and a report of thousands of sites is fast and small."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import lxml.html
import pytest
from scrapy.utils.test import get_crawler

from sitemap_crawl.audit.crawl_audit import CrawlAudit, ResponseFacts
from sitemap_crawl.audit.finding import Finding
from sitemap_crawl.audit.report import Report
from sitemap_crawl.audit.report_tree import (
    CHILDREN_SHOWN,
    NODES_PER_SITE,
    NODES_PER_SITE_BEYOND,
    REPORT_NODES,
)
from sitemap_crawl.extensions.tree import SitemapTreeExtension
from sitemap_crawl.items import NodeReport
from sitemap_crawl.signals import site_tree
from sitemap_crawl.tree import SitemapTree, TreeNode
from tests.support import robots, sitemapindex, urlset
from tests.support.crawl import CrawlRunner
from tests.support.fixture_server import Route, SiteFactory

SITE = "https://example.com/"


def node(url: str, kind: str, pages: int = 0, *children: TreeNode, error: str | None = None) -> TreeNode:
    return TreeNode(url, kind, error, pages, children=dict(enumerate(children)))


def finding(sitemap_url: str, rule: str, severity: str = "warning", url: str | None = None) -> Finding:
    return Finding(SITE, sitemap_url, url, rule, severity, f"{rule} here")


def parse(report: Report) -> Any:
    return lxml.html.fromstring(report.render())


def heads(doc: Any) -> dict[str, Any]:
    """The head of each tree node (its <summary>, or the <li> of a leaf), by URL."""
    found = {}
    for item in doc.xpath(".//li[@class='node']"):
        head = (item.xpath("./details/summary") or [item])[0]
        found[head.xpath("string(./code[@class='url'])")] = head
    return found


def facts(head: Any) -> dict[str, str]:
    """The pages, invalid reason, findings by severity and rule ids of one node head."""
    text = {name: head.xpath(f"string(./span[@class='{name}'])") for name in ("kind", "pages", "invalid", "below")}
    text["rules"] = " ".join(head.xpath("./span[@class='rules']/code/text()"))
    text["severities"] = ", ".join(span.text_content() for span in head.xpath("./span[starts-with(@class, 'sev ')]"))
    return text


def demo_tree() -> TreeNode:
    return node(
        SITE,
        "website",
        0,
        node(
            f"{SITE}robots.txt",
            "robots_txt",
            0,
            node(
                f"{SITE}index.xml",
                "xml_index",
                0,
                node(f"{SITE}a.xml", "xml_urlset", 3),
                node(f"{SITE}old.xml", "xml_urlset", 2),
                node(f"{SITE}gone.xml", "invalid", 0, error="HTTP 404"),
            ),
        ),
        node(f"{SITE}sitemap.xml", "text", 4),
    )


def test_tree_nodes_carry_pages_findings_and_rule_ids() -> None:
    report = Report()
    for found in (
        finding(f"{SITE}a.xml", "url-fragment", url=f"{SITE}p#1"),
        finding(f"{SITE}a.xml", "url-fragment", url=f"{SITE}p#2"),
        finding(f"{SITE}a.xml", "lastmod-format", "error"),
        finding(f"{SITE}robots.txt", "relative-sitemap-line", "error"),
        finding(f"{SITE}gone.xml", "http-error", "error"),
        finding(f"{SITE}old.xml", "redirected", url=f"{SITE}new.xml"),
        finding(f"{SITE}new.xml", "url-fragment"),  # found at the final URL: the node has the requested one
        finding(f"{SITE}sitemap_index.xml", "http-error", "error"),  # a failed known path: no node
    ):
        report.add_finding(found)
    report.add_tree(SITE, demo_tree())
    report.add_finding(finding(f"{SITE}sitemap.xml", "url-fragment"))  # after the tree: still on its node
    doc = parse(report)

    nodes = {url: facts(head) for url, head in heads(doc).items()}
    paths = ("", "robots.txt", "index.xml", "a.xml", "old.xml", "gone.xml", "sitemap.xml")
    assert list(nodes) == [f"{SITE}{path}" for path in paths]  # document order
    assert nodes[SITE] == {
        "kind": "website",
        "pages": "9 pages",
        "invalid": "",
        "below": "8 findings below",
        "rules": "http-error",
        "severities": "1 error",
    }
    assert nodes[f"{SITE}index.xml"]["pages"] == "5 pages"
    assert nodes[f"{SITE}index.xml"]["below"] == "6 findings below"
    assert nodes[f"{SITE}a.xml"] == {
        "kind": "xml_urlset",
        "pages": "3 pages",
        "invalid": "",
        "below": "",
        "rules": "url-fragment lastmod-format",
        "severities": "1 error, 2 warnings",
    }
    assert nodes[f"{SITE}robots.txt"]["rules"] == "relative-sitemap-line"
    assert nodes[f"{SITE}old.xml"]["rules"] == "redirected url-fragment"
    assert nodes[f"{SITE}gone.xml"] == {
        "kind": "invalid",
        "pages": "0 pages",
        "invalid": "HTTP 404",
        "below": "",
        "rules": "http-error",
        "severities": "1 error",
    }
    assert nodes[f"{SITE}sitemap.xml"]["rules"] == "url-fragment"
    # no script, nothing fetched; the tree's top levels are drawn open
    assert not doc.xpath("//script | //link | //img | //iframe")
    assert doc.xpath("//li[@data-kind='website']/details/@open") == [""]
    assert doc.xpath("//li[@data-kind='xml_index']/details/@open") == []


def test_a_url_twice_in_the_tree_shows_its_findings_once() -> None:
    # a redirect loop: old.xml redirects to index.xml, its ancestor (an invalid "loop" node),
    # and index.xml lists itself; index.xml's findings stay on the index, once, not on the
    # loop nodes, and are not moved to old.xml (whose redirect findings stay its own)
    report = Report()
    index = f"{SITE}index.xml"
    for found in (
        finding(index, "url-fragment", url=f"{SITE}p.xml#f"),
        finding(f"{SITE}old.xml", "redirected", url=index),
    ):
        report.add_finding(found)
    tree = node(
        SITE,
        "website",
        0,
        node(
            index,
            "xml_index",
            0,
            node(f"{SITE}old.xml", "invalid", error="loop"),
            node(index, "invalid", error="loop"),
        ),
    )
    report.add_tree(SITE, tree)
    report.add_finding(finding(index, "nested-index", "error"))  # after the tree: the same node
    items = parse(report).xpath(".//li[@class='node']")
    shown = [
        (facts(head)["kind"], facts(head)["rules"])
        for item in items
        for head in (item.xpath("./details/summary") or [item])
    ]
    assert shown == [
        ("website", ""),
        ("xml_index", "url-fragment nested-index"),
        ("invalid", "redirected"),
        ("invalid", ""),
    ]
    assert facts(heads(parse(report))[SITE])["below"] == "3 findings below"


def test_hostile_urls_stay_text() -> None:
    hostile = "https://evil.test/<script>alert('x')</script>\"><b>bold</b>&amp;.xml"
    report = Report()
    report.add_finding(Finding(hostile, hostile, hostile + "#f", "url-fragment", "warning", "<i>detail</i>'\""))
    report.add_tree(hostile, node(hostile, "website", 0, node(hostile, "invalid", error="<b>loop</b>\"'")))
    html = report.render()
    doc: Any = lxml.html.fromstring(html)
    assert not doc.xpath("//script | //b | //i")
    assert "<script>" not in html
    assert doc.xpath("string(//section[@class='site']/h2)") == hostile
    assert set(heads(doc)) == {hostile}
    assert doc.xpath("string(//span[@class='invalid'])") == "<b>loop</b>\"'"
    assert "<i>detail</i>'\"" in doc.xpath("string(//details[@class='examples'])")


def test_an_example_of_a_whole_document_names_its_sitemap_once() -> None:
    # a finding with no url read "<sitemap> in <sitemap>"
    sitemap = f"{SITE}map.xml"
    report = Report()
    report.add_finding(Finding(SITE, sitemap, None, "empty-sitemap", "warning", "no entry"))
    report.add_finding(Finding(SITE, sitemap, f"{SITE}a#x", "url-fragment", "warning", "fragment #x"))
    doc: Any = lxml.html.fromstring(report.render())
    examples = [" ".join(item.text_content().split()) for item in doc.xpath("//details[@class='examples']//li")]
    assert examples == [f"{sitemap}: no entry", f"{SITE}a#x in {sitemap}: fragment #x"]


def test_an_example_shows_the_start_of_a_very_long_url() -> None:
    # a hostile 50 MB <loc> made a 115 MB report ("light", with aggregates only)
    long = f"{SITE}{'x' * 5_000_000}"
    report = Report()
    report.add_finding(Finding(SITE, f"{SITE}map.xml", long, "url-too-long", "error", "5,000,025 characters"))
    html = report.render()
    assert len(html) < 100_000
    example = lxml.html.fromstring(html).xpath("string(//details[@class='examples']//li)")
    assert example.startswith(long[:300] + f"… ({len(long):,} characters) in ")


def test_control_characters_of_a_sitemap_are_shown_escaped() -> None:
    # they were copied raw into the page (HTML forbids them in text), a lone surrogate too
    odd = "https://example.com/a\x00b\x1b[31m\x7f\x85\ud800.txt"
    report = Report()
    report.add_finding(Finding(SITE, odd, odd, "url-fragment", "warning", "fragment #\x01"))
    report.add_tree(SITE, node(SITE, "website", 0, node(odd, "text", 1)))
    html = report.render()
    assert not [char for char in html if ord(char) < 0x20 and char not in "\t\n\r"]
    assert not [char for char in html if 0x7F <= ord(char) < 0xA0 or 0xD800 <= ord(char) < 0xE000]
    html.encode("utf-8")
    shown = "https://example.com/a\\x00b\\x1b[31m\\x7f\\x85\\ud800.txt"
    assert set(heads(lxml.html.fromstring(html))) == {SITE, shown}
    assert "fragment #\\x01" in html


def test_bidirectional_controls_are_shown_escaped() -> None:
    # a right-to-left override was copied as is: the rest of the line showed reversed, a
    # URL ending in ".exe" read as ending in "exe.png"
    odd = "https://example.com/files/\u202egnp.exe"
    report = Report()
    report.add_finding(Finding(SITE, odd, odd, "unescaped-url", "warning", "unescaped '\u2066' \u200f"))
    report.add_tree(SITE, node(SITE, "website", 0, node(odd, "text", 1)))
    html = report.render()
    assert not [char for char in html if char in "\u061c\u200e\u200f" or 0x202A <= ord(char) <= 0x202E]
    assert not [char for char in html if 0x2066 <= ord(char) <= 0x2069]
    assert set(heads(lxml.html.fromstring(html))) == {SITE, "https://example.com/files/\\u202egnp.exe"}
    assert "unescaped &#x27;\\u2066&#x27; \\u200f" in html


def test_the_histogram_says_that_feed_pages_are_not_in_it() -> None:
    # it left out RSS and Atom pages without a word; with only feeds it was not shown at all
    report = Report()
    report.add_tree(SITE, node(SITE, "website", 0, node(f"{SITE}feed.rss", "rss", 3), node(f"{SITE}a.atom", "atom", 2)))
    doc: Any = lxml.html.fromstring(report.render())
    assert "5 page(s) of RSS and Atom feeds are not counted here" in doc.xpath("string(//p[@class='note'])")
    report = Report()
    report.add_tree(SITE, node(SITE, "website", 0, node(f"{SITE}s.xml", "xml_urlset", 3)))
    report.add_site_facts(SITE, {}, Counter({"2024-05": 3}))
    doc = lxml.html.fromstring(report.render())
    assert not doc.xpath("//p[@class='note']") and doc.xpath("//table[@class='months']")


def test_the_histogram_says_how_many_pages_have_no_lastmod_month(tmp_path: Path) -> None:
    # it counted the dated pages only, without a word: 5 pages showed as 1
    report_path = tmp_path / "report.html"
    audit = CrawlAudit(None, str(report_path), "*")
    url = f"{SITE}s.xml"
    body = urlset(
        {"loc": f"{SITE}a", "lastmod": "2024-05-01"},
        {"loc": f"{SITE}b"},
        {"loc": f"{SITE}c", "lastmod": "yesterday"},
        {"loc": f"{SITE}d", "lastmod": "2024"},
        {"loc": f"{SITE}e"},
        {"loc": f"{SITE}a", "lastmod": "2024-05-01"},  # (listed again: one page)
    ).encode()
    audit.audit(ResponseFacts(SITE, url, "child", 200, url, "application/xml"), body)
    audit.finish()
    doc: Any = lxml.html.fromstring(report_path.read_text("utf-8"))
    assert doc.xpath("string(//p[@class='note'])").startswith(
        "4 of the urlsets' 5 page(s) have no lastmod with a month"
    )
    assert [
        row.xpath("string(td[1])") + " " + row.xpath("string(td[2])")
        for row in doc.xpath("//table[@class='months']/tr")
    ] == ["2024-05 1"]


def test_children_beyond_the_cap_become_one_line() -> None:
    children = [node(f"{SITE}s{i}.xml", "xml_urlset", 10) for i in range(1000)]
    report = Report()
    for i in (3, 500, 501):
        report.add_finding(finding(f"{SITE}s{i}.xml", "url-fragment"))
    report.add_tree(SITE, node(SITE, "website", 0, node(f"{SITE}index.xml", "xml_index", 0, *children)))
    doc = parse(report)

    shown = heads(doc)
    assert len(shown) == 2 + CHILDREN_SHOWN
    assert f"{SITE}s{CHILDREN_SHOWN - 1}.xml" in shown and f"{SITE}s{CHILDREN_SHOWN}.xml" not in shown
    more = doc.xpath("//li[@class='more']")
    assert len(more) == 1
    hidden = 1000 - CHILDREN_SHOWN
    assert more[0].text_content() == f"… and {hidden} more ({hidden * 10:,} pages) 2 warnings url-fragment×2"
    assert facts(shown[f"{SITE}index.xml"])["pages"] == "10,000 pages"
    assert facts(shown[f"{SITE}index.xml"])["below"] == "3 findings below"


def test_nodes_per_site_are_capped_breadth_first() -> None:
    indexes = [
        node(f"{SITE}i{i}.xml", "xml_index", 0, *(node(f"{SITE}i{i}-{j}.xml", "xml_urlset", 1) for j in range(20)))
        for i in range(10)
    ]
    report = Report()
    report.add_tree(SITE, node(SITE, "website", 0, *indexes))
    shown = heads(parse(report))
    assert len(shown) == NODES_PER_SITE
    assert all(f"{SITE}i{i}.xml" in shown for i in range(10))  # every index before any of their children


def test_many_sites_render_fast_and_small(tmp_path: Path) -> None:
    """2,000 sites, each robots.txt -> an index of 60 sitemaps with findings (124,000 nodes in
    the trees): past REPORT_NODES shown nodes, sites show NODES_PER_SITE_BEYOND."""
    sites = 2000
    report = Report()
    started = time.perf_counter()
    for number in range(sites):
        site = f"https://site{number}.example/"
        leaves = [node(f"{site}s{i}.xml", "xml_urlset", 2500) for i in range(60)]
        report.add_finding(Finding(site, f"{site}s7.xml", f"{site}x#y", "url-fragment", "warning", "fragment"))
        report.add_finding(Finding(site, f"{site}robots.txt", None, "http-error", "error", "HTTP 500"))
        root = node(
            site,
            "website",
            0,
            node(f"{site}robots.txt", "robots_txt", 0, node(f"{site}i.xml", "xml_index", 0, *leaves)),
        )
        report.add_tree(site, root)
    html = report.render()
    elapsed = time.perf_counter() - started

    page = tmp_path / "report.html"
    page.write_text(html, encoding="utf-8")
    size = page.stat().st_size
    doc: Any = lxml.html.fromstring(html)
    nodes = len(doc.xpath("//li[@class='node']"))
    assert len(doc.xpath("//section[@class='site']")) == sites
    assert nodes <= REPORT_NODES + NODES_PER_SITE + sites * NODES_PER_SITE_BEYOND
    assert nodes < 40_000
    assert size < 15_000_000, size  # under 7.5 KB a site
    assert elapsed < 5, elapsed
    assert report.nodes_shown == nodes


@pytest.mark.parametrize("with_audit_file", [False, True])
def test_report_of_a_crawl_shows_the_tree(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path, with_audit_file: bool
) -> None:
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/index.xml"),
            "/index.xml": sitemapindex("{base}/a.xml", "{base}/old.xml", "{base}/missing.xml"),
            "/a.xml": urlset("{base}/p1", "{base}/p2#frag"),
            "/old.xml": Route(redirect_to="{base}/new.xml"),
            "/new.xml": urlset("{base}/p3", "{base}/p4#frag"),
        }
    )
    report = tmp_path / "report.html"
    settings = {"RETRY_TIMES": 0, "DOWNLOAD_TIMEOUT": 5, "SITEMAP_CRAWL_KNOWN_PATHS": "sitemap.xml"}
    settings["SITEMAP_CRAWL_REPORT_FILE"] = str(report)
    if with_audit_file:
        settings["SITEMAP_CRAWL_AUDIT_FILE"] = str(tmp_path / "findings.jsonl")
    crawl({"homepage": site.base}, settings=settings).assert_ok()

    doc: Any = lxml.html.fromstring(report.read_bytes())
    nodes = {url: facts(head) for url, head in heads(doc).items()}
    assert {url: (f["kind"], f["pages"], f["invalid"]) for url, f in nodes.items()} == {
        site.base + "/": ("website", "4 pages", ""),
        site.url("/robots.txt"): ("robots_txt", "4 pages", ""),
        site.url("/index.xml"): ("xml_index", "4 pages", ""),
        site.url("/a.xml"): ("xml_urlset", "2 pages", ""),
        site.url("/old.xml"): ("xml_urlset", "2 pages", ""),
        site.url("/missing.xml"): ("invalid", "0 pages", "HTTP 404"),
    }
    assert nodes[site.url("/a.xml")]["rules"] == "url-fragment"
    assert sorted(nodes[site.url("/old.xml")]["rules"].split()) == ["redirected", "url-fragment"]
    assert nodes[site.url("/missing.xml")]["rules"] == "http-error"


def test_many_site_report_has_a_tree_per_site(fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path) -> None:
    site = fixture_site(
        {
            "//one.test/robots.txt": robots("http://one.test:{port}/sitemap.xml"),
            "//one.test/sitemap.xml": urlset("http://one.test:{port}/a#frag"),
            "//two.test/sitemap.xml": urlset("http://two.test:{port}/a", "http://two.test:{port}/b"),
        }
    )
    one, two = (f"http://{name}:{site.port}/" for name in ("one.test", "two.test"))
    homepages = tmp_path / "sites.txt"
    homepages.write_text(f"{one}\n{two}\n")
    report = tmp_path / "report.html"
    settings = {
        "RETRY_TIMES": 0,
        "DOWNLOAD_TIMEOUT": 5,
        "SITEMAP_CRAWL_KNOWN_PATHS": "sitemap.xml",
        "TWISTED_DNS_RESOLVER": "tests.support.dns.LoopbackResolver",
        "SITEMAP_CRAWL_REPORT_FILE": str(report),
    }
    crawl({"homepages_file": str(homepages)}, settings=settings).assert_ok()

    doc: Any = lxml.html.fromstring(report.read_bytes())
    trees = {}
    for section in doc.xpath("//section[@class='site']"):
        nodes = {url: facts(head) for url, head in heads(section).items()}
        trees[section.xpath("string(h2)")] = {url: (f["kind"], f["pages"], f["rules"]) for url, f in nodes.items()}
    assert trees == {
        one: {
            one: ("website", "1 page", ""),
            f"{one}robots.txt": ("robots_txt", "1 page", ""),
            f"{one}sitemap.xml": ("xml_urlset", "1 page", "url-fragment"),
        },
        two: {  # robots.txt answered 404: no node, its finding is on the website node
            two: ("website", "2 pages", "no-sitemap-in-robots"),
            f"{two}sitemap.xml": ("xml_urlset", "2 pages", "known-path-only"),
        },
    }


def test_the_tree_extension_hands_each_closed_tree_by_signal() -> None:
    crawler = get_crawler(settings_dict={"SITEMAP_CRAWL_TREE_LOG_LINES": 0})
    crawler._apply_settings()
    extension = SitemapTreeExtension(crawler)
    received: list[tuple[str, str, str | None]] = []

    def on_tree(site: str, tree: SitemapTree) -> None:
        assert tree.root is not None
        received.append((site, tree.root.url, tree.root.children[0].error))

    crawler.signals.connect(on_tree, signal=site_tree)
    for site in ("https://a.test/", "https://b.test/"):
        extension.record_node(NodeReport((), site, "website"), site)
        extension.record_node(NodeReport((0,), f"{site}robots.txt", "robots_txt", finished=False), site)
    extension.finish_site("https://a.test/", unreachable=None)
    extension.finish_site("https://b.test/", attempt="w1")
    assert received == [
        ("https://a.test/", "https://a.test/", "interrupted"),
        ("https://b.test/", "https://b.test/", "interrupted"),
    ]


def test_without_a_tree_the_report_lists_entries_per_sitemap() -> None:
    report = Report()
    report.add_site_facts(SITE, {f"{SITE}sitemap.xml": 3}, Counter({"2024-05": 3}))
    doc = parse(report)
    assert doc.xpath("string(//table[@class='sitemaps']//td)") == f"{SITE}sitemap.xml"
    assert not doc.xpath("//ul[@class='tree']")
    report.add_tree(SITE, node(SITE, "website", 0, node(f"{SITE}sitemap.xml", "xml_urlset", 3)))
    doc = parse(report)
    assert not doc.xpath("//table[@class='sitemaps']") and len(doc.xpath("//li[@class='node']")) == 2


def test_report_of_a_crawl_stopped_early_has_the_tree_so_far(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/first.xml", "{base}/slow.xml", "{base}/third.xml"),
            "/first.xml": urlset("{base}/a", "{base}/b#x"),
            "/slow.xml": Route(urlset("{base}/late"), delay=0.5),
            "/third.xml": urlset("{base}/never"),
        }
    )
    report = tmp_path / "report.html"
    settings = {
        "RETRY_TIMES": 0,
        "SITEMAP_CRAWL_KNOWN_PATHS": "sitemap.xml",
        "CLOSESPIDER_ITEMCOUNT": 1,
        "SITEMAP_CRAWL_BATCH_SIZE": 1,
        "CONCURRENT_REQUESTS": 1,
        "SITEMAP_CRAWL_REPORT_FILE": str(report),
    }
    result = crawl({"homepage": site.base}, settings=settings).assert_ok()
    assert result.stats["finish_reason"] == "closespider_itemcount"

    nodes = {url: facts(head) for url, head in heads(lxml.html.fromstring(report.read_bytes())).items()}
    assert nodes[site.url("/first.xml")] == {
        "kind": "xml_urlset",
        "pages": "2 pages",
        "invalid": "",
        "below": "",
        "rules": "url-fragment",
        "severities": "1 warning",
    }
    assert [nodes[url]["kind"] for url in list(nodes)[:2]] == ["website", "robots_txt"]


def test_the_first_line_counts_findings_by_severity_with_thousands_separators() -> None:
    report = Report()
    found = [finding(f"{SITE}s.xml", "outside-directory", url=f"{SITE}p{i}") for i in range(1_200)]
    found += [finding(f"{SITE}s.xml", "too-many-urls", "error"), finding(f"{SITE}s.xml", "nested-index", "error")]
    report.add_findings(found)
    doc = lxml.html.fromstring(report.render())
    assert (
        doc.get_element_by_id("totals").text_content() == "1 site(s), 1,202 finding(s): 2 error(s), 1,200 warning(s)."
    )
    first_row = doc.xpath("//table[@id='all-rules']//tr[td]")[0]
    assert [td.text_content() for td in first_row.xpath("td")][:3] == ["outside-directory", "warning", "1,200"]
    assert (
        lxml.html.fromstring(Report().render()).get_element_by_id("totals").text_content() == "0 site(s), 0 finding(s)."
    )
