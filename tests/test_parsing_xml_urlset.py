"""XML urlset: every field, the image/video/news/hreflang extensions, namespaces, CDATA, relative locs, dedup."""

from __future__ import annotations

import pytest

from sitemap_crawl.items import PAGE_FIELDS, Alternate, Image, NewsStory, SitemapPage, Video
from sitemap_crawl.parsing import SitemapReader, parse_sitemap

SITEMAP_URL = "https://www.example.org/sitemaps/pages.xml"
SM = "http://www.sitemaps.org/schemas/sitemap/0.9"
NAMESPACES = (
    f'xmlns="{SM}" '
    'xmlns:image="http://www.google.com/schemas/sitemap-image/1.1" '
    'xmlns:video="http://www.google.com/schemas/sitemap-video/1.1" '
    'xmlns:news="http://www.google.com/schemas/sitemap-news/0.9" '
    'xmlns:xhtml="http://www.w3.org/1999/xhtml"'
)


def urlset(body: str, namespaces: str = NAMESPACES) -> bytes:
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {namespaces}>\n{body}\n</urlset>\n'.encode()


def pages(body: bytes, url: str = SITEMAP_URL) -> list[SitemapPage]:
    result = parse_sitemap(body, url)
    assert result.kind == "xml_urlset", (result.kind, result.error)
    assert result.error is None
    assert result.sub_sitemaps == []
    return result.pages


def locs(body: bytes, url: str = SITEMAP_URL) -> list[str]:
    return [page.url for page in pages(body, url)]


# -- the page record ---------------------------------------------------------------------


def test_every_protocol_field() -> None:
    body = urlset(
        """
  <url>
    <loc>https://www.example.org/a</loc>
    <lastmod>2024-05-01T10:20:30+02:00</lastmod>
    <changefreq>weekly</changefreq>
    <priority>0.8</priority>
  </url>
  <url><loc>https://www.example.org/b</loc></url>"""
    )
    first, second = pages(body)
    assert first == SitemapPage(
        url="https://www.example.org/a",
        sitemap_url=SITEMAP_URL,
        priority=0.8,
        last_modified="2024-05-01T10:20:30+02:00",
        change_frequency="weekly",
    )
    assert second == SitemapPage(url="https://www.example.org/b", sitemap_url=SITEMAP_URL)
    assert (second.priority, second.last_modified, second.change_frequency) == (0.5, None, None)
    assert (second.news, second.images, second.videos, second.alternates) == (None, [], [], [])


def test_page_dict_has_the_contract_fields_in_order() -> None:
    (page,) = pages(urlset("<url><loc>https://www.example.org/a</loc></url>"))
    assert tuple(page.to_dict()) == PAGE_FIELDS
    assert PAGE_FIELDS == (
        "url",
        "sitemap_url",
        "priority",
        "last_modified",
        "change_frequency",
        "news",
        "images",
        "videos",
        "alternates",
        "website",  # set by the spider (the site being mapped); None from the pure parser
    )
    assert page.website is None


def test_fields_in_any_order_and_with_whitespace() -> None:
    body = urlset(
        """<url>
      <priority>
        0.3
      </priority>
      <changefreq> Daily </changefreq>
      <lastmod>
        2024-01-02
      </lastmod>
      <loc>
        https://www.example.org/late-loc
      </loc>
    </url>"""
    )
    (page,) = pages(body)
    assert (page.url, page.priority, page.change_frequency, page.last_modified) == (
        "https://www.example.org/late-loc",
        0.3,
        "daily",
        "2024-01-02",
    )


@pytest.mark.parametrize(
    ("lastmod", "expected"),
    [
        ("2024-05-01", "2024-05-01"),
        ("2024-05-01T10:20:30Z", "2024-05-01T10:20:30+00:00"),
        ("2024-05-01T10:20:30-04:00", "2024-05-01T10:20:30-04:00"),
        ("2024-05-01T10:20:30.000Z", "2024-05-01T10:20:30+00:00"),
        ("2024-05", "2024-05"),
        ("not a date", None),
        ("2024-02-31", None),
        ("", None),
    ],
)
def test_lastmod_is_normalised(lastmod: str, expected: str | None) -> None:
    body = urlset(f"<url><loc>https://www.example.org/a</loc><lastmod>{lastmod}</lastmod></url>")
    assert pages(body)[0].last_modified == expected


@pytest.mark.parametrize(
    ("priority", "expected"),
    [("0.0", 0.0), ("1.0", 1.0), ("0.75", 0.75), ("1.1", 0.5), ("-1", 0.5), ("high", 0.5), ("", 0.5)],
)
def test_priority_is_validated(priority: str, expected: float) -> None:
    body = urlset(f"<url><loc>https://www.example.org/a</loc><priority>{priority}</priority></url>")
    assert pages(body)[0].priority == expected


@pytest.mark.parametrize(
    ("changefreq", "expected"),
    [("always", "always"), ("HOURLY", "hourly"), ("never", "never"), ("fortnightly", None), ("", None)],
)
def test_changefreq_is_validated(changefreq: str, expected: str | None) -> None:
    body = urlset(f"<url><loc>https://www.example.org/a</loc><changefreq>{changefreq}</changefreq></url>")
    assert pages(body)[0].change_frequency == expected


# -- extensions --------------------------------------------------------------------------


def test_news_extension() -> None:
    body = urlset(
        """<url>
    <loc>https://www.example.org/business/article55.html</loc>
    <news:news>
      <news:publication>
        <news:name>The Example Times</news:name>
        <news:language>en</news:language>
      </news:publication>
      <news:access>Subscription</news:access>
      <news:genres>PressRelease, Blog</news:genres>
      <news:publication_date>2008-12-23T14:30:00Z</news:publication_date>
      <news:title><![CDATA[Companies A & B in Merger Talks]]></news:title>
      <news:keywords>business, merger, acquisition, A, B</news:keywords>
      <news:stock_tickers>NASDAQ:A, NASDAQ:B</news:stock_tickers>
    </news:news>
  </url>"""
    )
    (page,) = pages(body)
    assert page.news == NewsStory(
        title="Companies A & B in Merger Talks",
        publish_date="2008-12-23T14:30:00+00:00",
        publication_name="The Example Times",
        publication_language="en",
        access="Subscription",
        genres=["PressRelease", "Blog"],
        keywords=["business", "merger", "acquisition", "A", "B"],
        stock_tickers=["NASDAQ:A", "NASDAQ:B"],
    )
    assert page.to_dict()["news"]["genres"] == ["PressRelease", "Blog"]


def test_minimal_news_has_empty_lists() -> None:
    body = urlset(
        "<url><loc>https://www.example.org/n</loc><news:news><news:title>T</news:title>"
        "<news:publication_date>2024-01-02</news:publication_date></news:news></url>"
    )
    (page,) = pages(body)
    assert page.news == NewsStory(title="T", publish_date="2024-01-02")
    assert (page.news.genres, page.news.keywords, page.news.stock_tickers) == ([], [], [])


def test_image_extension() -> None:
    body = urlset(
        """<url>
    <loc>https://www.example.org/sample.html</loc>
    <image:image>
      <image:loc>https://www.example.org/image.jpg</image:loc>
      <image:caption><![CDATA[A dog & a cat]]></image:caption>
      <image:title>The title</image:title>
      <image:geo_location>Limerick, Ireland</image:geo_location>
      <image:license>https://www.example.org/license</image:license>
    </image:image>
    <image:image>
      <image:loc>/photos/two.png</image:loc>
      <image:caption></image:caption>
    </image:image>
    <image:image><image:caption>no loc: skipped</image:caption></image:image>
  </url>"""
    )
    (page,) = pages(body)
    assert page.images == [
        Image(
            loc="https://www.example.org/image.jpg",
            caption="A dog & a cat",
            title="The title",
            geo_location="Limerick, Ireland",
            license="https://www.example.org/license",
        ),
        Image(loc="https://www.example.org/photos/two.png"),
    ]


def test_video_extension() -> None:
    body = urlset(
        """<url>
    <loc>https://www.example.org/videos/some_video_landing_page.html</loc>
    <video:video>
      <video:thumbnail_loc>https://www.example.org/thumbs/123.jpg</video:thumbnail_loc>
      <video:title>Grilling steaks for summer</video:title>
      <video:description>Alkis shows you how to get perfectly done steaks every time</video:description>
      <video:content_loc>https://streamserver.example.com/video123.mp4</video:content_loc>
      <video:player_loc allow_embed="yes" autoplay="ap=1">https://www.example.org/videoplayer.php?video=123</video:player_loc>
      <video:duration>600</video:duration>
      <video:expiration_date>2021-11-05T19:20:30+08:00</video:expiration_date>
      <video:rating>4.2</video:rating>
      <video:view_count>12345</video:view_count>
      <video:publication_date>2007-11-05T19:20:30+08:00</video:publication_date>
      <video:family_friendly>yes</video:family_friendly>
      <video:restriction relationship="allow">IE GB US CA</video:restriction>
      <video:tag>steak</video:tag>
      <video:tag>meat</video:tag>
      <video:tag> summer </video:tag>
      <video:live>no</video:live>
    </video:video>
    <video:video>
      <video:title>Second</video:title>
      <video:duration>12.9</video:duration>
      <video:family_friendly>no</video:family_friendly>
    </video:video>
  </url>"""
    )
    (page,) = pages(body)
    first, second = page.videos
    assert first == Video(
        thumbnail_loc="https://www.example.org/thumbs/123.jpg",
        title="Grilling steaks for summer",
        description="Alkis shows you how to get perfectly done steaks every time",
        content_loc="https://streamserver.example.com/video123.mp4",
        player_loc="https://www.example.org/videoplayer.php?video=123",
        duration=600,
        publication_date="2007-11-05T19:20:30+08:00",
        family_friendly=True,
        tags=["steak", "meat", "summer"],
    )
    assert type(first.duration) is int
    assert first.family_friendly is True
    assert second == Video(title="Second", duration=12, family_friendly=False)
    assert second.tags == []


def test_video_without_optional_values() -> None:
    body = urlset(
        "<url><loc>https://www.example.org/v</loc><video:video>"
        "<video:content_loc>/media/v.mp4</video:content_loc><video:duration>PT10M</video:duration>"
        "</video:video></url>"
    )
    (video,) = pages(body)[0].videos
    assert video.content_loc == "https://www.example.org/media/v.mp4"
    assert video.duration is None
    assert video.family_friendly is None  # not stated: not invented
    assert video.tags == []


def test_hreflang_alternates() -> None:
    body = urlset(
        """<url>
    <loc>https://www.example.org/english/page.html</loc>
    <xhtml:link rel="alternate" hreflang="de" href="https://www.example.de/deutsch/page.html"/>
    <xhtml:link
        rel="alternate"
        hreflang="de-ch"
        href="https://www.example.de/schweiz-deutsch/page.html" />
    <xhtml:link rel="alternate" hreflang="en" href="/english/page.html"/>
    <xhtml:link rel="alternate" hreflang="x-default" href="//www.example.org/"/>
    <xhtml:link rel="canonical" href="https://www.example.org/not-an-alternate"/>
    <xhtml:link rel="alternate" hreflang="fr"/>
  </url>"""
    )
    (page,) = pages(body)
    assert page.alternates == [
        Alternate(hreflang="de", href="https://www.example.de/deutsch/page.html"),
        Alternate(hreflang="de-ch", href="https://www.example.de/schweiz-deutsch/page.html"),
        Alternate(hreflang="en", href="https://www.example.org/english/page.html"),
        Alternate(hreflang="x-default", href="https://www.example.org/"),
    ]


@pytest.mark.parametrize(
    ("rel", "is_alternate"),
    [
        ("alternate nofollow", True),
        (" Alternate ", True),
        ("nofollow\talternate", True),
        ("ALTERNATE", True),
        ("alternates", False),
        ("canonical", False),
        ("", False),
    ],
)
def test_an_alternate_rel_is_read_as_html_reads_it(rel: str, is_alternate: bool) -> None:
    # rel is a set of space-separated tokens: "alternate nofollow" was no alternate
    body = urlset(
        f'<url><loc>https://www.example.org/en</loc><xhtml:link rel="{rel}" hreflang="de" '
        'href="https://www.example.org/de"/></url>'
    )
    (page,) = pages(body)
    assert page.alternates == ([Alternate("de", "https://www.example.org/de")] if is_alternate else [])


def test_alternates_before_the_other_fields() -> None:
    # Drupal Simple XML Sitemap puts the xhtml:link elements before lastmod/changefreq/priority
    body = urlset(
        '<url><loc>https://www.example.org/ja</loc><xhtml:link rel="alternate" hreflang="ja" '
        'href="https://www.example.org/ja"/><xhtml:link rel="alternate" hreflang="en" '
        'href="https://www.example.org/en"/><lastmod>2021-03-04T05:06:07+09:00</lastmod>'
        "<changefreq>monthly</changefreq><priority>0.7</priority></url>"
    )
    (page,) = pages(body)
    assert [alternate.hreflang for alternate in page.alternates] == ["ja", "en"]
    assert (page.last_modified, page.change_frequency, page.priority) == ("2021-03-04T05:06:07+09:00", "monthly", 0.7)


def test_all_extensions_on_one_page_and_unknown_elements_ignored() -> None:
    body = urlset(
        """<url>
    <loc>https://www.example.org/all</loc>
    <mobile:mobile xmlns:mobile="http://www.google.com/schemas/sitemap-mobile/1.0"/>
    <pagemap:PageMap xmlns:pagemap="http://www.google.com/schemas/sitemap-pagemap/1.0">
      <pagemap:DataObject type="document"><pagemap:Attribute name="loc">https://x.invalid/</pagemap:Attribute>
      </pagemap:DataObject>
    </pagemap:PageMap>
    <image:image><image:loc>https://www.example.org/i.jpg</image:loc></image:image>
    <video:video><video:title>v</video:title></video:video>
    <news:news><news:title>n</news:title></news:news>
    <xhtml:link rel="alternate" hreflang="fr" href="https://www.example.org/fr"/>
  </url>"""
    )
    (page,) = pages(body)
    assert page.url == "https://www.example.org/all"
    assert [image.loc for image in page.images] == ["https://www.example.org/i.jpg"]
    assert [video.title for video in page.videos] == ["v"]
    assert page.news is not None and page.news.title == "n"
    assert page.alternates == [Alternate(hreflang="fr", href="https://www.example.org/fr")]


def test_entries_longer_than_a_piece_are_still_given_as_they_come() -> None:
    # an entry that began before the piece it ended in looked like libxml2's misread line
    # numbers: every later entry was held back to the document's end (2M entries: 570 MB)
    big = "<url><loc>https://www.example.org/big</loc>" + "<!-- filler -->\n" * 4000 + "</url>\n"
    small = "".join(f"<url><loc>https://www.example.org/{i}</loc></url>\n" for i in range(20_000))
    reader = SitemapReader(urlset(big + big.replace("/big<", "/big2<") + small), SITEMAP_URL)
    batches = [len(batch) for batch in reader.iter_raw_batches()]
    assert sum(batches) == 20_002 and reader.error is None
    assert max(batches) < 2_000 and len(batches) > 20


def test_extension_locs_are_not_page_locs() -> None:
    body = urlset(
        "<url><image:image><image:loc>https://www.example.org/only-an-image.jpg</image:loc></image:image></url>"
        "<url><loc>https://www.example.org/real</loc></url>"
    )
    assert locs(body) == ["https://www.example.org/real"]


@pytest.mark.parametrize("where", ["after", "before"])
def test_an_extension_field_in_the_url_itself_is_not_the_pages(where: str) -> None:
    # an <image:loc> left out of its <image:image> was taken for the page's <loc> (the last
    # one written won: the page became the image), an <image:lastmod> for its lastmod
    stray = (
        "<image:loc>https://www.example.org/i.jpg</image:loc><video:lastmod>2020-01-01</video:lastmod>"
        "<news:priority>0.1</news:priority><xhtml:changefreq>daily</xhtml:changefreq>"
    )
    own = "<loc>https://www.example.org/page</loc>"
    (page,) = pages(urlset(f"<url>{own}{stray}</url>" if where == "after" else f"<url>{stray}{own}</url>"))
    assert (page.url, page.last_modified, page.priority, page.change_frequency) == (
        "https://www.example.org/page",
        None,
        0.5,  # (the protocol's default: the news:priority is not read)
        None,
    )


# -- locations ---------------------------------------------------------------------------


def test_relative_locs_are_resolved_against_the_sitemap_url() -> None:
    body = urlset(
        "<url><loc>/root.html</loc></url>"
        "<url><loc>sibling.html</loc></url>"
        "<url><loc>../parent/</loc></url>"
        "<url><loc>//cdn.example.net/x</loc></url>"
        "<url><loc>fr/index.html</loc></url>"
    )
    assert locs(body) == [
        "https://www.example.org/root.html",
        "https://www.example.org/sitemaps/sibling.html",
        "https://www.example.org/parent/",
        "https://cdn.example.net/x",
        "https://www.example.org/sitemaps/fr/index.html",
    ]
    assert locs(body, "http://localhost:8080/sitemap.xml")[0] == "http://localhost:8080/root.html"


def test_entities_are_unescaped_exactly_once() -> None:
    body = urlset(
        "<url><loc>https://www.example.org/?a=1&amp;copy=2</loc></url>"
        "<url><loc>https://www.example.org/?b=1&amp;amp;c=2</loc></url>"
        "<url><loc>https://www.example.org/q?x=&lt;y&gt;&amp;z=&quot;1&quot;&amp;w=&apos;</loc></url>"
        "<url><loc>https://www.example.org/&#233;t&#xE9;</loc></url>"
    )
    assert locs(body) == [
        "https://www.example.org/?a=1&copy=2",
        "https://www.example.org/?b=1&amp;c=2",
        'https://www.example.org/q?x=<y>&z="1"&w=\'',
        "https://www.example.org/été",
    ]


def test_cdata_locs() -> None:
    body = urlset(
        "<url><loc><![CDATA[https://www.example.org/?a=1&b=2]]></loc></url>\n"
        "<url><loc>\n  <![CDATA[ https://www.example.org/spaced ]]>\n</loc></url>\n"
        "<url><loc><![CDATA[https://www.example.org/&amp;]]></loc></url>"
    )
    assert locs(body) == [
        "https://www.example.org/?a=1&b=2",
        "https://www.example.org/spaced",
        "https://www.example.org/&amp;",
    ]


def test_percent_encoded_and_raw_unicode_locs_are_kept_as_written() -> None:
    body = urlset(
        "<url><loc>https://www.example.org/%E5%8F%B0%E7%81%A3/</loc></url>"
        "<url><loc>https://www.example.org/日本語/ページ</loc></url>"
    )
    assert locs(body) == ["https://www.example.org/%E5%8F%B0%E7%81%A3/", "https://www.example.org/日本語/ページ"]


def test_entries_without_a_usable_loc_are_skipped() -> None:
    body = urlset(
        "<url></url><url><loc></loc></url><url><loc>   </loc></url>"
        "<url><loc>javascript:void(0)</loc></url><url><loc>mailto:a@example.org</loc></url>"
        "<url><lastmod>2024-01-01</lastmod></url>"
        "<url><loc>https://www.example.org/ok</loc></url><url/>"
    )
    assert locs(body) == ["https://www.example.org/ok"]


# -- namespaces --------------------------------------------------------------------------


ENTRIES = "<url><loc>https://www.example.org/1</loc><priority>0.9</priority></url><url><loc>https://www.example.org/2</loc></url>"


@pytest.mark.parametrize(
    "document",
    [
        f'<urlset xmlns="{SM}">{ENTRIES}</urlset>',
        f"<urlset>{ENTRIES}</urlset>",
        f'<urlset xmlns="http://www.google.com/schemas/sitemap/0.84">{ENTRIES}</urlset>',
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9/">{ENTRIES}</urlset>',
        f'<urlset xmlns="https://www.sitemaps.org/schemas/sitemap/0.9">{ENTRIES}</urlset>',
        f'<urlset xmlns="urn:totally:wrong">{ENTRIES}</urlset>',
        f'<ns1:urlset xmlns:ns1="{SM}">{ENTRIES.replace("<", "<ns1:").replace("<ns1:/", "</ns1:")}</ns1:urlset>',
        f'<sm:urlset xmlns:sm="{SM}" xmlns="urn:other">{ENTRIES.replace("<", "<sm:").replace("<sm:/", "</sm:")}'
        "</sm:urlset>",
        f'<urlset xmlns="{SM}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
        f'xsi:schemaLocation="{SM} {SM}/sitemap.xsd" generatedBy="WIX" version="1.0">{ENTRIES}</urlset>',
        f'\t<urlset xmlns="{SM}">\n\t{ENTRIES}\n\t</urlset>',
    ],
    ids=[
        "sitemap-ns",
        "no-ns",
        "old-google-ns",
        "trailing-slash-ns",
        "https-ns",
        "wrong-ns",
        "ns1-prefix",
        "sm-prefix-other-default",
        "extra-root-attributes",
        "indented-root",
    ],
)
def test_any_namespace_parses(document: str) -> None:
    result = parse_sitemap(('<?xml version="1.0" encoding="UTF-8"?>\n' + document).encode(), SITEMAP_URL)
    assert (result.kind, result.error) == ("xml_urlset", None)
    assert [page.url for page in result.pages] == ["https://www.example.org/1", "https://www.example.org/2"]
    assert [page.priority for page in result.pages] == [0.9, 0.5]


def test_prefixed_sitemap_namespace_with_prefixed_extensions() -> None:
    # JAXB-style serializer: ns1 = sitemap, ns2 = video
    body = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        f'<ns1:urlset xmlns:ns1="{SM}" xmlns:ns2="http://www.google.com/schemas/sitemap-video/1.1">'
        "<ns1:url><ns1:loc>https://www.example.org/v</ns1:loc><ns2:video>"
        "<ns2:title>T</ns2:title><ns2:duration>61</ns2:duration><ns2:family_friendly>yes</ns2:family_friendly>"
        "</ns2:video></ns1:url></ns1:urlset>"
    ).encode()
    (page,) = pages(body)
    assert page.videos == [Video(title="T", duration=61, family_friendly=True)]


def test_unprefixed_extension_elements_in_the_default_namespace() -> None:
    body = (
        f'<urlset xmlns="{SM}"><url><loc>https://www.example.org/a</loc>'
        "<image><loc>https://www.example.org/a.jpg</loc></image></url></urlset>"
    ).encode()
    (page,) = pages(body)
    assert [image.loc for image in page.images] == ["https://www.example.org/a.jpg"]


def test_comments_and_processing_instructions_anywhere() -> None:
    body = (
        '<?xml version="1.0" encoding="UTF-8"?><?xml-stylesheet type="text/xsl" href="//www.example.org/s.xsl"?>\n'
        "<!-- generator: test -->\n"
        f'<urlset xmlns="{SM}"><!-- inside -->'
        "<url><!-- c --><loc>https://www.example.org/a</loc><?pi x?></url>"
        "<!-- <url><loc>https://www.example.org/commented-out</loc></url> -->"
        "</urlset>\n<!-- Array\n(\n)\n -->\n<!-- generated in 0.01 s -->"
    ).encode()
    assert locs(body) == ["https://www.example.org/a"]


def test_empty_urlsets() -> None:
    for body in (
        f'<urlset xmlns="{SM}"></urlset>',
        f'<urlset xmlns="{SM}"/>',
        f'<?xml version="1.0"?>\n<urlset xmlns="{SM}" xmlns:news="http://www.google.com/schemas/sitemap-news/0.9" />',
        f'<urlset xmlns="{SM}">\n\n</urlset>\n<!-- 0 urls -->',
    ):
        result = parse_sitemap(body.encode(), SITEMAP_URL)
        assert (result.kind, result.error, result.pages) == ("xml_urlset", None, [])


# -- deduplication and order -------------------------------------------------------------


def test_first_declaration_of_a_page_is_kept_in_document_order() -> None:
    body = urlset(
        "<url><loc>https://www.example.org/b</loc><priority>0.1</priority></url>"
        "<url><loc>https://www.example.org/a</loc></url>"
        "<url><loc>https://www.example.org/b</loc><priority>0.9</priority></url>"
        "<url><loc>/b</loc><priority>0.7</priority></url>"
        "<url><loc>https://www.example.org/c</loc></url>"
        "<url><loc>https://www.example.org/a</loc></url>"
    )
    result = pages(body)
    assert [page.url for page in result] == [
        "https://www.example.org/b",
        "https://www.example.org/a",
        "https://www.example.org/c",
    ]
    assert result[0].priority == 0.1


def test_a_page_written_raw_and_percent_encoded_is_one_page() -> None:
    # one URL for Scrapy (it requests both as p%C3%A9): the first spelling is kept
    body = urlset(
        "<url><loc>https://www.example.org/p\u00e9</loc></url>"
        "<url><loc>https://www.example.org/p%C3%A9</loc></url>"
        "<url><loc>https://www.example.org/q%C3%A9?x=\u00e9</loc></url>"
        "<url><loc>https://www.example.org/q\u00e9?x=%C3%A9</loc></url>"
    )
    assert [page.url for page in pages(body)] == [
        "https://www.example.org/p\u00e9",
        "https://www.example.org/q%C3%A9?x=\u00e9",
    ]


def test_repeats_are_dropped_after_the_dedup_table_has_grown_many_times() -> None:
    # the dedup starts with 16 slots and doubles: repeats far apart, before and after growth
    first = [f"https://www.example.org/p/{n}" for n in range(5_000)]
    order = first[:10] + first[:10] + first[10:] + first[::7] + first[-3:]
    body = urlset("".join(f"<url><loc>{url}</loc></url>" for url in order))
    assert [page.url for page in pages(body)] == first


def test_urls_differing_only_in_case_or_slash_are_different_pages() -> None:
    body = urlset(
        "<url><loc>https://www.example.org/a</loc></url><url><loc>https://www.example.org/a/</loc></url>"
        "<url><loc>https://www.example.org/A</loc></url><url><loc>http://www.example.org/a</loc></url>"
    )
    assert len(locs(body)) == 4


def test_large_urlset_in_order() -> None:
    count = 20_000
    body = urlset("".join(f"<url><loc>https://www.example.org/p/{i}</loc></url>\n" for i in range(count)))
    assert locs(body) == [f"https://www.example.org/p/{i}" for i in range(count)]


def test_reader_streams_pages_with_the_sitemap_url() -> None:
    body = urlset("<url><loc>/a</loc></url><url><loc>/b</loc></url>")
    reader = SitemapReader(body, SITEMAP_URL)
    assert reader.kind == "xml_urlset"
    iterator = iter(reader)
    first = next(iterator)
    assert isinstance(first, SitemapPage)
    assert (first.url, first.sitemap_url) == ("https://www.example.org/a", SITEMAP_URL)
    assert [page.url for page in iterator] == ["https://www.example.org/b"]
    assert (reader.error, reader.entry_count) == (None, 2)


def test_only_links_with_rel_alternate_and_an_hreflang_are_alternates() -> None:
    body = urlset(
        """<url>
    <loc>https://www.example.org/menu</loc>
    <xhtml:link rel="alternate" media="only screen and (max-width: 640px)" href="https://m.example.org/menu"/>
    <xhtml:link hreflang="it" href="https://www.example.org/it/menu"/>
    <xhtml:link rel="alternate" hreflang="  " href="https://www.example.org/blank/menu"/>
    <xhtml:link rel=" Alternate " hreflang="es" href="https://www.example.org/es/menu"/>
  </url>"""
    )
    (page,) = pages(body)
    assert page.alternates == [Alternate(hreflang="es", href="https://www.example.org/es/menu")]


def test_every_link_reader_keeps_every_link_with_an_href() -> None:
    # the drop-in SitemapSpider's Scrapy-style "alternate" list: every xhtml:link href
    body = urlset(
        """<url>
    <loc>https://www.example.org/menu</loc>
    <xhtml:link rel="alternate" media="handheld" href="https://m.example.org/menu"/>
    <xhtml:link rel="alternate" hreflang="es" href="https://www.example.org/es/menu"/>
    <xhtml:link rel="alternate" hreflang="fr"/>
  </url>"""
    )
    (page,) = list(SitemapReader(body, "https://www.example.org/sitemap.xml", every_link=True))
    assert isinstance(page, SitemapPage)
    assert page.alternates == [
        Alternate(hreflang=None, href="https://m.example.org/menu"),
        Alternate(hreflang="es", href="https://www.example.org/es/menu"),
    ]
