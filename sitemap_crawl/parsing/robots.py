"""robots.txt: the ``Sitemap:`` lines, in every spelling real files use."""

from __future__ import annotations

import codecs
import re
from urllib.parse import urljoin, urlsplit

_DIRECTIVE = re.compile(r"^[\s\ufeff]*(?:ï»¿)?[\s\ufeff]*sitemaps?\s*:(.*)$", re.IGNORECASE)
_VALUE_JUNK = " \t\xa0\u200b\ufeffÂ"
_HOST_LIKE = re.compile(r"^[\w-]+(?:\.[\w-]+)*\.([a-z]{2,})(?::\d+)?/", re.IGNORECASE)
_FILE_EXTENSIONS = frozenset({"xml", "gz", "txt", "php", "html", "htm", "asp", "aspx", "jsp", "cgi", "rss"})
_BARE_URL = re.compile(r"^https?://\S+$", re.IGNORECASE)


def decode_robots(body: bytes) -> str:
    """robots.txt bytes as text: UTF-8/16/32 by BOM, else UTF-8 with replacement."""
    for bom, encoding in (
        (codecs.BOM_UTF32_LE, "utf-32"),
        (codecs.BOM_UTF32_BE, "utf-32"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if body.startswith(bom):
            return body.decode(encoding, "replace")
    return body.decode("utf-8", "replace").removeprefix("\ufeff")


def looks_like_html(text: str) -> bool:
    """True when a robots.txt body is really an HTML (or XML) document."""
    return text.lstrip("\ufeff \t\r\n").startswith("<")


def sitemap_urls_from_robots(text: str, robots_url: str) -> list[str]:
    """Absolute sitemap URLs declared in a robots.txt, in file order, without duplicates.

    Accepts ``Sitemap:``/``sitemap:``/``SITEMAP:``/``Sitemaps:``, spaces before or
    after the colon, BOMs and stray non-breaking spaces, CR, LF or CRLF line
    breaks, and trailing ``# comments``. Relative values are resolved against
    ``robots_url``; a value that starts with a host name (``www.example.org/x``)
    gets the scheme of robots.txt. An empty directive takes the bare URL lines
    right after it.
    """
    found: list[str] = []
    seen: set[str] = set()
    taking_bare_urls = False
    for raw_line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
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
        if not value:
            continue
        url = _absolute(value.split()[0], robots_url)
        if url is not None and url not in seen:
            seen.add(url)
            found.append(url)
    return found


def _absolute(value: str, robots_url: str) -> str | None:
    lowered = value.lower()
    if lowered.startswith(("http://", "https://")):
        scheme, _, rest = value.partition(":")
        return scheme.lower() + ":" + rest
    if "://" in value:
        return None
    host_like = _HOST_LIKE.match(value)
    if host_like is not None and host_like.group(1).lower() not in _FILE_EXTENSIONS:
        return f"{urlsplit(robots_url).scheme}://{value}"
    resolved = urljoin(robots_url, value)
    return resolved if resolved.startswith(("http://", "https://")) else None
