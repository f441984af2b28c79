"""XML sitemapindex: sub-sitemap references, lastmod, relative locs, namespaces, child dedup."""

from __future__ import annotations

from pathlib import Path

import pytest

from sitemap_crawl.items import SitemapRef
from sitemap_crawl.parsing import Limits, SitemapReader, parse_sitemap

INDEX_URL = "https://www.example.org/sitemap_index.xml"
SM = "http://www.sitemaps.org/schemas/sitemap/0.9"


def index(body: str, namespaces: str = f'xmlns="{SM}"') -> bytes:
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex {namespaces}>\n{body}\n</sitemapindex>\n'.encode()


def refs(body: bytes, url: str = INDEX_URL) -> list[SitemapRef]:
    reader = SitemapReader(body, url)
    assert reader.kind == "xml_index", (reader.kind, reader.error)
    entries = list(reader)
    assert reader.error is None
    assert all(isinstance(entry, SitemapRef) for entry in entries)
    return entries  # type: ignore[return-value]


def test_index_with_lastmod() -> None:
    body = index(
        """
  <sitemap>
    <loc>https://www.example.org/sitemap1.xml.gz</loc>
    <lastmod>2004-10-01T18:23:17+00:00</lastmod>
  </sitemap>
  <sitemap>
    <loc>https://www.example.org/sitemap2.xml.gz</loc>
    <lastmod>2005-01-01</lastmod>
  </sitemap>
  <sitemap><loc>https://www.example.org/sitemap3.xml</loc><lastmod>bogus</lastmod></sitemap>
  <sitemap><loc>https://www.example.org/sitemap4.xml</loc></sitemap>"""
    )
    assert refs(body) == [
        SitemapRef(url="https://www.example.org/sitemap1.xml.gz", last_modified="2004-10-01T18:23:17+00:00"),
        SitemapRef(url="https://www.example.org/sitemap2.xml.gz", last_modified="2005-01-01"),
        SitemapRef(url="https://www.example.org/sitemap3.xml", last_modified=None),
        SitemapRef(url="https://www.example.org/sitemap4.xml", last_modified=None),
    ]
    result = parse_sitemap(body, INDEX_URL)
    assert result.pages == []
    assert result.sub_sitemaps == [
        "https://www.example.org/sitemap1.xml.gz",
        "https://www.example.org/sitemap2.xml.gz",
        "https://www.example.org/sitemap3.xml",
        "https://www.example.org/sitemap4.xml",
    ]


def test_z_lastmod_in_index() -> None:
    body = index(
        "<sitemap><loc>https://www.example.org/s.xml</loc><lastmod>2023-09-05T03:11:48.812Z</lastmod></sitemap>"
    )
    assert refs(body)[0].last_modified == "2023-09-05T03:11:48.812000+00:00"


def test_relative_child_locs_are_resolved_against_the_index_url() -> None:
    body = index(
        "<sitemap><loc>/wp-sitemap-posts-post-1.xml</loc></sitemap>"
        "<sitemap>\n\n   <loc>fr/sitemap.xml</loc>\n\n</sitemap>"
        "<sitemap><loc>//cdn.example.net/s.xml</loc></sitemap>"
    )
    assert [ref.url for ref in refs(body, "https://www.example.org/blog/wp-sitemap.xml")] == [
        "https://www.example.org/wp-sitemap-posts-post-1.xml",
        "https://www.example.org/blog/fr/sitemap.xml",
        "https://cdn.example.net/s.xml",
    ]


def test_a_local_index_names_the_files_of_its_own_folder_only() -> None:
    body = index(
        "<sitemap><loc>part/a.xml</loc></sitemap>"
        "<sitemap><loc>file:///data/sitemaps/b.xml.gz</loc></sitemap>"
        "<sitemap><loc>https://www.example.org/c.xml</loc></sitemap>"
        "<sitemap><loc>file:///etc/passwd</loc></sitemap>"
        "<sitemap><loc>../secret.xml</loc></sitemap>"
        "<sitemap><loc>part/..%2F..%2Fsecret.xml</loc></sitemap>"
        # a backslash is a slash, a tab or newline nothing, to the URL parser Scrapy requests
        # through: these were read as files of the folder, and the file outside was opened
        "<sitemap><loc>..\\secret.xml</loc></sitemap>"
        "<sitemap><loc>.\t./secret.xml</loc></sitemap>"
        "<sitemap><loc>part\\..\\..\\secret.xml</loc></sitemap>"
    )
    assert [ref.url for ref in refs(body, "file:///data/sitemaps/index.xml")] == [
        "file:///data/sitemaps/part/a.xml",
        "file:///data/sitemaps/b.xml.gz",
        "https://www.example.org/c.xml",
    ]


def test_a_symbolic_link_out_of_a_local_indexs_folder_is_not_followed(tmp_path: Path) -> None:
    folder, outside = tmp_path / "site", tmp_path / "private"
    folder.mkdir()
    outside.mkdir()
    (outside / "secret.xml").write_text("<urlset/>", encoding="utf-8")
    (folder / "ok.xml").write_text("<urlset/>", encoding="utf-8")
    (folder / "link.xml").symlink_to(outside / "secret.xml")
    (folder / "dirlink").symlink_to(outside)
    body = index(
        "".join(f"<sitemap><loc>{name}</loc></sitemap>" for name in ("ok.xml", "link.xml", "dirlink/secret.xml"))
    )
    assert [ref.url for ref in refs(body, (folder / "index.xml").as_uri())] == [(folder / "ok.xml").as_uri()]


def test_a_remote_index_never_names_a_local_file() -> None:
    body = index("<sitemap><loc>file:///etc/sitemap.xml</loc></sitemap><sitemap><loc>/a.xml</loc></sitemap>")
    assert [ref.url for ref in refs(body)] == ["https://www.example.org/a.xml"]


def test_cdata_loc_and_blank_lines() -> None:
    body = index(
        "\n\n<sitemap>\n\n<loc>https://www.example.org/a.xml</loc>\n\n<lastmod>2004-10-01</lastmod>\n\n</sitemap>\n\n"
        "<sitemap>\n<loc><![CDATA[https://www.example.org/b.xml?x=1&y=2]]></loc>\n</sitemap>\n"
    )
    assert [ref.url for ref in refs(body)] == ["https://www.example.org/a.xml", "https://www.example.org/b.xml?x=1&y=2"]


def test_bare_url_children_without_loc_are_taken() -> None:
    body = index(
        "<sitemap>\nhttps://www.example.org/sitemap.jss?portalCode=1&amp;lang=en\n</sitemap>\n"
        "<sitemap>   https://www.example.org/sitemap.jss?portalCode=2&amp;lang=en   </sitemap>\n"
        "<sitemap>not a url</sitemap>"
    )
    assert [ref.url for ref in refs(body)] == [
        "https://www.example.org/sitemap.jss?portalCode=1&lang=en",
        "https://www.example.org/sitemap.jss?portalCode=2&lang=en",
    ]


def test_child_dedup_keeps_the_first_declaration_in_order() -> None:
    body = index(
        "<sitemap><loc>https://www.example.org/b.xml</loc><lastmod>2024-01-01</lastmod></sitemap>"
        "<sitemap><loc>https://www.example.org/a.xml</loc></sitemap>"
        "<sitemap><loc>https://www.example.org/b.xml</loc><lastmod>2024-02-02</lastmod></sitemap>"
        "<sitemap><loc>/a.xml</loc></sitemap>"
        "<sitemap><loc>https://www.example.org/c.xml</loc></sitemap>"
    )
    assert refs(body) == [
        SitemapRef(url="https://www.example.org/b.xml", last_modified="2024-01-01"),
        SitemapRef(url="https://www.example.org/a.xml"),
        SitemapRef(url="https://www.example.org/c.xml"),
    ]


def test_a_child_listed_again_with_a_fragment_is_the_same_sitemap() -> None:
    # the fragment is never sent: b.xml#part was a second child, b.xml fetched twice
    body = index(
        "<sitemap><loc>https://www.example.org/b.xml</loc></sitemap>"
        "<sitemap><loc>https://www.example.org/b.xml#part</loc></sitemap>"
        "<sitemap><loc>/c.xml#top</loc></sitemap>"
    )
    assert [ref.url for ref in refs(body)] == ["https://www.example.org/b.xml", "https://www.example.org/c.xml"]


def test_index_may_list_itself_the_spider_decides_about_loops() -> None:
    body = index(f"<sitemap><loc>{INDEX_URL}</loc></sitemap><sitemap><loc>/other.xml</loc></sitemap>")
    assert [ref.url for ref in refs(body)] == [INDEX_URL, "https://www.example.org/other.xml"]


@pytest.mark.parametrize(
    "namespaces",
    [
        f'xmlns="{SM}"',
        "",
        'xmlns="urn:wrong"',
        f'xmlns="{SM}" xmlns:xhtml="http://www.w3.org/1999/xhtml" generatedBy="WIX"',
    ],
)
def test_any_namespace(namespaces: str) -> None:
    body = index("<sitemap><loc>https://www.example.org/a.xml</loc></sitemap>", namespaces)
    assert [ref.url for ref in refs(body)] == ["https://www.example.org/a.xml"]


def test_prefixed_index() -> None:
    body = (
        f'<?xml version="1.0"?><sm:sitemapindex xmlns:sm="{SM}"><sm:sitemap><sm:loc>https://www.example.org/a.xml'
        "</sm:loc><sm:lastmod>2020-01-01</sm:lastmod></sm:sitemap></sm:sitemapindex>"
    ).encode()
    assert refs(body) == [SitemapRef(url="https://www.example.org/a.xml", last_modified="2020-01-01")]


def test_entries_without_loc_or_with_bad_loc_are_skipped() -> None:
    body = index(
        "<sitemap></sitemap><sitemap><lastmod>2024-01-01</lastmod></sitemap><sitemap><loc> </loc></sitemap>"
        "<sitemap><loc>ftp://www.example.org/x.xml</loc></sitemap><sitemap><loc>https://www.example.org/ok.xml</loc>"
        "</sitemap>"
    )
    assert [ref.url for ref in refs(body)] == ["https://www.example.org/ok.xml"]


def test_url_elements_in_an_index_are_not_sub_sitemaps() -> None:
    body = index("<url><loc>https://www.example.org/page</loc></url><sitemap><loc>/s.xml</loc></sitemap>")
    assert [ref.url for ref in refs(body)] == ["https://www.example.org/s.xml"]


def test_empty_index() -> None:
    for body in (index(""), f'<sitemapindex xmlns="{SM}"/>'.encode()):
        result = parse_sitemap(body, INDEX_URL)
        assert (result.kind, result.error, result.sub_sitemaps, result.pages) == ("xml_index", None, [], [])


def test_index_children_beyond_the_limit_are_cut_with_size_limit() -> None:
    body = index("".join(f"<sitemap><loc>/s{i}.xml</loc></sitemap>" for i in range(10)))
    result = parse_sitemap(body, INDEX_URL, limits=Limits(max_index_children=4))
    assert result.sub_sitemaps == [f"https://www.example.org/s{i}.xml" for i in range(4)]
    assert (result.kind, result.error) == ("xml_index", "size limit")


def test_index_children_limit_counts_distinct_children() -> None:
    body = index(
        "".join("<sitemap><loc>/same.xml</loc></sitemap>" for _ in range(10)) + "<sitemap><loc>/b</loc></sitemap>"
    )
    result = parse_sitemap(body, INDEX_URL, limits=Limits(max_index_children=2))
    assert result.sub_sitemaps == ["https://www.example.org/same.xml", "https://www.example.org/b"]
    assert result.error is None


def test_large_index_in_order() -> None:
    body = index("".join(f"<sitemap><loc>https://www.example.org/s-{i}.xml.gz</loc></sitemap>\n" for i in range(5000)))
    assert [ref.url for ref in refs(body)] == [f"https://www.example.org/s-{i}.xml.gz" for i in range(5000)]


def test_a_sitemap_entry_written_with_two_locs_names_the_last_as_a_url_entry_does() -> None:
    # a <url> keeps its last <loc> and <lastmod> (as Scrapy's SitemapSpider and the audit read
    # both entries); a <sitemap> kept its first: the crawl fetched a child the audit did not check
    body = index(
        "<sitemap><loc>https://www.example.org/first.xml</loc><lastmod>2020-01-01</lastmod>"
        "<loc>https://www.example.org/second.xml</loc><lastmod>2021-02-02</lastmod></sitemap>"
    )
    assert refs(body) == [SitemapRef(url="https://www.example.org/second.xml", last_modified="2021-02-02")]
