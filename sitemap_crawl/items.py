"""Items: the page record the feeds receive, page batches, and tree node reports.

Plain dataclasses (itemadapter handles them); nothing here imports Scrapy, so the
pure parsers can build these objects too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sitemap_crawl.records import CONDITIONAL_KEY, MISSING_KEY, RecordCodec


@dataclass(slots=True)
class NewsStory:
    """Google News extension of a page, or the title/date of an RSS/Atom entry."""

    title: str | None = None
    publish_date: str | None = None
    publication_name: str | None = None
    publication_language: str | None = None
    access: str | None = None
    genres: list[str] = field(default_factory=list)
    keywords: list[str] = field(default_factory=list)
    stock_tickers: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict in field order."""
        return NEWS_CODEC.to_dict(self)


@dataclass(slots=True)
class Image:
    """One image:image of a page."""

    loc: str
    caption: str | None = None
    title: str | None = None
    geo_location: str | None = None
    license: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain dict in field order."""
        return IMAGE_CODEC.to_dict(self)


@dataclass(slots=True)
class Video:
    """One video:video of a page."""

    thumbnail_loc: str | None = None
    title: str | None = None
    description: str | None = None
    content_loc: str | None = None
    player_loc: str | None = None
    duration: int | None = None
    publication_date: str | None = None
    family_friendly: bool | None = None
    tags: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict in field order."""
        return VIDEO_CODEC.to_dict(self)


@dataclass(slots=True)
class Alternate:
    """One hreflang alternate (xhtml:link rel="alternate") of a page."""

    hreflang: str | None
    href: str

    def to_dict(self) -> dict[str, Any]:
        """Plain dict in field order."""
        return ALTERNATE_CODEC.to_dict(self)


@dataclass(slots=True, weakref_slot=True)
class SitemapPage:
    """One page occurrence declared by a sitemap: the item the feeds receive."""

    url: str
    sitemap_url: str = field(metadata={MISSING_KEY: ""})  # a saved page without it gets ""
    priority: float = 0.5
    last_modified: str | None = None
    change_frequency: str | None = None
    news: NewsStory | None = None
    images: list[Image] = field(default_factory=list)
    videos: list[Video] = field(default_factory=list)
    alternates: list[Alternate] = field(default_factory=list)
    website: str | None = None
    """The root URL of the site being mapped (the tree's website node); set by the spider."""
    attempt: str | None = field(default=None, metadata={CONDITIONAL_KEY: True})
    """Queue runs only (``-a queue=``): the attempt at the site that wrote this row, named by
    the site's tree line when it completed (see docs/many-machines.md); left out otherwise."""
    change: str | None = field(default=None, metadata={CONDITIONAL_KEY: True})
    """History runs only (SITEMAP_CRAWL_HISTORY): ``added``, ``modified`` or ``removed`` (a
    removed page's row holds what was last known of it); left out otherwise."""

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict in field order (what JSON feeds write)."""
        return PAGE_CODEC.to_dict(self)


@dataclass(slots=True)
class SitemapRef:
    """A sub-sitemap declared by an index or by robots.txt."""

    url: str
    last_modified: str | None = None


@dataclass(slots=True, weakref_slot=True)
class PageBatch:
    """Consecutive pages of one sitemap, travelling through Scrapy as one item.

    The feed exporters of sitemap_crawl write one row per page of a batch, so a
    feed looks the same whether pages travel one by one or in batches.
    """

    sitemap_url: str
    node_path: tuple[int, ...]
    pages: list[SitemapPage]
    website: str | None = None
    """The site these pages belong to (its tree), in a many-site run."""

    def __len__(self) -> int:
        return len(self.pages)

    def __repr__(self) -> str:
        # Scrapy logs every scraped item at DEBUG level: a line per batch, not 250 pages
        first = self.pages[0].url if self.pages else None
        return f"PageBatch(sitemap_url={self.sitemap_url!r}, {len(self.pages)} pages, first={first!r})"


@dataclass(slots=True)
class NodeReport:
    """What the spider tells the tree extension about one node of the tree (by signal).

    ``path`` places the node: the indexes of its ancestors' children lists,
    from the website node (path ``()``) down. A node is sent once when its
    kind is known (``finished=False``) and once when it is done.
    """

    path: tuple[int, ...]
    url: str
    kind: str
    error: str | None = None
    page_count: int = 0
    finished: bool = True
    change: str | None = None
    """A history run only: ``unchanged`` or ``changed`` (None: not a history run, or not read)."""
    changes: int | None = None
    """A history run only: rows the sitemap exported (added + modified + removed pages)."""

    @property
    def rows(self) -> int:
        """The rows its sitemap gave the feeds (:func:`node_rows`)."""
        return node_rows(self.page_count, self.change, self.changes)


def node_rows(page_count: int | None, change: str | None, changes: int | None) -> int:
    """The rows a tree node's sitemap gave the feeds: its pages, or, in a history run (a node
    with a ``change``), the changes it exported (a history run's rows are its changes)."""
    return int((page_count if change is None else changes) or 0)


SitemapNodeItem = NodeReport
"""The former name of :class:`NodeReport` (it is a signal payload, not an item)."""

PAGE_CODEC: RecordCodec[SitemapPage] = RecordCodec(SitemapPage, context=("sitemap_url",))
"""Dict and tuple forms of a page; the tuple leaves the sitemap URL out (see :mod:`sitemap_crawl.codec`)."""
NEWS_CODEC: RecordCodec[NewsStory] = RecordCodec(NewsStory)
IMAGE_CODEC: RecordCodec[Image] = RecordCodec(Image)
VIDEO_CODEC: RecordCodec[Video] = RecordCodec(Video)
ALTERNATE_CODEC: RecordCodec[Alternate] = RecordCodec(Alternate)
REF_CODEC: RecordCodec[SitemapRef] = RecordCodec(SitemapRef)

CONDITIONAL_PAGE_FIELDS: tuple[str, ...] = PAGE_CODEC.conditional_fields
"""Page fields that only some runs fill, written after the others and only when set (``attempt``)."""
PAGE_FIELDS: tuple[str, ...] = tuple(name for name in PAGE_CODEC.fields if name not in CONDITIONAL_PAGE_FIELDS)
"""Field names of every page row, in the order the feeds write them (then the conditional fields)."""
NESTED_PAGE_FIELDS: frozenset[str] = PAGE_CODEC.nested_fields
"""Page fields holding nested records (news, images, videos, alternates)."""
