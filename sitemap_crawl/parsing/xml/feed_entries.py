"""The entries of feeds: an RSS 2.0 ``<item>`` and an Atom 0.3/1.0 ``<entry>``, as pages
whose news holds their title and date."""

from __future__ import annotations

import re
from collections.abc import Iterator

from sitemap_crawl.items import NewsStory, SitemapPage
from sitemap_crawl.parsing.fields import clean_text, normalize_date, resolve_url
from sitemap_crawl.parsing.xml.libxml import Element, local_name


def _namespace(tag: str) -> str:
    """A tag's namespace as lxml writes it (``{uri}``), ``prefix:`` for a prefix that was
    not declared (such a tag is read as it is written), '' for none."""
    if tag[:1] == "{":
        return tag[: tag.index("}") + 1]
    return tag[: tag.find(":") + 1]


def _own_children(entry: Element) -> Iterator[tuple[str, Element]]:
    """The local name and element of each child of an RSS item or Atom entry that is one of
    its own fields: in the entry's namespace or in none. A child of another namespace is an
    extension (``media:title``, ``itunes:title``, an RSS item's ``atom:link``) and is left
    out, even when it comes first."""
    namespace = _namespace(entry.tag)
    for child in entry:
        tag = child.tag
        if type(tag) is str:
            child_namespace = _namespace(tag)
            if not child_namespace or child_namespace == namespace:
                yield local_name(tag), child


def _dublin_core_date(entry: Element) -> str | None:
    """The text of an RSS item's first ``dc:date``: ``date`` in a Dublin Core namespace
    (elements 1.1 or terms), or written with the prefix ``dc:`` that was not declared; a
    ``date`` of another vocabulary (an event's ``ev:date``) is no date of the item."""
    for child in entry:
        tag = child.tag
        if type(tag) is str and local_name(tag) == "date" and _namespace(tag) in _DUBLIN_CORE:
            return child.text
    return None


_DUBLIN_CORE = frozenset({"{http://purl.org/dc/elements/1.1/}", "{http://purl.org/dc/terms/}", "dc:"})


def read_rss_item(element: Element, sitemap_url: str) -> SitemapPage | None:
    """An RSS 2.0 ``<item>`` as a page whose news holds its title and date (its own
    ``pubDate``, else a ``dc:date``: when there is no ``pubDate`` or it is not a date)."""
    link = guid = title = published = None
    guid_is_link = True
    for name, child in _own_children(element):
        if name == "link" and link is None:
            link = child.text
        elif name == "guid" and guid is None:
            guid = child.text
            guid_is_link = (child.get("isPermaLink") or "true").strip().lower() != "false"
        elif name == "title" and title is None:
            title = child.text
        elif name == "pubDate" and published is None:
            published = child.text
    url = resolve_url(link, sitemap_url)
    if url is None and guid_is_link:
        url = resolve_url(guid, sitemap_url)
    if url is None:
        return None
    publish_date = normalize_date(published)
    if publish_date is None:  # (none, or not a date)
        publish_date = normalize_date(_dublin_core_date(element))
    return SitemapPage(
        url=url,
        sitemap_url=sitemap_url,
        last_modified=publish_date,
        news=NewsStory(title=clean_text(title), publish_date=publish_date),
    )


def _text_content(element: Element) -> str | None:
    """The text of an Atom text construct: as written for ``type="text"``; for ``"html"``
    the text the HTML shows (its tags left out, its character references read: RFC 4287
    3.1.1.2; Atom 0.3 ``mode="escaped"`` likewise); the text of the XHTML ``div`` for
    ``type="xhtml"`` (RFC 4287 3.1.1.3; Atom 0.3 ``mode="xml"``): every text below the
    element, in order."""
    if len(element):
        return "".join(element.itertext())
    text = element.text
    if text and (element.get("type") == "html" or element.get("mode") == "escaped"):
        import html  # here: the parse worker and the audit process import it only for such a title

        return html.unescape(_HTML_TAG.sub("", text))  # tags first: an escaped "&lt;" is text
    return text


_HTML_TAG = re.compile(r"<[^<>]*>")


_IANA_RELATIONS = "http://www.iana.org/assignments/relation/"
"""A relation's name written as an IRI in this registry is the same relation (RFC 4287 4.2.7.2)."""


def _is_alternate(rel: str | None) -> bool:
    """Whether an Atom link's ``rel`` is ``alternate`` (absent or empty: the default)."""
    name = (rel or "").strip()
    return not name or name.lower() == "alternate" or name == _IANA_RELATIONS + "alternate"


def read_atom_entry(element: Element, sitemap_url: str) -> SitemapPage | None:
    """An Atom 0.3/1.0 ``<entry>`` as a page whose news holds its title and date, or None
    without a ``rel="alternate"`` link (a link without rel is one, RFC 4287 4.2.7.2).

    Its other links (``self``, ``edit``, ``enclosure``...) are an API document, an edit
    URI, a media file: not its web page; nor is its ``id``, which "Atom Processors MUST
    NOT assume [...] can be dereferenced" (RFC 4287 4.2.6)."""
    href = None
    texts: dict[str, str | None] = {}
    for name, child in _own_children(element):
        if name == "link":
            if href is None and _is_alternate(child.get("rel")):
                href = child.get("href") or child.text
        elif name not in texts:
            texts[name] = _text_content(child)
    url = resolve_url(href, sitemap_url)
    if url is None:
        return None
    published = normalize_date(texts.get("published") or texts.get("issued"))
    updated = normalize_date(texts.get("updated") or texts.get("modified"))
    return SitemapPage(
        url=url,
        sitemap_url=sitemap_url,
        last_modified=updated or published,
        news=NewsStory(title=clean_text(texts.get("title")), publish_date=published or updated),
    )
