"""A local sitemap (a ``file:`` URL) over the download cap is not read.

Scrapy's file download handler reads a whole file into memory: the download cap
(``download_maxsize``, which the ``sitemaps`` spider sets on its sitemap requests) was only
applied to the body after it was in memory (a 600 MB file: 698 MB of RSS, then ``size
limit``). This middleware looks at the file's size first, and refuses a file that is not a
regular one (a device or a pipe, which may never end).
"""

from __future__ import annotations

import os
import stat

from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from w3lib.url import file_uri_to_path

from sitemap_crawl.discovery.site import is_sitemap_meta

LOCAL_FILE_MIDDLEWARE_ORDER = 580
"""Any order would do: it only looks at requests for ``file:`` URLs before they are sent."""


class LocalFileSizeMiddleware:
    """Refuses a local sitemap request whose file is over its download cap, or not a file."""

    def process_request(self, request: Request) -> None:
        if not request.url.startswith("file:") or not is_sitemap_meta(request.meta):
            return
        path = file_uri_to_path(request.url)
        try:
            status = os.stat(path)
        except OSError:
            return  # (Scrapy's handler says what is wrong with it)
        if not stat.S_ISREG(status.st_mode):
            raise IgnoreRequest(f"{path} is not a regular file: not read")
        cap = int(request.meta.get("download_maxsize") or 0)
        if cap and status.st_size > cap:
            raise IgnoreRequest(
                f"{path} is {status.st_size} bytes, over the download cap of {cap} bytes "
                "(DOWNLOAD_MAXSIZE / SITEMAP_CRAWL_MAX_SIZE): not read"
            )
