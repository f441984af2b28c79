"""parsing/hashset.py: the compact set of 64-bit URL hashes."""

from __future__ import annotations

import random

from sitemap_crawl.parsing.hashset import HashSet, url_hash, url_hashes


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


def test_add_many_agrees_with_a_set_across_many_growths() -> None:
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


def test_add_and_add_many_fill_the_same_set() -> None:
    one, many = HashSet(initial_slots=4), HashSet(initial_slots=4)
    keys = url_hashes(f"https://example.com/{i}" for i in range(3_000))
    assert [one.add(key) for key in keys + keys[:10]] == [False] * 3_000 + [True] * 10
    assert many.add_many(keys + keys[:10]) == list(range(3_000, 3_010))
    assert one.count == many.count == 3_000
    assert all(one.has(key) and many.has(key) for key in keys)
