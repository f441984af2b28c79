"""robots.txt: the ``Sitemap:`` lines, in every spelling real files use."""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable, Iterator
from urllib.parse import urlsplit

from sitemap_crawl.parsing.fields import local_child_url, resolve_url, same_url_key

_DIRECTIVE = re.compile(r"^[\s\ufeff]*(?:ï»¿)?[\s\ufeff]*site-?maps?\s*:(.*)$", re.IGNORECASE)
_VALUE_JUNK = " \t\xa0\u200b\ufeffÂ"
_HOST_LIKE = re.compile(r"^((?:[\w-]+\.)+([a-z]{2,}))(?::\d+)?/", re.IGNORECASE)
"""A value that may start with a host: its name (group 1) and last label (group 2)."""
_ADDRESS_OR_PORT = re.compile(
    r"\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?|\[[0-9a-f:.]+\](?::\d{1,5})?|[\w.-]+:\d{1,5}", re.I
)
"""A first segment that can only be a host: an IP address (a port or not), or a name and a port."""
_FILE_EXTENSIONS = frozenset({"xml", "gz", "txt", "php", "html", "htm", "asp", "aspx", "jsp", "cgi", "rss"})
_BARE_URL = re.compile(r"^https?://\S+$", re.IGNORECASE)
_UNDECODABLE = re.compile("[\udc80-\udcff]")
"""A byte that is not UTF-8, kept by the ``surrogateescape`` decoding as a lone surrogate."""
MAX_LINE_LENGTH = 64 * 1024
"""Longest robots.txt line read (in characters); a longer line is skipped."""
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def decode_robots(body: bytes) -> str:
    """robots.txt bytes as text: UTF-8/16/32 by BOM, else UTF-8 with replacement."""
    encoding = robots_encoding(body)
    return body.decode(encoding, "replace").removeprefix("\ufeff")


def robots_encoding(head: bytes) -> str:
    """The encoding of a robots.txt judged from its first bytes: a UTF-16/32 BOM, UTF-16
    without BOM (its first character one of U+0009, U+000A, U+000D or U+0020 to U+00FF: a
    byte of text next to a NUL), else UTF-8 (binary data that starts with a NUL and a control
    byte, such as a font's ``00 01 00 00``, so stays binary: see :func:`looks_like_binary`)."""
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            return encoding
    if len(head) >= 2 and (head[0] == 0) != (head[1] == 0):
        text_byte = head[0] or head[1]
        if text_byte in _TEXT_BYTES:
            return "utf-16-le" if head[1] == 0 else "utf-16-be"
    return "utf-8"


_TEXT_BYTES = frozenset(b"\t\n\r" + bytes(range(0x20, 0x100)))
"""The low byte of a first UTF-16 character that is text (not a control character)."""


def iter_robots_lines(chunks: Iterable[bytes], max_line_length: int = MAX_LINE_LENGTH) -> Iterator[str | None]:
    """The lines of a robots.txt byte stream, decoded chunk by chunk (memory stays bounded
    however large the file is). CR, LF and CRLF end a line; a line longer than
    ``max_line_length`` characters is not kept: ``None`` stands in its place.
    """
    splitter = _LineSplitter(max_line_length)
    decoder: codecs.IncrementalDecoder | None = None
    head = b""
    for chunk in chunks:
        if decoder is None:
            head += chunk
            if len(head) < 4:
                continue
            decoder = _decoder(head)
            chunk, head = head, b""
        yield from splitter.feed(decoder.decode(chunk))
    if decoder is None:
        decoder = _decoder(head)
        yield from splitter.feed(decoder.decode(head))
    yield from splitter.feed(decoder.decode(b"", final=True))
    yield from splitter.close()


def _decoder(head: bytes) -> codecs.IncrementalDecoder:
    """A decoder for the body that starts with ``head``. UTF-8 keeps an undecodable byte as a
    lone surrogate (``surrogateescape``: every such byte is >= 0x80), so that a line with a
    byte that is not text can be told from one with a real U+FFFD; UTF-16/32 replace."""
    encoding = robots_encoding(head)
    return codecs.getincrementaldecoder(encoding)("surrogateescape" if encoding == "utf-8" else "replace")


class _LineSplitter:
    """Text pieces in, lines out (CR, LF, CRLF; a BOM at the very start is dropped)."""

    def __init__(self, max_line_length: int) -> None:
        self.max_line_length = max_line_length
        self.pending: list[str] = []
        self.pending_length = 0
        self.overlong = False
        self.held_cr = False
        self.started = False

    def feed(self, text: str) -> Iterator[str | None]:
        if not text:
            return
        if not self.started:
            self.started, text = True, text.removeprefix("\ufeff")
        if self.held_cr:
            self.held_cr, text = False, "\r" + text
        if text.endswith("\r"):
            self.held_cr, text = True, text[:-1]  # may be the first half of a CRLF
        parts = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        for part in parts[:-1]:
            self._add(part)
            yield self._take()
        self._add(parts[-1])

    def close(self) -> Iterator[str | None]:
        if self.held_cr or self.pending or self.overlong:
            yield self._take()

    def _add(self, part: str) -> None:
        if self.overlong or not part:
            return
        self.pending_length += len(part)
        if self.pending_length > self.max_line_length:
            self.overlong, self.pending = True, []
        else:
            self.pending.append(part)

    def _take(self) -> str | None:
        line = None if self.overlong else "".join(self.pending)
        self.pending, self.pending_length, self.overlong = [], 0, False
        return line


def looks_like_html(text: str) -> bool:
    """True when a robots.txt body is really an HTML (or XML) document."""
    return text.lstrip("\ufeff \t\r\n").startswith("<")


_BINARY_SAMPLE = 1024
"""Characters of a robots.txt looked at to tell text from binary data."""
_BINARY_SHARE = 0.1
_TEXT_CONTROLS = frozenset("\t\n\r\f\v")


def looks_like_binary(text: str) -> bool:
    """True when the start of a decoded robots.txt is not text: more than a tenth of its
    characters are bytes that did not decode (U+FFFD) or control characters (NUL...)."""
    sample = text[:_BINARY_SAMPLE]
    if not sample:
        return False
    odd = sum(1 for char in sample if char == "\ufffd" or (char < " " and char not in _TEXT_CONTROLS))
    return odd > _BINARY_SHARE * len(sample)


def sitemap_urls_from_robots(text: str, robots_url: str) -> list[str]:
    """Absolute sitemap URLs declared in a robots.txt, in file order, without duplicates.

    Accepts ``Sitemap:``/``sitemap:``/``SITEMAP:``/``Sitemaps:``/``Site-map:``, spaces before or
    after the colon, BOMs and stray non-breaking spaces, CR, LF or CRLF line
    breaks, and trailing ``# comments`` (a line ends at its first ``#``, as for Protego: in a URL
    it starts the fragment, never sent). The whole value is the URL, a space inside it
    included, escaped as a ``<loc>`` is (``my sitemap.xml``: ``my%20sitemap.xml``, as Scrapy
    and Protego read it). Relative values are resolved against
    ``robots_url``; a value that starts with a host name (``www.example.org/x``)
    gets the scheme of robots.txt. An empty directive takes the bare URL lines
    right after it. A value with a byte that is not text (invalid UTF-8) is skipped.
    """
    return list(iter_sitemap_urls(robots_lines(text), robots_url))


def robots_lines(text: str) -> list[str]:
    """The lines of a robots.txt text (CR, LF or CRLF line breaks)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def iter_sitemap_urls(lines: Iterable[str | None], robots_url: str) -> Iterator[str]:
    """The sitemap URLs declared by robots.txt lines (see :func:`sitemap_urls_from_robots`),
    one at a time, without duplicates; a ``None`` line (too long to read) is skipped."""
    seen: set[str] = set()
    for value in iter_sitemap_values(lines):
        if not value or _UNDECODABLE.search(value):
            continue  # no sitemap URL, or one with a byte that is not text: no server has that URL
        url = declared_sitemap_url(value, robots_url)
        if url is not None and (key := same_url_key(url)) not in seen:
            seen.add(key)
            yield url


def iter_sitemap_values(lines: Iterable[str | None]) -> Iterator[str]:
    """The value of each sitemap directive of robots.txt lines, as written (its comment and
    the spaces around it removed; "" for an empty one), and each bare URL line right after
    an empty directive; a ``None`` line (too long to read) is skipped."""
    taking_bare_urls = False
    for raw_line in lines:
        if raw_line is None:
            taking_bare_urls = False
            continue
        line = raw_line.split("#", 1)[0]
        match = _DIRECTIVE.match(line)
        if match is not None:
            value = match.group(1).strip(_VALUE_JUNK)
            taking_bare_urls = not value
        else:
            value = line.strip(_VALUE_JUNK)
            if not (taking_bare_urls and _BARE_URL.match(value)):
                taking_bare_urls = False
                continue
        yield value


def declared_sitemap_url(value: str, robots_url: str) -> str | None:
    """The sitemap URL a Sitemap: value names (the URL the crawl requests), or None (not
    http(s), or no usable URL). A local robots.txt (a ``file:`` URL given in ``sitemap_urls``)
    may also name files of its own folder, as a local index may (:func:`local_child_url`)."""
    if robots_url.startswith("file:") and (local := local_child_url(value, robots_url)) is not None:
        return local
    if "://" in value and not value.lower().startswith(("http://", "https://")):
        return None
    if _names_a_host(value, robots_url):
        value = f"{urlsplit(robots_url).scheme}://{value}"  # a bare host and path
    return resolve_url(value, robots_url)


def _names_a_host(value: str, robots_url: str) -> bool:
    """Whether the first segment of a scheme-less value (``www.example.org/s.xml``,
    ``index.cfm/s.xml``) is a host rather than a relative path: it is robots.txt's own host
    (also an IP address or a one-label name, any port: ``127.0.0.1:8080/s.xml``), is an IP
    address or has a port (``10.0.0.1/s.xml``, ``localhost:8000/s.xml``), starts with
    ``www.``, is under robots.txt's site (the same last two labels), or has three labels or
    more, the last not a file extension."""
    robots_host = urlsplit(robots_url).hostname or ""
    first_segment, slash, _ = value.partition("/")
    if slash and robots_host and _host_of(first_segment) == robots_host:
        return True
    if slash and _ADDRESS_OR_PORT.fullmatch(first_segment):
        return True
    host_like = _HOST_LIKE.match(value)
    if host_like is None:
        return False
    name = host_like.group(1).lower()
    if name.startswith("www."):
        return True
    site = ".".join(robots_host.split(".")[-2:])
    if site and (name == site or name.endswith("." + site)):
        return True
    return name.count(".") >= 2 and host_like.group(2).lower() not in _FILE_EXTENSIONS


def _host_of(authority: str) -> str | None:
    """The host (lower-cased, an IPv6 address without its brackets) of ``host[:port]``."""
    try:
        return urlsplit("//" + authority).hostname
    except ValueError:  # an unbalanced [ or ]
        return None
