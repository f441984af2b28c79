"""parsing/hashset.py: the compact set of 64-bit URL hashes."""

from __future__ import annotations

import random

import pytest

from sitemap_crawl.parsing import hashset
from sitemap_crawl.parsing.hashset import HashSet, url_hash, url_hashes


@pytest.fixture(params=["copied", "in place"])
def growth(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test with this fixture runs twice: tables doubled by copy, and in place from any size."""
    if request.param == "in place":
        monkeypatch.setattr(hashset, "IN_PLACE_MIN_SLOTS", 1)
    return str(request.param)


def test_add_many_says_which_were_held_and_keeps_its_bound() -> None:
    seen = HashSet(capacity=5, initial_slots=2)
    assert seen.add_many(url_hashes(["a", "b", "a"])) == [2]
    assert seen.add_many(url_hashes(["c", "b", "d", "e", "f", "g"])) == [1]
    assert seen.count == 5  # f and g found no room
    assert not seen.has(url_hash("g"))
    assert url_hashes(["a", "b"]) == [url_hash("a"), url_hash("b")]


def test_add_is_bounded() -> None:
    seen = HashSet(capacity=3, initial_slots=2)
    assert [seen.add(url_hash(str(i))) for i in range(5)] == [False] * 5
    assert seen.count == 3 and seen.full
    assert seen.add(url_hash("0")) is True  # kept values are still found
    assert seen.add(url_hash("4")) is False  # values past the capacity are not kept


def test_add_many_agrees_with_a_set_across_many_growths(growth: str) -> None:
    rng = random.Random(7)
    # small values collide in the low bits (the slot), so the probe runs past full slots
    values = [rng.randrange(1, 5_000) * 4096 + 1 for _ in range(20_000)]
    seen, reference = HashSet(initial_slots=2), set()
    for start in range(0, len(values), 333):
        batch = values[start : start + 333]
        expected = []
        for position, value in enumerate(batch):
            if value in reference:
                expected.append(position)
            reference.add(value)
        assert seen.add_many(batch) == expected
    assert seen.count == len(reference)
    assert all(seen.has(value) for value in reference)
    assert not seen.has(3)
    assert len(seen._slots) >= 2 * seen.count  # load factor one half at most


def test_add_and_add_many_fill_the_same_set(growth: str) -> None:
    one, many = HashSet(initial_slots=4), HashSet(initial_slots=4)
    keys = url_hashes(f"https://example.com/{i}" for i in range(3_000))
    assert [one.add(key) for key in keys + keys[:10]] == [False] * 3_000 + [True] * 10
    assert many.add_many(keys + keys[:10]) == list(range(3_000, 3_010))
    assert one.count == many.count == 3_000
    assert all(one.has(key) and many.has(key) for key in keys)


def test_growth_keeps_every_value_findable_when_probes_wrap(growth: str) -> None:
    rng = random.Random(11)
    # bit k zero, the low k bits ones but for one or two: at a table of 2**k slots the slot is
    # one of the last, and stays one of the last of the first half when the table doubles
    wrapping = [
        rng.randrange(1, 1 << 40) << 21 | (1 << rng.randrange(2, 14)) - rng.randrange(1, 4) for _ in range(3_000)
    ]
    spread = [rng.randrange(1, 1 << 64) for _ in range(3_000)]
    for values in (wrapping, spread, [value for pair in zip(wrapping, spread, strict=True) for value in pair]):
        seen = HashSet(initial_slots=2)
        for count, value in enumerate(values, start=1):
            assert seen.add(value) is False
            assert seen.count == count
        assert all(seen.has(value) for value in values)
        assert not any(seen.has(value ^ 2) for value in values[:500])
        assert seen.add_many(values[:100]) == list(range(100))
        assert sorted(filter(None, seen._slots)) == sorted(values)  # each value once, nothing else


def test_a_large_table_doubles_in_place_and_a_small_one_by_copy() -> None:
    large = HashSet(initial_slots=hashset.IN_PLACE_MIN_SLOTS)
    first = large._slots
    large.add_many(range(1, hashset.IN_PLACE_MIN_SLOTS // 2 + 2))  # one past half full: it doubles
    assert large._slots is first and len(first) == 2 * hashset.IN_PLACE_MIN_SLOTS
    small = HashSet(initial_slots=8)
    first = small._slots
    small.add_many(range(1, 6))
    assert small._slots is not first and len(small._slots) == 16


def test_a_wrapped_value_waits_for_the_slots_its_probe_crosses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hashset, "IN_PLACE_MIN_SLOTS", 8)
    # 8 slots: 14 and 7 fill slots 6 and 7, so 22 (slot 6) wraps to slot 0. The fifth value
    # doubles the table: 14 then moves to slot 14, and 22 must end at slot 6 (not 8, past
    # slots 6 and 7 as they were before they were dealt with).
    seen = HashSet(initial_slots=8)
    assert seen.add_many([14, 7, 22, 2, 3]) == []
    assert len(seen._slots) == 16
    assert all(seen.has(value) for value in (14, 7, 22, 2, 3))
    assert seen._slots[6] == 22 and seen._slots[14] == 14
