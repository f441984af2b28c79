"""A document's bytes as libxml2's push parser (lxml's feed parsers) can read them: UTF-16
and UTF-32 starts it would not read, a declaration of a wide encoding in single bytes, and
the whitespace some servers send before ``<?xml``."""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable, Iterator

from sitemap_crawl.parsing.stream import UTF16_STARTS, UTF32_BOMS, UTF32_STARTS, wide_markup_start

WIDE_STARTS = (b"\xff\xfe", b"\xfe\xff", b"<\x00", b"\x00<", b"\x00\x00")


_XML_SPACE = b" \t\r\n"


_UTF8_BOM = b"\xef\xbb\xbf"


_UTF16_BOM_OF_START = dict(zip(UTF16_STARTS, (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE), strict=True))


_UTF16_DECLARATION_STARTS = (b"<\x00?\x00", b"\x00<\x00?")


_UTF32_SPACES_LE = frozenset(space.encode("utf-32-le") for space in " \t\r\n")


_UTF32_SPACES_BE = frozenset(space.encode("utf-32-be") for space in " \t\r\n")


_WIDE_DECLARATION = re.compile(
    rb"""\A((?:\xef\xbb\xbf)?[ \t\r\n]*<\?xml\b[^>]{0,200}?\bencoding[ \t\r\n]*=[ \t\r\n]*["'])"""
    rb"""((?:utf|ucs)-?(?:16|32|2|4)[\w-]{0,8})(?=["'])""",
    re.IGNORECASE,
)
"""A declaration of UTF-16 or UTF-32 (or UCS-2/4) written in single bytes (group 2: the name)."""


def wide_declaration(chunk: bytes) -> str | None:
    """The UTF-16 or UTF-32 encoding a document's first chunk declares while its ``<?xml``
    is written in single bytes (a .NET StringWriter's document, sent as UTF-8), or None."""
    match = _WIDE_DECLARATION.match(chunk)
    return None if match is None else match[2].decode("ascii")


def push_parser_start(chunk: bytes) -> bytes:
    """A document's first chunk as libxml2's push parser (lxml's feed parsers) can read it.

    That parser fails on a UTF-32 byte order mark (``fromstring`` does not): it is
    dropped, the parser tells UTF-32 from the ``<`` that follows. UTF-16 without a byte
    order mark is read by it only when it starts ``<?xml``: a mark is put before any
    other start. A declaration of UTF-16 or UTF-32 in single bytes (:func:`wide_declaration`:
    libxml2 then found no root element) is read as UTF-8. Every other start passes unchanged."""
    if (match := _WIDE_DECLARATION.match(chunk)) is not None:
        return chunk[: match.start(2)] + b"UTF-8" + chunk[match.end(2) :]
    wide = wide_markup_start(chunk)
    if wide is not None:  # whitespace before the "<" of UTF-16/32 without a mark hides the encoding
        chunk = chunk[wide[1] :]
    if chunk.startswith(UTF32_BOMS):
        # without the mark, libxml2 tells UTF-32 from the "<": whitespace before it goes too
        spaces = _UTF32_SPACES_BE if chunk.startswith(codecs.BOM_UTF32_BE) else _UTF32_SPACES_LE
        start = 4
        while chunk[start : start + 4] in spaces:
            start += 4
        return chunk[start:]
    bom = _UTF16_BOM_OF_START.get(chunk[:2])
    if bom is None or chunk.startswith(_UTF16_DECLARATION_STARTS) or chunk.startswith(UTF32_STARTS):
        return chunk
    return bom + chunk


def push_parser_chunks(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """``chunks``, the first as :func:`push_parser_start` gives it."""
    for chunk in chunks:
        yield push_parser_start(chunk)
        yield from chunks
        return


def without_leading_space(make_chunks: Callable[[], Iterator[bytes]]) -> Iterator[bytes]:
    """The document without the whitespace some servers send before ``<?xml``
    (which makes it ill-formed); a UTF-8 BOM stays. UTF-16 and UTF-32 get the start
    :func:`push_parser_start` gives; other encodings pass unchanged."""
    chunks = push_parser_chunks(make_chunks())
    bom = b""
    for index, chunk in enumerate(chunks):
        if index == 0 and chunk.startswith(_UTF8_BOM):
            bom, chunk = _UTF8_BOM, chunk[len(_UTF8_BOM) :]
        stripped = chunk.lstrip(_XML_SPACE)
        if not stripped:
            continue
        if stripped.startswith(b"<") and not stripped.startswith(b"<\x00"):
            yield bom + stripped
        else:
            yield bom + chunk
        yield from chunks
        return
    if bom:
        yield bom


DECLARATION_MAX = 1024
"""Bytes of a document's start looked at for its XML declaration's encoding."""
_ENCODING = re.compile(rb"""^\s*<\?xml[^>]*encoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")
_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


def is_utf8(encoding: str | None) -> bool:
    """Whether an encoding name (None: not named) means UTF-8."""
    return encoding is None or encoding.upper().replace("_", "-") in ("UTF-8", "UTF8")


def declared_encoding(head: bytes) -> str | None:
    """The encoding a byte order mark or the XML declaration names, or None (UTF-8 by default);
    without a mark, a ``<`` in UTF-32 or UTF-16 (the XML specification's appendix F)."""
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name
    if head.startswith(codecs.BOM_UTF8):
        return "UTF-8"
    if head.startswith(UTF32_STARTS):
        return "UTF-32"
    if head.startswith(UTF16_STARTS):
        return "UTF-16"
    match = _ENCODING.match(head[:DECLARATION_MAX])
    return match.group(1).decode("ascii") if match else None
