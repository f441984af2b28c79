"""Tiny builders for fixture sitemaps, robots.txt and feeds.

Each returns exactly the document asked for, nothing more: builders return str
(so ``{base}`` placeholders are still substituted by the fixture server), except
:func:`gzip_bytes`. Text values are XML-escaped; ``extra`` values are raw XML.

    urlset("{base}/a", {"loc": "{base}/b", "lastmod": "2024-01-02", "priority": 0.8})
    sitemapindex("{base}/s1.xml", "{base}/s2.xml")
    robots("{base}/sitemap.xml", extra="Disallow: /private\\n")
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Mapping
from xml.sax.saxutils import escape, quoteattr

__all__ = [
    "ATOM03_NS",
    "ATOM_NS",
    "EXTENSION_NAMESPACES",
    "SITEMAP_NS",
    "atom",
    "gzip_bytes",
    "robots",
    "rss",
    "sitemapindex",
    "text_sitemap",
    "urlset",
]

SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
ATOM_NS = "http://www.w3.org/2005/Atom"
ATOM03_NS = "http://purl.org/atom/ns#"

EXTENSION_NAMESPACES: dict[str, str] = {
    "image": "http://www.google.com/schemas/sitemap-image/1.1",
    "video": "http://www.google.com/schemas/sitemap-video/1.1",
    "news": "http://www.google.com/schemas/sitemap-news/0.9",
    "xhtml": "http://www.w3.org/1999/xhtml",
}
"""Prefixes declared automatically on a urlset when an entry's ``extra`` uses them."""

XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>\n'

Entry = str | Mapping[str, object]
"""A URL, or a mapping of child element name to value (None values are left out) plus an
optional ``extra`` key whose raw XML goes inside the entry element after the children."""

_URL_FIELDS = ("loc", "lastmod", "changefreq", "priority")
_SITEMAP_FIELDS = ("loc", "lastmod")


def _text(value: object) -> str:
    return escape(str(value))


def _fields(entry: Entry, key: str, order: tuple[str, ...]) -> tuple[list[tuple[str, object]], str]:
    """The (name, value) children of an entry, known names first in ``order``, and its raw extra XML."""
    if isinstance(entry, str):
        return [(key, entry)], ""
    names = [name for name in order if name in entry]
    names += [name for name in entry if name not in order and name != "extra"]
    children = [(name, entry[name]) for name in names if entry[name] is not None]
    return children, str(entry.get("extra") or "")


def _element(tag: str, entry: Entry, key: str, order: tuple[str, ...]) -> str:
    if isinstance(entry, str):  # the common case, fast for big sitemaps
        return f"  <{tag}><{key}>{escape(entry)}</{key}></{tag}>\n"
    children, extra = _fields(entry, key, order)
    inner = "".join(f"<{name}>{_text(value)}</{name}>" for name, value in children)
    return f"  <{tag}>{inner}{extra}</{tag}>\n"


def _xmlns(ns: bool, prefixes: Mapping[str, str]) -> str:
    attrs = f' xmlns="{SITEMAP_NS}"' if ns else ""
    return attrs + "".join(f" xmlns:{prefix}={quoteattr(uri)}" for prefix, uri in prefixes.items())


def urlset(*entries: Entry, ns: bool = True, namespaces: Mapping[str, str] | None = None) -> str:
    """A ``<urlset>`` page sitemap.

    An entry is a URL or a mapping with loc/lastmod/changefreq/priority (any other key
    becomes a child element too) and an optional raw ``extra`` XML string.
    ``ns=False`` leaves the sitemap namespace out. ``namespaces`` maps extra prefixes to
    declare on the root; by default the standard extension prefixes (image, video, news,
    xhtml) that some ``extra`` uses are declared.
    """
    if namespaces is None:
        extras = "".join(_fields(entry, "loc", _URL_FIELDS)[1] for entry in entries)
        namespaces = {p: uri for p, uri in EXTENSION_NAMESPACES.items() if f"<{p}:" in extras}
    body = "".join(_element("url", entry, "loc", _URL_FIELDS) for entry in entries)
    return f"{XML_DECLARATION}<urlset{_xmlns(ns, namespaces)}>\n{body}</urlset>\n"


def sitemapindex(*locs: Entry, ns: bool = True) -> str:
    """A ``<sitemapindex>``; a loc is a URL or a mapping with loc/lastmod (and raw ``extra``)."""
    body = "".join(_element("sitemap", loc, "loc", _SITEMAP_FIELDS) for loc in locs)
    return f"{XML_DECLARATION}<sitemapindex{_xmlns(ns, {})}>\n{body}</sitemapindex>\n"


def rss(*links: Entry, title: str = "Fixture feed", channel_link: str | None = None) -> str:
    """An RSS 2.0 feed, one ``<item>`` per link.

    A link is a URL or a mapping of item children (link, title, pubDate, guid, ...) and raw
    ``extra``. The channel has a title and no ``<link>`` unless ``channel_link`` is given.
    """
    head = f"  <title>{_text(title)}</title>\n"
    if channel_link is not None:
        head += f"  <link>{_text(channel_link)}</link>\n"
    items = "".join(_element("item", link, "link", ("title", "link", "pubDate")) for link in links)
    return f'{XML_DECLARATION}<rss version="2.0">\n<channel>\n{head}{items}</channel>\n</rss>\n'


def _atom_entry(link: Entry) -> str:
    if isinstance(link, str):
        return f"  <entry><link href={quoteattr(link)}/></entry>\n"
    fields = dict(link)
    href = fields.pop("link", None)
    rel = fields.pop("rel", None)
    link_xml = ""
    if href is not None:
        rel_attr = f" rel={quoteattr(str(rel))}" if rel is not None else ""
        link_xml = f"<link{rel_attr} href={quoteattr(str(href))}/>"
    children, extra = _fields(fields, "id", ("title", "id", "updated", "published", "issued", "modified"))
    inner = "".join(f"<{name}>{_text(value)}</{name}>" for name, value in children)
    return f"  <entry>{inner}{link_xml}{extra}</entry>\n"


def atom(*links: Entry, title: str = "Fixture feed", version: str = "1.0") -> str:
    """An Atom feed (``version`` "1.0", or "0.3" with its old namespace), one ``<entry>`` per link.

    A link is a URL (``<link href>``) or a mapping with ``link`` (the href), optional
    ``rel``, other entry children (title, id, updated, published, issued, modified, ...)
    and raw ``extra``.
    """
    if version == "1.0":
        root = f'<feed xmlns="{ATOM_NS}">'
    elif version == "0.3":
        root = f'<feed version="0.3" xmlns="{ATOM03_NS}">'
    else:
        raise ValueError(f"Atom version is 1.0 or 0.3, not {version!r}")
    entries = "".join(_atom_entry(link) for link in links)
    return f"{XML_DECLARATION}{root}\n  <title>{_text(title)}</title>\n{entries}</feed>\n"


def text_sitemap(*urls: str) -> str:
    """A plain-text sitemap: one line per URL."""
    return "".join(f"{url}\n" for url in urls)


_SITEMAP_LINE = re.compile(r"^\s*sitemap\s*:", re.IGNORECASE)


def robots(*sitemap_lines: str, extra: str = "") -> str:
    """A robots.txt: ``User-agent: *`` / ``Disallow:``, one ``Sitemap: X`` line per argument,
    then ``extra`` verbatim. An argument that already starts with a ``sitemap:`` key
    (any case or spacing) is written as is."""
    lines = "".join(f"{line}\n" if _SITEMAP_LINE.match(line) else f"Sitemap: {line}\n" for line in sitemap_lines)
    return f"User-agent: *\nDisallow:\n\n{lines}{extra}"


def gzip_bytes(data: bytes | str) -> bytes:
    """Gzip data (str is UTF-8 encoded), deterministically (mtime 0)."""
    return gzip.compress(data.encode("utf-8") if isinstance(data, str) else data, mtime=0)
