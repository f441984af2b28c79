"""How lxml (libxml2) is driven: the parser options, tag names, the parser's error log, and
freeing the entries read."""

from __future__ import annotations

from typing import Any

from lxml import etree

Element = Any  # lxml's _Element; kept loose so lxml-stubs are optional


def parser_options(recover: bool) -> dict[str, Any]:
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
