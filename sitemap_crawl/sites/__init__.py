"""Many sites in one run: reading a list of homepages, and politeness per host."""

from sitemap_crawl.sites.homepages import HomepageList, site_key
from sitemap_crawl.sites.hosts import HostGate, SlotLimits, host_of
from sitemap_crawl.sites.shard import Shard

__all__ = ["HomepageList", "HostGate", "Shard", "SlotLimits", "host_of", "site_key"]
