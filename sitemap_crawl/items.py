"""Items: the page record the feeds receive, page batches, and tree nodes.

Plain dataclasses (itemadapter handles them); nothing here imports Scrapy, so the
pure parsers can build these objects too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
        return {
            "title": self.title,
            "publish_date": self.publish_date,
            "publication_name": self.publication_name,
            "publication_language": self.publication_language,
            "access": self.access,
            "genres": list(self.genres),
            "keywords": list(self.keywords),
            "stock_tickers": list(self.stock_tickers),
        }


@dataclass(slots=True)
class Image:
    """One image:image of a page."""

    loc: str
    caption: str | None = None
    title: str | None = None
    geo_location: str | None = None
    license: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "loc": self.loc,
            "caption": self.caption,
            "title": self.title,
            "geo_location": self.geo_location,
            "license": self.license,
        }


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
        return {
            "thumbnail_loc": self.thumbnail_loc,
            "title": self.title,
            "description": self.description,
            "content_loc": self.content_loc,
            "player_loc": self.player_loc,
            "duration": self.duration,
            "publication_date": self.publication_date,
            "family_friendly": self.family_friendly,
            "tags": list(self.tags),
        }


@dataclass(slots=True)
class Alternate:
    """One hreflang alternate (xhtml:link rel="alternate") of a page."""

    hreflang: str | None
    href: str

    def to_dict(self) -> dict[str, Any]:
        return {"hreflang": self.hreflang, "href": self.href}


PAGE_FIELDS: tuple[str, ...] = (
    "url",
    "sitemap_url",
    "priority",
    "last_modified",
    "change_frequency",
    "news",
    "images",
    "videos",
    "alternates",
    "website",
)
"""Field names of a page item, in the order the feeds write them."""

NESTED_PAGE_FIELDS: frozenset[str] = frozenset({"news", "images", "videos", "alternates"})


@dataclass(slots=True)
class SitemapPage:
    """One page occurrence declared by a sitemap: the item the feeds receive."""

    url: str
    sitemap_url: str
    priority: float = 0.5
    last_modified: str | None = None
    change_frequency: str | None = None
    news: NewsStory | None = None
    images: list[Image] = field(default_factory=list)
    videos: list[Video] = field(default_factory=list)
    alternates: list[Alternate] = field(default_factory=list)
    website: str | None = None
    """The root URL of the site being mapped (the tree's website node); set by the spider."""

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict in field order (what JSON feeds write)."""
        return {
            "url": self.url,
            "sitemap_url": self.sitemap_url,
            "priority": self.priority,
            "last_modified": self.last_modified,
            "change_frequency": self.change_frequency,
            "news": self.news.to_dict() if self.news is not None else None,
            "images": [image.to_dict() for image in self.images],
            "videos": [video.to_dict() for video in self.videos],
            "alternates": [alternate.to_dict() for alternate in self.alternates],
            "website": self.website,
        }


@dataclass(slots=True)
class SitemapRef:
    """A sub-sitemap declared by an index or by robots.txt."""

    url: str
    last_modified: str | None = None


@dataclass(slots=True)
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
class SitemapNodeItem:
    """What the spider tells the tree pipeline about one node of the tree.

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
