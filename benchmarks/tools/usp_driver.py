"""ultimate-sitemap-parser driver for the benchmark (run with benchmarks/.work/venv-usp).

Usage: python usp_driver.py HOMEPAGE_URL OUT_FILE

Calls ``usp.tree.sitemap_tree_for_homepage(homepage)`` with its defaults (robots.txt
plus the well-known paths, requests-based web client, no wait between requests),
then walks ``tree.all_pages()`` and writes one page URL per line.  USP builds the
whole tree before returning (pages of each sitemap are pickled to temporary files
and loaded back by ``all_pages()``), so the output is written only at the end.
"""

from __future__ import annotations

import sys
import time

from usp.tree import sitemap_tree_for_homepage


def main() -> int:
    homepage, out = sys.argv[1], sys.argv[2]
    t0 = time.perf_counter()
    tree = sitemap_tree_for_homepage(homepage)
    t1 = time.perf_counter()
    n = 0
    with open(out, "w", encoding="utf-8") as f:
        for page in tree.all_pages():
            f.write(page.url + "\n")
            n += 1
    t2 = time.perf_counter()
    sitemaps = sum(1 for _ in tree.all_sitemaps())
    print(
        f"usp: {n} pages from {sitemaps} sitemaps; tree {t1 - t0:.2f} s, writing {t2 - t1:.2f} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
