"""Former name of :mod:`sitemap_crawl.settings_reader` (the defaults are :mod:`sitemap_crawl.default_settings`)."""

from sitemap_crawl.settings_reader import DEFAULT_KNOWN_PATHS, DEFAULTS, SETTINGS, SettingsReader

__all__ = ["DEFAULTS", "DEFAULT_KNOWN_PATHS", "SETTINGS", "SettingsReader"]
