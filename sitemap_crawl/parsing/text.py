"""Plain-text sitemaps: one absolute URL per line, other lines ignored."""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator

from sitemap_crawl.items import SitemapPage
from sitemap_crawl.parsing.fields import resolve_url, strip_url_text

MAX_LINE_LENGTH = 64 * 1024
_UTF8_BOM = b"\xef\xbb\xbf"
_SCHEMES = (b"http://", b"https://")
_HOST_NAME = re.compile(r"(?:[\w-]+\.)*[\w-]+\.?")
"""A host name: labels of letters, digits, ``-`` or ``_``, none empty (a final dot allowed)."""


def iter_lines(chunks: Iterator[bytes], max_line_length: int = MAX_LINE_LENGTH) -> Iterator[bytes | None]:
    """Lines of a byte stream (LF, CRLF or CR), without their line break.

    A line longer than ``max_line_length`` is not kept: ``None`` stands in its place.
    """
    pending: list[bytes] = []
    pending_length = 0
    overlong = False
    for chunk in chunks:
        data = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if pending and pending[-1].endswith(b"\r") and data.startswith(b"\n"):
            data = data[1:]
        parts = data.split(b"\n")
        for part in parts[:-1]:
            if overlong or pending_length + len(part) > max_line_length:
                yield None
            else:
                pending.append(part)
                yield b"".join(pending)
            pending, pending_length, overlong = [], 0, False
        last = parts[-1]
        if not overlong:
            if pending_length + len(last) > max_line_length:
                overlong, pending, pending_length = True, [], 0
            elif last:
                pending.append(last)
                pending_length += len(last)
    if overlong:
        yield None
    elif pending:
        yield b"".join(pending)


def utf8_chunks(chunks: Iterator[bytes], head: bytes) -> Iterator[bytes]:
    """``chunks`` as UTF-8: a UTF-16/32 body (told by the BOM at the start of ``head``,
    its first bytes) is decoded on the fly; any other body is passed through."""
    if head.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        encoding = "utf-32"
    elif head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        encoding = "utf-16"
    else:
        return chunks
    return _transcoded(chunks, codecs.getincrementaldecoder(encoding)("replace"))


def _transcoded(chunks: Iterator[bytes], decoder: codecs.IncrementalDecoder) -> Iterator[bytes]:
    for chunk in chunks:
        decoded = decoder.decode(chunk)
        if decoded:
            yield decoded.encode("utf-8", "replace")
    rest = decoder.decode(b"", final=True)
    if rest:
        yield rest.encode("utf-8", "replace")


def page_from_line(line: bytes, sitemap_url: str) -> SitemapPage | None:
    """A page from one text-sitemap line, or None when the line is not a URL."""
    value = line.strip()
    if value.startswith(_UTF8_BOM):  # a BOM before the first line
        value = value[len(_UTF8_BOM) :].lstrip()
    if value[:1] and (value[0] < 0x20 or value[0] >= 0x80):  # a control or a Unicode space before it?
        # (a byte that is not UTF-8 kept as it is: %XX below, as without the space)
        value = strip_url_text(value.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")
    if not value[:8].lower().startswith(_SCHEMES):
        return None
    url = resolve_url(_as_text(value), sitemap_url)
    if url is None or not url.lower().startswith(("http://", "https://")) or not has_valid_host(url):
        return None
    return SitemapPage(url=url, sitemap_url=sitemap_url)


def _as_text(value: bytes) -> str:
    """A line's URL as text: UTF-8, a byte that is not (a Latin-1 ``é``: ``\xe9``)
    percent-encoded as it is (``%E9``: the bytes the server wrote, whatever its charset)."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return escaped_bytes(value.decode("utf-8", "surrogateescape"))


def escaped_bytes(text: str) -> str:
    """``text`` decoded with ``surrogateescape``, each byte that was not UTF-8 as ``%XX``."""
    return _ESCAPED_BYTE.sub(lambda match: f"%{ord(match.group()) - 0xDC00:02X}", text)


_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")


def has_valid_host(url: str) -> bool:
    """Whether an absolute http(s) URL names a host that can exist: a host name whose labels
    are not empty (``http://.example.org`` is no URL), or an IP literal in brackets."""
    authority = url[url.index("//") + 2 :]
    for end in "/?#":
        authority = authority.partition(end)[0]
    host = authority.rpartition("@")[2]
    if host.startswith("["):
        return host.find("]") > 1
    return _HOST_NAME.fullmatch(host.rpartition(":")[0] if ":" in host else host) is not None
