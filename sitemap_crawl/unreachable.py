"""No retries for a sitemap request whose host cannot be reached at all.

Scrapy's RetryMiddleware retries a failed DNS lookup or a refused connection twice and
then logs ``Gave up retrying`` as an ERROR: for a mistyped or dead homepage in a list of
thousands, three requests and an ERROR line per probe, for an answer that does not
change within a second. The ``sitemaps`` spider reports such a site once, as
unreachable (a WARNING naming it, the website node's error); this middleware, placed
just after RetryMiddleware, marks those requests ``dont_retry``. Timeouts and TLS errors
are still retried (they can be passing trouble).
"""

from __future__ import annotations

from scrapy import Request

from sitemap_crawl.discovery.rules import HOST_DOWN_REASONS
from sitemap_crawl.discovery.site import is_sitemap_meta
from sitemap_crawl.failures import failure_reason

UNREACHABLE_MIDDLEWARE_ORDER = 560
"""After RetryMiddleware (550): Scrapy calls process_exception from the highest order down."""


class UnreachableHostMiddleware:
    """Marks a sitemap request (of the ``sitemaps`` spider, or of a SitemapRequestLoader)
    that failed to reach its host ``dont_retry``."""

    def process_exception(self, request: Request, exception: Exception) -> None:
        meta = request.meta
        if is_sitemap_meta(meta) and failure_reason(exception) in HOST_DOWN_REASONS:  # (the host is down)
            request.meta["dont_retry"] = True
