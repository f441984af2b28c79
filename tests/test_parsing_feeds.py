"""RSS 2.0 and Atom 0.3/1.0 feeds used as sitemaps: entries become pages whose news has title and date."""

from __future__ import annotations

import pytest

from sitemap_crawl.items import NewsStory, SitemapPage
from sitemap_crawl.parsing import parse_sitemap

FEED_URL = "https://www.example.org/blog/feed.xml"


def feed_pages(body: bytes, kind: str, url: str = FEED_URL) -> list[SitemapPage]:
    result = parse_sitemap(body, url)
    assert (result.kind, result.error) == (kind, None)
    assert result.sub_sitemaps == []
    return result.pages


def rss(items: str, rss_attributes: str = 'version="2.0"') -> bytes:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<rss {rss_attributes}>\n<channel>\n<title>Blog</title>\n'
        f"<link>https://www.example.org/</link>\n<description>d</description>\n{items}\n</channel>\n</rss>\n"
    ).encode()


# -- RSS 2.0 -----------------------------------------------------------------------------


def test_rss_item_link_title_and_rfc822_date() -> None:
    body = rss(
        """<item>
  <title>Star City</title>
  <link>https://www.example.org/news/2003/06/03.html</link>
  <description>How do Americans get ready to work with Russians aboard the ISS?</description>
  <pubDate>Tue, 03 Jun 2003 09:39:21 GMT</pubDate>
  <guid>https://www.example.org/2003/06/03.html#item573</guid>
</item>
<item>
  <title><![CDATA[Second & last]]></title>
  <link>
     https://www.example.org/news/second
  </link>
  <pubDate>Fri, 30 May 2003 11:06:42 +0200</pubDate>
</item>"""
    )
    first, second = feed_pages(body, "rss")
    assert first == SitemapPage(
        url="https://www.example.org/news/2003/06/03.html",
        sitemap_url=FEED_URL,
        last_modified="2003-06-03T09:39:21+00:00",
        news=NewsStory(title="Star City", publish_date="2003-06-03T09:39:21+00:00"),
    )
    assert second.url == "https://www.example.org/news/second"
    assert second.news == NewsStory(title="Second & last", publish_date="2003-05-30T11:06:42+02:00")
    assert second.priority == 0.5
    assert (second.images, second.videos, second.alternates) == ([], [], [])


def test_rss_guid_is_the_fallback_for_a_missing_link() -> None:
    body = rss(
        "<item><title>a</title><guid>https://www.example.org/by-guid</guid></item>"
        '<item><title>b</title><guid isPermaLink="true">https://www.example.org/permalink</guid></item>'
        '<item><title>c</title><guid isPermaLink="false">https://www.example.org/not-a-permalink</guid></item>'
        '<item><title>d</title><guid isPermaLink="false">tag:example.org,2003:1</guid></item>'
        "<item><title>e</title><link>https://www.example.org/link-wins</link>"
        "<guid>https://www.example.org/guid-loses</guid></item>"
    )
    assert [page.url for page in feed_pages(body, "rss")] == [
        "https://www.example.org/by-guid",
        "https://www.example.org/permalink",
        "https://www.example.org/link-wins",
    ]


def test_rss_relative_links_are_resolved_against_the_feed_url() -> None:
    body = rss(
        "<item><link>/post/one/</link><guid>/post/one/</guid></item>"
        "<item><link>two/</link></item>"
        "<item><guid>/post/three/</guid></item>"
    )
    assert [page.url for page in feed_pages(body, "rss")] == [
        "https://www.example.org/post/one/",
        "https://www.example.org/blog/two/",
        "https://www.example.org/post/three/",
    ]


def test_rss_atom_link_and_media_elements_are_not_the_item_link() -> None:
    body = rss(
        '<item><atom:link href="https://www.example.org/self" rel="self"/>'
        '<media:content url="https://media.example.org/x.jpg"/>'
        "<link>https://www.example.org/real</link></item>",
        'version="2.0" xmlns:atom="http://www.w3.org/2005/Atom" xmlns:media="http://search.yahoo.com/mrss/"',
    )
    assert [page.url for page in feed_pages(body, "rss")] == ["https://www.example.org/real"]


def test_rss_in_a_default_namespace_still_parses() -> None:
    body = (
        b'<rss version="2.0" xmlns="http://backend.userland.com/rss2"><channel>'
        b"<item><title>t</title><link>https://www.example.org/a</link></item></channel></rss>"
    )
    (page,) = feed_pages(body, "rss")
    assert (page.url, page.news) == ("https://www.example.org/a", NewsStory(title="t"))


def test_rss_dc_date_and_bad_dates() -> None:
    body = rss(
        "<item><link>https://www.example.org/dc</link><dc:date>2016-06-01T12:00:00Z</dc:date></item>"
        "<item><link>https://www.example.org/bad</link><pubDate>someday</pubDate></item>"
        "<item><link>https://www.example.org/none</link></item>",
        'version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/"',
    )
    assert [(page.url, page.last_modified) for page in feed_pages(body, "rss")] == [
        ("https://www.example.org/dc", "2016-06-01T12:00:00+00:00"),
        ("https://www.example.org/bad", None),
        ("https://www.example.org/none", None),
    ]


@pytest.mark.parametrize("pub_date", ["someday", "", "  "])
def test_rss_dc_date_is_the_date_when_pub_date_is_not_one(pub_date: str) -> None:
    # as an Atom entry's <published> stands in for an <updated> that is not a date
    body = rss(
        f"<item><link>https://www.example.org/a</link><pubDate>{pub_date}</pubDate>"
        "<dc:date>2016-06-01T12:00:00Z</dc:date></item>",
        'version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/"',
    )
    [page] = feed_pages(body, "rss")
    assert page.last_modified == "2016-06-01T12:00:00+00:00"
    assert page.news is not None and page.news.publish_date == page.last_modified


@pytest.mark.parametrize(
    ("namespace", "dated"),
    [
        ('xmlns:dc="http://purl.org/dc/elements/1.1/"', True),
        ('xmlns:dc="http://purl.org/dc/terms/"', True),
        ('xmlns:dc="http://purl.org/rss/1.0/modules/event/"', False),  # an event's date: not the item's
    ],
)
def test_rss_dc_date_is_dublin_cores(namespace: str, dated: bool) -> None:
    body = rss(
        "<item><link>https://www.example.org/a</link><dc:date>2016-06-01</dc:date></item>", f'version="2.0" {namespace}'
    )
    assert [page.last_modified for page in feed_pages(body, "rss")] == ["2016-06-01" if dated else None]


def test_rss_pub_date_comes_before_dc_date() -> None:
    body = rss(
        "<item><link>https://www.example.org/a</link><dc:date>2016-06-01T12:00:00Z</dc:date>"
        "<pubDate>Wed, 02 Oct 2002 13:00:00 GMT</pubDate></item>",
        'version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/"',
    )
    assert [page.last_modified for page in feed_pages(body, "rss")] == ["2002-10-02T13:00:00+00:00"]


def test_rss_items_without_any_url_are_skipped_and_duplicates_removed() -> None:
    body = rss(
        "<item><title>no link</title></item>"
        "<item><link>https://www.example.org/a</link><title>first</title></item>"
        "<item><link>https://www.example.org/b</link></item>"
        "<item><link>https://www.example.org/a</link><title>again</title></item>"
    )
    result = feed_pages(body, "rss")
    assert [page.url for page in result] == ["https://www.example.org/a", "https://www.example.org/b"]
    assert result[0].news is not None and result[0].news.title == "first"


def test_rss_channel_link_is_not_a_page() -> None:
    assert feed_pages(rss(""), "rss") == []


def test_rss_with_xml_base_and_rdf_namespaces() -> None:
    body = rss(
        "<item><title>x</title><link>https://www.example.org/en/node/1</link>"
        "<dc:creator>someone</dc:creator><pubDate>Wed, 05 Feb 2020 10:00:00 -0500</pubDate></item>",
        'version="2.0" xml:base="https://www.example.org/en" xmlns:dc="http://purl.org/dc/elements/1.1/" '
        'xmlns:content="http://purl.org/rss/1.0/modules/content/" xmlns:foaf="http://xmlns.com/foaf/0.1/"',
    )
    (page,) = feed_pages(body, "rss")
    assert (page.url, page.last_modified) == ("https://www.example.org/en/node/1", "2020-02-05T10:00:00-05:00")


# -- Atom --------------------------------------------------------------------------------


ATOM_1 = "http://www.w3.org/2005/Atom"
ATOM_03 = "http://purl.org/atom/ns#"


def test_atom_1_entry() -> None:
    body = f"""<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="{ATOM_1}">
  <title>Example Feed</title>
  <link href="https://www.example.org/"/>
  <updated>2003-12-13T18:30:02Z</updated>
  <id>urn:uuid:60a76c80-d399-11d9-b93C-0003939e0af6</id>
  <entry>
    <title>Atom-Powered Robots Run Amok</title>
    <link href="https://www.example.org/2003/12/13/atom03"/>
    <id>urn:uuid:1225c695-cfb8-4ebb-aaaa-80da344efa6a</id>
    <published>2003-12-13T08:29:29-04:00</published>
    <updated>2003-12-13T18:30:02Z</updated>
    <summary>Some text.</summary>
  </entry>
</feed>""".encode()
    (page,) = feed_pages(body, "atom")
    assert page == SitemapPage(
        url="https://www.example.org/2003/12/13/atom03",
        sitemap_url=FEED_URL,
        last_modified="2003-12-13T18:30:02+00:00",
        news=NewsStory(title="Atom-Powered Robots Run Amok", publish_date="2003-12-13T08:29:29-04:00"),
    )


def test_atom_link_rel_alternate_is_chosen_among_many() -> None:
    # Blogger: replies, edit, self and alternate links on each entry
    body = f"""<?xml version='1.0' encoding='UTF-8'?>
<feed xmlns='{ATOM_1}' xmlns:thr='http://purl.org/syndication/thread/1.0'>
<entry>
  <title type='text'>Post</title>
  <link rel='replies' type='application/atom+xml' href='https://blog.example.org/feeds/1/comments/default'/>
  <link rel='replies' type='text/html' href='https://blog.example.org/2020/01/post.html#comment-form'/>
  <link rel='edit' type='application/atom+xml' href='https://www.blogger.example/feeds/1/posts/default/2'/>
  <link rel='self' type='application/atom+xml' href='https://www.blogger.example/feeds/1/posts/default/2'/>
  <link rel='alternate' type='text/html' href='https://blog.example.org/2020/01/post.html' title='Post'/>
  <updated>2020-01-02T03:04:05.006-08:00</updated>
</entry>
<entry>
  <link rel='edit' href='https://www.blogger.example/edit/3'/>
  <link href='https://blog.example.org/no-rel-means-alternate.html'/>
</entry>
</feed>""".encode()
    assert [page.url for page in feed_pages(body, "atom")] == [
        "https://blog.example.org/2020/01/post.html",
        "https://blog.example.org/no-rel-means-alternate.html",
    ]


def test_atom_relative_hrefs_are_resolved_against_the_feed_url() -> None:
    # Pelican without SITEURL: relative links everywhere
    body = (
        f'<?xml version="1.0" encoding="utf-8"?><feed xmlns="{ATOM_1}"><title>t</title><link href="/" rel="alternate">'
        '</link><id>/</id><entry><title>One</title><link href="/one.html" rel="alternate"></link>'
        "<published>2020-01-01T00:00:00+01:00</published><id>tag:None,2020-01-01:/one.html</id></entry>"
        '<entry><title>Two</title><link href="two.html" rel="alternate"></link><id>tag:None,2:/two.html</id></entry>'
        "</feed>"
    ).encode()
    result = feed_pages(body, "atom")
    assert [page.url for page in result] == [
        "https://www.example.org/one.html",
        "https://www.example.org/blog/two.html",
    ]
    assert result[0].last_modified == "2020-01-01T00:00:00+01:00"
    assert result[1].last_modified is None


def test_atom_0_3_entry() -> None:
    body = f"""<?xml version="1.0" encoding="utf-8"?>
<feed version="0.3" xmlns="{ATOM_03}">
  <title>dive into mark</title>
  <link rel="alternate" type="text/html" href="https://www.example.org/"/>
  <modified>2003-12-13T18:30:02Z</modified>
  <entry>
    <title>Atom 0.3 snapshot</title>
    <link rel="alternate" type="text/html" href="https://www.example.org/2003/12/13/atom03"/>
    <link rel="service.edit" type="application/x.atom+xml" href="https://www.example.org/edit/1"/>
    <id>tag:example.org,2003:3.2397</id>
    <issued>2003-12-13T08:29:29-04:00</issued>
    <modified>2003-12-13T18:30:02Z</modified>
  </entry>
  <entry>
    <title>relative</title>
    <link rel="alternate" href="/2003/12/14/relative"/>
    <issued>2003-12-14T08:29:29-04:00</issued>
  </entry>
</feed>""".encode()
    first, second = feed_pages(body, "atom")
    assert first == SitemapPage(
        url="https://www.example.org/2003/12/13/atom03",
        sitemap_url=FEED_URL,
        last_modified="2003-12-13T18:30:02+00:00",
        news=NewsStory(title="Atom 0.3 snapshot", publish_date="2003-12-13T08:29:29-04:00"),
    )
    assert (second.url, second.last_modified) == (
        "https://www.example.org/2003/12/14/relative",
        "2003-12-14T08:29:29-04:00",
    )


@pytest.mark.parametrize("namespace", [ATOM_1, ATOM_03, "", "urn:wrong"])
def test_atom_in_any_namespace(namespace: str) -> None:
    xmlns = f' xmlns="{namespace}"' if namespace else ""
    body = f'<feed{xmlns}><entry><link href="https://www.example.org/e"/><title>e</title></entry></feed>'.encode()
    assert [page.url for page in feed_pages(body, "atom")] == ["https://www.example.org/e"]


def test_prefixed_atom_feed() -> None:
    body = (
        f'<a:feed xmlns:a="{ATOM_1}"><a:entry><a:link rel="alternate" href="https://www.example.org/p"/>'
        "<a:title>p</a:title></a:entry></a:feed>"
    ).encode()
    assert [page.url for page in feed_pages(body, "atom")] == ["https://www.example.org/p"]


def test_atom_entries_without_link_are_skipped_and_duplicates_removed() -> None:
    body = (
        f'<feed xmlns="{ATOM_1}"><entry><title>no link</title><id>urn:x</id></entry>'
        '<entry><link href="https://www.example.org/a"/></entry>'
        '<entry><link href="https://www.example.org/a"/></entry>'
        '<entry><link href="https://www.example.org/b"/></entry></feed>'
    ).encode()
    assert [page.url for page in feed_pages(body, "atom")] == ["https://www.example.org/a", "https://www.example.org/b"]


def test_feed_level_links_are_not_pages() -> None:
    body = f'<feed xmlns="{ATOM_1}"><link href="https://www.example.org/"/><title>empty</title></feed>'.encode()
    assert feed_pages(body, "atom") == []


# -- an entry's own fields ---------------------------------------------------------------


def test_atom_xhtml_title_is_the_text_of_its_div() -> None:
    # RFC 4287 3.1.1.3: the title is the content of the XHTML div; it was None
    body = f"""<feed xmlns="{ATOM_1}"><entry><title type="xhtml">
  <div xmlns="http://www.w3.org/1999/xhtml">Less: <em>&lt;</em> and <b>more</b></div>
</title><link href="https://www.example.org/x"/></entry>
<entry><title type="xhtml"><xhtml:div xmlns:xhtml="http://www.w3.org/1999/xhtml">A <xhtml:i>b</xhtml:i></xhtml:div>
</title><link href="https://www.example.org/y"/></entry></feed>""".encode()
    assert [page.news.title for page in feed_pages(body, "atom") if page.news] == ["Less: < and more", "A b"]


def test_atom_html_title_is_the_text_the_html_shows() -> None:
    # RFC 4287 3.1.1.2: type="html" holds escaped HTML; its tags and references were kept
    title = "&lt;b&gt;Tom&lt;/b&gt; &amp;amp; Jerry: a &amp;lt; b"
    body = f"""<feed xmlns="{ATOM_1}"><entry><title type="html">{title}</title>
<link href="https://www.example.org/x"/></entry>
<entry><title type="text">&lt;b&gt; stays</title><link href="https://www.example.org/y"/></entry></feed>""".encode()
    assert [page.news.title for page in feed_pages(body, "atom") if page.news] == ["Tom & Jerry: a < b", "<b> stays"]


MEDIA = 'xmlns:media="http://search.yahoo.com/mrss/"'
ITUNES = 'xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd"'


def test_rss_item_fields_of_other_namespaces_are_not_its_own() -> None:
    # <media:title> or <itunes:title> before <title> was taken for the title
    body = rss(
        "<item><media:title>Thumbnail caption</media:title><title>Real title</title>"
        "<link>https://www.example.org/r/1</link></item>"
        "<item><itunes:title>Ep 2</itunes:title><title>Episode 2: the title</title>"
        "<x:guid>https://www.example.org/x/guid</x:guid><x:pubDate>Mon, 01 Jan 2001 00:00:00 GMT</x:pubDate>"
        "<guid>https://www.example.org/r/2</guid><pubDate>Tue, 10 Jun 2003 04:00:00 GMT</pubDate></item>"
        "<item><x:link>https://www.example.org/x/link</x:link><link>https://www.example.org/r/3</link>"
        "<dc:date>2016-06-01T12:00:00Z</dc:date></item>"
        "<item><media:title>only a caption</media:title><link>https://www.example.org/r/4</link></item>",
        f'version="2.0" {MEDIA} {ITUNES} xmlns:x="urn:x" xmlns:dc="http://purl.org/dc/elements/1.1/"',
    )
    pages = feed_pages(body, "rss")
    assert [(page.url, page.news.title if page.news else None, page.last_modified) for page in pages] == [
        ("https://www.example.org/r/1", "Real title", None),
        ("https://www.example.org/r/2", "Episode 2: the title", "2003-06-10T04:00:00+00:00"),
        ("https://www.example.org/r/3", None, "2016-06-01T12:00:00+00:00"),
        ("https://www.example.org/r/4", None, None),
    ]


def test_rss_item_field_with_a_prefix_not_declared_is_not_its_own() -> None:
    body = rss("<item><media:title>caption</media:title><title>t</title><link>https://www.example.org/a</link></item>")
    (page,) = feed_pages(body, "rss")
    assert page.news == NewsStory(title="t")


@pytest.mark.parametrize("namespace", [ATOM_1, ATOM_03, ""])
def test_atom_entry_fields_of_other_namespaces_are_not_its_own(namespace: str) -> None:
    xmlns = f' xmlns="{namespace}"' if namespace else ""
    body = (
        f'<feed{xmlns} {MEDIA} xmlns:x="urn:x"><entry><media:title>Thumbnail caption</media:title>'
        '<x:link href="https://www.example.org/x/link"/><x:published>2001-01-01T00:00:00Z</x:published>'
        "<x:updated>2001-01-01T00:00:00Z</x:updated><title>Real title</title>"
        '<link href="https://www.example.org/a/1"/><updated>2024-05-06T00:00:00Z</updated></entry></feed>'
    ).encode()
    (page,) = feed_pages(body, "atom")
    assert (page.url, page.last_modified, page.news) == (
        "https://www.example.org/a/1",
        "2024-05-06T00:00:00+00:00",
        NewsStory(title="Real title", publish_date="2024-05-06T00:00:00+00:00"),
    )


def test_atom_entry_without_an_alternate_link_is_no_page() -> None:
    # RFC 4287 4.2.7.2: the entry's web page is rel="alternate" (the default); self, edit
    # and enclosure links are an API document, an edit URI, a media file: not pages
    body = f"""<feed xmlns="{ATOM_1}">
<entry><title>Self and edit</title><id>https://www.example.org/posts/2</id>
  <link rel="self" href="https://www.example.org/api/entries/2"/>
  <link rel="edit" href="https://www.example.org/api/entries/2/edit"/></entry>
<entry><title>Enclosure</title><link rel="enclosure" type="audio/mpeg" length="1234"
  href="https://www.example.org/media/ep3.mp3"/><link rel="related" href="https://other.example/"/></entry>
<entry><title>Registry IRI</title><link rel="http://www.iana.org/assignments/relation/alternate"
  href="https://www.example.org/posts/4"/></entry>
</feed>""".encode()
    pages = feed_pages(body, "atom")
    assert [(page.url, page.news.title if page.news else None) for page in pages] == [
        ("https://www.example.org/posts/4", "Registry IRI")
    ]
