"""Many sites in one run: reading a list of homepages, and politeness per host."""

from sitemap_crawl.sites.homepages import HomepageList, site_key
from sitemap_crawl.sites.hosts import HostGate, host_of

__all__ = ["HomepageList", "HostGate", "host_of", "site_key"]
