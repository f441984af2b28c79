"""Streaming XML sitemap reading: urlset, sitemapindex, RSS 2.0 and Atom 0.3/1.0.

The document is fed to lxml's XMLPullParser chunk by chunk; each entry element
(``url``, ``sitemap``, ``item``, ``entry``, in any namespace or none) is turned
into a page or a sub-sitemap reference as soon as it ends, then freed, so a
large sitemap never becomes a whole tree in memory. Entities are never resolved,
no DTD is loaded and nothing is fetched.

- :mod:`.document`: the reader of one document (its root, its entries, where it broke off);
- :mod:`.input`: the bytes as libxml2's push parser can read them (UTF-16/32 starts, leading space);
- :mod:`.recover`: a malformed document read again in recover mode, its stray ``&`` and ``<`` escaped;
- :mod:`.entities`: documents with a DTD (entity references kept as written, never expanded);
- :mod:`.sitemap_entries`: ``<url>`` and ``<sitemap>`` entries, as raw texts and as items;
- :mod:`.feed_entries`: RSS items and Atom entries;
- :mod:`.libxml`: how lxml is driven (the parsers, tag names, the error log, freeing elements).
"""
