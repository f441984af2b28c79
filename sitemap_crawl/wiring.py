"""Adding sitemap_crawl's extensions, downloader middleware and feed exporters to a crawler's
settings (and its page adapter to itemadapter)."""

from __future__ import annotations

from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings

from sitemap_crawl.exporters import EXPORTERS
from sitemap_crawl.item_adapter import register_page_adapter

TREE_EXTENSION = "sitemap_crawl.extensions.tree.SitemapTreeExtension"
TREE_EXTENSION_ORDER = 100
AUDIT_EXTENSION = "sitemap_crawl.extensions.audit.SitemapAuditExtension"
"""Off (NotConfigured) unless SITEMAP_CRAWL_AUDIT_FILE or SITEMAP_CRAWL_REPORT_FILE is set."""
TREE_PIPELINE = "sitemap_crawl.pipelines.SitemapTreePipeline"
"""The former tree pipeline: a project may still list it in ITEM_PIPELINES (it shares the extension)."""


def add_sitemap_crawl_components(settings: BaseSettings, priority: int | str = "addon") -> None:
    """Enable the tree and audit extensions, the unreachable-host middleware and the
    page-aware feed exporters.

    Nothing the project already configured is replaced: an extension already
    listed keeps its order, a feed format the project mapped to its own
    exporter keeps it. Page items get their itemadapter adapter (:mod:`sitemap_crawl.item_adapter`).
    """
    register_page_adapter()
    from sitemap_crawl.extensions.tree import SitemapTreeExtension

    settings.setdefault_in_component_priority_dict("EXTENSIONS", SitemapTreeExtension, TREE_EXTENSION_ORDER)
    add_audit_extension(settings, priority)
    add_sitemap_request_middlewares(settings, priority)
    exporters = settings.getdict("FEED_EXPORTERS")
    changed = False
    for feed_format, exporter in EXPORTERS.items():
        if feed_format not in exporters:
            exporters[feed_format] = f"{exporter.__module__}.{exporter.__qualname__}"
            changed = True
    if changed:
        settings.set("FEED_EXPORTERS", exporters, settings.getpriority("FEED_EXPORTERS") or 0)
    _raise_priority(settings, "FEED_EXPORTERS", priority)


def add_audit_extension(settings: BaseSettings, priority: int | str) -> None:
    """Enable the audit extension (off unless its files are set; with a spider other than
    the ``sitemaps`` spider it only says that nothing is audited)."""
    from sitemap_crawl.extensions.audit import SitemapAuditExtension

    settings.setdefault_in_component_priority_dict("EXTENSIONS", SitemapAuditExtension, TREE_EXTENSION_ORDER + 1)
    _raise_priority(settings, "EXTENSIONS", priority)


def add_sitemap_request_middlewares(settings: BaseSettings, priority: int | str) -> None:
    """Enable the downloader middlewares of sitemap requests: no retry of one whose host cannot
    be reached, a redirected one in the download slot of the host it goes to, and a local file
    over the download cap not read; a history run's validators sent to the URL they came from."""
    from sitemap_crawl.history.conditional import CONDITIONAL_MIDDLEWARE_ORDER, ConditionalHeadersMiddleware
    from sitemap_crawl.local_files import LOCAL_FILE_MIDDLEWARE_ORDER, LocalFileSizeMiddleware
    from sitemap_crawl.redirect_slots import REDIRECT_SLOT_MIDDLEWARE_ORDER, RedirectSlotMiddleware
    from sitemap_crawl.unreachable import UNREACHABLE_MIDDLEWARE_ORDER, UnreachableHostMiddleware

    settings.setdefault_in_component_priority_dict(
        "DOWNLOADER_MIDDLEWARES", UnreachableHostMiddleware, UNREACHABLE_MIDDLEWARE_ORDER
    )
    settings.setdefault_in_component_priority_dict(
        "DOWNLOADER_MIDDLEWARES", RedirectSlotMiddleware, REDIRECT_SLOT_MIDDLEWARE_ORDER
    )
    settings.setdefault_in_component_priority_dict(
        "DOWNLOADER_MIDDLEWARES", LocalFileSizeMiddleware, LOCAL_FILE_MIDDLEWARE_ORDER
    )
    settings.setdefault_in_component_priority_dict(
        "DOWNLOADER_MIDDLEWARES", ConditionalHeadersMiddleware, CONDITIONAL_MIDDLEWARE_ORDER
    )
    _raise_priority(settings, "DOWNLOADER_MIDDLEWARES", priority)


def _raise_priority(settings: BaseSettings, name: str, priority: int | str) -> None:
    """Keep a dict setting we extended from being replaced by the copy it was made from.

    (``scrapy crawl`` merges the runner's settings into a crawler's at their own
    priority after the spider's update_settings: at the same priority they replace what
    it added. A project or command line that set the dict (``-s EXTENSIONS=...``, priority
    40) would so drop the tree extension: ours, which holds theirs, goes one above.)
    """
    wanted = priority if isinstance(priority, int) else SETTINGS_PRIORITIES[priority]
    current = settings.getpriority(name) or 0
    if current < wanted:
        settings.set(name, settings.getdict(name), wanted)
    elif settings.get(name):  # set by the project or the command line: theirs, and ours added
        settings.set(name, settings.getdict(name), current + 1)
