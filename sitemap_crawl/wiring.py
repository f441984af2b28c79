"""Adding sitemap_crawl's extensions, downloader middleware and feed exporters to a crawler's
settings (and its page adapter to itemadapter)."""

from __future__ import annotations

from collections.abc import Iterable

from scrapy.settings import BaseSettings

from sitemap_crawl.exporters import EXPORTERS
from sitemap_crawl.item_adapter import register_page_adapter

TREE_EXTENSION = "sitemap_crawl.extensions.tree.SitemapTreeExtension"
TREE_EXTENSION_ORDER = 100
AUDIT_EXTENSION = "sitemap_crawl.extensions.audit.SitemapAuditExtension"
"""Off (NotConfigured) unless SITEMAP_CRAWL_AUDIT_FILE or SITEMAP_CRAWL_REPORT_FILE is set."""
TREE_PIPELINE = "sitemap_crawl.pipelines.SitemapTreePipeline"
"""The former tree pipeline: a project may still list it in ITEM_PIPELINES (it shares the extension)."""


def add_sitemap_crawl_components(settings: BaseSettings) -> None:
    """Enable the tree and audit extensions, the sitemap requests' downloader middlewares and
    the page-aware feed exporters.

    Nothing the project already configured is replaced: an extension already
    listed keeps its order, a feed format the project mapped to its own
    exporter keeps it. Page items get their itemadapter adapter (:mod:`sitemap_crawl.item_adapter`).
    """
    register_page_adapter()
    from sitemap_crawl.extensions.tree import SitemapTreeExtension

    settings.setdefault_in_component_priority_dict("EXTENSIONS", SitemapTreeExtension, TREE_EXTENSION_ORDER)
    add_audit_extension(settings)
    add_sitemap_request_middlewares(settings)
    exporters = settings.getdict("FEED_EXPORTERS")
    missing = {
        name: f"{exporter.__module__}.{exporter.__qualname__}"
        for name, exporter in EXPORTERS.items()
        if name not in exporters
    }
    if missing:  # (at the priority it has, as setdefault_in_component_priority_dict sets)
        settings.set("FEED_EXPORTERS", {**exporters, **missing}, settings.getpriority("FEED_EXPORTERS") or 0)


def add_audit_extension(settings: BaseSettings) -> None:
    """Enable the audit extension (off unless its files are set; with a spider other than
    the ``sitemaps`` spider it only says that nothing is audited)."""
    from sitemap_crawl.extensions.audit import SitemapAuditExtension

    settings.setdefault_in_component_priority_dict("EXTENSIONS", SitemapAuditExtension, TREE_EXTENSION_ORDER + 1)


def add_sitemap_request_middlewares(settings: BaseSettings) -> None:
    """Enable the downloader middlewares of sitemap requests: no retry of one whose host cannot
    be reached, a redirected one in the download slot of the host it goes to, a local file
    over the download cap not read; a history run's validators sent to the URL they came from."""
    from sitemap_crawl.history.conditional import CONDITIONAL_MIDDLEWARE_ORDER, ConditionalHeadersMiddleware
    from sitemap_crawl.local_files import LOCAL_FILE_MIDDLEWARE_ORDER, LocalFileSizeMiddleware
    from sitemap_crawl.redirect_slots import REDIRECT_SLOT_MIDDLEWARE_ORDER, RedirectSlotMiddleware
    from sitemap_crawl.unreachable import UNREACHABLE_MIDDLEWARE_ORDER, UnreachableHostMiddleware

    for middleware, order in (
        (UnreachableHostMiddleware, UNREACHABLE_MIDDLEWARE_ORDER),
        (RedirectSlotMiddleware, REDIRECT_SLOT_MIDDLEWARE_ORDER),
        (LocalFileSizeMiddleware, LOCAL_FILE_MIDDLEWARE_ORDER),
        (ConditionalHeadersMiddleware, CONDITIONAL_MIDDLEWARE_ORDER),
    ):
        settings.setdefault_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", middleware, order)


def keep_over_the_runners_copy(settings: BaseSettings, names: Iterable[str]) -> None:
    """For a spider's ``update_settings``: keep the dict settings it extended from being
    replaced by the runner's copy of them.

    ``scrapy crawl`` makes the crawler (the spider's ``update_settings`` runs then), and
    passes it to ``CrawlerProcess.crawl``, which merges the runner's settings into it again
    at their own priorities: at the same priority they replace what the spider added (the
    tree extension was gone). One above the runner's priority is enough: a higher one, such
    as the spider priority, would silently drop what an add-on (loaded later, at the add-on
    priority) sets whole in the same setting.
    """
    for name in names:
        settings.set(name, settings.getdict(name), (settings.getpriority(name) or 0) + 1)
