"""Discovery, Scrapy-free: the rules (:mod:`.rules`) and one site's state (:mod:`.site`)."""

from sitemap_crawl.discovery.rules import (
    ALWAYS,
    CHILD,
    DEPTH_LIMIT,
    FALLBACK,
    KNOWN,
    KNOWN_PATHS_MODES,
    LOOP,
    REFUSAL_WORDS,
    ROBOTS,
    START,
    UNREACHABLE_REASONS,
    FollowRules,
    is_left_out,
    is_optional,
    is_robots_txt,
    known_path_urls,
    robots_txt_url,
)
from sitemap_crawl.discovery.site import SiteDiscovery, Visit

__all__ = [
    "ALWAYS",
    "CHILD",
    "DEPTH_LIMIT",
    "FALLBACK",
    "KNOWN",
    "KNOWN_PATHS_MODES",
    "LOOP",
    "REFUSAL_WORDS",
    "ROBOTS",
    "START",
    "UNREACHABLE_REASONS",
    "FollowRules",
    "SiteDiscovery",
    "Visit",
    "is_left_out",
    "is_optional",
    "is_robots_txt",
    "known_path_urls",
    "robots_txt_url",
]
