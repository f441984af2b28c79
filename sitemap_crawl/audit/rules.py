"""Every audit rule: a stable id, a severity, one line of documentation and its source.

The ids are part of the output (findings, stats keys ``sitemap_crawl/audit/<id>``):
never rename one. docs/audit.md's rules table is checked against :data:`RULES`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Severity(StrEnum):
    """How bad a finding is."""

    ERROR = "error"  # the protocol is broken: search engines may ignore the sitemap or the URL
    WARNING = "warning"  # allowed or tolerated, but misleading or wasteful
    NOTICE = "notice"  # worth knowing


class Source(StrEnum):
    """Where a rule comes from."""

    PROTOCOL = "sitemaps.org protocol"
    GOOGLE = "Google Search Central"
    RFC9309 = "RFC 9309 (robots.txt)"


@dataclass(frozen=True, slots=True)
class Rule:
    """One audit rule."""

    id: str
    severity: Severity
    category: str
    doc: str
    source: Source


MAX_URLS = 50_000
MAX_BYTES = 50 * 1024 * 1024
MAX_URL_LENGTH = 2_048
MAX_NEWS_URLS = 1_000
MAX_IMAGES = 1_000

E, W, N = Severity.ERROR, Severity.WARNING, Severity.NOTICE
P, G = Source.PROTOCOL, Source.GOOGLE

# size
TOO_MANY_URLS = Rule("too-many-urls", E, "size", "A urlset lists more than 50,000 URLs.", P)
TOO_MANY_CHILDREN = Rule("too-many-children", E, "size", "An index lists more than 50,000 sitemaps.", P)
TOO_LARGE = Rule("too-large", E, "size", "More than 50 MiB uncompressed.", P)
URL_TOO_LONG = Rule("url-too-long", E, "size", "A URL longer than 2,048 characters.", P)
# location
OTHER_HOST = Rule(
    "other-host",
    E,
    "location",
    "A page on another host (or port) than its sitemap; on its host with the other scheme, see mixed-scheme.",
    P,
)
OUTSIDE_DIRECTORY = Rule(
    "outside-directory",
    W,
    "location",
    "A page outside the sitemap's directory (the protocol's rule), when the host's robots.txt does not declare"
    " the sitemap or an index above it.",
    P,
)
RELATIVE_URL = Rule("relative-url", E, "location", "A <loc> (or a text sitemap's line) that is not an absolute URL.", P)
URL_FRAGMENT = Rule("url-fragment", W, "location", "A URL with a #fragment (the same page for a crawler).", G)
UNESCAPED_URL = Rule(
    "unescaped-url", W, "location", "Characters that must be percent-escaped (space, quotes, <>, non-ASCII).", P
)
MIXED_SCHEME = Rule("mixed-scheme", W, "location", "An http page in an https sitemap, or the reverse.", G)
# structure
NESTED_INDEX = Rule("nested-index", E, "structure", "An index lists another index (one level is allowed).", P)
EMPTY_SITEMAP = Rule(
    "empty-sitemap", W, "structure", "A urlset, index or text sitemap with no entry (or none with a <loc>).", P
)
MISSING_LOC = Rule(
    "missing-loc",
    E,
    "structure",
    "A <url> or <sitemap> entry without a <loc> (or with an empty one): it is skipped.",
    P,
)
DUPLICATE_IN_SITEMAP = Rule("duplicate-in-sitemap", W, "structure", "The same page twice in one sitemap.", G)
DUPLICATE_ACROSS_SITEMAPS = Rule(
    "duplicate-across-sitemaps", N, "structure", "The same page in several sitemaps of a site.", G
)
BAD_NAMESPACE = Rule(
    "bad-namespace",
    E,
    "structure",
    "The root element is not in the sitemaps.org 0.9 namespace, or a prefix is not declared (xmlns:image...).",
    P,
)
NOT_UTF8 = Rule("not-utf8", E, "structure", "The document is not UTF-8 encoded.", P)
UNESCAPED_ENTITY = Rule(
    "unescaped-entity",
    E,
    "structure",
    "A bare & or <, or an entity XML does not define (&nbsp;), in a text (the parser's recover pass had to run).",
    P,
)
INVALID_DOCUMENT = Rule("invalid-document", E, "structure", "Truncated or not well-formed XML, or not a sitemap.", P)
# values
LASTMOD_FORMAT = Rule(
    "lastmod-format", E, "values", "A lastmod (or a news publication_date) that is not a W3C Datetime.", P
)
LASTMOD_FUTURE = Rule(
    "lastmod-future", W, "values", "A lastmod more than a day after the crawl (a day for time zones and clocks).", G
)
PRIORITY_RANGE = Rule("priority-range", E, "values", "A priority that is not a number from 0.0 to 1.0.", P)
CHANGEFREQ_VALUE = Rule("changefreq-value", E, "values", "A changefreq that is not one of the seven values.", P)
NEWS_TOO_OLD = Rule("news-too-old", W, "values", "A news story published more than two days ago.", G)
TOO_MANY_NEWS = Rule("too-many-news", E, "values", "More than 1,000 news URLs in one sitemap.", G)
TOO_MANY_IMAGES = Rule("too-many-images", E, "values", "More than 1,000 images for one page.", G)
HREFLANG_VALUE = Rule(
    "hreflang-value",
    E,
    "values",
    "An hreflang that is not x-default or an ISO 639-1 language, with an optional ISO 15924 script"
    " and ISO 3166-1 region (en-GB, zh-Hant-TW; not en-UK, es-419).",
    G,
)
INDEX_LASTMOD_OLDER = Rule(
    "index-lastmod-older", W, "values", "An index's lastmod for a sitemap is older than the newest lastmod in it.", G
)
HREFLANG_NOT_RECIPROCAL = Rule(
    "hreflang-not-reciprocal",
    W,
    "values",
    "Page A lists alternate B, B is in the site's sitemaps but does not list A back.",
    G,
)

# discovery
NO_SITEMAP_IN_ROBOTS = Rule(
    "no-sitemap-in-robots", W, "discovery", "robots.txt has no Sitemap: line (or there is none: it answers 4xx).", G
)
RELATIVE_SITEMAP_LINE = Rule(
    "relative-sitemap-line", E, "discovery", "A robots.txt Sitemap: line whose URL is not absolute.", P
)
SITEMAP_DISALLOWED = Rule(
    "sitemap-disallowed",
    W,
    "discovery",
    "robots.txt disallows a sitemap for the crawl's user agent.",
    Source.RFC9309,
)
PAGE_DISALLOWED = Rule(
    "page-disallowed", W, "discovery", "robots.txt disallows a listed page for the crawl's user agent.", Source.RFC9309
)
FOUND_AT_KNOWN_PATH = Rule(
    "known-path-only", N, "discovery", "A sitemap found at a well-known path, not declared in robots.txt.", G
)
HTTP_ERROR = Rule(
    "http-error", E, "discovery", "A sitemap URL answers an HTTP error, or robots.txt a server error (5xx).", G
)
DOWNLOAD_FAILED = Rule(
    "download-failed",
    E,
    "discovery",
    "A sitemap URL, or a site's robots.txt, could not be downloaded (DNS, connection, timeout, redirect limit,"
    " over the size cap).",
    G,
)
REDIRECTED = Rule("redirected", W, "discovery", "A sitemap URL redirects (list the final URL).", G)
SERVED_AS_HTML = Rule("served-as-html", W, "discovery", "A sitemap served with Content-Type text/html.", G)
GZIP_MISLABELLED = Rule(
    "gzip-mislabelled",
    W,
    "discovery",
    "gzip and the name or headers disagree: a .gz URL that is not gzip, gzip served as XML or text or gzipped twice,"
    " Content-Encoding: gzip on a body that is not gzip.",
    G,
)

RULES: tuple[Rule, ...] = (
    TOO_MANY_URLS,
    TOO_MANY_CHILDREN,
    TOO_LARGE,
    URL_TOO_LONG,
    OTHER_HOST,
    OUTSIDE_DIRECTORY,
    RELATIVE_URL,
    URL_FRAGMENT,
    UNESCAPED_URL,
    MIXED_SCHEME,
    NESTED_INDEX,
    EMPTY_SITEMAP,
    MISSING_LOC,
    DUPLICATE_IN_SITEMAP,
    DUPLICATE_ACROSS_SITEMAPS,
    BAD_NAMESPACE,
    NOT_UTF8,
    UNESCAPED_ENTITY,
    INVALID_DOCUMENT,
    LASTMOD_FORMAT,
    LASTMOD_FUTURE,
    PRIORITY_RANGE,
    CHANGEFREQ_VALUE,
    NEWS_TOO_OLD,
    TOO_MANY_NEWS,
    TOO_MANY_IMAGES,
    HREFLANG_VALUE,
    INDEX_LASTMOD_OLDER,
    HREFLANG_NOT_RECIPROCAL,
    NO_SITEMAP_IN_ROBOTS,
    RELATIVE_SITEMAP_LINE,
    SITEMAP_DISALLOWED,
    PAGE_DISALLOWED,
    FOUND_AT_KNOWN_PATH,
    HTTP_ERROR,
    DOWNLOAD_FAILED,
    REDIRECTED,
    SERVED_AS_HTML,
    GZIP_MISLABELLED,
)
RULES_BY_ID = {rule.id: rule for rule in RULES}
SEVERITY_OF = {rule.id: rule.severity.value for rule in RULES}
"""Each rule's severity as a plain string, by rule id (a finding's ``severity``; reading
``rule.severity.value`` goes through the enum's descriptor, 10 times slower)."""
SEVERITIES = tuple(severity.value for severity in Severity)
"""The severity names, worst first."""


def rules_table() -> str:
    """The Markdown rules table of docs/audit.md (a test checks the page holds it)."""
    lines = ["| id | severity | category | what it checks | source |", "|---|---|---|---|---|"]
    lines += [f"| `{r.id}` | {r.severity.value} | {r.category} | {r.doc} | {r.source.value} |" for r in RULES]
    return "\n".join(lines)
