"""The audit's HTML report rendered by a real headless browser (Chromium), when one is installed."""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter
from pathlib import Path

import lxml.html
import pytest

from sitemap_crawl.audit.finding import Finding
from sitemap_crawl.audit.report import Report
from sitemap_crawl.tree import TreeNode

BROWSER = next(
    (shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome") if shutil.which(name)), None
)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"]


def sample_report() -> Report:
    report = Report()
    site = "https://example.com/"
    report.add_finding(Finding(site, f"{site}sitemap.xml", f"{site}a#x", "url-fragment", "warning", "fragment #x"))
    report.add_site_facts(site, {f"{site}sitemap.xml": 3}, Counter({"2024-05": 2, "2024-07": 1}))
    urlset = TreeNode(f"{site}sitemap.xml", "xml_urlset", None, 3)
    robots = TreeNode(f"{site}robots.txt", "robots_txt", None, 0, children={0: urlset})
    report.add_tree(site, TreeNode(site, "website", None, 0, children={0: robots}))
    return report


@pytest.mark.skipif(BROWSER is None, reason="no Chromium installed (apt-get install chromium)")
def test_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    assert BROWSER is not None
    page = tmp_path / "report.html"
    page.write_text(sample_report().render(), encoding="utf-8")
    dom = subprocess.run(
        [BROWSER, *FLAGS, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    doc = lxml.html.fromstring(dom)
    assert doc.xpath("string(//h1)") == "Sitemap audit"
    assert doc.xpath("string(//section[@class='site']/h2)") == "https://example.com/"
    assert [li.get("data-kind") for li in doc.xpath("//li[@class='node']")] == ["website", "robots_txt", "xml_urlset"]
    shot = tmp_path / "shot.png"
    subprocess.run(
        [BROWSER, *FLAGS, f"--screenshot={shot}", "--window-size=1000,700", page.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
