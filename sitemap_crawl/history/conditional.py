"""A sitemap's stored validators go to the URL that answered with them, and to no other.

A history run asks a sitemap again with the ``ETag`` / ``Last-Modified`` it was last
answered with (``If-None-Match`` / ``If-Modified-Since``). When the sitemap's URL redirected,
those came from the URL at the end of the redirects; Scrapy's RedirectMiddleware copies a
request's headers to every request it makes for a new location. Were the redirect changed
to another file, that file would be asked with the validators of the first one, and a 304
for it (the same ``Last-Modified``, an older file) would keep the sitemap "unchanged" while
its pages changed. The spider puts the validators in the request's meta with the URL they
came from; this middleware sets them on a request for that URL and takes them off any other
(the first request too, when the URL redirected last time).
"""

from __future__ import annotations

from scrapy import Request

from sitemap_crawl.names import CONDITIONAL_META_KEY
from sitemap_crawl.parsing.fields import same_url_key

CONDITIONAL_MIDDLEWARE_ORDER = 585
"""Any order would do: it only sets request headers before the request is sent."""


class ConditionalHeadersMiddleware:
    """Puts a sitemap's stored validators on the request for the URL that gave them only."""

    def process_request(self, request: Request) -> None:
        conditional = request.meta.get(CONDITIONAL_META_KEY)
        if conditional is None:
            return
        validated_url, headers = conditional
        if same_url_key(request.url) == validated_url:
            for name, value in headers.items():
                request.headers[name] = value
        else:
            for name in headers:
                request.headers.pop(name, None)


VALIDATOR_HEADERS = (b"If-None-Match", b"If-Modified-Since")


def asked_conditionally(request: Request | None) -> bool:
    """Whether ``request`` carried a validator: only then does a 304 say "not modified" (one
    to a request without is an HTTP error: a history run with the audit on asks without)."""
    return request is not None and any(name in request.headers for name in VALIDATOR_HEADERS)
