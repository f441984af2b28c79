"""audit/languages.py: the codes an hreflang may use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sitemap_crawl.audit.languages import LANGUAGES, REGIONS, SCRIPTS, is_hreflang

ISO_CODES = Path("/usr/share/iso-codes/json")  # Debian's iso-codes package, where installed


@pytest.mark.parametrize(
    "value", ["x-default", "X-Default", "en", "EN", "en-GB", "en-gb", "zh-Hant", "zh-Hant-TW", "sr-Latn", "pt-BR"]
)
def test_values_google_accepts(value: str) -> None:
    assert is_hreflang(value)


@pytest.mark.parametrize(
    "value",
    [
        "en-UK",  # the United Kingdom is GB
        "es-419",  # a UN M.49 region, not an ISO 3166-1 one
        "fil",  # ISO 639-2/3: Google asks for ISO 639-1
        "english",
        "en_GB",
        "en-GB-oxendict",
        "zh-TW-Hant",  # the script comes before the region
        "zh-Hanx",  # no such script
        "xx",
        "x-def",
        "",
        "en-",
        "-GB",
    ],
)
def test_values_google_does_not_accept(value: str) -> None:
    assert not is_hreflang(value)


def _iso(name: str, table: str, key: str) -> set[str]:
    return {entry[key].lower() for entry in json.loads((ISO_CODES / name).read_text())[table] if key in entry}


@pytest.mark.skipif(not ISO_CODES.is_dir(), reason="no iso-codes files on this system to compare with")
def test_the_lists_are_the_iso_code_lists() -> None:
    assert _iso("iso_639-2.json", "639-2", "alpha_2") == LANGUAGES
    assert _iso("iso_3166-1.json", "3166-1", "alpha_2") == REGIONS
    assert _iso("iso_15924.json", "15924", "alpha_4") == SCRIPTS
