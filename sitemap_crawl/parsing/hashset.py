"""A compact set of 64-bit URL hashes: 16 to 32 bytes a URL, optionally bounded in size.

A Python set of 5 million URL strings costs hundreds of MB; this open-addressing table in an
``array('Q')`` costs 16 to 32 bytes a URL (8-byte slots, between a quarter and half of them
full: the table doubles when half full), in one block outside
Python's small-object arenas (a set of strings keeps every string alive, scattered over
the arenas, until the set goes). Two different URLs sharing a 64-bit hash is the only way
to be wrong (about one in 10^10 for a sitemap of 50,000 URLs, one in 10^6 at 5M URLs).

The hash is the interpreter's own string hash (SipHash, 64 bits; computed in C and
cached in the string): it differs from one process to the next, so a set is only ever
filled and asked in one process. Used for the per-sitemap page deduplication of the
reader and for the audit's duplicates across sitemaps.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable

_EMPTY = 0
_MASK = (1 << 64) - 1


def url_hash(url: str) -> int:
    """A non-zero 64-bit hash of ``url`` (the same for the same string in this process)."""
    return hash(url) & _MASK or 1


def url_hashes(urls: Iterable[str]) -> list[int]:
    """:func:`url_hash` of each URL."""
    mask = _MASK
    return [value & mask or 1 for value in map(hash, urls)]


class HashSet:
    """A set of non-zero 64-bit ints holding at most ``capacity`` of them."""

    def __init__(self, capacity: int = 1 << 62, initial_slots: int = 1024) -> None:
        self.capacity = capacity
        self.count = 0
        self._slots = array("Q", [_EMPTY]) * initial_slots
        self._mask = initial_slots - 1

    @property
    def full(self) -> bool:
        """Whether no more values are taken."""
        return self.count >= self.capacity

    def has(self, value: int) -> bool:
        """Whether ``value`` is held."""
        return self._slots[self._slot_of(value)] == value

    def add(self, value: int) -> bool:
        """Add ``value``; True when it was already there (False too when the set is full)."""
        index = self._slot_of(value)
        if self._slots[index] == value:
            return True
        if self.count >= self.capacity:
            return False
        self._slots[index] = value
        self.count += 1
        if self.count * 2 > len(self._slots):
            self._grow()
        return False

    def add_many(self, values: Iterable[int]) -> list[int]:
        """Add each of ``values``; the positions (in ``values``) of those already there.

        The probe of :meth:`_slot_of` written out in one loop: a batch costs half as much
        as :meth:`add` of each value (no call a value)."""
        held: list[int] = []
        slots, mask = self._slots, self._mask
        count, capacity = self.count, self.capacity
        limit = len(slots) >> 1
        for position, value in enumerate(values):
            index = value & mask
            while True:
                current = slots[index]
                if current == value:
                    held.append(position)
                    break
                if current == _EMPTY:
                    if count < capacity:
                        slots[index] = value
                        count += 1
                        if count > limit:
                            self.count = count
                            self._grow()
                            slots, mask = self._slots, self._mask
                            limit = len(slots) >> 1
                    break
                index = (index + 1) & mask
        self.count = count
        return held

    def _slot_of(self, value: int) -> int:
        """The slot holding ``value``, or the empty slot where it would go (linear probing)."""
        slots, mask = self._slots, self._mask
        index = value & mask
        while True:
            held = slots[index]
            if held in (value, _EMPTY):
                return index
            index = (index + 1) & mask

    def _grow(self) -> None:
        if len(self._slots) < IN_PLACE_MIN_SLOTS:
            self._grow_by_copy()
        else:
            self._grow_in_place()

    def _grow_by_copy(self) -> None:
        """Double the table: a new one, the old one's values added to it."""
        old = self._slots
        # array * n allocates the table once (array("Q", bytes(n)) made a second, temporary copy)
        self._slots = array("Q", [_EMPTY]) * (2 * len(old))
        self._mask = len(self._slots) - 1
        self.count = 0
        self.add_many(filter(None, old))  # distinct values, half the new table at most: no growth

    def _grow_in_place(self) -> None:
        """Double the table in place: the old slots become its first half (``*= 2`` reallocates
        the block, which glibc moves without copying when it is a mapping of its own), so the
        old and the new table are never both in memory (they were: 8 + 16 MiB at a million).

        The values of the first half are then taken out slot by slot and put back where the
        doubled mask sends them. A value is only put where its probe crosses slots already
        dealt with (or the new half): one whose probe reaches a slot not yet dealt with waits
        for that slot (``waiting``), since emptying it later would cut the probe."""
        slots = self._slots
        size = len(slots)
        slots *= 2
        _clear(slots, size)
        mask = self._mask = 2 * size - 1
        waiting: dict[int, list[int]] = {}
        for index, value in zip(range(size), slots, strict=False):  # the first half only
            movers = waiting.pop(index, None) if waiting else None
            if value and value & mask != index:  # not already in its slot of the doubled table
                slots[index] = _EMPTY
                if movers is None:
                    movers = [value]
                else:
                    movers.append(value)
            elif movers is None:
                continue
            for mover in movers:
                slot = mover & mask
                while True:
                    if index < slot < size:  # a slot of the first half not dealt with yet
                        waiting.setdefault(slot, []).append(mover)
                        break
                    if slots[slot] == _EMPTY:
                        slots[slot] = mover
                        break
                    slot = (slot + 1) & mask


IN_PLACE_MIN_SLOTS = 1 << 17
"""Tables of at least this many slots (1 MiB) double in place: smaller ones are copied,
which is faster (1M to 2M slots: 100 ms copied, 140 ms in place), and what the copy holds
twice is small."""
_ZEROS = array("Q", [_EMPTY]) * 8192


def _clear(slots: array[int], start: int) -> None:
    """Empty the slots from ``start`` on, a few at a time (no table-sized temporary)."""
    end = len(slots)
    step = len(_ZEROS)
    for offset in range(start, end - step + 1, step):
        slots[offset : offset + step] = _ZEROS
    rest = (end - start) % step
    if rest:
        slots[end - rest : end] = _ZEROS[:rest]
