"""A share of the sites of a many-site run, for a run split across processes."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


def host_key(host: str) -> int:
    """A stable number for a host name (the same in every process)."""
    return int.from_bytes(hashlib.blake2b(host.lower().encode("utf-8"), digest_size=8).digest(), "big")


@dataclass(frozen=True)
class Shard:
    """Share ``index`` of ``count``: the sites whose host name falls in it."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"1/2"`` -> Shard(1, 2); ValueError when it is not ``index/count`` with index < count."""
        index, _, count = str(text).partition("/")
        shard = cls(int(index), int(count))
        if not 0 <= shard.index < shard.count:
            raise ValueError(f"bad shard {text!r}")
        return shard

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def holds(self, host: str) -> bool:
        """Whether the sites of ``host`` belong to this share."""
        return self.count == 1 or host_key(host) % self.count == self.index
