"""A list of homepages (``-a homepages_file=sites.txt``), read lazily, each site once.

One homepage per line; blank lines and lines starting with ``#`` are skipped. A line
that is not an http(s) URL is reported (its number and why) and skipped. Homepages
that reduce to the same site (scheme://host[:port]/ after normalisation, or the same
URL when homepages are kept as given) are mapped once. The file is read as the run
takes sites from it: a file of a million lines costs no memory up front; what grows
is the set of sites already seen (one 8-byte digest each).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from sitemap_crawl.arguments import BadHomepage, SpiderArgumentError, parse_homepage
from sitemap_crawl.sites.hosts import host_of
from sitemap_crawl.sites.shard import Shard

logger = logging.getLogger(__name__)


def site_key(homepage: str) -> int:
    """A compact identity of a (normalised) homepage, for the set of sites already seen."""
    return int.from_bytes(hashlib.blake2b(homepage.encode("utf-8"), digest_size=8).digest(), "big")


class HomepageList:
    """The homepages of a list, normalised and without repeats, in file order.

    Iterating reads the lines as they are needed; ``skipped`` and ``repeated`` count
    the bad lines and the homepages already seen. With a ``shard``, only the homepages
    whose host falls in that share are given (bad lines are reported by share 0 only).
    ``stop``, asked before each line, ends the reading when it says so (Ctrl-C).
    """

    def __init__(
        self,
        lines: Iterable[str],
        source: str,
        normalize: bool = True,
        shard: Shard | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> None:
        self.source = source
        self.stop = stop
        self.shard = shard or Shard(0, 1)
        self.normalize = normalize
        self.skipped = 0
        self.repeated = 0
        self.taken = 0
        self.usable = 0
        """Lines that are homepages, in every share (repeats too)."""
        self._lines = lines
        self._seen: set[int] = set()

    @classmethod
    def from_file(
        cls,
        path: str | Path,
        normalize: bool = True,
        shard: Shard | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> HomepageList:
        """The list in a UTF-8 text file; SpiderArgumentError when it cannot be opened."""
        file_path = Path(path)
        try:
            handle = file_path.open(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise SpiderArgumentError(f"homepages_file={str(path)!r} cannot be read: {exc.strerror or exc}") from None
        return cls(_closing_lines(handle), str(path), normalize, shard, stop)

    def __iter__(self) -> Iterator[str]:
        stop = self.stop
        for number, raw in enumerate(self._lines, start=1):
            if stop is not None and stop():
                return
            text = raw.strip().lstrip("\ufeff")
            if not text or text.startswith("#"):
                continue
            try:
                homepage = parse_homepage(text, self.normalize)
            except BadHomepage as exc:
                self.skipped += 1
                if self.shard.index:
                    continue
                logger.error("%s line %d: %r %s; skipped", self.source, number, text[:200], exc.problem)
                continue
            self.usable += 1
            if not self.shard.holds(host_of(homepage)):
                continue
            key = site_key(homepage)
            if key in self._seen:
                self.repeated += 1
                logger.debug("%s line %d: %s was listed before; mapped once", self.source, number, homepage)
                continue
            self._seen.add(key)
            self.taken += 1
            yield homepage


def _closing_lines(handle: Iterable[str]) -> Iterator[str]:
    with handle:  # type: ignore[attr-defined]
        yield from handle
