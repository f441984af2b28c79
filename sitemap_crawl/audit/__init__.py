"""Sitemap audit: protocol and SEO rules, findings, and the pure checks that find them.

Nothing here imports Scrapy: the checks read a sitemap's bytes and the pages the
parser yields (see docs/audit.md).
"""

from sitemap_crawl.audit.finding import Finding
from sitemap_crawl.audit.rules import RULES, Rule, Severity

__all__ = ["RULES", "Finding", "Rule", "Severity"]
