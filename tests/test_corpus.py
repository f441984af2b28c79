"""The real-world corpus (see docs/development.md): every file parses, with the number of
URLs an independent count finds.

The independent count below uses no XML parser: regular expressions over the text for the
sitemap-namespace ``<loc>`` elements, ``<item>``, ``<entry>``, non-empty text lines and
``Sitemap:`` lines. It must agree with MANIFEST.tsv's ``url_count``; where the intended
behaviour of sitemap_crawl differs from that raw count (duplicates removed, non-standard
spellings accepted...), OVERRIDES pins the expected number with the reason.
"""

from __future__ import annotations

import csv
import gzip
import html
import re
from dataclasses import dataclass

import pytest

from sitemap_crawl.items import SitemapPage
from sitemap_crawl.parsing import ParsedSitemap, parse_sitemap
from tests.support import CORPUS_DIR

CORPUS = CORPUS_DIR
MANIFEST = CORPUS / "MANIFEST.tsv"

pytestmark = pytest.mark.skipif(not MANIFEST.is_file(), reason=f"no corpus at {CORPUS}")


@dataclass(frozen=True)
class Row:
    file: str
    repo: str
    path_in_repo: str
    kind: str
    extensions: frozenset[str]
    url_count: int
    notes: str


def _rows() -> list[Row]:
    if not MANIFEST.is_file():
        return []
    with MANIFEST.open(encoding="utf-8", newline="") as handle:
        return [
            Row(
                file=record["file"],
                repo=record["repo"],
                path_in_repo=record["path_in_repo"],
                kind=record["kind"],
                extensions=frozenset(part.strip() for part in record["extensions"].split(",") if part.strip()),
                url_count=int(record["url_count"]),
                notes=record["notes"],
            )
            for record in csv.DictReader(handle, delimiter="\t")
        ]


ROWS = _rows()
ROW_IDS = [row.file for row in ROWS]

# Where sitemap_crawl's intended result differs from the manifest's raw count: file -> (count, reason).
OVERRIDES: dict[str, tuple[int, str]] = {
    "magento1_sitemap_herbdoc_2015.xml": (529, "5 product URLs are listed twice: per-sitemap dedup keeps the first"),
    "video_sitemap_ns_prefixed_ns1_ns2_jaxb.xml": (1, "the same loc is repeated 5 times: per-sitemap dedup keeps one"),
    "robots_bokstart_mojibake_bom_sitemaps_plural.txt": (1, "the plural 'Sitemaps:' directive is accepted"),
    "robots_dailyom_sitemaps_header_bare_urls.txt": (2, "bare URL lines right after an empty 'Sitemaps:' are taken"),
    "malformed_index_sitemap_without_loc.xml": (15, "bare-URL <sitemap> entries without <loc> are taken"),
}

# Manifest kind -> (tree kind, error) where the result is not simply (manifest kind, None).
KIND_OVERRIDES: dict[str, tuple[str, str | None, str]] = {
    "malformed_index_sitemap_without_loc.xml": (
        "xml_index",
        None,
        "well-formed XML (only its entries break the protocol): a complete index",
    ),
}

SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def is_robots(row: Row) -> bool:
    return row.kind == "robots_txt" or row.file.startswith("robots_") or row.file.endswith("_served_as_robots.txt")


def file_url(row: Row) -> str:
    """A plausible real URL for the file (relative values resolve against it)."""
    owner, _, name = row.repo.partition("/")
    last = row.path_in_repo.rsplit("/", 1)[-1]
    if is_robots(row):
        if re.fullmatch(r"(?:[\w-]+\.)+[a-z]{2,}", last, re.IGNORECASE):
            host = last.lower()  # robots collections name their files after the site
        elif last == "robots.txt":
            host = f"{owner.lower()}.github.io"
        else:
            host = "www.example.org"
        return f"https://{host}/robots.txt"
    return f"https://{owner.lower()}.github.io/{name}/{row.path_in_repo}"


def read_body(row: Row) -> bytes:
    return (CORPUS / row.file).read_bytes()


_PARSED: dict[str, ParsedSitemap] = {}


def parsed(row: Row) -> ParsedSitemap:
    if row.file not in _PARSED:
        _PARSED[row.file] = parse_sitemap(read_body(row), file_url(row), is_robots=is_robots(row))
    return _PARSED[row.file]


def found_urls(result: ParsedSitemap) -> list[str]:
    return [page.url for page in result.pages] + result.sub_sitemaps


# -- the independent count (no XML parser) ----------------------------------------------------

_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_CDATA = re.compile(r"<!\[CDATA\[(.*?)\]\]>", re.DOTALL)
_XMLNS = re.compile(r"""xmlns(?::([\w.-]+))?\s*=\s*["']([^"']*)["']""")
_ROOT = re.compile(r"<(?!\?|!)([\w.-]+:)?([\w.-]+)[\s>/]")


@dataclass(frozen=True)
class Count:
    total: int
    distinct: int


def _text(body: bytes) -> str:
    if body[:2] == b"\x1f\x8b":
        body = gzip.decompress(body)
    for bom, encoding in ((b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"), (b"\xef\xbb\xbf", "utf-8-sig")):
        if body.startswith(bom):
            return body.decode(encoding)
    return body.decode("utf-8", "replace")


def _xml_count(text: str) -> Count:
    """Sitemap-namespace <loc> elements (urlset / sitemapindex), <item> (RSS), <entry> (Atom)."""
    text = _COMMENT.sub("", text)
    root = _ROOT.search(text)
    assert root is not None
    root_name = root.group(2)
    if root_name in ("rss", "feed"):
        entry = "item" if root_name == "rss" else "entry"
        structure = _CDATA.sub("", text)
        return Count(total=len(re.findall(rf"<{entry}[\s>]", structure)), distinct=-1)
    start_tag = text[root.start() : text.index(">", root.start())]
    prefix = ""
    for declared_prefix, uri in _XMLNS.findall(start_tag):
        if uri == SITEMAP_NS:
            prefix = f"{declared_prefix}:" if declared_prefix else ""
    values = re.findall(rf"<{re.escape(prefix)}loc\s*>(.*?)</{re.escape(prefix)}loc\s*>", text, re.DOTALL)
    cleaned = [html.unescape(_CDATA.sub(r"\1", value)).strip() for value in values]
    return Count(total=len(values), distinct=len(set(cleaned)))


def _robots_count(text: str) -> Count:
    """``Sitemap:`` directive lines: case-insensitive key at the start of an LF-separated line."""
    values = [
        match.group(1).split("#")[0].strip()
        for line in text.split("\n")
        if (match := re.match(r"\s*sitemap\s*:(.*)", line, re.IGNORECASE))
    ]
    return Count(total=len(values), distinct=len({value for value in values if value}))


def independent_count(row: Row) -> Count:
    body = read_body(row)
    if row.kind == "html":
        return Count(0, 0)
    text = _text(body)
    if is_robots(row):
        return _robots_count(text)
    if text.lstrip().startswith("<"):
        return _xml_count(text)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return Count(total=len(lines), distinct=len(set(lines)))


# -- tests ------------------------------------------------------------------------------------


def test_manifest_lists_every_file() -> None:
    on_disk = {path.name for path in CORPUS.iterdir() if path.name not in ("MANIFEST.tsv",)}
    assert {row.file for row in ROWS} == on_disk
    assert len(ROWS) == 117


@pytest.mark.parametrize("row", ROWS, ids=ROW_IDS)
def test_independent_count_agrees_with_the_manifest(row: Row) -> None:
    assert independent_count(row).total == row.url_count


@pytest.mark.parametrize("row", ROWS, ids=ROW_IDS)
def test_file_parses_with_the_expected_url_count(row: Row) -> None:
    result = parsed(row)
    expected = OVERRIDES.get(row.file, (row.url_count, ""))[0]
    assert len(found_urls(result)) == expected, (result.kind, result.error)


@pytest.mark.parametrize("file", sorted(OVERRIDES))
def test_every_override_is_used_and_explained(file: str) -> None:
    count, reason = OVERRIDES[file]
    assert file in ROW_IDS
    assert reason
    row = ROWS[ROW_IDS.index(file)]
    assert count != row.url_count


@pytest.mark.parametrize("file", ["magento1_sitemap_herbdoc_2015.xml", "video_sitemap_ns_prefixed_ns1_ns2_jaxb.xml"])
def test_dedup_overrides_match_the_independent_distinct_count(file: str) -> None:
    row = ROWS[ROW_IDS.index(file)]
    assert independent_count(row).distinct == OVERRIDES[file][0]


@pytest.mark.parametrize("row", ROWS, ids=ROW_IDS)
def test_kind_matches_the_manifest(row: Row) -> None:
    result = parsed(row)
    if row.file in KIND_OVERRIDES:
        kind, error, _reason = KIND_OVERRIDES[row.file]
        assert (result.kind, result.error) == (kind, error)
    elif row.kind == "html":
        assert (result.kind, result.error) == ("invalid", "not a sitemap")
    elif row.kind == "malformed":
        root = _ROOT.search(_COMMENT.sub("", _text(read_body(row))))
        assert root is not None
        expected_kind = {"urlset": "xml_urlset", "sitemapindex": "xml_index", "rss": "rss", "feed": "atom"}[
            root.group(2)
        ]
        assert (result.kind, result.error) == (expected_kind, "parse error")
    else:
        assert (result.kind, result.error) == (row.kind, None)


@pytest.mark.parametrize("row", ROWS, ids=ROW_IDS)
def test_every_url_is_absolute_http_and_unique(row: Row) -> None:
    result = parsed(row)
    urls = found_urls(result)
    assert len(urls) == len(set(urls))
    assert all(url.startswith(("http://", "https://")) for url in urls)
    assert all(page.sitemap_url == file_url(row) for page in result.pages)
    assert all(0.0 <= page.priority <= 1.0 for page in result.pages)


EXTENSION_CHECKS = {
    "image": lambda page: bool(page.images),
    "video": lambda page: bool(page.videos),
    "news": lambda page: page.news is not None and page.news.title is not None,
    "hreflang": lambda page: bool(page.alternates),
}


@pytest.mark.parametrize(
    ("row", "extension"),
    [(row, extension) for row in ROWS for extension in sorted(row.extensions) if extension in EXTENSION_CHECKS],
    ids=[
        f"{row.file}-{extension}"
        for row in ROWS
        for extension in sorted(row.extensions)
        if extension in EXTENSION_CHECKS
    ],
)
def test_used_extensions_reach_the_pages(row: Row, extension: str) -> None:
    pages: list[SitemapPage] = parsed(row).pages
    assert any(EXTENSION_CHECKS[extension](page) for page in pages)


def test_extensions_are_covered() -> None:
    used = {extension for row in ROWS for extension in row.extensions}
    assert {"image", "video", "news", "hreflang"} <= used


# -- spot checks of values ---------------------------------------------------------------------


def _row(file: str) -> Row:
    return ROWS[ROW_IDS.index(file)]


def test_relative_locs_resolve_against_the_sitemap_url() -> None:
    for file in (
        "google_xml_sitemaps_4123_pages_relative.xml",
        "wpcore_posts_static_export_relative_locs.xml",
        "mkdocs_2018_relative_locs.xml",
        "hugo_multilingual_en_hreflang_relative.xml",
        "wpcore_index_static_export_relative_locs.xml",
        "hugo_multilingual_index_2017_relative.xml",
    ):
        row = _row(file)
        host = file_url(row).split("/")[2]
        urls = found_urls(parsed(row))
        assert urls, file
        assert all(url.startswith(f"https://{host}/") for url in urls), file


def test_protocol_relative_hreflang_urls_take_the_sitemap_scheme() -> None:
    row = _row("hugo_multilingual_hreflang_protocol_relative_localhost.xml")
    result = parse_sitemap(read_body(row), "http://localhost:1313/sitemap.xml")
    assert all(page.url.startswith("http://localhost:1313/") for page in result.pages)
    hrefs = [alternate.href for page in result.pages for alternate in page.alternates]
    assert hrefs
    assert all(href.startswith("http://localhost:1313/") for href in hrefs)


def test_cdata_loc_in_index() -> None:
    urls = parsed(_row("fixture_index_cdata_loc_blank_lines.xml")).sub_sitemaps
    assert len(urls) == 2
    assert all(url == url.strip() and "CDATA" not in url for url in urls)


def test_capitalised_scheme_in_text_sitemap() -> None:
    urls = found_urls(parsed(_row("text_sitemap_0x_org_capitalized_scheme.txt")))
    assert "https://0x.org/api" in urls
    assert not any(url.startswith("Https") for url in urls)


def test_xml_in_a_txt_file() -> None:
    assert parsed(_row("xml_urlset_served_as_sitemap_txt.txt")).kind == "xml_urlset"


def test_gzip_file_matches_its_count() -> None:
    result = parsed(_row("mkdocs_material_sitemap.xml.gz"))
    assert (result.kind, len(result.pages)) == ("xml_urlset", 83)
    assert all(
        page.last_modified is None or re.fullmatch(r"\d{4}-\d{2}-\d{2}", page.last_modified) for page in result.pages
    )


def test_robots_spellings_in_the_corpus() -> None:
    assert parsed(_row("robots_suretriggers_empty_sitemap_url_next_line.txt")).sub_sitemaps[0].startswith("https://")
    walmart = parsed(_row("robots_walmart_help_bare_cr_inline_comments.txt")).sub_sitemaps
    assert walmart == ["https://help.walmart.com/ci/sitemap/", "http://help.walmart.com/ci/sitemap/"]
    assert parsed(_row("robots_ddrk_relative_crlf.txt")).sub_sitemaps == ["https://ddrk.me/sitemap_index.xml"]
    kooora = parsed(_row("robots_kooora_mojibake_nbsp_before_url.txt")).sub_sitemaps
    assert len(kooora) == 1 and kooora[0].startswith("http") and "xmlnewsmap=true" in kooora[0]
    newsweek = {
        tuple(parsed(_row(f"robots_newsweek_{variant}_bom.txt")).sub_sitemaps)
        for variant in ("utf8", "utf16le", "utf16be")
    }
    assert len(newsweek) == 1
    (urls,) = newsweek
    assert len(urls) == 1 and urls[0].startswith("http") and urls[0].endswith("sitemap_index.xml")


def test_malformed_files_keep_their_good_entries() -> None:
    video = parsed(_row("malformed_video_sitemap_unescaped_ampersand.xml"))
    assert video.pages and video.pages[0].videos
    description = video.pages[0].videos[0].description
    assert description is not None and "&" in description  # the raw & is kept, not dropped
    feed = parsed(_row("malformed_rss_wordpress_gbk_bytes_in_utf8.xml"))
    assert len(feed.pages) == 1 and feed.pages[0].url.startswith("http")


def test_news_sitemap_values() -> None:
    pages = parsed(_row("news_sitemap_scripted_xfeed.xml")).pages
    assert all(
        page.news is not None and page.news.publish_date and page.news.publish_date.endswith("+00:00") for page in pages
    )
