"""The add-on and the "Use it in your project" instructions, tried as a new user would.

Host projects are made with ``scrapy startproject`` in a temporary directory and
crawl a local fixture site in a subprocess, with the commands and settings lines
that the documentation gives, word for word (see ``DOC_*`` below: each is checked to
be in docs/embedding.md, or in a README section marked ``<!-- section:embedding -->``
if the README has one).
"""

from __future__ import annotations

import ast
import io
import json
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from scrapy import Item
from scrapy.crawler import CrawlerRunner
from scrapy.exporters import CsvItemExporter, JsonItemExporter, JsonLinesItemExporter, XmlItemExporter
from scrapy.item import Field
from scrapy.settings import SETTINGS_PRIORITIES, Settings
from scrapy.utils.misc import load_object

import sitemap_crawl
from sitemap_crawl import Addon
from sitemap_crawl.config import DEFAULTS
from sitemap_crawl.exporters import EXPORTERS
from sitemap_crawl.extensions.audit import SitemapAuditExtension
from sitemap_crawl.extensions.tree import SitemapTreeExtension
from sitemap_crawl.items import PAGE_FIELDS
from tests.support import CORPUS_DIR, REPO_ROOT, CrawlResult, FixtureServer, Route, robots, rss, sitemapindex, urlset
from tests.support.crawl import CrawlRunner
from tests.support.fixture_server import SiteFactory
from tests.support.other_addon import EXTENSION_STAT, FEED_FORMAT, REQUESTS_STAT, OtherAddon

# -- what the README says -------------------------------------------------------------------

DOC_STARTPROJECT = "scrapy startproject myproject"
DOC_TEMPLATE_ADDONS = "ADDONS = {}"
DOC_ADDONS = 'ADDONS = {"sitemap_crawl.Addon": 0}'
DOC_CRAWL = (
    "scrapy crawl sitemaps -a homepage=https://www.example.org/ -O pages.csv -s SITEMAP_CRAWL_TREE_FILE=tree.json"
)
DOC_FAST_CRAWL = f"{DOC_CRAWL} -s DOWNLOAD_DELAY=0"
DOC_NO_WAIT = "-s DOWNLOAD_DELAY=0"
DOC_LIST_MODULES = 'SPIDER_MODULES = ["sitemap_crawl.spiders", "myproject.spiders"]'
DOC_MANUAL = """\
SPIDER_MODULES = ["sitemap_crawl.spiders", "myproject.spiders"]
ITEM_PIPELINES = {"sitemap_crawl.pipelines.SitemapTreePipeline": 100}
SITEMAP_CRAWL_TREE_FILE = "tree.json"
"""
DOC_MANUAL_CRAWL = "scrapy crawl sitemaps -a homepage=https://www.example.org/ -O pages.csv"
DOC_SCRIPT = """\
from scrapy.crawler import CrawlerProcess

process = CrawlerProcess(
    {
        "ADDONS": {"sitemap_crawl.Addon": 0},
        "FEEDS": {"pages.jsonl": {"format": "jsonlines"}},
        "SITEMAP_CRAWL_TREE_FILE": "tree.json",
        "TELNETCONSOLE_ENABLED": False,
        "REMOTE_CONTROL_ENABLED": False,
    }
)
process.crawl("sitemaps", homepage="https://www.example.org/")
process.start()
"""
DOC_PARSE = """\
from pathlib import Path

from sitemap_crawl import parse_sitemap

body = Path("sitemap.xml.gz").read_bytes()
parsed = parse_sitemap(body, "https://www.example.org/sitemap.xml.gz")
print(parsed.kind, parsed.error, len(parsed.pages), parsed.sub_sitemaps)
for page in parsed.pages:
    print(page.url, page.last_modified, page.priority)
"""
DOC_HOMEPAGE = "https://www.example.org/"
DOC_FORBIDDEN = "forbidden by robots.txt"

PROJECT = "myproject"


def readme_section(name: str, fallback: Path) -> str:
    """A README section's text if the README has one, else the docs/ page that holds it."""
    readme = (REPO_ROOT / "README.md").read_text("utf-8")
    match = re.search(rf"<!-- section:{name} -->\n(.*?)<!-- /section:{name} -->", readme, re.DOTALL)
    if match and "(to be written)" not in match.group(1):
        return match.group(1)
    return fallback.read_text("utf-8")


def embedding_doc() -> str:
    return readme_section("embedding", REPO_ROOT / "docs" / "embedding.md")


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def assert_in_doc(doc: str, snippet: str) -> None:
    """The snippet's lines appear in the doc, one after the other (indentation aside);
    a one-line snippet may also stand inside a line of text."""
    wanted, lines = _lines(snippet), _lines(doc)
    if len(wanted) == 1 and wanted[0] in doc:
        return
    for start in range(len(lines) - len(wanted) + 1):
        if lines[start : start + len(wanted)] == wanted:
            return
    raise AssertionError(f"not in the README's 'Use it in your project' text:\n{snippet}")


# -- running things as a user would ------------------------------------------------------------

_SCRUBBED_ENV = ("SCRAPY_SETTINGS_MODULE", "SCRAPY_PROJECT", "PYTHONPATH", "http_proxy", "https_proxy", "all_proxy")


def user_env(tmp_path: Path, python_path: Path | str = REPO_ROOT) -> dict[str, str]:
    """The environment of a user who installed sitemap_crawl: it is importable from anywhere.

    Scrapy's remote control (on by default outside our own project) writes a job file
    under XDG_STATE_HOME; that stays in the test's directory.
    """
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED_ENV and k.upper() not in _SCRUBBED_ENV}
    env["PYTHONPATH"] = str(python_path)
    env["PYTHONUNBUFFERED"] = "1"
    env["XDG_STATE_HOME"] = str(tmp_path / "xdg-state")
    return env


def scrapy_command() -> list[str]:
    """``scrapy`` as installed next to this Python (the console script), else ``python -m scrapy``."""
    script = Path(sys.executable).with_name("scrapy")
    return [str(script)] if script.exists() else [sys.executable, "-m", "scrapy"]


def run_user_command(
    line: str, cwd: Path, env: Mapping[str, str], replace: Mapping[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run a documented ``scrapy ...`` command line (with the example URL replaced)."""
    for old, new in (replace or {}).items():
        line = line.replace(old, new)
    words = shlex.split(line)
    assert words[0] == "scrapy", line
    return subprocess.run(
        [*scrapy_command(), *words[1:]],
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def crawl_result(
    completed: subprocess.CompletedProcess[str],
    cwd: Path,
    feed: str,
    tree: str | None,
    started: float,
) -> CrawlResult:
    output_format = Path(feed).suffix.lstrip(".")
    return CrawlResult(
        command=list(completed.args),
        returncode=completed.returncode,
        stdout=completed.stdout,
        stderr=completed.stderr,
        feed_path=cwd / feed,
        tree_path=cwd / tree if tree else None,
        output_format=output_format,
        tmp_dir=cwd,
        duration=time.monotonic() - started,
    )


def run_documented_crawl(line: str, cwd: Path, env: Mapping[str, str], site: FixtureServer) -> CrawlResult:
    words = shlex.split(line)
    feed = words[words.index("-O") + 1]
    started = time.monotonic()
    completed = run_user_command(line, cwd, env, {DOC_HOMEPAGE: site.base + "/"})
    return crawl_result(completed, cwd, feed, "tree.json", started)


def start_project(tmp_path: Path, env: Mapping[str, str]) -> Path:
    """``scrapy startproject myproject`` in tmp_path, plus one spider of the host's own."""
    completed = run_user_command(DOC_STARTPROJECT, tmp_path, env)
    assert completed.returncode == 0, completed.stderr
    project = tmp_path / PROJECT
    (project / PROJECT / "spiders" / "hello.py").write_text(
        'import scrapy\n\n\nclass HelloSpider(scrapy.Spider):\n    name = "hello"\n', "utf-8"
    )
    return project


def edit_settings(project: Path, replace: Mapping[str, str] = {}, append: str = "") -> str:
    """Edit myproject/settings.py as the README says: replace whole lines, append lines."""
    path = project / PROJECT / "settings.py"
    lines = path.read_text("utf-8").splitlines()
    for old, new in replace.items():
        assert lines.count(old) == 1, f"the startproject template has no line {old!r}"
        lines[lines.index(old)] = new
    text = "\n".join(lines) + "\n" + append
    path.write_text(text, "utf-8")
    return text


def scrapy_list(project: Path, env: Mapping[str, str]) -> list[str]:
    completed = run_user_command("scrapy list", project, env)
    assert completed.returncode == 0, completed.stderr
    return completed.stdout.split()


# -- the fixture site ------------------------------------------------------------------------

ROBOTS_TXT = "User-agent: *\nDisallow: /private/\n\nSitemap: {base}/sitemap_index.xml\n"


def shop_site(fixture_site: SiteFactory) -> FixtureServer:
    """robots.txt -> an index of two urlsets (one gzipped) and a sitemap robots.txt disallows;
    an RSS feed at a well-known path."""
    return fixture_site(
        {
            "/robots.txt": Route(ROBOTS_TXT),
            "/sitemap_index.xml": sitemapindex("{base}/posts.xml", "{base}/private/drafts.xml", "{base}/pages.xml.gz"),
            "/posts.xml": urlset("{base}/post/1", {"loc": "{base}/post/2", "lastmod": "2024-05-01", "priority": 0.8}),
            "/pages.xml.gz": Route(urlset("{base}/about"), gzip_file=True),
            "/private/drafts.xml": urlset("{base}/draft"),
            "/sitemap_news.xml": rss("{base}/news/1"),
        }
    )


def assert_shop_tree(result: CrawlResult, site: FixtureServer, *, obey_robots: bool) -> None:
    assert result.tree is not None, f"no tree file\n{result.log[-3000:]}"
    tree = result.tree_text()
    assert result.tree["kind"] == "website", tree
    assert result.kinds() == {
        site.base + "/": "website",
        site.url("/robots.txt"): "robots_txt",
        site.url("/sitemap_index.xml"): "xml_index",
        site.url("/posts.xml"): "xml_urlset",
        site.url("/private/drafts.xml"): "invalid" if obey_robots else "xml_urlset",
        site.url("/pages.xml.gz"): "xml_urlset",
        site.url("/sitemap_news.xml"): "rss",
    }, tree
    counts = {node["url"]: node["page_count"] for _, node in result.walk()}
    assert counts[site.url("/posts.xml")] == 2, tree
    assert counts[site.url("/pages.xml.gz")] == 1, tree
    assert counts[site.url("/sitemap_news.xml")] == 1, tree
    (drafts,) = result.node(site.url("/private/drafts.xml"))
    if obey_robots:
        assert drafts["error"] == DOC_FORBIDDEN, tree
        assert site.hits("/private/drafts.xml") == 0
    else:
        assert drafts["error"] is None, tree


def shop_urls(site: FixtureServer, *, obey_robots: bool) -> list[str]:
    paths = ["/about", "/news/1", "/post/1", "/post/2"] + ([] if obey_robots else ["/draft"])
    return sorted(site.url(path) for path in paths)


# -- documentation and commands agree --------------------------------------------------------


def test_the_readme_gives_the_commands_these_tests_run() -> None:
    doc = embedding_doc()
    for snippet in (
        DOC_STARTPROJECT,
        DOC_TEMPLATE_ADDONS,
        DOC_ADDONS,
        DOC_CRAWL,
        DOC_FAST_CRAWL,
        DOC_LIST_MODULES,
        DOC_MANUAL,
        DOC_MANUAL_CRAWL,
        DOC_SCRIPT,
        DOC_PARSE,
    ):
        assert_in_doc(doc, snippet)
    assert DOC_NO_WAIT in doc
    assert DOC_FORBIDDEN in doc
    assert "scrapy list" in doc and "update_pre_crawler_settings" in doc


def test_the_startproject_template_still_has_the_lines_the_readme_edits(tmp_path: Path) -> None:
    env = user_env(tmp_path)
    project = start_project(tmp_path, env)
    settings = (project / PROJECT / "settings.py").read_text("utf-8").splitlines()
    assert DOC_TEMPLATE_ADDONS in settings
    assert f'SPIDER_MODULES = ["{PROJECT}.spiders"]' in settings
    # what the README's "Your project's settings apply" paragraph describes
    assert "ROBOTSTXT_OBEY = True" in settings
    assert "DOWNLOAD_DELAY = 1" in settings
    assert "CONCURRENT_REQUESTS_PER_DOMAIN = 1" in settings


# -- a fresh project with the one ADDONS line ---------------------------------------------------


def test_fresh_project_with_the_addon_line(tmp_path: Path, fixture_site: SiteFactory) -> None:
    site = shop_site(fixture_site)
    env = user_env(tmp_path)
    project = start_project(tmp_path, env)
    edit_settings(project, replace={DOC_TEMPLATE_ADDONS: DOC_ADDONS})

    result = run_documented_crawl(DOC_FAST_CRAWL, project, env, site).assert_ok()

    assert sorted(result.urls()) == shop_urls(site, obey_robots=True), result.log[-3000:]
    post2 = next(row for row in result.pages if row["url"] == site.url("/post/2"))
    assert post2["sitemap_url"] == site.url("/posts.xml")
    assert float(post2["priority"]) == 0.8
    assert list(result.pages[0]) == list(PAGE_FIELDS)
    assert_shop_tree(result, site, obey_robots=True)
    # the host's own settings were kept: robots.txt obeyed, its spider module first
    assert "'ROBOTSTXT_OBEY': True" in result.log
    assert f"'SPIDER_MODULES': ['sitemap_crawl.spiders', '{PROJECT}.spiders']" in result.log
    assert "sitemap_crawl.Addon()" in result.log  # Scrapy's "Enabled addons" line
    assert result.stats["sitemap_crawl/pages"] == 4
    assert result.stats[f"sitemap_crawl/errors/{DOC_FORBIDDEN}"] == 1
    assert result.stats["robotstxt/forbidden"] >= 1
    assert_stats_documented(result.stats)

    # scrapy list does not run add-ons (Scrapy 2.19), as the README says; the host's spider is there
    assert scrapy_list(project, env) == ["hello"]
    # ... and with the README's SPIDER_MODULES line it lists ours too, once
    edit_settings(project, replace={f'SPIDER_MODULES = ["{PROJECT}.spiders"]': DOC_LIST_MODULES})
    assert scrapy_list(project, env) == ["hello", "sitemaps"]


def test_fresh_project_wired_by_hand(tmp_path: Path, fixture_site: SiteFactory) -> None:
    site = shop_site(fixture_site)
    env = user_env(tmp_path)
    project = start_project(tmp_path, env)
    manual = _lines(DOC_MANUAL)
    edit_settings(project, replace={f'SPIDER_MODULES = ["{PROJECT}.spiders"]': manual[0]}, append=DOC_MANUAL)

    assert scrapy_list(project, env) == ["hello", "sitemaps"]
    result = run_documented_crawl(f"{DOC_MANUAL_CRAWL} {DOC_NO_WAIT}", project, env, site).assert_ok()

    assert "sitemap_crawl.Addon" not in result.log
    assert sorted(result.urls()) == shop_urls(site, obey_robots=True)
    assert_shop_tree(result, site, obey_robots=True)  # tree.json from SITEMAP_CRAWL_TREE_FILE in settings.py
    assert re.search(r"Enabled item pipelines:\n\[\S*sitemap_crawl\.pipelines\.SitemapTreePipeline\W*\]", result.log)


def test_documented_script_with_the_addon(tmp_path: Path, fixture_site: SiteFactory) -> None:
    site = shop_site(fixture_site)
    env = user_env(tmp_path)
    script = tmp_path / "map_site.py"
    script.write_text(DOC_SCRIPT.replace(DOC_HOMEPAGE, site.base + "/"), "utf-8")
    started = time.monotonic()
    completed = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    result = crawl_result(completed, tmp_path, "pages.jsonl", "tree.json", started).assert_ok()
    # no project, so Scrapy's default ROBOTSTXT_OBEY = False: the disallowed sitemap is read
    assert sorted(result.urls()) == shop_urls(site, obey_robots=False)
    assert_shop_tree(result, site, obey_robots=False)
    assert "TelnetConsole" not in result.log
    assert "RemoteControl" not in result.log


def test_documented_parse_example(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus_gz = CORPUS_DIR / "mkdocs_material_sitemap.xml.gz"
    if not corpus_gz.exists():
        pytest.skip("the shared corpus is not here")
    (tmp_path / "sitemap.xml.gz").write_bytes(corpus_gz.read_bytes())
    monkeypatch.chdir(tmp_path)
    exec(compile(DOC_PARSE, "README", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "xml_urlset None 83 []"
    assert len(lines) == 84 and all(line.startswith("http") for line in lines[1:])


# -- the add-on, in process ------------------------------------------------------------------


def test_addon_is_importable_by_the_documented_path() -> None:
    assert load_object("sitemap_crawl.Addon") is Addon is sitemap_crawl.Addon
    assert "Addon" in sitemap_crawl.__all__


def _project_settings(values: Mapping[str, Any]) -> Settings:
    settings = Settings()
    settings.setdict(dict(values), priority="project")
    return settings


def test_pre_crawler_hook_puts_the_spider_module_first_once() -> None:
    # first: Scrapy keeps the last spider of a name, and a project's own "sitemaps" spider
    # was replaced by the add-on's (appended last)
    settings = _project_settings({"SPIDER_MODULES": ["myproject.spiders"]})
    Addon.update_pre_crawler_settings(settings)
    Addon.update_pre_crawler_settings(settings)
    assert settings.getlist("SPIDER_MODULES") == ["sitemap_crawl.spiders", "myproject.spiders"]
    assert settings.getpriority("SPIDER_MODULES") == SETTINGS_PRIORITIES["project"]

    bare = Settings()
    Addon.update_pre_crawler_settings(bare)
    assert bare.getlist("SPIDER_MODULES") == ["sitemap_crawl.spiders"]

    listed = _project_settings({"SPIDER_MODULES": "myproject.spiders,sitemap_crawl.spiders"})
    Addon.update_pre_crawler_settings(listed)  # (listed by the project: its order is kept)
    assert listed.getlist("SPIDER_MODULES") == ["myproject.spiders", "sitemap_crawl.spiders"]


def test_defaults_are_set_at_addon_priority() -> None:
    settings = Settings()
    Addon().update_settings(settings)
    for name, value in DEFAULTS.items():
        if value is None:
            assert settings.get(name) is None, name
            continue
        assert settings[name] == value, name
        assert settings.getpriority(name) == SETTINGS_PRIORITIES["addon"], name
    # a copy: changing the crawl's list does not change the defaults
    settings["SITEMAP_CRAWL_KNOWN_PATHS"].append("extra.xml")
    assert "extra.xml" not in DEFAULTS["SITEMAP_CRAWL_KNOWN_PATHS"]
    assert settings.getdict("EXTENSIONS") == {SitemapTreeExtension: 100, SitemapAuditExtension: 101}
    assert settings.getdict("FEED_EXPORTERS") == {
        feed_format: f"{exporter.__module__}.{exporter.__qualname__}" for feed_format, exporter in EXPORTERS.items()
    }


def test_addon_never_overrides_the_host_project() -> None:
    settings = _project_settings(
        {
            "SITEMAP_CRAWL_MAX_DEPTH": 3,
            "SITEMAP_CRAWL_BATCH_SIZE": 0,
            "SITEMAP_CRAWL_TREE_FILE": "mine.json",
            "ITEM_PIPELINES": {"scrapy.pipelines.files.FilesPipeline": 300},
            "FEED_EXPORTERS": {"csv": "scrapy.exporters.CsvItemExporter"},
            "ROBOTSTXT_OBEY": True,
            "TELNETCONSOLE_ENABLED": True,
            "DOWNLOAD_DELAY": 1,
        }
    )
    settings.set("SITEMAP_CRAWL_MAX_SIZE", 1234, priority="cmdline")
    Addon().update_settings(settings)
    assert settings["SITEMAP_CRAWL_MAX_DEPTH"] == 3
    assert settings["SITEMAP_CRAWL_BATCH_SIZE"] == 0
    assert settings["SITEMAP_CRAWL_TREE_FILE"] == "mine.json"
    assert settings["SITEMAP_CRAWL_MAX_SIZE"] == 1234
    assert settings.getpriority("SITEMAP_CRAWL_MAX_SIZE") == SETTINGS_PRIORITIES["cmdline"]
    assert settings["SITEMAP_CRAWL_TREE_LOG_LINES"] == DEFAULTS["SITEMAP_CRAWL_TREE_LOG_LINES"]
    assert settings.getdict("ITEM_PIPELINES") == {"scrapy.pipelines.files.FilesPipeline": 300}
    assert settings.getdict("EXTENSIONS") == {SitemapTreeExtension: 100, SitemapAuditExtension: 101}
    assert settings.getdict("FEED_EXPORTERS")["csv"] == "scrapy.exporters.CsvItemExporter"
    assert settings.getdict("FEED_EXPORTERS")["json"] == "sitemap_crawl.exporters.JsonPageExporter"
    assert settings.getbool("ROBOTSTXT_OBEY") is True
    assert settings.getbool("TELNETCONSOLE_ENABLED") is True
    assert settings.getfloat("DOWNLOAD_DELAY") == 1


def test_a_pipeline_order_chosen_by_the_host_is_kept() -> None:
    settings = _project_settings({"ITEM_PIPELINES": {"sitemap_crawl.pipelines.SitemapTreePipeline": 700}})
    Addon().update_settings(settings)
    assert settings.getdict("ITEM_PIPELINES") == {"sitemap_crawl.pipelines.SitemapTreePipeline": 700}


@pytest.mark.parametrize("spider", ["sitemaps", "drop-in"])
@pytest.mark.parametrize("with_our_addon", [True, False])
def test_another_addons_components_are_kept_beside_ours(spider: str, with_our_addon: bool) -> None:
    from sitemap_crawl import SitemapSpider
    from sitemap_crawl.spiders.sitemaps import SitemapsSpider

    class DropIn(SitemapSpider):
        name = "drop-in"

    addons: dict[Any, int] = {OtherAddon: 10}
    if with_our_addon:
        addons[Addon] = 0
    runner = CrawlerRunner(_project_settings({"ADDONS": addons}))
    # as scrapy crawl does: the crawler made (the spider's update_settings), the runner's
    # settings merged into it again, then the add-ons loaded
    crawler = runner.create_crawler(runner.create_crawler(SitemapsSpider if spider == "sitemaps" else DropIn))
    crawler.addons.load_settings(crawler.settings)
    settings = crawler.settings
    assert "tests.support.other_addon.CountingMiddleware" in settings.getdict("DOWNLOADER_MIDDLEWARES")
    assert "tests.support.other_addon.MarkingExtension" in settings.getdict("EXTENSIONS")
    assert settings.getdict("FEED_EXPORTERS")[FEED_FORMAT] == "tests.support.other_addon.OtherExporter"
    middlewares = {getattr(path, "__name__", path) for path in settings.getdict("DOWNLOADER_MIDDLEWARES")}
    assert {"UnreachableHostMiddleware", "ConditionalHeadersMiddleware"} <= middlewares
    assert SitemapAuditExtension in settings.getdict("EXTENSIONS")
    if spider == "sitemaps":
        assert SitemapTreeExtension in settings.getdict("EXTENSIONS")
        assert settings.getdict("FEED_EXPORTERS")["jsonlines"] == "sitemap_crawl.exporters.JsonLinesPageExporter"


def test_a_crawl_with_another_addon_uses_its_components_and_ours(
    fixture_site: SiteFactory, crawl: CrawlRunner, tmp_path: Path
) -> None:
    site = fixture_site({"/robots.txt": robots("{base}/s.xml"), "/s.xml": urlset("{base}/a", "{base}/b")})
    feed = tmp_path / "pages.other"
    settings = {
        "ADDONS": {"tests.support.other_addon.OtherAddon": 10},
        "FEEDS": {str(feed): {"format": FEED_FORMAT}},
        "DOWNLOAD_TIMEOUT": 5,
    }
    result = crawl({"homepage": site.base, "use_known_paths": False}, settings=settings, output_format=None)

    result.assert_ok()
    rows = [json.loads(line) for line in feed.read_text().splitlines()]
    assert sorted((row["url"], row["other"]) for row in rows) == [(site.url("/a"), 1), (site.url("/b"), 1)]
    assert result.stats[REQUESTS_STAT] == 2 and result.stats[EXTENSION_STAT] == 1
    assert result.tree is not None  # (our tree extension too)


def test_an_addon_that_replaces_extensions_without_ours_is_named_as_the_cause(
    fixture_site: SiteFactory, crawl: CrawlRunner
) -> None:
    # the warning said the tree extension was "disabled in EXTENSIONS": nothing disabled it
    site = fixture_site({"/robots.txt": robots("{base}/s.xml"), "/s.xml": urlset("{base}/a")})
    settings = {"ADDONS": {"tests.support.other_addon.ReplacingAddon": 10}, "DOWNLOAD_TIMEOUT": 5}
    result = crawl({"homepage": site.base, "use_known_paths": False}, settings=settings).assert_ok()
    assert result.tree is None and result.urls() == [site.url("/a")]
    assert result.stats[EXTENSION_STAT] == 1
    assert result.log_count("is not in EXTENSIONS (a setting or another add-on replaced the dict without it") == 1


def test_a_crawler_runner_finds_the_spider_through_the_addon() -> None:
    """The script route: CrawlerRunner applies update_pre_crawler_settings, then the crawler
    applies update_settings (what Crawler._apply_settings does first)."""
    runner = CrawlerRunner(_project_settings({"ADDONS": {"sitemap_crawl.Addon": 0}, "SITEMAP_CRAWL_MAX_DEPTH": 4}))
    assert "sitemaps" in runner.spider_loader.list()
    crawler = runner.create_crawler("sitemaps")
    crawler.addons.load_settings(crawler.settings)
    assert [repr(addon) for addon in crawler.addons.addons] == ["sitemap_crawl.Addon()"]
    assert crawler.settings["SITEMAP_CRAWL_MAX_DEPTH"] == 4
    assert crawler.settings["SITEMAP_CRAWL_BATCH_SIZE"] == DEFAULTS["SITEMAP_CRAWL_BATCH_SIZE"]
    assert SitemapTreeExtension in crawler.settings.getdict("EXTENSIONS")


class _HostItem(Item):
    name = Field()
    tags = Field()


@pytest.mark.parametrize(
    ("feed_format", "scrapy_exporter"),
    [
        ("csv", CsvItemExporter),
        ("json", JsonItemExporter),
        ("jsonlines", JsonLinesItemExporter),
        ("jsonl", JsonLinesItemExporter),
        ("jl", JsonLinesItemExporter),
        ("xml", XmlItemExporter),
    ],
)
def test_host_spiders_items_are_exported_as_scrapy_would(feed_format: str, scrapy_exporter: type[Any]) -> None:
    """The add-on maps the feed formats of every spider of the host project to our exporters."""
    items: Sequence[Any] = [{"name": "a", "tags": ["x", "y"]}, _HostItem(name="b", tags=[]), {"name": "c"}]

    def export(exporter_class: type[Any]) -> bytes:
        stream = io.BytesIO()
        exporter = exporter_class(stream)
        exporter.start_exporting()
        for item in items:
            exporter.export_item(item)
        exporter.finish_exporting()
        return stream.getvalue()

    assert export(EXPORTERS[feed_format]) == export(scrapy_exporter)


# -- settings reference: settings, stats keys, meta keys ----------------------------------------


def settings_doc() -> str:
    return readme_section("settings", REPO_ROOT / "docs" / "settings.md")


def _doc_keys(doc: str, heading: str) -> set[str]:
    """The backquoted first cells of the table rows under a ``### heading``."""
    match = re.search(rf"^### {re.escape(heading)}\n(.*?)(?=^##|\Z)", doc, re.DOTALL | re.MULTILINE)
    assert match, f"no '### {heading}' in the settings reference"
    return set(re.findall(r"^\|\s*`([^`]+)`", match.group(1), re.MULTILINE))


def _pattern(key: str) -> re.Pattern[str]:
    """A documented key with <placeholders> as a regex."""
    return re.compile(
        "".join(".+" if part.startswith("<") else re.escape(part) for part in re.split(r"(<[^>]+>)", key))
    )


def assert_stats_documented(stats: Mapping[str, Any]) -> None:
    documented = [_pattern(key) for key in _doc_keys(settings_doc(), "Stats")]
    for key in stats:
        if key.startswith("sitemap_crawl/"):
            assert any(p.fullmatch(key) for p in documented), f"stats key {key!r} is not in the settings reference"


def test_every_setting_is_in_the_reference_with_its_default() -> None:
    doc = settings_doc()
    documented = _doc_keys(doc, "Settings")
    assert documented == set(DEFAULTS) | code_settings(), "settings reference and the code's settings differ"
    for name, value in DEFAULTS.items():
        row = re.search(rf"^\|\s*`{name}`\s*\|([^|]*)\|", doc, re.MULTILINE)
        assert row, name
        cell = row.group(1)
        if isinstance(value, bool) or value is None:
            assert str(value) in cell, (name, cell)
        elif isinstance(value, int | float):
            assert str(value) in cell.replace("_", "").replace(",", ""), (name, cell)
        elif isinstance(value, str):
            assert f"`{value}`" in cell, (name, cell)
        else:
            assert str(len(value)) in cell, (name, cell)


def _source_trees() -> dict[Path, ast.Module]:
    return {path: ast.parse(path.read_text("utf-8")) for path in (REPO_ROOT / "sitemap_crawl").rglob("*.py")}


def code_settings() -> set[str]:
    """Every SITEMAP_CRAWL_* setting name the code spells out (config.DEFAULTS and elsewhere)."""
    return {
        node.value
        for tree in _source_trees().values()
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and re.fullmatch(r"SITEMAP_CRAWL_[A-Z0-9_]+", node.value)
    }


def _module_constants(trees: Mapping[Path, ast.Module]) -> dict[str, str]:
    constants: dict[str, str] = {}
    for tree in trees.values():
        for node in tree.body:
            if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Constant):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name) and isinstance(node.value.value, str):
                        constants[target.id] = node.value.value
    return constants


def _text_of(node: ast.expr | None, constants: Mapping[str, str]) -> str | None:
    """A string expression as a key: constants resolved, other f-string parts as <...>."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue) and _text_of(value.value, constants) is not None:
                parts.append(str(_text_of(value.value, constants)))
            else:
                parts.append("<x>")
        return "".join(parts)
    return None


def _is_meta(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "meta"


def code_keys() -> tuple[set[str], set[str]]:
    """(stats keys, request meta keys) that sitemap_crawl's code sets, reads or writes."""
    trees = _source_trees()
    constants = _module_constants(trees)
    stats_exprs: list[ast.expr | None] = []
    meta_exprs: list[ast.expr | None] = []
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.Subscript) and _is_meta(node.value):
                meta_exprs.append(node.slice)  # meta[KEY], read or written
            if not isinstance(node, ast.Call):
                continue
            if isinstance(node.func, ast.Attribute) and node.args:
                if node.func.attr in ("inc_value", "set_value", "max_value", "min_value"):
                    stats_exprs.append(node.args[0])
                if node.func.attr in ("get", "pop", "setdefault") and _is_meta(node.func.value):
                    meta_exprs.append(node.args[0])  # meta.get(KEY)
            for keyword in node.keywords:
                if keyword.arg == "meta" and isinstance(keyword.value, ast.Dict):
                    meta_exprs.extend(keyword.value.keys)  # Request(..., meta={KEY: ...})
    stats = {key for expr in stats_exprs if (key := _text_of(expr, constants)) is not None}
    meta = {key for expr in meta_exprs if (key := _text_of(expr, constants)) is not None}
    return stats, meta


def test_every_stats_key_and_meta_key_in_the_code_is_in_the_reference() -> None:
    stats, meta = code_keys()
    assert {"sitemap_crawl/pages", "sitemap_crawl/not_followed"} <= stats  # the scan works
    assert {"sitemap_crawl", "download_maxsize"} <= meta
    doc = settings_doc()
    documented_stats = [_pattern(key) for key in _doc_keys(doc, "Stats")]
    for key in stats:
        example = key.replace("<x>", "x")
        assert any(p.fullmatch(example) for p in documented_stats), f"stats key {key!r} is not documented"
    assert meta <= _doc_keys(doc, "Request meta keys"), "request meta keys missing from the reference"


def test_another_add_ons_scheduler_is_kept_by_both_spiders() -> None:
    # a spider's update_settings runs before the add-ons: it set its scheduler at spider
    # priority, and an add-on's SCHEDULER (at addon priority) never took effect
    from sitemap_crawl import SitemapSpider
    from sitemap_crawl.loader import SitemapLoaderScheduler
    from sitemap_crawl.spiders.sitemaps import SitemapsSpider

    for spider in (SitemapsSpider, SitemapSpider):
        settings = Settings()
        spider.update_settings(settings)
        assert load_object(settings["SCHEDULER"]) is SitemapLoaderScheduler  # (the default replaced)
        settings.set("SCHEDULER", "myproject.MyScheduler", priority="addon")
        assert settings["SCHEDULER"] == "myproject.MyScheduler"
