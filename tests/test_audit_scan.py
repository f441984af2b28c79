"""audit/scan.py: the audit's own read of a body (documents without entries: feeds)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from sitemap_crawl.audit.auditor import SiteAudit
from sitemap_crawl.audit.scan import SitemapFacts, scan

NOW = datetime(2024, 6, 1, tzinfo=UTC)
FEED_URL = "https://example.com/feed.xml"


def rss(items: int) -> bytes:
    item = "<item><title>A post</title><link>https://example.com/post-{0}</link><description>{1}</description></item>"
    body = "".join(item.format(number, "text " * 20) for number in range(items))
    return f'<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>{body}</channel></rss>'.encode()


ATOM = (
    b'<feed xmlns="http://www.w3.org/2005/Atom"><title>t</title>'
    b"<entry><id>1</id><link href='https://example.com/a'/><updated>2024-05-01T00:00:00Z</updated></entry></feed>"
)


@pytest.mark.parametrize(("body", "root"), [(rss(3), "rss"), (ATOM, "feed")])
def test_a_well_formed_feed_has_no_finding(body: bytes, root: str) -> None:
    facts = SitemapFacts()
    assert list(scan(body, facts)) == []
    assert (facts.root, facts.error, facts.size) == (root, None, len(body))
    assert list(SiteAudit(None, now=NOW).audit_sitemap(body, FEED_URL)) == []


def test_a_broken_feed_is_an_invalid_document() -> None:
    body = rss(3).replace(b"</item>", b"", 1)
    found = list(SiteAudit(None, now=NOW).audit_sitemap(body, FEED_URL))
    assert [(finding.rule, finding.detail.split(":")[0]) for finding in found] == [
        ("invalid-document", "not well-formed XML")
    ]
    assert "mismatch" in found[0].detail


def _peak_kib() -> int:
    status = Path("/proc/self/status").read_text()
    return int(status.split("VmHWM:")[1].split()[0])


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="resets the peak RSS through /proc (Linux)")
def test_a_feed_is_checked_without_holding_its_tree() -> None:
    # a feed's items are below the root's child: a pull parser would hold the whole tree
    # (several times the body); the scan only has libxml2 check it
    body = rss(60_000)  # about 12 MB
    facts = SitemapFacts()
    Path("/proc/self/clear_refs").write_text("5")  # the peak RSS starts again from here
    before = _peak_kib()
    assert list(scan(body, facts)) == []
    grown_mib = (_peak_kib() - before) / 1024
    assert facts.error is None
    assert grown_mib < len(body) / 2**20 / 2, f"a {len(body):,}-byte feed grew the peak by {grown_mib:.0f} MiB"
