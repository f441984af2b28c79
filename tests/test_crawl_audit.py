"""The audit in a crawl (SITEMAP_CRAWL_AUDIT_FILE): findings from sitemaps, robots.txt and
HTTP facts, counted in the stats and the log; in many-site runs each carries its website."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import lxml.html
import pytest

from sitemap_crawl.audit import rules
from sitemap_crawl.audit.crawl_audit import CrawlAudit, ResponseFacts
from tests.support import gzip_bytes, robots, sitemapindex, urlset
from tests.support.crawl import CrawlRunner
from tests.support.disk import file_size_limit
from tests.support.fixture_server import Route, SiteFactory, closed_port

FAST = {"RETRY_TIMES": 0, "DOWNLOAD_TIMEOUT": 5, "SITEMAP_CRAWL_KNOWN_PATHS": "sitemap.xml"}


def read_findings(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def test_a_sitemap_fetched_twice_is_audited_once(tmp_path: Path) -> None:
    # listed by two indexes, it is read twice (twice in the tree): each fault was two
    # findings, and its pages "duplicate-across-sitemaps" of themselves
    path = tmp_path / "findings.jsonl"
    audit = CrawlAudit(str(path), None, "*")
    shared = "https://example.com/shared.xml"
    body = urlset("https://example.com/a#part", "https://example.com/b").encode()
    facts = ResponseFacts("https://example.com/", shared, "child", 200, shared, "application/xml")
    assert audit.audit(facts, body) == Counter({"url-fragment": 1})
    assert audit.audit(facts, body) == Counter()
    other = facts._replace(url="https://example.com/other.xml", final_url="https://example.com/other.xml")
    assert audit.audit(other, body) == Counter({"url-fragment": 1, "duplicate-across-sitemaps": 2})
    audit.finish()
    assert len(read_findings(path)) == 4


def test_a_gzip_robots_txt_is_audited_as_the_crawl_reads_it(tmp_path: Path) -> None:
    # sent as gzip bytes without Content-Encoding, the crawl inflates it and follows its
    # Sitemap: line; the audit read the raw bytes: "no Sitemap: line", its rules lost
    path = tmp_path / "findings.jsonl"
    audit = CrawlAudit(str(path), None, "*")
    site, robots_url, sitemap = "https://example.com/", "https://example.com/robots.txt", "https://example.com/s.xml"
    text = f"User-agent: *\nDisallow: /private\n\nSitemap: {sitemap}\n"
    facts = ResponseFacts(site, robots_url, "robots", 200, robots_url, "text/plain")
    assert audit.audit(facts, gzip_bytes(text)) == Counter()
    listed = ResponseFacts(site, sitemap, "child", 200, sitemap, "application/xml")
    found = audit.audit(listed, urlset("https://example.com/private/a", "https://example.com/b").encode())
    assert found == Counter({"page-disallowed": 1})
    audit.finish()


def test_a_known_path_that_cannot_be_decoded_is_read_by_the_audit_not_the_crawl(tmp_path: Path) -> None:
    # the crawl process hands the body over; the audit process tells a sitemap from a
    # "not found" page (the reactor parsed it before)
    path = tmp_path / "findings.jsonl"
    audit = CrawlAudit(str(path), None, "*")
    site, url = "https://example.com/", "https://example.com/sitemap.xml"
    assert audit.undecodable(site, url, "gzip", b"<html><body>Not here</body></html>") == Counter()
    assert audit.undecodable(site, url, "gzip", b"") == Counter()
    found = audit.undecodable(site, url, "gzip", urlset("https://example.com/a").encode())
    assert found == Counter({"gzip-mislabelled": 1})
    assert audit.undecodable(site, "https://example.com/listed.xml", "gzip") == Counter({"gzip-mislabelled": 1})
    audit.finish()
    assert [row["sitemap_url"] for row in read_findings(path)] == [url, "https://example.com/listed.xml"]


def test_an_appending_audit_keeps_the_file_and_ends_a_line_cut_short(tmp_path: Path) -> None:
    # (a queue worker restarted after a kill -9: its last line may be cut)
    path = tmp_path / "findings.jsonl"
    path.write_text('{"website": "https://old.example/"}\n{"website": "https://cu', encoding="utf-8")
    audit = CrawlAudit(str(path), None, "*", append=True)
    audit.finish()
    assert path.read_text("utf-8") == '{"website": "https://old.example/"}\n{"website": "https://cu\n'
    audit = CrawlAudit(str(path), None, "*", append=True)
    shared = "https://example.com/s.xml"
    facts = ResponseFacts("https://example.com/", shared, "child", 200, shared, "application/xml")
    assert audit.audit(facts, urlset("https://example.com/a#part").encode()) == Counter({"url-fragment": 1})
    audit.finish()
    written = path.read_text("utf-8").splitlines()
    assert written[:2] == ['{"website": "https://old.example/"}', '{"website": "https://cu']
    assert [json.loads(line)["rule"] for line in written[2:]] == ["url-fragment"]


def test_a_findings_file_that_fills_up_keeps_whole_lines_and_the_findings_are_still_counted(tmp_path: Path) -> None:
    # each batch after the disk filled was a traceback, the file ended in a cut line, and
    # the crawl's log said all was written
    path = tmp_path / "findings.jsonl"
    report = tmp_path / "report.html"
    audit = CrawlAudit(str(path), str(report), "*")
    site = "https://example.com/"
    facts = [
        ResponseFacts(site, f"{site}s{n}.xml", "child", 200, f"{site}s{n}.xml", "application/xml") for n in range(3)
    ]
    listing = urlset(*(f"https://example.com/{n}#part" for n in range(300))).encode()  # 300 url-fragment
    assert audit.audit(facts[0], listing)["url-fragment"] == 300
    whole = path.stat().st_size
    with file_size_limit(whole + 5000):
        assert audit.audit(facts[1], listing)["url-fragment"] == 300  # (counted all the same)
        assert audit.audit(facts[2], listing)["url-fragment"] == 300
    kept = read_findings(path)  # the whole lines of the batch the disk took are kept, its cut line is not
    assert 300 < len(kept) < 600 and path.read_bytes().endswith(b"\n")
    assert [(failure.output, failure.written) for failure in audit.take_failures()] == [("findings", len(kept))]
    audit.finish()
    assert read_findings(path) == kept
    assert audit.take_failures() == []
    assert "900" in report.read_text("utf-8")  # (the report counts every finding)


def test_a_report_that_cannot_be_written_leaves_nothing_and_is_said(tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    report.write_text("an earlier run's", encoding="utf-8")
    audit = CrawlAudit(None, str(report), "*")
    url = "https://example.com/s.xml"
    audit.audit(ResponseFacts("https://example.com/", url, "child", 200, url, "application/xml"), b"<urlset/>")
    with file_size_limit(100):
        audit.finish()
    [failure] = audit.take_failures()
    assert (failure.output, failure.path) == ("report", str(report))
    assert sorted(path.name for path in tmp_path.iterdir()) == ["report.html"]  # (no temporary file left)
    assert report.read_text("utf-8") == "an earlier run's"


@pytest.mark.parametrize("which", ["findings", "report"])
def test_an_audit_output_that_cannot_be_written_is_one_error_line_and_a_stat(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path, which: str
) -> None:
    site = fixture_site({"/robots.txt": robots("{base}/s.xml"), "/s.xml": urlset("{base}/a#part", "{base}/b#part")})
    findings, report = (tmp_path / "findings.jsonl", tmp_path / "report.html")
    outputs = {"SITEMAP_CRAWL_AUDIT_FILE": str(findings), "SITEMAP_CRAWL_REPORT_FILE": str(report)}
    outputs["SITEMAP_CRAWL_AUDIT_FILE" if which == "findings" else "SITEMAP_CRAWL_REPORT_FILE"] = "/dev/full"

    result = crawl({"homepage": site.base}, settings={**FAST, **outputs}).assert_ok()

    assert "Traceback" not in result.log
    errors = [line for line in result.log_lines("ERROR") if "audit" in line]
    assert len(errors) == 2, errors  # as it happens, and the closing line
    assert "No space left on device" in errors[0]
    assert "Sitemap audit: 2 finding(s)" in errors[1]
    if which == "findings":
        assert result.stats["sitemap_crawl/audit_file_failed"] == 1
        assert "0 of them written to /dev/full" in errors[1]
        assert report.exists()
    else:
        assert result.stats["sitemap_crawl/audit_report_failed"] == 1
        assert "the report /dev/full was not written" in errors[1]
        assert len(read_findings(findings)) == 2
    assert result.stats["sitemap_crawl/audit/url-fragment"] == 2


@pytest.mark.parametrize("redirect_first", [True, False])
def test_index_lastmod_older_is_judged_under_each_url_a_child_is_reached_at(
    tmp_path: Path, redirect_first: bool
) -> None:
    # idx3 lists old.xml, which redirects to child.xml, which idx1 lists: the body is audited
    # once, and the index whose URL was not the one audited was not judged
    path = tmp_path / "findings.jsonl"
    audit = CrawlAudit(str(path), None, "*")
    site, base = "https://example.com/", "https://example.com/"
    child, old = base + "child.xml", base + "old.xml"
    for index, listed, said in (("idx1.xml", child, "2020-03-01"), ("idx3.xml", old, "2020-01-02")):
        body = sitemapindex({"loc": listed, "lastmod": said}).encode()
        audit.audit(ResponseFacts(site, base + index, "child", 200, base + index, "application/xml"), body)
    pages = urlset({"loc": base + "p", "lastmod": "2024-01-01"}).encode()
    responses = [(old, child), (child, child)]
    for url, final in responses if redirect_first else responses[::-1]:
        audit.audit(ResponseFacts(site, url, "child", 200, final, "application/xml"), pages)
    audit.finish()
    found = sorted(
        (row["sitemap_url"], row["url"]) for row in read_findings(path) if row["rule"] == "index-lastmod-older"
    )
    assert found == [(base + "idx1.xml", child), (base + "idx3.xml", old)]


def test_index_lastmod_older_takes_the_first_entry_of_a_child_even_undated(tmp_path: Path) -> None:
    path = tmp_path / "findings.jsonl"
    audit = CrawlAudit(str(path), None, "*")
    base = "https://example.com/"
    index = sitemapindex(base + "child.xml", {"loc": base + "child.xml", "lastmod": "2020-01-01"}).encode()
    audit.audit(ResponseFacts(base, base + "idx.xml", "child", 200, base + "idx.xml", "application/xml"), index)
    pages = urlset({"loc": base + "p", "lastmod": "2024-01-01"}).encode()
    found = audit.audit(ResponseFacts(base, base + "child.xml", "child", 200, base + "child.xml", "text/xml"), pages)
    assert "index-lastmod-older" not in found  # (as the crawl fetches it: by the first entry)


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


def test_a_well_known_path_that_found_nothing_is_no_finding(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    # a "not found" page answered 200 at /sitemap was an invalid-document, a served-as-html
    # and a known-path-only, for a probe the tree leaves out
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/declared.xml"),
            "/declared.xml": urlset("{base}/a"),
            "/sitemap": Route("<html><body>Page not found</body></html>", content_type="text/html"),
            "/sitemap.xml": Route("", content_type="text/xml"),
            "/sitemap_index.xml": Route("Nothing here.\n", content_type="text/plain"),
        }
    )
    audit_file = tmp_path / "findings.jsonl"
    settings = {"RETRY_TIMES": 0, "DOWNLOAD_TIMEOUT": 5, "SITEMAP_CRAWL_AUDIT_FILE": str(audit_file)}
    result = crawl({"homepage": site.base}, settings=settings).assert_ok()
    assert site.hits("/sitemap") == 1 and site.hits("/sitemap_index.xml") == 1
    assert result.tree is not None and [child["url"] for child in result.tree["sub_sitemaps"]] == [
        site.url("/robots.txt")
    ]
    assert read_findings(audit_file) == []


def test_a_well_known_path_leading_to_another_is_audited_as_the_tree_shows_it(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    # WordPress: /sitemap.xml redirects to /sitemap_index.xml, the other well-known path that
    # the tree keeps. The index was audited under both (each fault twice, "known-path-only" and
    # "redirected" for the probe the tree leaves out) and the report showed its findings on the
    # website node, under the URL it was reached from
    site = fixture_site(
        {
            "/robots.txt": robots(),
            "/sitemap.xml": Route(redirect_to="{base}/sitemap_index.xml"),
            "/sitemap_index.xml": sitemapindex("{base}/post-sitemap.xml#frag"),
            "/post-sitemap.xml": urlset("{base}/hello/"),
        }
    )
    audit_file, report_file = tmp_path / "findings.jsonl", tmp_path / "report.html"
    settings = {
        **FAST,
        "SITEMAP_CRAWL_KNOWN_PATHS": "sitemap.xml,sitemap_index.xml",
        "SITEMAP_CRAWL_AUDIT_FILE": str(audit_file),
        "SITEMAP_CRAWL_REPORT_FILE": str(report_file),
    }
    crawl({"homepage": site.base}, settings=settings).assert_ok()
    index = site.url("/sitemap_index.xml")
    assert sorted((f["rule"], f["sitemap_url"]) for f in read_findings(audit_file)) == [
        ("known-path-only", index),
        ("no-sitemap-in-robots", site.url("/robots.txt")),
        ("url-fragment", index),
    ]
    doc = lxml.html.fromstring(report_file.read_text("utf-8"))
    rules_on = {
        head.xpath("string(./code[@class='url'])"): " ".join(head.xpath("./span[@class='rules']/code/text()"))
        for head in doc.xpath("//li[@class='node']/details/summary | //li[@class='node'][not(details)]")
    }
    assert rules_on[index] == "known-path-only url-fragment"
    assert rules_on[site.base + "/"] == ""


def test_a_redirect_loop_is_audited_once(fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path) -> None:
    # sub.xml, listed by idx.xml, redirects back to idx.xml (a loop node): its body was idx.xml's,
    # audited a second time under sub.xml
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/idx.xml"),
            "/idx.xml": sitemapindex("{base}/sub.xml", "{base}/p.xml#f"),
            "/sub.xml": Route(redirect_to="{base}/idx.xml"),
            "/p.xml": urlset("{base}/w1"),
        }
    )
    audit_file = tmp_path / "findings.jsonl"
    crawl({"homepage": site.base}, settings={**FAST, "SITEMAP_CRAWL_AUDIT_FILE": str(audit_file)}).assert_ok()
    assert sorted((f["rule"], f["sitemap_url"], f["url"]) for f in read_findings(audit_file)) == [
        ("redirected", site.url("/sub.xml"), site.url("/idx.xml")),
        ("url-fragment", site.url("/idx.xml"), site.url("/p.xml#f")),
    ]


def test_robots_txt_is_judged_for_the_agent_scrapy_reads_it_for(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    # ROBOTSTXT_USER_AGENT, when set, as Scrapy's RobotsTxtMiddleware (the audit read USER_AGENT)
    site = fixture_site(
        {
            "/robots.txt": "User-agent: mybot\nDisallow: /blocked\n\nSitemap: {base}/s.xml\n",
            "/s.xml": urlset("{base}/blocked/page", "{base}/open/page"),
        }
    )
    audit_file = tmp_path / "findings.jsonl"
    settings = {**FAST, "SITEMAP_CRAWL_AUDIT_FILE": str(audit_file), "ROBOTSTXT_USER_AGENT": "mybot"}
    crawl({"homepage": site.base}, settings=settings).assert_ok()
    assert [(f["rule"], f["url"], f["detail"]) for f in read_findings(audit_file)] == [
        ("page-disallowed", site.url("/blocked/page"), "disallowed for 'mybot'"),
    ]


def test_a_sitemap_robots_txt_keeps_the_crawl_from_is_still_sitemap_disallowed(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    # with ROBOTSTXT_OBEY the sitemap is not fetched: no response, and the finding was lost
    site = fixture_site(
        {
            "/robots.txt": "User-agent: *\nDisallow: /private\n\nSitemap: {base}/private/s.xml\n"
            "Sitemap: {base}/s.xml\n",
            "/private/s.xml": urlset("{base}/p"),
            "/s.xml": urlset("{base}/open"),
        }
    )
    audit_file = tmp_path / "findings.jsonl"
    settings = {**FAST, "SITEMAP_CRAWL_AUDIT_FILE": str(audit_file), "ROBOTSTXT_OBEY": True, "USER_AGENT": "testbot"}
    result = crawl({"homepage": site.base}, settings=settings).assert_ok()
    assert result.kinds()[site.url("/private/s.xml")] == "invalid"  # forbidden by robots.txt
    assert [(f["rule"], f["sitemap_url"], f["detail"]) for f in read_findings(audit_file)] == [
        ("sitemap-disallowed", site.url("/private/s.xml"), "disallowed for 'testbot'"),
    ]


def test_a_sitemap_reached_again_by_a_redirect_is_audited_once(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    # old.xml redirects to sitemap.xml, which robots.txt also declares: one document, read
    # under two URLs; each fault was two findings and its page a duplicate of itself. And thé.xml,
    # requested escaped (th%C3%A9.xml) and answered at once, was "redirected"
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/sitemap.xml", "{base}/old.xml", "{base}/th\u00e9.xml"),
            "/sitemap.xml": urlset("{base}/page#top"),
            "/old.xml": Route(redirect_to="{base}/sitemap.xml"),
            "/th%C3%A9.xml": urlset("{base}/b"),
        }
    )
    audit_file = tmp_path / "findings.jsonl"
    crawl({"homepage": site.base}, settings={**FAST, "SITEMAP_CRAWL_AUDIT_FILE": str(audit_file)}).assert_ok()
    assert sorted((f["rule"], f["sitemap_url"], f["url"]) for f in read_findings(audit_file)) == [
        ("redirected", site.url("/old.xml"), site.url("/sitemap.xml")),
        ("unescaped-url", site.url("/robots.txt"), site.url("/th\u00e9.xml")),
        ("url-fragment", site.url("/sitemap.xml"), site.url("/page#top")),
    ]


def test_a_well_known_path_that_cannot_be_decoded_is_a_finding_when_it_holds_a_sitemap(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    # Content-Encoding: gzip over a "not found" page: the probe fails, the tree leaves it out;
    # over a sitemap, the fault is the site's (the crawl cannot read it): a finding
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/declared.xml"),
            "/declared.xml": urlset("{base}/a"),
            "/sitemap.xml": Route("<html>Not found</html>", status=404, headers={"Content-Encoding": "gzip"}),
            "/sitemap_index.xml": Route(
                "<html>Not here</html>", content_type="text/html", headers={"Content-Encoding": "gzip"}
            ),
            "/sitemap-index.xml": Route(urlset("{base}/b"), headers={"Content-Encoding": "gzip"}),
        }
    )
    audit_file = tmp_path / "findings.jsonl"
    settings = {
        **FAST,
        "SITEMAP_CRAWL_KNOWN_PATHS": "sitemap.xml,sitemap_index.xml,sitemap-index.xml",
        "SITEMAP_CRAWL_AUDIT_FILE": str(audit_file),
    }
    crawl({"homepage": site.base}, settings=settings).assert_ok()
    assert site.hits("/sitemap.xml") == 1 and site.hits("/sitemap_index.xml") == 1
    assert [(f["rule"], f["sitemap_url"]) for f in read_findings(audit_file)] == [
        ("gzip-mislabelled", site.url("/sitemap-index.xml"))
    ]


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


def test_a_finding_known_at_the_sites_end_is_counted_on_its_hidden_node(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    # the tree came before the site's end findings: one on a sitemap past the 25 children
    # shown went to the website node, and the "... and 5 more" line said nothing of it
    alternate = '<xhtml:link rel="alternate" hreflang="fr" href="{base}/fr"/>'
    routes: dict[str, Any] = {
        f"/s{i}.xml": urlset({"loc": f"{{base}}/p{i}", **({"extra": alternate} if i == 28 else {})}) for i in range(29)
    }
    routes["/s29.xml"] = urlset({"loc": "{base}/fr"})  # (no way back to /p28)
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/index.xml"),
            "/index.xml": sitemapindex(*(f"{{base}}/s{i}.xml" for i in range(30))),
            **routes,
        }
    )
    report = tmp_path / "report.html"
    crawl({"homepage": site.base}, settings={**FAST, "SITEMAP_CRAWL_REPORT_FILE": str(report)}).assert_ok()

    doc = lxml.html.fromstring(report.read_bytes())
    website = doc.xpath("//li[@class='node' and @data-kind='website']")[0]
    assert "hreflang-not-reciprocal" not in website.xpath("string(./*[not(self::ul) and not(self::details)])")
    hidden = doc.xpath("//li[contains(@class, 'more')]")
    assert len(hidden) == 1 and "hreflang-not-reciprocal" in hidden[0].text_content()


def test_a_sitemap_refused_for_its_size_is_a_finding(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    # a download over DOWNLOAD_MAXSIZE (the tree: invalid, size limit) gave no finding at all
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/big.xml", "{base}/small.xml"),
            "/big.xml": urlset(*(f"{{base}}/p{i}" for i in range(2000))),
            "/small.xml": urlset("{base}/a"),
        }
    )
    audit_file = tmp_path / "findings.jsonl"
    settings = {**FAST, "SITEMAP_CRAWL_AUDIT_FILE": str(audit_file), "DOWNLOAD_MAXSIZE": 20_000}
    result = crawl({"homepage": site.base, "use_known_paths": False}, settings=settings).assert_ok()
    assert ("invalid", "size limit") in [(node["kind"], node["error"]) for _depth, node in result.walk()]
    found = [(f["rule"], f["sitemap_url"], f["detail"]) for f in read_findings(audit_file)]
    assert found == [("download-failed", site.url("/big.xml"), "size limit")]


def test_a_download_that_failed_after_a_redirect_is_a_finding_naming_where(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    # a robots.txt redirected to a dead host is left out of the tree: it had no finding; a
    # sitemap's said only "connection refused", of a URL on a host that answers
    dead = f"http://127.0.0.1:{closed_port()}"
    site = fixture_site(
        {
            "/robots.txt": Route(redirect_to=f"{dead}/robots.txt"),
            "/sitemap.xml": sitemapindex("{base}/moved.xml", "{base}/moved.xml"),
            "/moved.xml": Route(redirect_to=f"{dead}/moved.xml"),
        }
    )
    audit_file = tmp_path / "findings.jsonl"
    crawl({"homepage": site.base}, settings={**FAST, "SITEMAP_CRAWL_AUDIT_FILE": str(audit_file)}).assert_ok()
    failed = [(f["sitemap_url"], f["detail"]) for f in read_findings(audit_file) if f["rule"] == "download-failed"]
    assert sorted(failed) == [
        (site.url("/moved.xml"), f"connection refused at {dead}/moved.xml (redirected)"),
        (site.url("/robots.txt"), f"connection refused at {dead}/robots.txt (redirected)"),
    ]


def every_rule_site(now: datetime) -> dict[str, Any]:
    """Three sites on one fixture server; together they break every audit rule exactly once.

    one.test breaks nearly all; two.test's robots.txt has no Sitemap: line and its index is
    at a well-known path (its child's pages outside the child's folder); three.test's
    robots.txt cross-submits a sitemap on one.test that lists its pages (no finding: the
    protocol allows it).
    """
    one, two, three = (f"http://{name}.test:{{port}}" for name in ("one", "two", "three"))
    today = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    news = "<news:news><news:publication_date>{}</news:publication_date></news:news>"
    image = f"<image:image><image:loc>{one}/i.png</image:loc></image:image>"

    def alternate(lang: str, href: str) -> str:
        return f'<xhtml:link rel="alternate" hreflang="{lang}" href="{href}"/>'

    pages = urlset(
        {"loc": f"{one}/p1", "lastmod": "2024-06-01"},  # newer than the index says: index-lastmod-older
        "http://elsewhere.test/a",  # other-host (elsewhere.test's robots.txt not read)
        "/rel",  # relative-url
        f"{one}/frag#x",  # url-fragment
        f"{one}/a b",  # unescaped-url
        "https://one.test:{port}/secure",  # mixed-scheme
        f"{one}/{'l' * 2100}",  # url-too-long
        f"{one}/dup",
        f"{one}/dup",  # duplicate-in-sitemap
        f"{one}/shared",  # also in deep.xml: duplicate-across-sitemaps
        {"loc": f"{one}/lf", "lastmod": "yesterday"},  # lastmod-format
        {"loc": f"{one}/lfut", "lastmod": "2100-01-01"},  # lastmod-future
        {"loc": f"{one}/prio", "priority": "1.5"},  # priority-range
        {"loc": f"{one}/freq", "changefreq": "Daily!"},  # changefreq-value
        {"loc": f"{one}/old-news", "extra": news.format("2020-01-01")},  # news-too-old
        {"loc": f"{one}/gallery", "extra": image * 1001},  # too-many-images
        {"loc": f"{one}/hv", "extra": alternate("english", f"{one}/hv")},  # hreflang-value
        {"loc": f"{one}/en", "extra": alternate("fr", f"{one}/fr")},  # hreflang-not-reciprocal
        f"{one}/fr",
        f"{one}/blocked/page",  # page-disallowed
    )
    return {
        "//one.test/robots.txt": robots(
            f"{one}/index.xml",
            f"{one}/hidden.xml",  # sitemap-disallowed
            f"{one}/many-children.xml.gz",  # too-many-children (its children are denied)
            "relative.xml",  # relative-sitemap-line (followed, resolved against robots.txt)
            extra="Disallow: /blocked/\nDisallow: /hidden.xml\n",
        ),
        "//one.test/index.xml": sitemapindex(
            {"loc": f"{one}/pages.xml", "lastmod": "2024-01-01"},
            f"{one}/inner-index.xml",  # nested-index
            f"{one}/missing.xml",  # http-error
            f"{one}/loop.xml",  # download-failed (redirect limit)
            f"{one}/html.xml",  # served-as-html
            f"{one}/old.xml",  # redirected
            f"{one}/gz.xml.gz",  # gzip-mislabelled: served with Content-Encoding: gzip
            f"{one}/many-urls.xml.gz",  # too-many-urls
            f"{one}/large.xml.gz",  # too-large
            f"{one}/news.xml",  # too-many-news
            f"{one}/empty.xml",  # empty-sitemap
            f"{one}/ns.xml",  # bad-namespace
            f"{one}/latin.xml",  # not-utf8
            f"{one}/entity.xml",  # unescaped-entity
            f"{one}/broken.xml",  # invalid-document
            f"{one}/sub/dir.xml",  # none: what the index robots.txt declares lists may list any page
        ),
        "//one.test/pages.xml": pages,
        "//one.test/inner-index.xml": sitemapindex(f"{one}/deep.xml"),
        "//one.test/deep.xml": urlset(f"{one}/shared"),
        "//one.test/html.xml": Route(urlset(f"{one}/h"), content_type="text/html"),
        "//one.test/old.xml": Route(redirect_to=f"{one}/new.xml"),
        "//one.test/loop.xml": Route(redirect_to=f"{one}/loop.xml"),
        "//one.test/new.xml": urlset(f"{one}/n").replace("</urlset>", "<url><priority>0.1</priority></url></urlset>"),
        # (its second entry has no loc: missing-loc)
        "//one.test/gz.xml.gz": Route(urlset(f"{one}/g"), gzip_encoding=True),
        "//one.test/many-urls.xml.gz": Route(
            urlset(*(f"{one}/u/{i}" for i in range(rules.MAX_URLS + 1))), gzip_file=True
        ),
        "//one.test/many-children.xml.gz": Route(
            sitemapindex(*(f"{one}/c/{i}.xml" for i in range(rules.MAX_URLS + 1))), gzip_file=True
        ),
        "//one.test/large.xml.gz": Route(urlset(f"{one}/big") + " " * rules.MAX_BYTES, gzip_file=True),
        "//one.test/news.xml": urlset(*({"loc": f"{one}/n/{i}", "extra": news.format(today)} for i in range(1001))),
        "//one.test/empty.xml": urlset(),
        "//one.test/ns.xml": urlset(f"{one}/ns", ns=False),
        "//one.test/latin.xml": Route(
            urlset(f"{one}/latin").replace("</urlset>", "<!-- caf\xe9 --></urlset>").encode("latin-1"),
            format_bytes=True,
            content_type="application/xml",
        ),
        "//one.test/entity.xml": urlset(f"{one}/e").replace("/e<", "/e?a=1&b=2<"),
        "//one.test/broken.xml": urlset(f"{one}/b")[:-20],
        "//one.test/sub/dir.xml": urlset(f"{one}/sub/in", f"{one}/outside"),
        "//one.test/hidden.xml": urlset(f"{one}/hidden-page"),
        "//one.test/relative.xml": urlset(f"{one}/r"),
        "//one.test/cross.xml": urlset(f"{three}/cross-page"),
        "//two.test/robots.txt": "User-agent: *\nDisallow:\n",  # no-sitemap-in-robots
        "//two.test/sitemap.xml": sitemapindex(f"{two}/sub/dir.xml"),  # known-path-only
        "//two.test/sub/dir.xml": urlset(f"{two}/sub/in", f"{two}/outside"),  # outside-directory (not declared)
        "//three.test/robots.txt": robots(f"{one}/cross.xml"),
    }


def test_a_site_breaking_every_rule_once(fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path) -> None:
    site = fixture_site(every_rule_site(datetime.now(UTC)))
    homepages = tmp_path / "sites.txt"
    homepages.write_text("".join(f"http://{name}.test:{site.port}/\n" for name in ("one", "two", "three")))
    audit_file = tmp_path / "findings.jsonl"
    settings = {
        **FAST,
        "LOG_LEVEL": "INFO",  # 50,001 denied children: one DEBUG line each
        "TWISTED_DNS_RESOLVER": "tests.support.dns.LoopbackResolver",
        "SITEMAP_CRAWL_KNOWN_PATHS_MODE": "fallback",
        "SITEMAP_CRAWL_AUDIT_FILE": str(audit_file),
        "SITEMAP_CRAWL_REPORT_FILE": str(tmp_path / "report.html"),
    }
    result = crawl({"homepages_file": str(homepages), "deny": r"/c/\d+\.xml$"}, settings=settings).assert_ok()
    assert f"http://three.test:{site.port}/cross-page" in result.urls()  # read, and not other-host

    found = read_findings(audit_file)
    by_rule = Counter(f["rule"] for f in found)
    assert set(by_rule) == {rule.id for rule in rules.RULES}, found
    assert {rule: count for rule, count in by_rule.items() if count != 1} == {}, found
    older = next(f for f in found if f["rule"] == "index-lastmod-older")
    assert older["detail"] == "the index says 2024-01-01, a page in it 2024-06-01"  # the future one is left out
    other_host = next(f for f in found if f["rule"] == "other-host")
    assert "http://elsewhere.test/robots.txt was not read" in other_host["detail"]
    report = lxml.html.fromstring((tmp_path / "report.html").read_bytes())
    report_rules = [row.xpath("td")[0].text_content() for row in report.xpath("//table[@id='all-rules']//tr[td]")]
    assert sorted(report_rules) == sorted(rule.id for rule in rules.RULES)
    assert [f["website"] for f in found if f["rule"] in ("known-path-only", "no-sitemap-in-robots")] == [
        f"http://two.test:{site.port}/"
    ] * 2


def test_gzip_mislabelled_as_the_crawl_sees_it(fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path) -> None:
    # Scrapy decodes Content-Encoding: gzip and drops the header; the audit notes it at headers_received
    children = (
        "plain.xml.gz",
        "as-xml.xml",
        "twice.xml",
        "lying.xml",
        "fine.xml.gz",
        "transport.xml",
        "identity.xml.gz",
    )
    site = fixture_site(
        {
            "/robots.txt": robots(*(f"{{base}}/{name}" for name in children)),
            "/plain.xml.gz": Route(urlset("{base}/a")),  # broken: a .gz URL, not gzip
            "/as-xml.xml": Route(urlset("{base}/b"), gzip_file=True, content_type="text/xml"),  # broken
            "/twice.xml": Route(gzip_bytes(urlset("{base}/c").replace("{base}", "")), gzip_encoding=True),  # broken
            "/fine.xml.gz": Route(urlset("{base}/d"), gzip_file=True),  # sound: application/x-gzip
            "/transport.xml": Route(urlset("{base}/e"), gzip_encoding=True),  # sound: HTTP compression
            "/identity.xml.gz": Route(urlset("{base}/f"), gzip_file=True, headers={"Content-Encoding": "identity"}),
            "/lying.xml": Route(urlset("{base}/g"), headers={"Content-Encoding": "gzip"}),  # broken: download fails
        }
    )
    audit_file = tmp_path / "findings.jsonl"
    settings = {**FAST, "SITEMAP_CRAWL_KNOWN_PATHS_MODE": "fallback", "SITEMAP_CRAWL_AUDIT_FILE": str(audit_file)}
    result = crawl({"homepage": site.base}, settings=settings).assert_ok()
    assert len(result.pages) == len(children) - 1  # each read but lying.xml, double gzip too
    found = [f for f in read_findings(audit_file) if f["rule"] == "gzip-mislabelled"]
    assert sorted((f["sitemap_url"].rsplit("/", 1)[1], f["detail"]) for f in found) == [
        ("as-xml.xml", "a gzip file served as Content-Type text/xml"),
        ("lying.xml", "Content-Encoding: gzip on a body that is not gzip"),
        ("plain.xml.gz", "a .gz URL whose body is not gzip"),
        ("twice.xml", "gzip twice: Content-Encoding: gzip over a gzip file"),
    ]


def test_a_robots_txt_that_is_not_there_says_no_sitemap_line_not_an_http_error(tmp_path: Path) -> None:
    # RFC 9309: a robots.txt answering 4xx is none (every page may be crawled), no fault in
    # itself; 5xx makes crawlers assume every page disallowed: that one is an error
    path = tmp_path / "findings.jsonl"
    audit = CrawlAudit(str(path), None, "*")
    site, robots_url = "https://example.com/", "https://example.com/robots.txt"
    missing = ResponseFacts(site, robots_url, "robots", 404, robots_url, "text/html")
    assert audit.audit(missing, b"<html>Not found</html>") == Counter({"no-sitemap-in-robots": 1})
    other = "https://other.example/"
    moved = ResponseFacts(other, f"{other}robots.txt", "robots", 410, "https://www.other.example/robots.txt", "")
    assert audit.audit(moved, b"") == Counter({"no-sitemap-in-robots": 1})
    broken = ResponseFacts("https://third.example/", "https://third.example/robots.txt", "robots", 503, "", "")
    assert audit.audit(broken._replace(final_url=broken.url), b"") == Counter({"http-error": 1})
    # read: a sitemap elsewhere listing this host's pages is told that it does not declare it
    sitemap = "https://sitemaps.example/s.xml"
    listed = ResponseFacts(site, sitemap, "child", 200, sitemap, "application/xml")
    assert audit.audit(listed, urlset("https://example.com/a").encode()) == Counter({"other-host": 1})
    audit.finish()
    details = [(row["rule"], row["detail"]) for row in read_findings(path)]
    assert details[:2] == [
        ("no-sitemap-in-robots", "no robots.txt (HTTP 404): no Sitemap: line"),
        ("no-sitemap-in-robots", "no robots.txt (HTTP 410 at https://www.other.example/robots.txt): no Sitemap: line"),
    ]
    assert details[3][1].endswith("https://example.com/robots.txt was read and does not declare this sitemap")
