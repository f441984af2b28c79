"""Deduplication, order, loops and depth, end to end (see docs/tree.md and docs/output.md)."""

from __future__ import annotations

import itertools

from tests.support import Route, robots, sitemapindex, text_sitemap, urlset
from tests.support.crawl import CrawlRunner
from tests.support.fixture_server import RouteLike, SiteFactory
from tests.support.tree import child_urls, node, robots_of, robots_tree, tree_of

FAST = {"RETRY_TIMES": 0, "DOWNLOAD_TIMEOUT": 5}
ONE_AT_A_TIME = {**FAST, "CONCURRENT_REQUESTS": 1}


def test_duplicates_within_an_index_and_within_a_urlset(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/index.xml", "{base}/index.xml"),
            "/index.xml": sitemapindex(
                "{base}/a.xml",
                "{base}/b.xml",
                {"loc": "{base}/a.xml", "lastmod": "2024-01-01"},  # declared again: not fetched again
                "{base}/b.xml",
            ),
            "/a.xml": urlset(
                {"loc": "{base}/p1", "priority": "0.9"},
                "{base}/p2",
                {"loc": "{base}/p1", "priority": "0.1"},  # the first declaration is kept
                "/p2",  # the same page, relative
            ),
            "/b.xml": text_sitemap("{base}/q1", "{base}/q1", "{base}/q2"),
        }
    )

    result = crawl({"homepage": site.base, "use_known_paths": False}, settings=FAST).assert_ok()

    base = site.base
    assert result.tree == robots_tree(
        base,
        node(
            base + "/index.xml",
            "xml_index",
            node(base + "/a.xml", "xml_urlset", pages=2),
            node(base + "/b.xml", "text", pages=2),
        ),
    ), result.tree_text()
    assert site.hits("/index.xml") == 1
    assert site.hits("/a.xml") == 1
    assert site.hits("/b.xml") == 1
    assert sorted(result.urls()) == [base + "/p1", base + "/p2", base + "/q1", base + "/q2"]
    p1 = next(page for page in result.pages if page["url"] == base + "/p1")
    assert p1["priority"] == 0.9


def test_a_sitemap_in_two_indexes_appears_twice(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/index-1.xml", "{base}/index-2.xml"),
            "/index-1.xml": sitemapindex("{base}/shared.xml", "{base}/own-1.xml"),
            "/index-2.xml": sitemapindex("{base}/own-2.xml", "{base}/shared.xml"),
            "/shared.xml": urlset("{base}/s1", "{base}/s2"),
            "/own-1.xml": urlset("{base}/o1"),
            "/own-2.xml": urlset("{base}/o2"),
            # a known path that robots.txt did not declare, listing the shared sitemap a third time
            "/sitemap.xml": sitemapindex("{base}/shared.xml"),
        }
    )

    result = crawl({"homepage": site.base}, settings=FAST).assert_ok()

    base = site.base
    shared = node(base + "/shared.xml", "xml_urlset", pages=2)
    assert result.tree == robots_tree(
        base,
        node(base + "/index-1.xml", "xml_index", shared, node(base + "/own-1.xml", "xml_urlset", pages=1)),
        node(base + "/index-2.xml", "xml_index", node(base + "/own-2.xml", "xml_urlset", pages=1), shared),
        known=[node(base + "/sitemap.xml", "xml_index", shared)],
    ), result.tree_text()
    assert len(result.node(base + "/shared.xml")) == 3
    # Scrapy's duplicate filter does not apply: each declaration is fetched
    assert site.hits("/shared.xml") == 3
    urls = result.urls()
    assert urls.count(base + "/s1") == urls.count(base + "/s2") == 3
    assert urls.count(base + "/o1") == urls.count(base + "/o2") == 1
    assert len(urls) == 8
    assert result.stats["sitemap_crawl/pages"] == 8


def test_document_order_is_preserved(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    names = [f"child-{n:02d}.xml" for n in (7, 3, 11, 1, 9, 5, 2, 10, 4, 8, 6, 12)]
    page_ids = [37, 5, 81, 2, 64, 13, 99, 40, 1, 58, 22, 70, 8, 91, 33, 16, 49, 77, 3, 60]
    routes: dict[str, RouteLike] = {
        "/robots.txt": robots("{base}/zz-last.xml", "{base}/index.xml", "{base}/aa-first.xml"),
        "/zz-last.xml": urlset(*(f"{{base}}/z/{i}" for i in page_ids)),
        "/aa-first.xml": text_sitemap(*(f"{{base}}/a/{i}" for i in reversed(page_ids))),
        "/index.xml": sitemapindex(*(f"{{base}}/{name}" for name in names)),
    }
    for index, name in enumerate(names):
        # later children answer sooner: the tree still follows the document
        routes[f"/{name}"] = Route(urlset(f"{{base}}/{name}/page"), delay=0.02 * (len(names) - index))
    site = fixture_site(routes)

    result = crawl(
        {"homepage": site.base, "use_known_paths": False},
        settings={**FAST, "SITEMAP_CRAWL_BATCH_SIZE": 7},
    ).assert_ok()

    assert result.tree is not None
    robots_node = robots_of(tree_of(result))
    assert child_urls(robots_node) == [
        site.url("/zz-last.xml"),
        site.url("/index.xml"),
        site.url("/aa-first.xml"),
    ]
    index_node = robots_node["sub_sitemaps"][1]
    assert child_urls(index_node) == [site.url("/" + name) for name in names]
    # within a sitemap, pages keep their document order (across batches of 7)
    by_sitemap: dict[str, list[str]] = {}
    for page in result.pages:
        by_sitemap.setdefault(page["sitemap_url"], []).append(page["url"])
    assert by_sitemap[site.url("/zz-last.xml")] == [site.url(f"/z/{i}") for i in page_ids]
    assert by_sitemap[site.url("/aa-first.xml")] == [site.url(f"/a/{i}") for i in reversed(page_ids)]
    # and the sitemaps' pages come in the tree's order, depth first (they came as the
    # answers did: the last children first)
    assert result.urls() == [
        *(site.url(f"/z/{i}") for i in page_ids),
        *(site.url(f"/{name}/page") for name in names),
        *(site.url(f"/a/{i}") for i in reversed(page_ids)),
    ]


def test_pages_come_in_document_order_whatever_order_the_sitemaps_answer_in(
    fixture_site: SiteFactory, crawl: CrawlRunner
) -> None:
    # robots.txt lists an index before a urlset; the index's first child answers last
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/index.xml", "{base}/after.xml"),
            "/index.xml": sitemapindex("{base}/slow.xml", "{base}/fast.xml"),
            "/slow.xml": Route(urlset("{base}/s1", "{base}/s2"), delay=0.5),
            "/fast.xml": urlset("{base}/f1"),
            "/after.xml": urlset("{base}/a1", "{base}/a2"),
            "/sitemap.xml": urlset("{base}/k1"),  # a well-known path: after robots.txt's
        }
    )
    for batch_size in (1, 0):  # (batches of one page, and one item a page)
        result = crawl({"homepage": site.base}, settings={**FAST, "SITEMAP_CRAWL_BATCH_SIZE": batch_size})
        assert result.assert_ok().urls() == [site.url(path) for path in ("/s1", "/s2", "/f1", "/a1", "/a2", "/k1")], (
            batch_size
        )


def test_with_a_page_an_item_the_next_sitemaps_pages_do_not_pass_the_last_ones(
    fixture_site: SiteFactory, crawl: CrawlRunner
) -> None:
    # Scrapy processes several items of a response at once: b.xml's pages came out among
    # a.xml's last ones
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/a.xml", "{base}/b.xml"),
            "/a.xml": urlset(*(f"{{base}}/a/{n}" for n in range(40))),
            "/b.xml": urlset(*(f"{{base}}/b/{n}" for n in range(15))),
        }
    )
    settings = {**FAST, "SITEMAP_CRAWL_BATCH_SIZE": 0}

    result = crawl({"homepage": site.base, "use_known_paths": False}, settings=settings).assert_ok()

    assert result.urls() == [site.url(f"/a/{n}") for n in range(40)] + [site.url(f"/b/{n}") for n in range(15)]


def test_sitemaps_waiting_for_their_turn_leave_their_places_to_the_ones_before_them(
    fixture_site: SiteFactory, crawl: CrawlRunner
) -> None:
    # the two sitemaps after the index, downloaded first, kept two of the three places in
    # flight while they waited: the index's slow children went one at a time
    children = [f"/c{n}.xml" for n in range(6)]
    routes: dict[str, RouteLike] = {
        "/robots.txt": robots("{base}/index.xml", "{base}/s1.xml", "{base}/s2.xml"),
        "/index.xml": sitemapindex(*(f"{{base}}{child}" for child in children)),
        "/s1.xml": urlset("{base}/s1"),
        "/s2.xml": urlset("{base}/s2"),
    }
    for child in children:
        routes[child] = Route(urlset(f"{{base}}{child}/page"), delay=0.4)
    site = fixture_site(routes)
    settings = {**FAST, "SITEMAP_CRAWL_CONCURRENT_SITEMAPS": 3}

    result = crawl({"homepage": site.base, "use_known_paths": False}, settings=settings).assert_ok()

    assert result.urls()[-2:] == [site.url("/s1"), site.url("/s2")]
    asked = sorted(request.time for request in site.requests if request.path in children)
    assert min(later - earlier for earlier, later in itertools.pairwise(asked)) < 0.2, asked


def test_sitemaps_waiting_for_their_turn_do_not_stall_a_crawl_that_keeps_scrapys_active_size_limit(
    fixture_site: SiteFactory, crawl: CrawlRunner
) -> None:
    # the two urlsets, downloaded first, waited for the index's children while their bodies
    # kept Scrapy from downloading anything more: the children were never asked for
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/index.xml", "{base}/big1.xml", "{base}/big2.xml"),
            "/index.xml": Route(sitemapindex("{base}/c1.xml", "{base}/c2.xml"), delay=0.5),
            "/c1.xml": urlset("{base}/c1"),
            "/c2.xml": urlset("{base}/c2"),
            "/big1.xml": urlset(*(f"{{base}}/b1/{n}" for n in range(300))),
            "/big2.xml": urlset(*(f"{{base}}/b2/{n}" for n in range(300))),
        }
    )
    settings = {**FAST, "SCRAPER_SLOT_MAX_ACTIVE_SIZE": 10_000}  # (a project's own, kept)

    result = crawl({"homepage": site.base, "use_known_paths": False}, settings=settings, timeout=60)

    assert len(result.assert_ok().urls()) == 602
    assert site.hits("/c1.xml") == site.hits("/c2.xml") == 1


def test_sibling_sitemaps_are_fetched_in_document_order(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    names = ["m.xml", "c.xml", "x.xml", "a.xml", "q.xml"]
    routes: dict[str, RouteLike] = {
        "/robots.txt": robots("{base}/index.xml"),
        "/index.xml": sitemapindex(*(f"{{base}}/{name}" for name in names)),
    }
    for name in names:
        routes[f"/{name}"] = urlset(f"{{base}}/{name}/1", f"{{base}}/{name}/2")
    site = fixture_site(routes)

    result = crawl({"homepage": site.base, "use_known_paths": False}, settings=ONE_AT_A_TIME).assert_ok()

    assert site.paths() == ["/robots.txt", "/index.xml"] + [f"/{name}" for name in names]
    assert result.urls() == [site.url(f"/{name}/{n}") for name in names for n in (1, 2)]


def test_loops_become_invalid_nodes(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/self.xml", "{base}/a.xml", "{base}/r.xml"),
            # an index listing itself
            "/self.xml": sitemapindex("{base}/self.xml", "{base}/leaf.xml"),
            # A -> B -> A
            "/a.xml": sitemapindex("{base}/b.xml"),
            "/b.xml": sitemapindex("{base}/a.xml", "{base}/leaf.xml"),
            # R -> hop.xml, which redirects back to R
            "/r.xml": sitemapindex("{base}/hop.xml"),
            "/hop.xml": Route(redirect_to="{base}/r.xml"),
            "/leaf.xml": urlset("{base}/leaf-page"),
        }
    )

    result = crawl({"homepage": site.base, "use_known_paths": False}, settings=FAST).assert_ok()

    base = site.base
    leaf = node(base + "/leaf.xml", "xml_urlset", pages=1)
    assert result.tree == robots_tree(
        base,
        node(base + "/self.xml", "xml_index", node(base + "/self.xml", "invalid", error="loop"), leaf),
        node(
            base + "/a.xml",
            "xml_index",
            node(base + "/b.xml", "xml_index", node(base + "/a.xml", "invalid", error="loop"), leaf),
        ),
        node(base + "/r.xml", "xml_index", node(base + "/hop.xml", "invalid", error="loop")),
    ), result.tree_text()
    # a loop is not fetched again (the redirect is followed once, then recognised)
    assert site.hits("/self.xml") == 1
    assert site.hits("/a.xml") == 1
    assert site.hits("/r.xml") == 2
    assert result.urls() == [base + "/leaf-page"] * 2
    assert result.stats["sitemap_crawl/errors/loop"] == 3
    assert result.stats["sitemap_crawl/sitemaps/invalid"] == 3


def chain(prefix: str, length: int) -> dict[str, RouteLike]:
    """{prefix}1.xml -> {prefix}2.xml -> ... -> {prefix}{length}.xml, a urlset."""
    routes: dict[str, RouteLike] = {}
    for level in range(1, length):
        routes[f"/{prefix}{level}.xml"] = sitemapindex(f"{{base}}/{prefix}{level + 1}.xml")
    routes[f"/{prefix}{length}.xml"] = urlset(f"{{base}}/{prefix}-page")
    return routes


def chain_depths(tree: dict) -> list[tuple[int, str, str, str | None]]:
    """(level, url path, kind, error) along the first-child chain of a tree node."""
    found = []
    level = 0
    current = tree
    while True:
        found.append((level, current["url"].split("/", 3)[-1], current["kind"], current["error"]))
        if not current["sub_sitemaps"]:
            return found
        current = current["sub_sitemaps"][0]
        level += 1


def test_depth_limit_counts_levels_below_robots_txt_and_below_a_known_path(
    fixture_site: SiteFactory, crawl: CrawlRunner
) -> None:
    site = fixture_site({"/robots.txt": robots("{base}/r1.xml"), "/sitemap.xml": sitemapindex("{base}/k1.xml")})
    for path, route in {**chain("r", 4), **chain("k", 4)}.items():
        site[path] = route

    result = crawl({"homepage": site.base}, settings={**FAST, "SITEMAP_CRAWL_MAX_DEPTH": 2}).assert_ok()

    assert result.tree is not None
    robots_branch, known_branch = result.tree["sub_sitemaps"]
    # robots.txt is level 0, the sitemaps it declares level 1
    assert chain_depths(robots_branch) == [
        (0, "robots.txt", "robots_txt", None),
        (1, "r1.xml", "xml_index", None),
        (2, "r2.xml", "xml_index", None),
        (3, "r3.xml", "invalid", "depth limit"),
    ]
    # a known-path sitemap is level 0 too
    assert chain_depths(known_branch) == [
        (0, "sitemap.xml", "xml_index", None),
        (1, "k1.xml", "xml_index", None),
        (2, "k2.xml", "xml_index", None),
        (3, "k3.xml", "invalid", "depth limit"),
    ]
    assert site.hits("/r3.xml") == site.hits("/k3.xml") == 0
    assert result.pages == []
    assert result.stats["sitemap_crawl/errors/depth limit"] == 2


def test_default_depth_limit_is_ten_levels(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    site = fixture_site({"/robots.txt": robots("{base}/d1.xml"), **chain("d", 12)})

    result = crawl({"homepage": site.base, "use_known_paths": False}, settings=FAST).assert_ok()

    assert result.tree is not None
    levels = chain_depths(robots_of(tree_of(result)))
    assert levels[-2:] == [(10, "d10.xml", "xml_index", None), (11, "d11.xml", "invalid", "depth limit")]
    assert site.hits("/d10.xml") == 1
    assert site.hits("/d11.xml") == 0
    assert result.pages == []


def test_depth_limit_also_applies_below_start_urls(fixture_site: SiteFactory, crawl: CrawlRunner) -> None:
    site = fixture_site(chain("s", 3))

    result = crawl({"sitemap_urls": site.url("/s1.xml")}, settings={**FAST, "SITEMAP_CRAWL_MAX_DEPTH": 1}).assert_ok()

    assert result.tree is not None
    assert chain_depths(robots_of(tree_of(result))) == [
        (0, "s1.xml", "xml_index", None),
        (1, "s2.xml", "xml_index", None),
        (2, "s3.xml", "invalid", "depth limit"),
    ]
