"""The entries of the sitemaps protocol: a urlset's ``<url>`` (with its images, videos, news
and hreflang alternates) and an index's ``<sitemap>``, read as raw texts (what the parse
worker sends) and finished as items."""

from __future__ import annotations

from typing import Any

from sitemap_crawl.items import Alternate, Image, NewsStory, SitemapPage, SitemapRef, Video
from sitemap_crawl.parsing.fields import (
    child_sitemap_url,
    clean_text,
    is_alternate_rel,
    normalize_change_frequency,
    normalize_date,
    normalize_priority,
    parse_duration,
    parse_yes_no,
    resolve_url,
    split_list,
)
from sitemap_crawl.parsing.xml.libxml import LOCAL_NAMES_MAX, Element, in_extension_namespace, local_name


def _texts(element: Element) -> dict[str, str | None]:
    """Local name → text of the direct children (the last occurrence wins, as in a ``<url>``:
    :func:`extract_url`), those of an extension's namespace (``<image:loc>``) left out."""
    texts: dict[str, str | None] = {}
    for child in element:
        name = local_name(child.tag)
        if name and not in_extension_namespace(child.tag):
            texts[name] = child.text
    return texts


class _ChildFields:
    """Texts of the named direct children of an element, by position (first occurrence wins).

    The position of each tag (namespace and all) is remembered, so a child costs a
    dictionary lookup, not a local-name computation.
    """

    __slots__ = ("_own", "_positions", "_size", "by_tag")

    def __init__(self, *names: str, own: tuple[str, ...] = ()) -> None:
        self._positions = {name: position for position, name in enumerate(names)}
        self._own = frozenset(own)
        """Names that count only outside an extension's namespace (a ``<url>``'s ``loc``: an
        ``<image:loc>`` written in the ``<url>`` itself is not its page)."""
        self.by_tag: dict[object, int] = {}
        """Tag → position (-1: not one of the names), filled by :meth:`position`."""
        self._size = len(names)

    def texts(self, element: Element) -> list[str | None]:
        values: list[str | None] = [None] * self._size
        by_tag = self.by_tag
        for child in reversed(element):  # backwards, so that the first occurrence is written last
            tag = child.tag
            position = by_tag.get(tag)
            if position is None:
                position = self.position(tag)
            if position >= 0:
                values[position] = child.text
        return values

    def position(self, tag: object) -> int:
        """The position of a tag's local name among the names, -1 if absent (remembered)."""
        name = local_name(tag)
        position = -1 if name in self._own and in_extension_namespace(tag) else self._positions.get(name, -1)
        if len(self.by_tag) < LOCAL_NAMES_MAX:
            self.by_tag[tag] = position
        return position


_IMAGE_FIELDS = _ChildFields("loc", "caption", "title", "geo_location", "license")


_NEWS_FIELDS = _ChildFields("title", "publication_date", "access", "genres", "keywords", "stock_tickers")


_PUBLICATION_FIELDS = _ChildFields("name", "language")


_URL_CHILDREN = _ChildFields(
    "loc",
    "lastmod",
    "changefreq",
    "priority",
    "image",
    "video",
    "news",
    "link",
    own=("loc", "lastmod", "changefreq", "priority"),
)


RAW_PAGE = "raw-page"
"""First item of an :func:`extract_url` tuple."""


def extract_url(element: Element, sitemap_url: str) -> tuple[Any, ...] | None:
    """A urlset ``<url>`` as the raw texts of its fields (only the page URL resolved), or None.

    ``(RAW_PAGE, url, priority, lastmod, changefreq, news, images, videos, alternates)``:
    the texts as written ("" for an empty element, None for an absent one), nested ones as
    tuples (lists of them for images, videos and alternates, or None). :func:`finish_page`
    makes the page; ``read_url`` does both.
    """
    loc = lastmod = changefreq = priority = news = None
    images: list[Any] | None = None
    videos: list[Any] | None = None
    alternates: list[Any] | None = None
    # The hot loop of the parse worker: codes are compared as literals (the positions in
    # _URL_CHILDREN: loc 0, lastmod 1, changefreq 2, priority 3, image 4, video 5, news 6,
    # link 7), not as module constants (a global lookup each).
    by_tag = _URL_CHILDREN.by_tag
    for child in element:
        tag = child.tag
        code = by_tag.get(tag)
        if code is None:
            code = _URL_CHILDREN.position(tag)
        if code == 0:
            loc = child.text
        elif code == 1:
            lastmod = child.text or ""  # an empty element is "" (absent: None), as Scrapy tells them
        elif code == 2:
            changefreq = child.text or ""
        elif code == 3:
            priority = child.text or ""
        elif code == 4:
            if images is None:
                images = []
            images.append(_IMAGE_FIELDS.texts(child))
        elif code == 5:
            if videos is None:
                videos = []
            videos.append(_video_texts(child))
        elif code == 6:
            news = _news_texts(child)
        elif code == 7:
            if alternates is None:
                alternates = []
            alternates.append((child.get("rel"), child.get("hreflang"), child.get("href")))
    url = resolve_url(loc if loc is not None else _bare_text(element), sitemap_url)
    if url is None:
        return None
    return (RAW_PAGE, url, priority, lastmod, changefreq, news, images, videos, alternates)


def finish_page(raw: tuple[Any, ...], sitemap_url: str, every_link: bool = False) -> SitemapPage:
    """The page of an :func:`extract_url` tuple: every field normalised.

    ``alternates`` holds the hreflang alternates; with ``every_link``, every
    ``xhtml:link`` that has an href (what Scrapy's SitemapSpider calls ``alternate``).
    """
    _mark, url, priority, lastmod, changefreq, news, images, videos, alternates = raw
    finish_alternate = _any_link if every_link else _finish_alternate
    return SitemapPage(
        url,
        sitemap_url,
        normalize_priority(priority),
        normalize_date(lastmod),
        normalize_change_frequency(changefreq),
        None if news is None else _finish_news(news),
        [image for texts in images if (image := _finish_image(texts, sitemap_url)) is not None] if images else [],
        [_finish_video(texts, sitemap_url) for texts in videos] if videos else [],
        [alt for attrs in alternates if (alt := finish_alternate(attrs, sitemap_url)) is not None]
        if alternates
        else [],
    )


def read_url(element: Element, sitemap_url: str) -> SitemapPage | None:
    """A urlset ``<url>`` as a page, or None when it has no usable location."""
    raw = extract_url(element, sitemap_url)
    return None if raw is None else finish_page(raw, sitemap_url)


def read_url_every_link(element: Element, sitemap_url: str) -> SitemapPage | None:
    """:func:`read_url`, its ``alternates`` holding every ``xhtml:link`` with an href."""
    raw = extract_url(element, sitemap_url)
    return None if raw is None else finish_page(raw, sitemap_url, every_link=True)


def _bare_text(element: Element) -> str | None:
    """Text of an entry that holds a bare URL instead of a ``<loc>``."""
    text = element.text
    if text is None or len(element):
        return None
    value = text.strip()
    return value if value[:4].lower() == "http" else None


def _finish_image(texts: list[str | None], sitemap_url: str) -> Image | None:
    loc, caption, title, geo_location, license_url = texts
    url = resolve_url(loc, sitemap_url)
    if url is None:
        return None
    return Image(url, clean_text(caption), clean_text(title), clean_text(geo_location), clean_text(license_url))


_VIDEO_FIELDS = _ChildFields(
    "thumbnail_loc", "title", "description", "content_loc", "player_loc", "duration", "publication_date",
    "family_friendly",
)  # fmt: skip


def _video_texts(element: Element) -> tuple[Any, ...]:
    tags = [child.text for child in element if local_name(child.tag) == "tag"]
    return (*_VIDEO_FIELDS.texts(element), tags)


def _finish_video(texts: tuple[Any, ...], sitemap_url: str) -> Video:
    thumbnail, title, description, content, player, duration, published, family_friendly, tags = texts
    return Video(
        thumbnail_loc=resolve_url(thumbnail, sitemap_url),
        title=clean_text(title),
        description=clean_text(description),
        content_loc=resolve_url(content, sitemap_url),
        player_loc=resolve_url(player, sitemap_url),
        duration=parse_duration(duration),
        publication_date=normalize_date(published),
        family_friendly=parse_yes_no(family_friendly),
        tags=[tag for tag in map(clean_text, tags) if tag],
    )


def _news_texts(element: Element) -> tuple[str | None, ...]:
    title, publication_date, access, genres, keywords, stock_tickers = _NEWS_FIELDS.texts(element)
    name = language = None
    for child in element:
        if local_name(child.tag) == "publication":
            name, language = _PUBLICATION_FIELDS.texts(child)
            break
    return (title, publication_date, name, language, access, genres, keywords, stock_tickers)


def _finish_news(texts: tuple[str | None, ...]) -> NewsStory:
    title, publication_date, name, language, access, genres, keywords, stock_tickers = texts
    return NewsStory(
        clean_text(title),
        normalize_date(publication_date),
        clean_text(name),
        clean_text(language),
        clean_text(access),
        split_list(genres),
        split_list(keywords),
        split_list(stock_tickers),
    )


def _finish_alternate(attributes: tuple[str | None, ...], sitemap_url: str) -> Alternate | None:
    """An hreflang alternate: an ``xhtml:link`` whose rel is alternate, with an hreflang and an href."""
    rel, hreflang, href = attributes
    if not is_alternate_rel(rel):
        return None
    language = clean_text(hreflang)
    if language is None:
        return None  # e.g. a mobile alternate (media="..."): not a language version
    url = resolve_url(href, sitemap_url)
    if url is None:
        return None
    return Alternate(language, url)


def _any_link(attributes: tuple[str | None, ...], sitemap_url: str) -> Alternate | None:
    """Any ``xhtml:link`` with an href, whatever its rel and hreflang (Scrapy's ``alternate``)."""
    _rel, hreflang, href = attributes
    url = resolve_url(href, sitemap_url)
    return None if url is None else Alternate(clean_text(hreflang), url)


RAW_REF = "raw-ref"
"""First item of an :func:`extract_sitemap_entry` tuple."""


def extract_sitemap_entry(element: Element, sitemap_url: str) -> tuple[str, str, str | None] | None:
    """A sitemapindex ``<sitemap>`` as ``(RAW_REF, url, lastmod)``, its lastmod the text as
    written ("" for an empty element, None for an absent one), or None without a usable
    location. :func:`finish_ref` makes the reference; ``read_sitemap_entry`` does both."""
    texts = _texts(element)
    loc = texts["loc"] if "loc" in texts else _bare_text(element)
    url = child_sitemap_url(loc, sitemap_url)
    if url is None:
        return None
    lastmod = (texts["lastmod"] or "") if "lastmod" in texts else None
    return (RAW_REF, url, lastmod)


def finish_ref(raw: tuple[Any, ...]) -> SitemapRef:
    """The sub-sitemap reference of an :func:`extract_sitemap_entry` tuple (lastmod normalised)."""
    return SitemapRef(url=raw[1], last_modified=normalize_date(raw[2]))


def read_sitemap_entry(element: Element, sitemap_url: str) -> SitemapRef | None:
    """A sitemapindex ``<sitemap>`` as a sub-sitemap reference."""
    raw = extract_sitemap_entry(element, sitemap_url)
    return None if raw is None else finish_ref(raw)


def finish_entry(raw: tuple[Any, ...], sitemap_url: str, every_link: bool = False) -> SitemapPage | SitemapRef:
    """The page or reference of an :func:`extract_url` or :func:`extract_sitemap_entry` tuple."""
    return finish_ref(raw) if raw[0] == RAW_REF else finish_page(raw, sitemap_url, every_link)
