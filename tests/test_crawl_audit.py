"""The audit in a crawl (SITEMAP_CRAWL_AUDIT_FILE): findings from sitemaps, robots.txt and
HTTP facts, counted in the stats and the log; in many-site runs each carries its website."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import lxml.html

from tests.support import robots, sitemapindex, urlset
from tests.support.crawl import CrawlRunner
from tests.support.fixture_server import Route, SiteFactory

FAST = {"RETRY_TIMES": 0, "DOWNLOAD_TIMEOUT": 5, "SITEMAP_CRAWL_KNOWN_PATHS": "sitemap.xml"}


def read_findings(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def test_findings_file_stats_and_log(fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path) -> None:
    site = fixture_site(
        {
            "/robots.txt": robots(extra="Disallow: /html.xml\n"),
            "/sitemap.xml": sitemapindex("{base}/inner.xml"),
            "/inner.xml": sitemapindex("{base}/pages.xml", "{base}/missing.xml", "{base}/html.xml", "{base}/old.xml"),
            "/old.xml": Route(redirect_to="{base}/new.xml"),
            "/new.xml": urlset("{base}/d"),
            "/pages.xml": urlset("http://elsewhere.test/a", {"loc": "{base}/b", "lastmod": "yesterday"}),
            "/html.xml": Route(urlset("{base}/c"), content_type="text/html"),
        }
    )
    audit_file = tmp_path / "findings.jsonl"
    result = crawl({"homepage": site.base}, settings={**FAST, "SITEMAP_CRAWL_AUDIT_FILE": str(audit_file)})
    result.assert_ok()

    url = site.url
    got = sorted((f["rule"], f["sitemap_url"], f["url"]) for f in read_findings(audit_file))
    assert got == sorted(
        [
            ("no-sitemap-in-robots", url("/robots.txt"), None),
            ("known-path-only", url("/sitemap.xml"), None),
            ("nested-index", url("/sitemap.xml"), url("/inner.xml")),
            ("other-host", url("/pages.xml"), "http://elsewhere.test/a"),
            ("lastmod-format", url("/pages.xml"), url("/b")),
            ("http-error", url("/missing.xml"), None),
            ("served-as-html", url("/html.xml"), None),
            ("sitemap-disallowed", url("/html.xml"), None),
            ("redirected", url("/old.xml"), url("/new.xml")),
        ]
    )
    assert {f["website"] for f in read_findings(audit_file)} == {site.base + "/"}
    assert result.stats["sitemap_crawl/audit/nested-index"] == 1
    assert result.stats["sitemap_crawl/audit/other-host"] == 1
    assert "Sitemap audit: 9 finding(s)" in result.log


def test_sound_site_has_no_finding_and_off_writes_nothing(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    site = fixture_site({"/robots.txt": robots("{base}/sitemap.xml"), "/sitemap.xml": urlset("{base}/a")})
    audit_file = tmp_path / "findings.jsonl"
    result = crawl({"homepage": site.base}, settings={**FAST, "SITEMAP_CRAWL_AUDIT_FILE": str(audit_file)})
    assert result.assert_ok().pages and audit_file.read_text() == ""
    off = crawl({"homepage": site.base}, settings=FAST).assert_ok()
    assert not any(key.startswith("sitemap_crawl/audit/") for key in off.stats)
    assert "Sitemap audit" not in off.log


def test_many_sites_findings_carry_their_website(fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path) -> None:
    routes: dict[str, Any] = {}
    for name in ("one.test", "two.test"):
        base = f"http://{name}:{{port}}"
        routes[f"//{name}/robots.txt"] = robots(f"{base}/sitemap.xml")
        routes[f"//{name}/sitemap.xml"] = urlset(f"{base}/a#frag-{name}")
    site = fixture_site(routes)
    homepages = tmp_path / "sites.txt"
    homepages.write_text(f"http://one.test:{site.port}/\nhttp://two.test:{site.port}/\n")
    audit_file = tmp_path / "findings.jsonl"
    # two processes asked: an audit runs in one (its findings go to one file)
    settings = {
        **FAST,
        "TWISTED_DNS_RESOLVER": "tests.support.dns.LoopbackResolver",
        "SITEMAP_CRAWL_AUDIT_FILE": str(audit_file),
        "SITEMAP_CRAWL_PROCESSES": 2,
    }
    crawl({"homepages_file": str(homepages)}, settings=settings).assert_ok()
    got = sorted((f["website"], f["rule"], f["url"]) for f in read_findings(audit_file))
    assert got == [
        (f"http://{name}:{site.port}/", "url-fragment", f"http://{name}:{site.port}/a#frag-{name}")
        for name in ("one.test", "two.test")
    ]


def test_html_report_structure(fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path) -> None:
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/sitemap.xml"),
            "/sitemap.xml": urlset(
                {"loc": "{base}/a", "lastmod": "2024-05-01"},
                {"loc": "{base}/b", "lastmod": "2024-05-20"},
                {"loc": "{base}/c#x", "lastmod": "2024-07-02"},
            ),
        }
    )
    report = tmp_path / "report.html"
    crawl({"homepage": site.base}, settings={**FAST, "SITEMAP_CRAWL_REPORT_FILE": str(report)}).assert_ok()

    doc = lxml.html.fromstring(report.read_bytes())
    assert not doc.xpath("//script") and not doc.xpath("//link[@rel='stylesheet']")
    assert [h.text_content() for h in doc.xpath("//section[@class='site']/h2")] == [site.base + "/"]
    rules = doc.xpath("//table[@id='all-rules']//tr[td]")
    assert [[td.text_content() for td in row.xpath("td")][:3] for row in rules] == [["url-fragment", "warning", "1"]]
    tree = [
        (li.get("data-kind"), li.xpath("string(.//span[@class='pages'])")) for li in doc.xpath("//li[@class='node']")
    ]
    assert tree == [("website", "3 pages"), ("robots_txt", "3 pages"), ("xml_urlset", "3 pages")]
    months = doc.xpath("//table[@class='months']//tr")
    assert [[td.text_content() for td in row.xpath("td")][:2] for row in months] == [["2024-05", "2"], ["2024-07", "1"]]
    assert doc.xpath("//details[@class='examples']/summary")[0].text_content() == "url-fragment"
