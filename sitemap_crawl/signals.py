"""Signals of sitemap_crawl.

``sitemap_node``: sent by the ``sitemaps`` spider for each tree report, with
``node`` (a :class:`~sitemap_crawl.items.NodeReport`) and ``site`` (the website
URL of the tree it belongs to). The tree extension listens to it. Tree reports are
signals rather than items so that they never reach a feed and cost no item-pipeline
round trip (dropping them as items raised an exception per report, whose traceback
kept the response alive).

``site_finished``: sent when a site has nothing left to fetch, with ``site`` and
``unreachable`` (why the site could not be reached, or None): its tree is complete.
In a queue run it is sent once the site's pages are in the feed, with ``attempt``
(the name of this attempt at the site, which its tree line records).

``site_acknowledged``: a queue run only: the server answered a site's acknowledgement,
with ``site`` and ``acknowledged`` (False: another attempt holds the site). The history
writes what it staged for the site on True, and drops it on False.

``site_tree``: sent by the tree extension once a site's tree is complete (on
``site_finished``, or at spider close for a site stopped early), with ``site`` and
``tree`` (the closed :class:`~sitemap_crawl.tree.SitemapTree`, no longer changed):
the audit's report draws it, so the tree is built in one place.

``sitemap_response``: sent by the ``sitemaps`` spider for each sitemap and robots.txt
response it handles, once it knows what it does with it, with ``response``,
``visit`` (the :class:`~sitemap_crawl.discovery.site.Visit` it answers) and ``left_out``
(True: a redirect the discovery does not follow, whose body is not read: a loop, a URL
already read, a well-known path that leads to a sitemap read under another URL). The audit
listens to it, so that it audits what the crawl reads, as the tree shows it.

``sitemap_failure``: sent by the ``sitemaps`` spider for each sitemap and robots.txt
request that brought no response to read (its errback: DNS, connection, timeout, redirect
limit, robots.txt forbidding it...), with ``visit``, ``reason`` (as the tree says it) and
``url`` (the URL asked last: after redirects, the one that failed). The audit's
``download-failed`` comes from it.
"""

sitemap_node = object()
site_finished = object()
site_acknowledged = object()
site_tree = object()
sitemap_response = object()
sitemap_failure = object()
