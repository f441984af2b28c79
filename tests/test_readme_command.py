"""The crawl command exactly as the README gives it, run from the repository root.

The command is read from README.md (the first ``scrapy crawl sitemaps -a homepage=...``
line), pointed at a local fixture site, and run as is with ``.venv/bin/scrapy``; only the
homepage and the output file's directory change (the output stays a relative path, so
that nothing is written into the repository itself).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from sitemap_crawl.items import PAGE_FIELDS
from tests.support import REPO_ROOT, FixtureServer, robots, sitemapindex, text_sitemap, urlset
from tests.support.feeds import csv_columns, read_feed
from tests.support.fixture_server import SiteFactory
from tests.support.tree import robots_of

SCRUBBED_ENV = ("SCRAPY_SETTINGS_MODULE", "SCRAPY_PROJECT", "http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY")


def readme_command() -> list[str]:
    """The README's crawl command, as argv."""
    text = (REPO_ROOT / "README.md").read_text("utf-8")
    for line in text.splitlines():
        if "scrapy crawl sitemaps -a homepage=" in line:
            command = line.split("&&")[-1].strip()
            argv = shlex.split(command)
            assert argv[0].endswith("scrapy"), command
            return argv
    raise AssertionError("README.md has no `scrapy crawl sitemaps -a homepage=...` command")


def scrapy_executable() -> str:
    for candidate in (REPO_ROOT / ".venv" / "bin" / "scrapy", Path(sys.executable).parent / "scrapy"):
        if candidate.exists():
            return str(candidate)
    pytest.skip("no scrapy executable next to the interpreter")


def run_readme_command(homepage: str, output: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = readme_command()
    assert argv[1:5] == ["crawl", "sitemaps", "-a", argv[4]] and argv[4].startswith("homepage="), argv
    assert argv[5] == "-O" and argv[6] == "pages.csv", argv
    argv[0] = scrapy_executable()
    argv[4] = f"homepage={homepage}"
    argv[6] = os.path.relpath(output, REPO_ROOT)  # e.g. ../../tmp/pytest-.../pages.csv
    env = {key: value for key, value in os.environ.items() if key not in SCRUBBED_ENV}
    return subprocess.run(
        [*argv, *extra],
        cwd=REPO_ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def readme_site(fixture_site: SiteFactory) -> FixtureServer:
    return fixture_site(
        {
            "/robots.txt": robots("{base}/sitemap_index.xml"),
            "/sitemap_index.xml": sitemapindex("{base}/posts.xml", "{base}/pages.txt"),
            "/posts.xml": urlset(
                {
                    "loc": "{base}/post-1",
                    "lastmod": "2024-03-04",
                    "priority": "0.7",
                    "extra": "<image:image><image:loc>{base}/p.png</image:loc></image:image>",
                },
                "{base}/post-2",
            ),
            "/pages.txt": text_sitemap("{base}/about", "{base}/contact"),
        }
    )


def expected_urls(site: FixtureServer) -> list[str]:
    return sorted(site.url(path) for path in ("/post-1", "/post-2", "/about", "/contact"))


def assert_clean_run(process: subprocess.CompletedProcess[str]) -> None:
    assert process.returncode == 0, process.stderr[-4000:]
    assert "Traceback" not in process.stderr, process.stderr[-4000:]
    assert "Sitemap tree:" in process.stderr
    # a sound site, mapped with default settings: not one WARNING line (Scrapy's included)
    assert [line for line in process.stderr.splitlines() if "] WARNING: " in line] == [], process.stderr[-4000:]


def test_readme_command_writes_pages_csv(readme_site: FixtureServer, tmp_path: Path) -> None:
    output = tmp_path / "pages.csv"
    before = set(REPO_ROOT.iterdir())

    process = run_readme_command(readme_site.base + "/", output)

    assert_clean_run(process)
    rows = read_feed(output)
    assert csv_columns(output) == list(PAGE_FIELDS)
    assert sorted(row["url"] for row in rows) == expected_urls(readme_site)
    post = next(row for row in rows if row["url"] == readme_site.url("/post-1"))
    assert post["sitemap_url"] == readme_site.url("/posts.xml")
    assert (post["priority"], post["last_modified"]) == ("0.7", "2024-03-04")
    assert json.loads(post["images"])[0]["loc"] == readme_site.url("/p.png")
    assert post["news"] == post["videos"] == post["alternates"] == ""
    # the run left nothing behind in the repository (no stray feed or tree file)
    assert {path for path in REPO_ROOT.iterdir() if path.suffix in (".csv", ".json", ".jsonl")} <= before


def test_readme_command_writes_pages_json(readme_site: FixtureServer, tmp_path: Path) -> None:
    output = tmp_path / "pages.json"

    process = run_readme_command(readme_site.base + "/", output)

    assert_clean_run(process)
    rows = read_feed(output)
    assert sorted(row["url"] for row in rows) == expected_urls(readme_site)
    assert all(list(row) == list(PAGE_FIELDS) for row in rows)
    post = next(row for row in rows if row["url"] == readme_site.url("/post-1"))
    assert post["priority"] == 0.7
    assert post["images"][0]["loc"] == readme_site.url("/p.png")
    assert post["news"] is None


def test_contract_command_with_a_tree_file(readme_site: FixtureServer, tmp_path: Path) -> None:
    output = tmp_path / "pages.jsonl"
    tree = tmp_path / "tree.json"

    process = run_readme_command(
        readme_site.base + "/",
        output,
        "-s",
        f"SITEMAP_CRAWL_TREE_FILE={os.path.relpath(tree, REPO_ROOT)}",
    )

    assert_clean_run(process)
    rows = read_feed(output)
    assert sorted(row["url"] for row in rows) == expected_urls(readme_site)
    written = json.loads(tree.read_text("utf-8"))
    assert (written["url"], written["kind"]) == (readme_site.base + "/", "website")
    robots_node = robots_of(written)
    assert robots_node["kind"] == "robots_txt"
    index = robots_node["sub_sitemaps"][0]
    assert [(child["url"], child["kind"], child["page_count"]) for child in index["sub_sitemaps"]] == [
        (readme_site.url("/posts.xml"), "xml_urlset", 2),
        (readme_site.url("/pages.txt"), "text", 2),
    ]
    assert re.search(r"Pages: 4\b", process.stderr)


def test_ci_runs_the_readme_test_command_as_written() -> None:
    readme = (REPO_ROOT / "README.md").read_text("utf-8")
    after = readme.split("Run the tests:", 1)[1]
    command = next(line.strip() for line in after.splitlines() if line.strip())
    assert "pytest" in command
    ci_lines = [line.strip() for line in (REPO_ROOT / ".ci" / "run").read_text("utf-8").splitlines()]
    assert command in ci_lines
