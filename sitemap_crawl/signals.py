"""Signals of sitemap_crawl.

``sitemap_node``: sent by the ``sitemaps`` spider for each tree report, with
``node`` (a :class:`~sitemap_crawl.items.NodeReport`). The tree extension
listens to it. Tree reports are signals rather than items so that they never
reach a feed and cost no item-pipeline round trip (dropping them as items
raised an exception per report, whose traceback kept the response alive).
"""

sitemap_node = object()
