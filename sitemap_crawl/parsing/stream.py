"""Byte streams of a sitemap body: chunking, capped gzip decompression, sniffing."""

from __future__ import annotations

import codecs
import os
import zlib
from collections.abc import Iterator
from enum import Enum
from typing import BinaryIO

from sitemap_crawl.kinds import ErrorReason

GZIP_MAGIC = b"\x1f\x8b"
CHUNK_SIZE = 256 * 1024
_SNIFF_SIZE = 1024
_WHITESPACE = b" \t\r\n\x0c"
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
UTF32_BOMS = (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)
UTF32_STARTS = (b"<\x00\x00\x00", b"\x00\x00\x00<")
"""How XML in UTF-32 without a byte order mark starts (little, big endian)."""
UTF16_STARTS = (b"<\x00", b"\x00<")
"""How XML in UTF-16 without a byte order mark starts (also the start of UTF-32's)."""


class StreamError(Exception):
    """The body could not be read to its end; ``reason`` is the tree error text."""

    reason: str = ErrorReason.PARSE_ERROR


class SizeLimitExceeded(StreamError):
    """More decompressed bytes than the size cap allows."""

    reason = ErrorReason.SIZE_LIMIT


class TruncatedInput(StreamError):
    """A compressed stream that breaks off before its end."""

    reason = ErrorReason.TRUNCATED


class CorruptInput(StreamError):
    """Bytes that cannot be decompressed."""

    reason = ErrorReason.PARSE_ERROR


class BodyFormat(Enum):
    """What the first bytes of a (decompressed) body look like."""

    GZIP = "gzip"
    XML = "xml"
    TEXT = "text"
    EMPTY = "empty"


class FileBody:
    """A body kept in a file instead of memory (the parsing worker spools large bodies).

    Each reader of it reads at its own offset (``os.pread``), so the body can be
    read again from the start, as the recover pass of a malformed document does.
    ``close()`` closes the file.
    """

    def __init__(self, file: BinaryIO, size: int) -> None:
        self._file = file
        self._fd = file.fileno()
        self.size = size

    def close(self) -> None:
        self._file.close()

    def __len__(self) -> int:
        return self.size

    def read_at(self, offset: int, size: int) -> bytes:
        data = os.pread(self._fd, size, offset)
        if len(data) < size:
            raise CorruptInput(f"body file ends at {offset + len(data)} of {self.size} bytes")
        return data


Body = bytes | FileBody
"""A sitemap body: its bytes, or a file holding them."""


def iter_chunks(body: Body, limit: int, chunk_size: int = CHUNK_SIZE) -> Iterator[bytes]:
    """``body`` in chunks, raising SizeLimitExceeded after ``limit`` bytes."""
    end = min(len(body), limit)
    if isinstance(body, FileBody):
        for start in range(0, end, chunk_size):
            yield body.read_at(start, min(chunk_size, end - start))
    else:
        view = memoryview(body)
        for start in range(0, end, chunk_size):
            yield bytes(view[start : min(start + chunk_size, end)])
    if len(body) > limit:
        raise SizeLimitExceeded(f"body larger than {limit} bytes")


MAX_GZIP_MEMBERS = 10_000
"""Gzip members read from one body (a body of millions of empty members cost minutes)."""


def gunzip_chunks(chunks: Iterator[bytes], limit: int, chunk_size: int = CHUNK_SIZE) -> Iterator[bytes]:
    """Decompress gzip (also multi-member) chunk by chunk, at most ``limit`` bytes out.

    Bytes after the last complete member that are not another member (zero padding,
    garbage) are ignored. A member's start cut by a chunk's end waits for the next chunk.
    A member that breaks (bad data, a wrong checksum or length in its trailer) yields what
    it decoded up to the byte that broke it, then raises CorruptInput.
    """
    decompressor = _gzip_decompressor()
    produced = 0
    members = 1
    pending = b""
    for chunk in chunks:
        data = pending + chunk if pending else chunk
        pending = b""
        output_was_full = False
        while data or output_was_full:
            if decompressor.eof:
                if len(data) < len(GZIP_MAGIC) and GZIP_MAGIC.startswith(data):
                    pending = data  # (the next member's magic, cut by the chunk's end)
                    break
                if not data.startswith(GZIP_MAGIC):
                    return
                members += 1
                if members > MAX_GZIP_MEMBERS:
                    raise SizeLimitExceeded(f"more than {MAX_GZIP_MEMBERS:,} gzip members")
                decompressor = _gzip_decompressor()
            before = decompressor.copy()
            try:
                out = decompressor.decompress(data, chunk_size)
            except zlib.error as exc:
                salvaged = _decoded_before_error(before, data, limit - produced)
                if salvaged:
                    yield salvaged
                raise CorruptInput(f"gzip: {exc}") from exc
            output_was_full = len(out) == chunk_size
            data = decompressor.unused_data if decompressor.eof else decompressor.unconsumed_tail
            if out:
                produced += len(out)
                if produced > limit:
                    yield out[: len(out) - (produced - limit)]
                    raise SizeLimitExceeded(f"more than {limit} bytes after decompression")
                yield out
    if not decompressor.eof:
        raise TruncatedInput("gzip stream ends early")


def _decoded_before_error(decompressor: zlib._Decompress, data: bytes, room: int) -> bytes:
    """What ``decompressor`` (as it was before the call that failed) decodes of ``data`` up
    to the byte that breaks it, at most ``room`` bytes: fed a byte at a time (a failure is
    rare, and its call's output was lost with it)."""
    decoded: list[bytes] = []
    size = 0
    for index in range(len(data)):
        try:
            out = decompressor.decompress(data[index : index + 1])
        except zlib.error:
            break
        decoded.append(out)
        size += len(out)
        if size >= room or decompressor.eof:
            break
    return b"".join(decoded)[:room]


def _gzip_decompressor() -> zlib._Decompress:
    return zlib.decompressobj(16 + zlib.MAX_WBITS)


def peek(chunks: Iterator[bytes], size: int = _SNIFF_SIZE) -> tuple[bytes, Iterator[bytes]]:
    """The first ``size`` bytes (or fewer at the end) and the whole stream again.

    An error raised while peeking is raised again when the returned stream
    reaches it, so no byte before it is lost.
    """
    head: list[bytes] = []
    length = 0
    error: StreamError | None = None
    try:
        while length < size:
            chunk = next(chunks)
            head.append(chunk)
            length += len(chunk)
    except StopIteration:
        pass
    except StreamError as exc:
        error = exc

    def replay() -> Iterator[bytes]:
        yield from head
        if error is not None:
            raise error
        yield from chunks

    return b"".join(head)[:size], replay()


def sniff(head: bytes) -> BodyFormat:
    """Classify a body by its first bytes: gzip magic, XML, text or empty."""
    if head.startswith(GZIP_MAGIC):
        return BodyFormat.GZIP
    text = leading_text(head)
    if not text:
        return BodyFormat.EMPTY
    return BodyFormat.XML if text.startswith("<") else BodyFormat.TEXT


_WIDE_ENCODINGS = (("utf-32-le", 4), ("utf-32-be", 4), ("utf-16-le", 2), ("utf-16-be", 2))
_WIDE_SPACES = {encoding: frozenset(space.encode(encoding) for space in " \t\r\n") for encoding, _ in _WIDE_ENCODINGS}


def wide_markup_start(head: bytes) -> tuple[str, int] | None:
    """A UTF-16 or UTF-32 body without a byte order mark whose whitespace comes before its first
    ``<``: its encoding and where that ``<`` is (None for any other body: one that starts with
    ``<`` is told by :data:`UTF16_STARTS` / :data:`UTF32_STARTS`)."""
    for encoding, width in _WIDE_ENCODINGS:
        spaces = _WIDE_SPACES[encoding]
        offset = 0
        while head[offset : offset + width] in spaces:
            offset += width
        if offset and head[offset : offset + width] == "<".encode(encoding):
            return encoding, offset
    return None


def leading_text(head: bytes) -> str:
    """The start of a body as text, after any BOM and leading whitespace."""
    wide = wide_markup_start(head)
    if wide is not None:
        head = head[wide[1] :]
    if head.startswith(UTF32_BOMS):
        encoding = "utf-32"
    elif head.startswith(_UTF16_BOMS):
        encoding = "utf-16"
    elif head.startswith(UTF32_STARTS):
        encoding = "utf-32-le" if head[0] == 0x3C else "utf-32-be"
    elif head.startswith(UTF16_STARTS):
        encoding = "utf-16-le" if head[0] == 0x3C else "utf-16-be"
    else:
        return (
            head.lstrip(_WHITESPACE).removeprefix(codecs.BOM_UTF8).lstrip(_WHITESPACE).decode("utf-8", "replace")[:64]
        )
    even_head = head[: len(head) // 4 * 4]
    return even_head.decode(encoding, "replace").lstrip("\ufeff \t\r\n\x0c")[:64]


def decoded_stream(body: Body, limit: int, max_layers: int = 3) -> tuple[BodyFormat, bytes, Iterator[bytes]]:
    """Open a body: undo up to ``max_layers`` of gzip, then sniff what is left.

    Returns the format of the innermost content, its first bytes and the stream
    of its chunks (which raises a StreamError where reading must stop).
    """
    chunks = iter_chunks(body, limit)
    head, chunks = peek(chunks)
    layers = 0
    while sniff(head) is BodyFormat.GZIP and layers < max_layers:
        layers += 1
        head, chunks = peek(gunzip_chunks(chunks, limit))
    return sniff(head), head, chunks
