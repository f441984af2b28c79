"""sitemap_crawl.sites: the homepage list (lazy, each site once, bad lines reported) and the per-host gate."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from scrapy.settings import Settings

from sitemap_crawl.arguments import SpiderArgumentError
from sitemap_crawl.sites import HomepageList, HostGate, Shard, SlotLimits, host_of
from sitemap_crawl.sites.backlog import RETRY_AFTER, SendValve


def test_homepages_are_normalised_deduplicated_and_bad_lines_reported(caplog: pytest.LogCaptureFixture) -> None:
    lines = [
        "# shops to map\n",
        "https://Shop.Example/catalog?page=2\n",
        "\n",
        "ftp://files.example/\n",
        "https://shop.example/\n",  # the same site again
        "  http://blog.example:8080/post  \n",
        "not a url\n",
        "https://[shop.example/\n",  # urlsplit raises on these, Scrapy's Request too:
        "https://shop.example:99999/\n",  # one such line stopped the whole run
    ]
    homepages = HomepageList(lines, "sites.txt")
    assert list(homepages) == ["https://shop.example/", "http://blog.example:8080/"]
    assert (homepages.taken, homepages.repeated, homepages.skipped) == (2, 1, 4)
    errors = [record.getMessage() for record in caplog.records if record.levelname == "ERROR"]
    assert errors == [
        "sites.txt line 4: 'ftp://files.example/' is not an http(s) URL; skipped",
        "sites.txt line 7: 'not a url' is not an http(s) URL; skipped",
        "sites.txt line 8: 'https://[shop.example/' is not a usable URL: Invalid IPv6 URL; skipped",
        "sites.txt line 9: 'https://shop.example:99999/' is not a usable URL: Port out of range 0-65535; skipped",
    ]


def test_a_site_named_in_unicode_and_in_punycode_is_mapped_once() -> None:
    homepages = HomepageList(["http://bücher.test:8080/\n", "http://xn--bcher-kva.test:8080/a\n"], "sites.txt")
    assert list(homepages) == ["http://xn--bcher-kva.test:8080/"]
    assert homepages.repeated == 1


def test_homepages_kept_as_given_differ_by_path() -> None:
    lines = ["https://shop.example/en/", "https://shop.example/fr", "https://shop.example/en"]
    assert list(HomepageList(lines, "x", normalize=False)) == ["https://shop.example/en/", "https://shop.example/fr/"]


def test_the_file_is_read_as_sites_are_taken(tmp_path: Path) -> None:
    path = tmp_path / "sites.txt"
    path.write_text("".join(f"https://s{n}.example/\n" for n in range(100_000)), encoding="utf-8")
    homepages = iter(HomepageList.from_file(path))
    assert next(homepages) == "https://s0.example/"
    assert next(homepages) == "https://s1.example/"


def test_a_missing_file_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SpiderArgumentError, match=r"homepages_file='.*nowhere\.txt' cannot be read"):
        HomepageList.from_file(tmp_path / "nowhere.txt")


def test_host_gate_holds_each_host_to_its_bound_in_order() -> None:
    sent: list[str] = []
    gate: HostGate[str] = HostGate(SlotLimits(2), sent.append)
    for item in ("a1", "a2", "a3", "b1", "a4"):
        gate.submit("a" if item[0] == "a" else "b", item)
    assert sent == ["a1", "a2", "b1"]
    gate.release("a")
    assert sent == ["a1", "a2", "b1", "a3"]
    gate.release("a")
    gate.release("a")
    assert sent == ["a1", "a2", "b1", "a3", "a4"]
    assert gate.most_in_flight == 2
    assert gate.in_flight("a") == 1


def test_slot_limits_read_scrapys_settings_as_its_downloader_does() -> None:
    by_host = SlotLimits.from_settings(
        Settings({"CONCURRENT_REQUESTS_PER_DOMAIN": 4, "DOWNLOAD_SLOTS": {"cdn.example": {"concurrency": 1}}})
    )
    assert (by_host.by_ip, by_host.of("shop.example"), by_host.of("cdn.example")) == (False, 4, 1)
    by_ip = SlotLimits.from_settings(Settings({"CONCURRENT_REQUESTS_PER_IP": 2}))
    assert (by_ip.by_ip, by_ip.of("192.0.2.1")) == (True, 2)


def test_host_gate_holds_each_key_to_its_own_bound() -> None:
    sent: list[str] = []
    gate: HostGate[str] = HostGate(SlotLimits(3, slots={"a": {"concurrency": 1}}), sent.append)
    for item in ("a1", "a2", "b1", "b2", "b3", "b4"):
        gate.submit(item[0], item)
    assert sent == ["a1", "b1", "b2", "b3"]


def test_host_of_lowers_the_host_and_drops_the_port() -> None:
    assert host_of("https://WWW.Shop.Example:8443/x") == "www.shop.example"


def test_shares_split_the_sites_by_host_each_in_exactly_one() -> None:
    lines = [f"https://site{n}.example/\n" for n in range(200)] + ["http://site7.example:8080/\n", "bad line\n"]
    shares = [HomepageList(lines, "sites.txt", shard=Shard(index, 3)) for index in range(3)]
    taken = [list(share) for share in shares]
    everything = list(HomepageList(lines, "sites.txt"))
    assert sorted(url for share in taken for url in share) == sorted(everything)  # nothing lost, nothing twice
    assert all(len(share) > 30 for share in taken)  # a fair split
    # the two sites of one host are in the same share (per-host politeness stays in one process)
    holder = [i for i, share in enumerate(taken) if "https://site7.example/" in share]
    assert holder and "http://site7.example:8080/" in taken[holder[0]]


def test_only_the_first_share_reports_bad_lines(caplog: pytest.LogCaptureFixture) -> None:
    lines = ["https://a.example/\n", "not a url\n"]
    for index in range(2):
        list(HomepageList(lines, "sites.txt", shard=Shard(index, 2)))
    errors = [record.getMessage() for record in caplog.records if record.levelname == "ERROR"]
    assert errors == ["sites.txt line 2: 'not a url' is not an http(s) URL; skipped"]


@pytest.mark.parametrize("text", ["2/2", "-1/2", "1", "a/b"])
def test_a_bad_share_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        Shard.parse(text)


def test_send_valve_holds_items_while_the_backlog_is_full_and_keeps_their_order() -> None:
    backlog = [0]  # responses in process; each item sent adds one
    sent: list[int] = []

    def send(item: int) -> None:
        sent.append(item)
        backlog[0] += 1

    async def scenario() -> None:
        valve = SendValve(3, lambda: backlog[0], send)
        for item in (1, 2, 3, 4, 5):
            valve.submit(item)
        assert sent == [1, 2, 3] and valve.held == 2
        await asyncio.sleep(RETRY_AFTER * 3)
        assert sent == [1, 2, 3]  # still full
        backlog[0] -= 1  # one response passed on: room for exactly one
        await asyncio.sleep(RETRY_AFTER * 3)
        assert sent == [1, 2, 3, 4] and valve.held == 1
        backlog[0] = 0
        valve.submit(6)  # behind the held one, never ahead of it
        await asyncio.sleep(RETRY_AFTER * 3)
        assert sent == [1, 2, 3, 4, 5, 6] and valve.held == 0
        assert valve.times_held == 3
        valve.close()

    asyncio.run(scenario())
