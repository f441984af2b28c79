"""sitemap_crawl.sites: the homepage list (lazy, each site once, bad lines reported) and the per-host gate."""

from __future__ import annotations

from pathlib import Path

import pytest

from sitemap_crawl.arguments import SpiderArgumentError
from sitemap_crawl.sites import HomepageList, HostGate, host_of


def test_homepages_are_normalised_deduplicated_and_bad_lines_reported(caplog: pytest.LogCaptureFixture) -> None:
    lines = [
        "# shops to map\n",
        "https://Shop.Example/catalog?page=2\n",
        "\n",
        "ftp://files.example/\n",
        "https://shop.example/\n",  # the same site again
        "  http://blog.example:8080/post  \n",
        "not a url\n",
    ]
    homepages = HomepageList(lines, "sites.txt")
    assert list(homepages) == ["https://shop.example/", "http://blog.example:8080/"]
    assert (homepages.taken, homepages.repeated, homepages.skipped) == (2, 1, 2)
    errors = [record.getMessage() for record in caplog.records if record.levelname == "ERROR"]
    assert errors == [
        "sites.txt line 4: 'ftp://files.example/' is not an http(s) URL; skipped",
        "sites.txt line 7: 'not a url' is not an http(s) URL; skipped",
    ]


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
    gate: HostGate[str] = HostGate(2, sent.append)
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


def test_host_of_lowers_the_host_and_drops_the_port() -> None:
    assert host_of("https://WWW.Shop.Example:8443/x") == "www.shop.example"
