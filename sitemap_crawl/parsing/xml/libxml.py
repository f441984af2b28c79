"""How lxml (libxml2) is driven: the parsers (of entries, and a checker that builds nothing),
their options, tag names, the error log, and freeing what was read (:class:`EntryGap`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, cast

from lxml import etree

from sitemap_crawl.parsing.stream import StreamError

Element = Any  # lxml's _Element; kept loose so lxml-stubs are optional


class XmlProblem(Exception):
    """An XML document stopped short; ``reason`` is the tree error text."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def entry_parser(entry_tag: str, root_name: str, recover: bool, root_aware: bool = False) -> etree.XMLPullParser:
    """A pull parser of a document's entries (``entry_tag``: ``{*}url``...): their end events.
    ``root_aware``: also the start events of the entries and of the root (``root_name``, its
    local name as written), which :class:`EntryGap` then learns the root from, and the
    events of elements named like the root below it (:func:`entry_ends` leaves them out)."""
    if not root_aware:
        return etree.XMLPullParser(events=("end",), tag=(entry_tag,), **parser_options(recover=recover))
    return etree.XMLPullParser(
        events=("start", "end"), tag=(entry_tag, "{*}" + root_name), **parser_options(recover=recover)
    )


def entry_events(parser: etree.XMLPullParser, gap: EntryGap, root_aware: bool) -> Iterable[tuple[str, Element]]:
    """The end events of the entries an :func:`entry_parser` has ended: its own events when
    it reports nothing else (the hot path: no generator between), else :func:`entry_ends`'s."""
    if not root_aware:
        return parser.read_events()
    return (("end", element) for element in entry_ends(parser, gap))


def entry_ends(parser: etree.XMLPullParser, gap: EntryGap) -> Iterator[Element]:
    """The entries an :func:`entry_parser` has ended (start events go to ``gap``; an element
    named like the root, the root or one below it, is no entry)."""
    element: Any
    for event, element in parser.read_events():
        if event == "start":
            gap.started(element)
        elif element is not gap.root and local_name(element.tag) == gap.entry_name:
            yield element


class _NoTree:
    """A parser target that keeps nothing: libxml2 checks the document, no tree is built.

    Only ``close``: lxml calls a target's start, end and data methods when it has them
    (one Python call an event); without them, nothing but libxml2 runs."""

    def close(self) -> None:
        return None


def checker(recover: bool = False, huge_tree: bool = False) -> etree.XMLParser:
    """A feed parser that only says whether a document is well-formed (no tree held)."""
    target = cast("etree.ParserTarget", _NoTree())  # the stubs want every method; lxml does not
    return etree.XMLParser(target=target, **parser_options(recover, huge_tree))


DEFERRED_ERROR = "no element found"
"""What lxml's pull parser says at its close when libxml2 stopped earlier on an error it
kept to itself (seen: an entity XML does not define, such as ``&nbsp;``, with
``resolve_entities=False``; in a longer document lxml may name another error, at line 1)."""


def error_kept_back(message: str, position: Any) -> bool:
    """Whether a pull parser's error (its message and ``(line, column)``) may not be the one
    libxml2 found: :data:`DEFERRED_ERROR`, :data:`EXTRA_CONTENT` or an error on the first
    line (an entity XML does not define that ends near the end of a piece fed is told so, or
    as a bad start tag, at a position on line 1). Then :func:`checked_error` says which it was
    (on a first line that is the whole document, the same error, read once more)."""
    line = position[0] if isinstance(position, tuple) and len(position) == 2 else None
    return message.startswith((DEFERRED_ERROR, EXTRA_CONTENT)) or not line or line <= 1


EXTRA_CONTENT = "Extra content at the end of the document"
"""libxml2's error for markup after the root's end (junk after a whole document), which a
pull parser also gives for an undefined entity at some places (its error kept back)."""


def checked_error(chunks: Iterable[bytes], huge_tree: bool = False) -> etree.XMLSyntaxError | None:
    """The first error a :func:`checker` finds in the document (the one a pull parser that
    said :data:`DEFERRED_ERROR` kept to itself), or None. ``chunks`` may raise StreamError
    (a size cap, a broken gzip stream): None, the checker read no error before it."""
    parser = checker(huge_tree=huge_tree)
    try:
        for chunk in chunks:
            parser.feed(chunk)
        parser.close()
    except etree.XMLSyntaxError as exc:
        return exc
    except StreamError:
        return None
    return None


def parser_options(recover: bool, huge_tree: bool = False) -> dict[str, Any]:
    """The options of every lxml parser of a sitemap: no entity expanded, no DTD, no network,
    comments and PIs dropped as read; libxml2's size limits unless ``huge_tree`` (the audit's
    scan reads past them)."""
    return {
        "recover": recover,
        "resolve_entities": False,
        "no_network": True,
        "load_dtd": False,
        "dtd_validation": False,
        "huge_tree": huge_tree,
        "remove_comments": True,
        "remove_pis": True,
    }


_LOCAL_NAMES: dict[object, str] = {}


LOCAL_NAMES_MAX = 4096


def local_name(tag: object) -> str:
    """Tag name without namespace or prefix; '' for comments and PIs."""
    name = _LOCAL_NAMES.get(tag)
    if name is None:
        name = tag[max(tag.rfind("}"), tag.rfind(":")) + 1 :] if type(tag) is str else ""
        if len(_LOCAL_NAMES) < LOCAL_NAMES_MAX:
            _LOCAL_NAMES[tag] = name
    return name


_EXTENSION_NAMESPACES = ("http://www.google.com/schemas/sitemap-", "https://www.google.com/schemas/sitemap-")
_XHTML_NAMESPACE = "http://www.w3.org/1999/xhtml"
_EXTENSION_PREFIXES = ("image:", "video:", "news:", "xhtml:", "mobile:")


def in_extension_namespace(tag: object) -> bool:
    """Whether a tag is of an extension of the protocol (Google's image, video, news, mobile...
    namespaces, XHTML; or, its prefix not declared, written with one of their usual
    prefixes): its ``<image:loc>`` is no ``<loc>`` of the entry that holds it."""
    if type(tag) is not str:
        return False
    if tag.startswith("{"):
        namespace = tag[1 : tag.find("}")]
        return namespace.startswith(_EXTENSION_NAMESPACES) or namespace == _XHTML_NAMESPACE
    return tag.startswith(_EXTENSION_PREFIXES)


def drain(parser: etree.XMLPullParser) -> None:
    """Discard what a parser holds (entries cut by a stream error are not complete)."""
    for _event, element in parser.read_events():
        release(element)


_NAMESPACE_DOMAIN = etree.ErrorDomains.NAMESPACE


def first_error(log: Any, *, namespace: bool) -> Any:
    """The first error (level ERROR or worse) of a parser's log that is a namespace error
    (``namespace``) or is not one; None when there is none."""
    for entry in log:
        if entry.level >= etree.ErrorLevels.ERROR and (entry.domain == _NAMESPACE_DOMAIN) is namespace:
            return entry
    return None


def is_namespace_error(parser: etree._FeedParser) -> bool:
    """Whether libxml2 stopped a strict parser on namespace errors only (a prefix not
    declared, ...): the document is well-formed XML, readable in recover mode as it is.
    (The parser's own log: an exception's ``error_log`` may hold other parsers' errors.)"""
    log = parser.feed_error_log
    return first_error(log, namespace=True) is not None and first_error(log, namespace=False) is None


def describe_error(entry: Any) -> str:
    """An error of a parser's log as lxml's exceptions word it: its message, line and column."""
    return f"{entry.message.strip()}, line {entry.line}, column {entry.column}"


def error_after_namespace_errors(parser: etree._FeedParser) -> Any:
    """The first error in a parser's log that is not a namespace error, when namespace errors
    came before it (else None)."""
    errors = [entry for entry in parser.feed_error_log if entry.level >= etree.ErrorLevels.ERROR]
    if not errors or errors[0].domain != _NAMESPACE_DOMAIN:
        return None
    return first_error(errors, namespace=False)


def is_resource_limit(message: str) -> bool:
    lowered = message.lower()
    return "xml_parse_huge" in lowered or "resource limit" in lowered or "excessive depth" in lowered


def release(element: Element) -> None:
    """Free an entry element and the already handled siblings before it."""
    element.clear(keep_tail=False)
    parent = element.getparent()
    if parent is not None:
        while element.getprevious() is not None:
            del parent[0]


def release_through(last: Element) -> None:
    """Free every handled entry up to ``last`` (once per fed chunk, not per entry).

    Only finished elements are removed: the element the parser is still
    building comes after ``last``.
    """
    parent = last.getparent()
    if parent is None:
        last.clear(keep_tail=False)
    else:
        del parent[: parent.index(last) + 1]


MAX_ELEMENTS_BETWEEN_ENTRIES = 100_000
"""Elements libxml2 may build while no entry ends. A protocol entry holds a few dozen
(1,000 images at most, a few elements each); each element costs libxml2 about 30 times its
bytes (``<x/>``: 4 bytes, over 120 of memory)."""
ELEMENT_FLOOD = f"over {MAX_ELEMENTS_BETWEEN_ENTRIES:,} elements with no entry ending"
"""The detail of the parse error a flood of elements gives (the entries before it are kept)."""


class ElementFlood(Exception):
    """An entry being built holds more than MAX_ELEMENTS_BETWEEN_ENTRIES elements (they
    cannot be freed: the entry is read whole once it ends)."""


class RootNeeded(Exception):
    """No entry has ended yet and more than MAX_ELEMENTS_BETWEEN_ENTRIES elements were fed:
    freeing them needs the root, which only a parser that reports its start event gives
    (see :func:`entry_parser`): the document is read again with one."""


FREE_EVERY = 1 << 20
"""Bytes fed between two looks at what the parser holds besides entries (:meth:`EntryGap.fed`)."""


class EntryGap:
    """Bounds what libxml2 holds besides the entries.

    The entry parsers free the entries they read; any other element stays in the tree. A
    document padded with other elements (``<x/>`` a million times before, between or around
    its entries, or in elements that wrap them) would grow in memory about 30 times as fast
    as its bytes. Once the root is known, every FREE_EVERY bytes fed the finished elements
    are freed, down the path of elements still open from the root (only the last child of an
    element can be open); an entry being built is left whole, and :class:`ElementFlood` is
    raised if it holds more than MAX_ELEMENTS_BETWEEN_ENTRIES elements (comments and PIs
    too). The root is known from the first entry read, or, with ``root_aware``, from its
    start event; before that the elements started are counted from the bytes (a ``<`` that
    opens no end tag), and past the bound :class:`RootNeeded` is raised (a ``root_aware``
    gap goes on: a parser that has not built the root has built nothing). (A parser that
    holds the bytes without building elements, waiting for the ``;`` of ``&b``, has
    nothing to free.)
    """

    __slots__ = ("_bytes", "_elements", "_root_aware", "entry_name", "root")

    def __init__(self, entry_name: str, root_aware: bool = False) -> None:
        self.root: Element | None = None
        """The document's root element, once known."""
        self.entry_name = entry_name
        """The entries' local name (``url``, ``sitemap``, ``item``, ``entry``)."""
        self._root_aware = root_aware
        self._bytes = 0
        self._elements = 0

    def started(self, element: Element) -> None:
        """A start event (of a :func:`entry_parser`): the root's is remembered."""
        if self.root is None and element.getparent() is None:
            self.root = element

    def entry_read(self, entry: Element) -> None:
        """An entry ended (call before it is freed): the root is known from it."""
        if self.root is None:
            self.root = entry.getroottree().getroot()

    def fed(self, data: bytes) -> None:
        """``data`` was fed (and the entries it ended read)."""
        if self.root is None:
            if not self._root_aware:
                self._elements += data.count(b"<") - data.count(b"</")
                if self._elements > MAX_ELEMENTS_BETWEEN_ENTRIES:
                    raise RootNeeded
            return
        self._bytes += len(data)
        if self._bytes >= FREE_EVERY:
            self._bytes = 0
            self._free()

    def _free(self) -> None:
        node = self.root
        while node is not None and len(node):
            if len(node) > 1:
                del node[:-1]  # finished: every child but the last
            node = node[0]
            if local_name(node.tag) == self.entry_name:  # an entry being built: kept whole
                if sum(1 for _ in node.iter()) > MAX_ELEMENTS_BETWEEN_ENTRIES:
                    raise ElementFlood(ELEMENT_FLOOD)
                return
