"""The tree extension and its former name, the tree pipeline: either, or both, build one tree."""

from __future__ import annotations

from pathlib import Path

import pytest
from scrapy.utils.test import get_crawler

from sitemap_crawl import SitemapSpider
from sitemap_crawl.extensions.tree import SitemapTreeExtension
from tests.support.crawl import CrawlRunner
from tests.test_crawl_tree import FAST, SiteFactory, assert_summary_at_the_end, mixed_site

EXTENSION = "sitemap_crawl.extensions.tree.SitemapTreeExtension"
PIPELINE = "sitemap_crawl.pipelines.SitemapTreePipeline"

WIRINGS = {
    "extension only": {},
    "pipeline only": {"EXTENSIONS": {EXTENSION: None}, "ITEM_PIPELINES": {PIPELINE: 100}},
    "both": {"ITEM_PIPELINES": {PIPELINE: 100}},
}


@pytest.mark.parametrize("wiring", list(WIRINGS))
def test_one_tree_whichever_is_enabled(fixture_site: SiteFactory, crawl: CrawlRunner, wiring: str) -> None:
    site = mixed_site(fixture_site)

    result = crawl({"homepage": site.base}, settings={**FAST, **WIRINGS[wiring]}).assert_ok()

    assert result.tree is not None and result.tree["kind"] == "website"
    assert result.stats["sitemap_crawl/pages"] == 6
    assert result.stats["item_scraped_count"] == 6  # Scrapy's count: pages, not page batches
    assert result.stats["sitemap_crawl/sitemaps"] == 7
    assert result.stats["sitemap_crawl/errors/HTTP 404"] == 1
    summary = assert_summary_at_the_end(result)
    assert "Pages: 6" in summary
    assert result.log.count("Sitemap tree:") == 1
    assert result.log.count("Sitemap tree written to") == 1
    assert (PIPELINE in result.log) == ("ITEM_PIPELINES" in WIRINGS[wiring])


def test_a_spider_that_maps_no_site_leaves_the_tree_file_alone(tmp_path: Path) -> None:
    # the drop-in SitemapSpider has a homepages attribute (a list of its own): it was taken
    # for a many-site run, and the sitemaps spider's tree file overwritten with []
    tree_file = tmp_path / "tree.json"
    tree_file.write_text('{"url": "https://a.test/"}\n')
    crawler = get_crawler(SitemapSpider, settings_dict={"SITEMAP_CRAWL_TREE_FILE": str(tree_file)})
    extension = SitemapTreeExtension(crawler)
    spider = SitemapSpider.from_crawler(crawler, name="products")
    extension._spider_opened(spider)
    extension.close_spider()
    assert tree_file.read_text() == '{"url": "https://a.test/"}\n'
