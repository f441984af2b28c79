"""End tags that match no open element (and a ``<`` that begins no tag), mended before the
recover parser reads them.

libxml2's recover mode reads an end tag that does not match the open element as that
element's end. A stray end tag in a text (``<loc>https://a.test/p</b></loc>``) so closes the
``<loc>``; the real ``</loc>`` then closes the ``<url>``, the ``</url>`` the root, and every
entry after it was lost. :class:`TagBalancer` follows the open elements in the repaired
bytes and mends what libxml2 would misread:

- a stray end tag ends the open element when another end tag follows it, or a start tag
  of the open element's name (as libxml2 reads it: ``</urll>`` for ``</url>``), else it is
  dropped (``</b></loc>``, or ``</x><lastmod>`` between two fields);
- an end tag that skips open elements ends them first;
- the root's end tag, when a tag follows it, is moved to the end of the input, so that
  what follows is still read;
- a ``<`` that begins no tag (``a<b</title>``, ``t</</lastmod>``: libxml2 does not read a
  start or end tag there either) is written ``&#60;``, a character of the text.

Everything else passes byte for byte; so does a document that needs none of it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator

from sitemap_crawl.parsing.xml.input import WIDE_STARTS

_TOKEN = re.compile(
    rb"<(?:/\s*([^\s<>/]+)(?:[\s/][^<>]*)?>|([^\s<>/\"'!?]+)(?:[\s/](?:[^<>\"']|\"[^\"]*\"|'[^']*')*)?>"
    rb"|(!--|!\[CDATA\[|\?|!)|())"
)
"""A piece of markup: an end tag (its name: group 1; ``</ loc>`` and ``</loc x="1">`` too, which
libxml2 reads as end tags), a start tag (group 2), the start of a
comment, CDATA, a processing instruction or another declaration (``<!DOCTYPE``: group 3),
else a ``<`` that begins none of them as far as the bytes go (group 4). No nested quantifiers
that could match the same bytes, and no possessive ones (Python 3.11.2's are broken): a long
name or value with no ``>`` after it costs linear time."""
_OPENS = re.compile(rb"<[^\s<>/\"'!?]+(?:\s+[^\s<>/=\"']+(?:\s*=\s*(?:\"[^\"<]*\"|'[^'<]*'))?)*\s*>")
"""A start tag that opens an element, as libxml2's recover mode reads it: not empty (``/>``,
``/ >``), its attributes quoted or without a value (``<video:video allowfullscreen>`` opens);
libxml2 makes a start tag with other bytes among its attributes (``<x a="1"]>``) an empty
element."""
_MARKUP_END = re.compile(rb"[<>]")
_START_TAG_BODY = re.compile(rb"<[^\s<>/\"'!?]+(?:[\s/](?:[^<>\"']|\"[^\"]*\"|'[^']*')*)?")
SECTION_ENDS = {b"<!--": b"-->", b"<![CDATA[": b"]]>", b"<?": b"?>"}
"""What ends a comment, a CDATA section, a processing instruction: markup whose text may
hold ``<``, tags and ``&`` that are none (the repair before the recover pass leaves it as it
is, the mending skips it)."""
INTERNAL_SUBSET_END = b"]>"
"""What ends a DOCTYPE's internal subset (its entity values may hold tags)."""
_CLASSIFY_BYTES = len(b"<![CDATA[")
MAX_TAG_BYTES = 64 * 1024
"""A tag not ended within this many bytes ends the mending: the rest passes as it is."""
MAX_AFTER_ROOT = 1024 * 1024
"""Bytes after the root's end tag held to see whether a tag follows (past it, the rest is read
as if the root were still open)."""


class TagBalancer:
    """Mends the end tags of an XML document in an ASCII-compatible encoding, chunk by chunk."""

    __slots__ = (
        "_after_root",
        "_after_root_size",
        "_closer",
        "_held",
        "_off",
        "_open",
        "_open_names",
        "_out",
        "_parent_has_child",
        "_root_end",
        "_root_end_last",
        "_stray",
        "mended",
    )

    def __init__(self) -> None:
        self._open: list[bytes] = []  # qualified names of the open elements, the root first
        self._open_names: Counter[bytes] = Counter()  # how many of each are open (no scan of a deep stack)
        self._parent_has_child: list[bool] = []  # whether each open element has an element in it yet
        self._out: list[bytes] = []  # what the piece being read gives
        self._held = b""  # the start of markup not yet whole
        self._closer: bytes | None = None  # inside a comment, CDATA...: what ends it
        self._stray = False  # an end tag matching no open element, not yet judged
        self._root_end: bytes | None = None  # the root's end tag as written, once read
        self._after_root: list[bytes] | None = None  # what came after it, while no tag has
        self._after_root_size = 0
        self._root_end_last = False  # the last tag read is a root's end tag (the document ends there)
        self._off = False  # a tag too long, or a wide encoding: the rest passes as it is
        self.mended = False
        """Whether any end tag was dropped, added or moved, or a ``<`` written as text."""

    def mend(self, chunks: Iterator[bytes]) -> Iterator[bytes]:
        """The chunks, their end tags mended (the last bytes of markup not yet whole are held)."""
        first = True
        for chunk in chunks:
            if first and chunk:
                first = False
                self._off = chunk[:2] in WIDE_STARTS  # (UTF-16 or UTF-32: left as the repair leaves it)
            mended = self._feed(self._held + chunk, final=False)
            if mended:
                yield mended
        mended = self._feed(self._held, final=True)
        if not self._off:
            self._judge_stray(None, None)
            mended += b"".join(self._out) + self._end_of_input()
        elif self._root_end is not None:
            mended += self._root_end  # (moved, then the mending ended: the rest passed as it is)
        if mended:
            yield mended

    def _feed(self, data: bytes, final: bool) -> bytes:
        """``data`` mended, but for markup at its end not yet whole (kept in ``_held``).

        Bytes are copied out only around a change (``copied``: how far they were)."""
        self._held = b""
        if self._off:
            return data
        stack, open_names, has_child = self._open, self._open_names, self._parent_has_child
        search = _TOKEN.search
        size = len(data)
        position = copied = 0
        while position < size:
            if self._closer is not None:
                end = data.find(self._closer, position)
                if end < 0:
                    position = size if final else max(position, size - len(self._closer) + 1)
                    break
                position, self._closer = end + len(self._closer), None
                continue
            token = search(data, position)
            if token is None:
                break
            end_name, start_name, other, unknown = token.groups()
            if unknown is not None:
                start = token.start()
                if not _cut_short(data, start):  # not a tag as written (``a<b</t>``, ``t</</t>``):
                    copied = self._copy(data, copied, start)
                    self._give(b"&#60;")  # a character of the text, as the repair writes a lone ``<``
                    self.mended = True
                    position = copied = start + 1
                    continue
                if final:  # (a tag the end of the input cut short: left as it is)
                    position = start + 1
                    continue
                break  # (a tag not whole yet: held below)
            if other is not None:
                if size - token.start() < _CLASSIFY_BYTES and not final:
                    position = token.start()  # (``<!`` may begin a comment or CDATA: held)
                    break
                self._closer = SECTION_ENDS.get(b"<" + other, b">")  # (``<!DOCTYPE``...: to its ``>``)
                if other == b"!" and data.startswith(b"<!DOCTYPE", token.start()):
                    bracket, close = data.find(b"[", token.end()), data.find(b">", token.end())
                    if bracket >= 0 and (close < 0 or bracket < close):
                        self._closer = INTERNAL_SUBSET_END
                position = token.end()
                continue
            self._root_end_last = False
            if self._stray or self._after_root is not None:
                copied = self._copy(data, copied, token.start())
                self._tag_after_root()
                self._judge_stray(end_name, start_name)
            if start_name is not None:  # (the hot path: pushed and popped here, not by method)
                if has_child:
                    has_child[-1] = True
                start, end = token.span()
                if end - start == len(start_name) + 2 or _OPENS.fullmatch(data, start, end) is not None:
                    stack.append(start_name)  # (``<loc>``, the usual tag, needs no look at attributes)
                    open_names[start_name] += 1
                    has_child.append(False)
            elif len(stack) > 1 and end_name == stack[-1]:
                stack.pop()
                open_names[end_name] -= 1
                has_child.pop()
            else:
                copied = self._copy(data, copied, token.start())
                self._end_tag(end_name, token.group(0))
                copied = token.end()
            position = token.end()
        else:
            position = size
        if not final:
            rest = data.find(b"<", position) if self._closer is None else -1
            if rest < 0 and self._closer is None:
                position = size  # (text to the end: given, not held)
            elif rest >= 0:
                if size - rest > MAX_TAG_BYTES:  # a tag that does not end: the rest as it is
                    self._off = True
                    self._copy(data, copied, rest)
                    if self._after_root is not None and self._root_end is not None:  # (in its place)
                        self._out.append(self._root_end)
                        self._out.extend(self._after_root)
                        self._root_end = self._after_root = None
                    self._out.append(data[rest:])
                    return self._flush()
                position = rest
            self._held = data[position:] if position < size else b""
            self._copy(data, copied, position)
        else:
            self._copy(data, copied, size)
        return self._flush()

    def _flush(self) -> bytes:
        mended = b"".join(self._out)
        self._out.clear()
        return mended

    def _copy(self, data: bytes, start: int, end: int) -> int:
        """The bytes from ``start`` to ``end`` given (after the root's end tag: held with what
        follows it); where the copy is."""
        if end > start:
            self._give(data[start:end])
        return end

    def _give(self, piece: bytes) -> None:
        """``piece`` given (after the root's end tag: held with what follows it)."""
        if self._after_root is None:
            self._out.append(piece)
            return
        self._after_root.append(piece)
        self._after_root_size += len(piece)
        if self._after_root_size > MAX_AFTER_ROOT:
            self._tag_after_root()

    def _tag_after_root(self) -> None:
        """Something after the root's end tag is read as inside the root: its end tag goes last."""
        if self._after_root is not None:
            self._out.extend(self._after_root)
            self._after_root = None
            self.mended = True

    def _end_tag(self, name: bytes, written: bytes) -> None:
        """An end tag that does not end the open element below the root."""
        stack = self._open
        if not stack:
            self.mended = True  # (nothing open: dropped; libxml2 would report it and read on)
        elif name == stack[0]:
            self._root_end_last = True
            if self._root_end is None:
                self._root_end = written
                self._after_root = []
            else:
                self.mended = True
        elif self._open_names[name]:
            while stack[-1] != name:  # (each element is ended once: no scan of a deep stack per tag)
                self._out.append(b"</%s>" % self._pop())
            self._pop()
            self._out.append(written)
            self.mended = True
        else:
            self._stray = True
            self.mended = True

    def _judge_stray(self, next_end: bytes | None, next_start: bytes | None) -> None:
        """A stray end tag held back, judged by the tag that follows it: it ends the open
        element (as libxml2 reads it: a misspelt end tag) when that is another end tag
        (``</urll></urlset>``), a start tag of the open element's name (``</urll><url>``:
        siblings), or any start tag while the open element holds no element (``<loc>a</lco>
        <lastmod>``); else it is dropped (``...</b></loc>``, ``</loc></x><lastmod>``)."""
        if not self._stray:
            return
        self._stray = False
        stack = self._open
        if len(stack) < 2:
            return
        top = stack[-1]
        if next_end is not None:
            ends = next_end != top
        else:
            ends = next_start is not None and (next_start == top or not self._parent_has_child[-1])
        if ends:
            self._out.append(b"</%s>" % self._pop())

    def _push(self, name: bytes) -> None:
        self._open.append(name)
        self._open_names[name] += 1
        self._parent_has_child.append(False)

    def _pop(self) -> bytes:
        name = self._open.pop()
        self._open_names[name] -= 1
        self._parent_has_child.pop()
        return name

    def _end_of_input(self) -> bytes:
        """The root's end tag, if the document wrote it, before what came after it if no tag
        did: after the end tags of what is still open if the document's last tag is a root's
        end tag; not at all if it is another (a document cut in an entry stays cut: its entry
        must not be ended)."""
        if self._root_end is None:
            return b""
        if len(self._open) > 1 and not self._root_end_last:
            return b""
        closing = [b"</%s>" % name for name in reversed(self._open[1:])]
        if closing:
            self.mended = True
        return b"".join([*closing, self._root_end, *(self._after_root or [])])


def _cut_short(data: bytes, start: int) -> bool:
    """Whether the ``<`` at ``start``, which begins no whole piece of markup, may begin a tag
    that the end of ``data`` cut short (else it is none: ``a<b</t>``, ``< ``)."""
    if len(data) - start < _CLASSIFY_BYTES:
        return True
    if data.startswith(b"</", start):
        return _MARKUP_END.search(data, start + 2) is None
    body = _START_TAG_BODY.match(data, start)
    if body is None:
        return False
    end = body.end()
    return end == len(data) or data[end : end + 1] in (b'"', b"'")  # (a quote that runs to the end)
