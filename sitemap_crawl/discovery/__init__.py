"""Discovery, Scrapy-free: the rules (:mod:`.rules`) and one site's state (:mod:`.site`)."""

from sitemap_crawl.discovery.rules import (
    CHILD,
    DECLARED,
    DEPTH_LIMIT,
    KNOWN,
    LOOP,
    REFUSAL_WORDS,
    ROBOTS,
    START,
    FollowRules,
    is_optional,
    is_robots_txt,
    known_path_urls,
    robots_txt_url,
)
from sitemap_crawl.discovery.site import SiteDiscovery, Visit

__all__ = [
    "CHILD",
    "DECLARED",
    "DEPTH_LIMIT",
    "KNOWN",
    "LOOP",
    "REFUSAL_WORDS",
    "ROBOTS",
    "START",
    "FollowRules",
    "SiteDiscovery",
    "Visit",
    "is_optional",
    "is_robots_txt",
    "known_path_urls",
    "robots_txt_url",
]
