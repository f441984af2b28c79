"""An extension for tests: on every sitemap failure, counts the frames of Scrapy's
decompression still alive (without collecting anything) into the stat FRAMES_STAT, the
most seen at once. A frame alive there still holds what it had inflated."""

from __future__ import annotations

import gc
import types

from scrapy.crawler import Crawler

from sitemap_crawl.signals import sitemap_failure

FRAMES_STAT = "test/decompression_frames_alive_max"
_DECOMPRESSION_FILES = ("scrapy/utils/gz.py", "scrapy/utils/_compression.py")


class DecompressionFrames:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        crawler.signals.connect(self.counted, signal=sitemap_failure)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DecompressionFrames:
        return cls(crawler)

    def counted(self, **_kwargs: object) -> None:
        alive = sum(
            1
            for thing in gc.get_objects()
            if isinstance(thing, types.FrameType) and thing.f_code.co_filename.endswith(_DECOMPRESSION_FILES)
        )
        assert self.crawler.stats is not None
        self.crawler.stats.max_value(FRAMES_STAT, alive)
