"""Streaming XML sitemap reader: urlset, sitemapindex, RSS 2.0 and Atom 0.3/1.0.

The document is fed to lxml's XMLPullParser chunk by chunk; each entry element
(``url``, ``sitemap``, ``item``, ``entry``, in any namespace or none) is turned
into a page or a sub-sitemap reference as soon as it ends, then cleared, so a
large sitemap never becomes a whole tree in memory. Entities are never resolved,
no DTD is loaded and nothing is fetched.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from lxml import etree

from sitemap_crawl.items import Alternate, Image, NewsStory, SitemapPage, SitemapRef, Video
from sitemap_crawl.parsing.fields import (
    clean_text,
    normalize_change_frequency,
    normalize_date,
    normalize_priority,
    parse_duration,
    parse_yes_no,
    resolve_url,
    split_list,
)
from sitemap_crawl.parsing.stream import StreamError

_ROOT_SCAN_LIMIT = 1 << 20

Element = Any  # lxml's _Element; kept loose so lxml-stubs are optional


@dataclass(frozen=True, slots=True)
class Dialect:
    """How one XML root element maps to a tree kind and an entry reader."""

    kind: str
    entry_tag: str
    read_entry: Callable[[Element, str], SitemapPage | SitemapRef | None]


class XmlProblem(Exception):
    """An XML document stopped short; ``reason`` is the tree error text."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def _parser_options(recover: bool) -> dict[str, Any]:
    return {
        "recover": recover,
        "resolve_entities": False,
        "no_network": True,
        "load_dtd": False,
        "dtd_validation": False,
        "huge_tree": False,
        "remove_comments": True,
        "remove_pis": True,
    }


def local_name(tag: object) -> str:
    """Tag name without namespace or prefix; '' for comments and PIs."""
    if type(tag) is not str:
        return ""
    return tag[max(tag.rfind("}"), tag.rfind(":")) + 1 :]


def find_root_name(chunks: Iterator[bytes]) -> tuple[str | None, str | None, list[bytes]]:
    """Local name of the root element, an error text if none was found, and the chunks read.

    Reads at most about 1 MiB; the chunks read are returned so the caller can
    feed them again to the real parser.
    """
    parser = etree.XMLPullParser(events=("start",), **_parser_options(recover=True))
    seen: list[bytes] = []
    size = 0
    try:
        for chunk in chunks:
            seen.append(chunk)
            size += len(chunk)
            parser.feed(chunk)
            for _event, element in parser.read_events():
                return local_name(_tag(element)).lower(), None, seen
            if size >= _ROOT_SCAN_LIMIT:
                break
        else:
            parser.close()
            for _event, element in parser.read_events():
                return local_name(_tag(element)).lower(), None, seen
    except etree.XMLSyntaxError as exc:
        return None, f"parse error: {exc}", seen
    except StreamError as exc:
        return None, exc.reason, seen
    return None, None, seen


def _tag(element: Any) -> object:
    return getattr(element, "tag", None)


def iter_entries(
    make_chunks: Callable[[], Iterator[bytes]],
    dialect: Dialect,
    sitemap_url: str,
) -> Iterator[SitemapPage | SitemapRef]:
    """Pages or sub-sitemap references of one XML document, in document order.

    ``make_chunks`` opens the (decompressed) document as a chunk stream; it is
    called a second time only for a malformed document, which is then read
    again in lxml's recover mode from the entry after the last good one.
    Raises XmlProblem (after yielding every good entry) when the document is
    truncated, over a limit or unreadable past some point.
    """
    produced = 0
    line_count = 1
    last_line_length = 0
    strict = etree.XMLPullParser(events=("end",), tag=(dialect.entry_tag,), **_parser_options(recover=False))
    try:
        for chunk in make_chunks():
            newline = chunk.rfind(b"\n")
            if newline < 0:
                last_line_length += len(chunk)
            else:
                line_count += chunk.count(b"\n")
                last_line_length = len(chunk) - newline - 1
            strict.feed(chunk)
            for _event, element in strict.read_events():
                entry = dialect.read_entry(element, sitemap_url)
                _release(element)
                produced += 1
                if entry is not None:
                    yield entry
        strict.close()
    except StreamError as exc:
        _drain(strict)
        raise XmlProblem(exc.reason, str(exc)) from exc
    except etree.XMLSyntaxError as exc:
        message = str(exc)
        if _is_resource_limit(message):
            raise XmlProblem("parse error", message) from exc
        if _at_end(exc, line_count, last_line_length):
            raise XmlProblem("truncated", message) from exc
        yield from _recover(make_chunks, dialect, sitemap_url, skip=produced)
        raise XmlProblem("parse error", message) from exc
    for _event, element in strict.read_events():
        entry = dialect.read_entry(element, sitemap_url)
        if entry is not None:
            yield entry


_END_SLACK = 64


def _at_end(error: etree.XMLSyntaxError, line_count: int, last_line_length: int) -> bool:
    """Whether a syntax error sits at the very end of the input (a cut document)."""
    line, column = error.position
    return line >= line_count and column >= last_line_length - _END_SLACK


def _drain(parser: etree.XMLPullParser) -> None:
    """Discard what a parser holds (entries cut by a stream error are not complete)."""
    for _event, element in parser.read_events():
        _release(element)


def _recover(
    make_chunks: Callable[[], Iterator[bytes]],
    dialect: Dialect,
    sitemap_url: str,
    skip: int,
) -> Iterator[SitemapPage | SitemapRef]:
    """Read a malformed document again in recover mode, skipping ``skip`` entries."""
    parser = etree.XMLPullParser(events=("end",), tag=(dialect.entry_tag,), **_parser_options(recover=True))
    seen = 0
    stream_error: StreamError | None = None
    try:
        for chunk in make_chunks():
            parser.feed(chunk)
            for _event, element in parser.read_events():
                seen += 1
                if seen > skip:
                    entry = dialect.read_entry(element, sitemap_url)
                    if entry is not None:
                        yield entry
                _release(element)
    except StreamError as exc:
        stream_error = exc
    with contextlib.suppress(etree.XMLSyntaxError):
        parser.close()
    if stream_error is None:
        for _event, element in parser.read_events():
            seen += 1
            if seen > skip:
                entry = dialect.read_entry(element, sitemap_url)
                if entry is not None:
                    yield entry


def _is_resource_limit(message: str) -> bool:
    lowered = message.lower()
    return "xml_parse_huge" in lowered or "resource limit" in lowered or "excessive depth" in lowered


def _release(element: Element) -> None:
    """Free an entry element and the already handled siblings before it."""
    element.clear(keep_tail=False)
    parent = element.getparent()
    if parent is not None:
        while element.getprevious() is not None:
            del parent[0]


def _texts(element: Element) -> dict[str, str | None]:
    """Local name → text of the direct children (first occurrence wins)."""
    texts: dict[str, str | None] = {}
    for child in element:
        name = local_name(child.tag)
        if name and name not in texts:
            texts[name] = child.text
    return texts


def read_url(element: Element, sitemap_url: str) -> SitemapPage | None:
    """A urlset ``<url>`` as a page, or None when it has no usable location."""
    loc = lastmod = changefreq = priority = None
    news: NewsStory | None = None
    images: list[Image] = []
    videos: list[Video] = []
    alternates: list[Alternate] = []
    for child in element:
        name = local_name(child.tag)
        if name == "loc":
            loc = child.text
        elif name == "lastmod":
            lastmod = child.text
        elif name == "changefreq":
            changefreq = child.text
        elif name == "priority":
            priority = child.text
        elif name == "image":
            image = _read_image(child, sitemap_url)
            if image is not None:
                images.append(image)
        elif name == "video":
            videos.append(_read_video(child, sitemap_url))
        elif name == "news":
            news = _read_news(child)
        elif name == "link":
            alternate = _read_alternate(child, sitemap_url)
            if alternate is not None:
                alternates.append(alternate)
    url = resolve_url(loc if loc is not None else _bare_text(element), sitemap_url)
    if url is None:
        return None
    return SitemapPage(
        url=url,
        sitemap_url=sitemap_url,
        priority=normalize_priority(priority),
        last_modified=normalize_date(lastmod),
        change_frequency=normalize_change_frequency(changefreq),
        news=news,
        images=images,
        videos=videos,
        alternates=alternates,
    )


def _bare_text(element: Element) -> str | None:
    """Text of an entry that holds a bare URL instead of a ``<loc>``."""
    text = element.text
    if text is None or len(element):
        return None
    value = text.strip()
    return value if value[:4].lower() == "http" else None


def _read_image(element: Element, sitemap_url: str) -> Image | None:
    texts = _texts(element)
    loc = resolve_url(texts.get("loc"), sitemap_url)
    if loc is None:
        return None
    return Image(
        loc=loc,
        caption=clean_text(texts.get("caption")),
        title=clean_text(texts.get("title")),
        geo_location=clean_text(texts.get("geo_location")),
        license=clean_text(texts.get("license")),
    )


def _read_video(element: Element, sitemap_url: str) -> Video:
    texts: dict[str, str | None] = {}
    tags: list[str] = []
    for child in element:
        name = local_name(child.tag)
        if name == "tag":
            tag = clean_text(child.text)
            if tag:
                tags.append(tag)
        elif name and name not in texts:
            texts[name] = child.text
    return Video(
        thumbnail_loc=resolve_url(texts.get("thumbnail_loc"), sitemap_url),
        title=clean_text(texts.get("title")),
        description=clean_text(texts.get("description")),
        content_loc=resolve_url(texts.get("content_loc"), sitemap_url),
        player_loc=resolve_url(texts.get("player_loc"), sitemap_url),
        duration=parse_duration(texts.get("duration")),
        publication_date=normalize_date(texts.get("publication_date")),
        family_friendly=parse_yes_no(texts.get("family_friendly")),
        tags=tags,
    )


def _read_news(element: Element) -> NewsStory:
    texts = _texts(element)
    name = language = None
    for child in element:
        if local_name(child.tag) == "publication":
            publication = _texts(child)
            name = clean_text(publication.get("name"))
            language = clean_text(publication.get("language"))
            break
    return NewsStory(
        title=clean_text(texts.get("title")),
        publish_date=normalize_date(texts.get("publication_date")),
        publication_name=name,
        publication_language=language,
        access=clean_text(texts.get("access")),
        genres=split_list(texts.get("genres")),
        keywords=split_list(texts.get("keywords")),
        stock_tickers=split_list(texts.get("stock_tickers")),
    )


def _read_alternate(element: Element, sitemap_url: str) -> Alternate | None:
    rel = element.get("rel")
    if rel is not None and rel.strip().lower() != "alternate":
        return None
    href = resolve_url(element.get("href"), sitemap_url)
    if href is None:
        return None
    return Alternate(hreflang=clean_text(element.get("hreflang")), href=href)


def read_sitemap_entry(element: Element, sitemap_url: str) -> SitemapRef | None:
    """A sitemapindex ``<sitemap>`` as a sub-sitemap reference."""
    texts = _texts(element)
    loc = texts["loc"] if "loc" in texts else _bare_text(element)
    url = resolve_url(loc, sitemap_url)
    if url is None:
        return None
    return SitemapRef(url=url, last_modified=normalize_date(texts.get("lastmod")))


def read_rss_item(element: Element, sitemap_url: str) -> SitemapPage | None:
    """An RSS 2.0 ``<item>`` as a page whose news holds its title and date."""
    link = guid = title = published = None
    guid_is_link = True
    for child in element:
        name = local_name(child.tag)
        if name == "link" and link is None and "}" not in child.tag:
            link = child.text
        elif name == "guid" and guid is None:
            guid = child.text
            guid_is_link = (child.get("isPermaLink") or "true").strip().lower() != "false"
        elif name == "title" and title is None:
            title = child.text
        elif name in ("pubDate", "date") and published is None:
            published = child.text
    url = resolve_url(link, sitemap_url)
    if url is None and guid_is_link:
        url = resolve_url(guid, sitemap_url)
    if url is None:
        return None
    publish_date = normalize_date(published)
    return SitemapPage(
        url=url,
        sitemap_url=sitemap_url,
        last_modified=publish_date,
        news=NewsStory(title=clean_text(title), publish_date=publish_date),
    )


def read_atom_entry(element: Element, sitemap_url: str) -> SitemapPage | None:
    """An Atom 0.3/1.0 ``<entry>`` as a page whose news holds its title and date."""
    href = fallback_href = None
    texts: dict[str, str | None] = {}
    for child in element:
        name = local_name(child.tag)
        if name == "link":
            rel = (child.get("rel") or "alternate").strip().lower()
            if rel == "alternate" and href is None:
                href = child.get("href") or child.text
            elif fallback_href is None:
                fallback_href = child.get("href")
        elif name and name not in texts:
            texts[name] = child.text
    url = resolve_url(href, sitemap_url) or resolve_url(fallback_href, sitemap_url)
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


DIALECTS: dict[str, Dialect] = {
    "urlset": Dialect("xml_urlset", "{*}url", read_url),
    "sitemapindex": Dialect("xml_index", "{*}sitemap", read_sitemap_entry),
    "rss": Dialect("rss", "{*}item", read_rss_item),
    "feed": Dialect("atom", "{*}entry", read_atom_entry),
}
"""Root element local name → dialect."""
