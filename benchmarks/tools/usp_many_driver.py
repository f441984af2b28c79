"""ultimate-sitemap-parser over many sites, as a user would write it: a thread pool
calling ``sitemap_tree_for_homepage`` for each homepage (run with the USP virtualenv).

Usage: python usp_many_driver.py HOMEPAGES_FILE OUT_FILE THREADS

Host names ending in ``.test`` resolve to 127.0.0.1 (the benchmark's fleet server);
every other name fails as a DNS error would, and nothing reaches the network. Writes
one ``website<TAB>page URL`` line per page, site by site as each tree is done.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

_real_getaddrinfo = socket.getaddrinfo


def _loopback_getaddrinfo(host, *args, **kwargs):  # type: ignore[no-untyped-def]
    name = host.decode() if isinstance(host, bytes) else str(host)
    if name.endswith(".test"):
        return _real_getaddrinfo("127.0.0.1", *args, **kwargs)
    if name in ("127.0.0.1", "localhost"):
        return _real_getaddrinfo(host, *args, **kwargs)
    raise socket.gaierror(socket.EAI_NONAME, f"{name} is not a test host name")


socket.getaddrinfo = _loopback_getaddrinfo

from usp.tree import sitemap_tree_for_homepage  # noqa: E402


def main() -> int:
    homepages_file, out, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open(homepages_file, encoding="utf-8") as f:
        homepages = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    lock = threading.Lock()
    t0 = time.perf_counter()
    counts = {"pages": 0, "sites": 0, "errors": 0}
    with open(out, "w", encoding="utf-8") as sink:

        def map_site(homepage: str) -> None:
            try:
                tree = sitemap_tree_for_homepage(homepage)
                lines = [f"{homepage}\t{page.url}\n" for page in tree.all_pages()]
            except Exception as exc:  # a site's failure is counted, the run goes on
                with lock:
                    counts["errors"] += 1
                print(f"usp: {homepage}: {exc!r}", file=sys.stderr)
                return
            with lock:
                sink.writelines(lines)
                counts["pages"] += len(lines)
                counts["sites"] += 1

        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(map_site, homepages))
    print(
        f"usp x{threads}: {counts['sites']} sites, {counts['pages']} pages, {counts['errors']} errors "
        f"in {time.perf_counter() - t0:.1f} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
