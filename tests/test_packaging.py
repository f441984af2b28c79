"""Packaging: the wheel ``pip install .`` builds, the egg ``scrapyd-deploy`` builds, the
project's own settings, and the changelog.

Builds run on a copy of the working tree in a temporary directory, so that they
neither write build/ or *.egg-info into the checkout nor race with other runs.
"""

from __future__ import annotations

import configparser
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from scrapy.settings import Settings

import sitemap_crawl
from sitemap_crawl.config import DEFAULTS
from tests.support import REPO_ROOT, robots, sitemapindex, urlset
from tests.support.feeds import read_feed
from tests.support.fixture_server import SiteFactory

PACKAGE = "sitemap_crawl"
COMMANDS = {
    "sitemaps-collect": "sitemap_crawl.queue.commands.collect:Command",
    "sitemaps-enqueue": "sitemap_crawl.queue.commands.enqueue:Command",
    "sitemaps-status": "sitemap_crawl.queue.commands.status:Command",
}
"""The Scrapy commands the package brings (the queue's: docs/many-machines.md)."""
ENTRY_POINT = "[scrapy]\nsettings = sitemap_crawl.settings\n\n[scrapy.commands]\n" + "\n".join(
    f"{name} = {target}" for name, target in COMMANDS.items()
)

_NOT_COPIED = {
    ".git",
    ".venv",
    "__pycache__",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".hypothesis",
    ".work",
    "build",
    "dist",
}


def _ignore(directory: str, names: list[str]) -> set[str]:
    return {
        name
        for name in names
        if name in _NOT_COPIED
        or name.endswith(".egg-info")
        or (Path(directory, name) / "pyvenv.cfg").exists()  # a virtual environment
    }


def copy_of_the_tree(destination: Path) -> Path:
    shutil.copytree(REPO_ROOT, destination, ignore=_ignore)
    return destination


def clean_env(**extra: str) -> dict[str, str]:
    scrubbed = ("SCRAPY_SETTINGS_MODULE", "SCRAPY_PROJECT", "PYTHONPATH", "PIP_REQUIRE_VIRTUALENV")
    env = {k: v for k, v in os.environ.items() if k not in scrubbed and not k.lower().endswith("_proxy")}
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def run(command: list[str], cwd: Path, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    completed = subprocess.run(
        command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout
    )
    assert completed.returncode == 0, (
        f"{' '.join(command)} failed:\n{completed.stdout[-3000:]}\n{completed.stderr[-3000:]}"
    )
    return completed


def source_modules() -> set[str]:
    return {
        path.relative_to(REPO_ROOT).as_posix()
        for path in (REPO_ROOT / PACKAGE).rglob("*.py")
        if "__pycache__" not in path.parts
    }


def pyproject() -> dict[str, object]:
    return tomllib.loads((REPO_ROOT / "pyproject.toml").read_text("utf-8"))


# -- the wheel -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """``pip wheel .`` (what ``pip install .`` builds), in an isolated build environment."""
    base = tmp_path_factory.mktemp("wheel")
    tree = copy_of_the_tree(base / "tree")
    out = base / "dist"
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(tree),
            "--no-deps",
            "--disable-pip-version-check",
            "-q",
            "-w",
            str(out),
        ],
        cwd=base,
        env=clean_env(),
        timeout=300,
    )
    (built,) = out.glob("*.whl")
    yield built


def test_the_wheel_holds_the_package_and_nothing_else(wheel: Path) -> None:
    version = sitemap_crawl.__version__
    assert wheel.name == f"sitemap_crawl-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        dist_info = f"sitemap_crawl-{version}.dist-info/"
        strays = [name for name in names if not name.startswith((f"{PACKAGE}/", dist_info))]
        assert strays == [], "files outside the package in the wheel"
        assert f"{PACKAGE}/py.typed" in names, "the PEP 561 marker is missing from the wheel"
        for part in ("tests/", "benchmarks/", "docs/", "conftest", "__pycache__", ".pyc", "scrapy.cfg", "setup.py"):
            assert not [name for name in names if part in name], part
        assert {name for name in names if name.endswith(".py")} == source_modules()
        assert archive.read(f"{dist_info}entry_points.txt").decode().strip() == ENTRY_POINT
        metadata = archive.read(f"{dist_info}METADATA").decode()
    assert "Name: sitemap-crawl" in metadata
    assert f"Version: {version}" in metadata
    assert re.search(r"^Requires-Dist: scrapy<2\.20,>=2\.19", metadata, re.MULTILINE | re.IGNORECASE)
    assert re.search(r"^Requires-Dist: lxml", metadata, re.MULTILINE)


def test_the_version_is_declared_once() -> None:
    project = pyproject()["project"]
    assert isinstance(project, dict)
    assert project["version"] == sitemap_crawl.__version__


def test_a_fresh_project_runs_on_the_wheel_alone(wheel: Path, tmp_path: Path, fixture_site: SiteFactory) -> None:
    """A pure-Python wheel is importable as it is: with only the wheel on the path, a
    startproject project with the ADDONS line maps a site (every module it needs is packed)."""
    site = fixture_site(
        {
            "/robots.txt": robots("{base}/index.xml"),
            "/index.xml": sitemapindex("{base}/a.xml"),
            "/a.xml": urlset("{base}/one", "{base}/two"),
        }
    )
    env = clean_env(PYTHONPATH=str(wheel), XDG_STATE_HOME=str(tmp_path / "state"))
    scrapy = [sys.executable, "-m", "scrapy"]
    run([*scrapy, "startproject", "myproject"], cwd=tmp_path, env=env)
    project = tmp_path / "myproject"
    settings = project / "myproject" / "settings.py"
    settings.write_text(
        settings.read_text("utf-8").replace("ADDONS = {}\n", 'ADDONS = {"sitemap_crawl.Addon": 0}\n'), "utf-8"
    )
    completed = run(
        [*scrapy, "crawl", "sitemaps", "-a", f"homepage={site.base}/", "-O", "pages.jsonl",
         "-s", "SITEMAP_CRAWL_TREE_FILE=tree.json", "-s", "DOWNLOAD_DELAY=0", "-s", "TELNETCONSOLE_ENABLED=False"],
        cwd=project,
        env=env,
    )  # fmt: skip
    pages = read_feed(project / "pages.jsonl")
    assert len(pages) == 2, completed.stderr[-3000:]
    assert '"kind": "xml_urlset"' in (project / "tree.json").read_text("utf-8")
    probe = run([sys.executable, "-c", "import sitemap_crawl; print(sitemap_crawl.__file__)"], cwd=tmp_path, env=env)
    assert probe.stdout.strip() == f"{wheel}/sitemap_crawl/__init__.py"


# -- scrapyd-deploy's egg ------------------------------------------------------------------------


def test_scrapyd_deploy_egg(tmp_path: Path, fixture_site: SiteFactory) -> None:
    """scrapyd-deploy (scrapyd-client 2.x) runs ``python setup.py clean -a`` and
    ``python setup.py bdist_egg -d DIR`` in the directory of scrapy.cfg (writing a setup.py
    of its own only when there is none); scrapyd then puts the egg on sys.path and sets
    SCRAPY_SETTINGS_MODULE from the egg's ``scrapy`` ``settings`` entry point."""
    pytest.importorskip("setuptools", minversion="77", reason="setup.py needs setuptools 77+ (the test extra has it)")
    tree = copy_of_the_tree(tmp_path / "tree")
    env = clean_env()
    run([sys.executable, "setup.py", "clean", "-a"], cwd=tree, env=env)
    run([sys.executable, "setup.py", "bdist_egg", "-d", str(tmp_path / "eggs")], cwd=tree, env=env)
    (egg,) = (tmp_path / "eggs").glob("*.egg")

    with zipfile.ZipFile(egg) as archive:
        names = archive.namelist()
        assert all(name.startswith((f"{PACKAGE}/", "EGG-INFO/")) for name in names), names
        assert {name for name in names if name.endswith(".py")} == source_modules()
        entry_points = archive.read("EGG-INFO/entry_points.txt").decode()
    assert entry_points.strip() == ENTRY_POINT
    settings_module = configparser.ConfigParser()
    settings_module.read_string(entry_points)
    module = settings_module["scrapy"]["settings"].strip()

    # as scrapyd runs it (scrapyd.runner): the egg put on sys.path (not on PYTHONPATH), the
    # settings module from the entry point, scrapy's command line, no scrapy.cfg around
    launcher = (
        "import os, sys; sys.path.insert(0, sys.argv.pop(1)); "
        "os.environ.setdefault('SCRAPY_SETTINGS_MODULE', sys.argv.pop(1)); "
        "from scrapy.cmdline import execute; execute()"
    )
    scrapyd = [sys.executable, "-c", launcher, str(egg), module]
    workdir = tmp_path / "scrapyd-job"
    workdir.mkdir()
    env = clean_env(XDG_STATE_HOME=str(tmp_path / "state"))
    assert run([*scrapyd, "list"], cwd=workdir, env=env).stdout.split() == ["sitemaps"]

    # a sitemap big enough for the parsing worker, a process of its own that must find the egg too
    site = fixture_site({"/sitemap.xml": urlset(*(f"{{base}}/page/{i}" for i in range(8000)))})
    assert len(site.render(site["/sitemap.xml"].body)) > DEFAULTS["SITEMAP_CRAWL_PARSE_WORKER_MIN_SIZE"]
    url = site.url("/sitemap.xml")
    crawl = run([*scrapyd, "crawl", "sitemaps", "-a", f"sitemap_urls={url}", "-O", "pages.jsonl"], cwd=workdir, env=env)
    assert len(read_feed(workdir / "pages.jsonl")) == 8000, crawl.stderr[-3000:]
    assert " ERROR: " not in crawl.stderr and "Parsing worker" not in crawl.stderr, crawl.stderr[-3000:]
    assert_remote_surfaces_off(crawl.stderr)


def assert_remote_surfaces_off(log: str) -> None:
    extensions = re.search(r"Enabled extensions:\n\[(.*?)\]", log, re.DOTALL)
    assert extensions, log[-3000:]
    assert "TelnetConsole" not in extensions.group(1)
    assert "RemoteControl" not in extensions.group(1)
    assert "Telnet console listening" not in log


# -- this repository's project settings ----------------------------------------------------------


def test_project_settings_are_thin_and_safe() -> None:
    settings = Settings()
    settings.setmodule("sitemap_crawl.settings", priority="project")
    assert settings.getbool("TELNETCONSOLE_ENABLED") is False
    assert settings.getbool("REMOTE_CONTROL_ENABLED") is False
    assert settings.getlist("SPIDER_MODULES") == ["sitemap_crawl.spiders"]
    # the spider brings its pipeline and exporters itself
    from sitemap_crawl import settings as module

    for name in ("ITEM_PIPELINES", "FEED_EXPORTERS", "EXTENSIONS", "DOWNLOADER_MIDDLEWARES", "SPIDER_MIDDLEWARES"):
        assert not hasattr(module, name), name
    # ... unless asked for: -s on the command line wins over the project
    settings.set("TELNETCONSOLE_ENABLED", True, priority="cmdline")
    settings.set("REMOTE_CONTROL_ENABLED", True, priority="cmdline")
    assert settings.getbool("TELNETCONSOLE_ENABLED") is True
    assert settings.getbool("REMOTE_CONTROL_ENABLED") is True


def test_project_files_agree() -> None:
    config = configparser.ConfigParser()
    config.read(REPO_ROOT / "scrapy.cfg")
    assert config["settings"]["default"] == "sitemap_crawl.settings"
    assert config["deploy"]["project"] == "sitemap_crawl"
    entry_points = pyproject()["project"]["entry-points"]  # type: ignore[index]
    assert entry_points == {"scrapy": {"settings": "sitemap_crawl.settings"}, "scrapy.commands": COMMANDS}
    find = pyproject()["tool"]["setuptools"]["packages"]["find"]  # type: ignore[index]
    assert find["include"] == ["sitemap_crawl*"]
    assert pyproject()["project"]["license"] == "BSD-3-Clause"  # type: ignore[index]  # SPDX (PEP 639)
    setup_py = (REPO_ROOT / "setup.py").read_text("utf-8")
    assert "setup()" in setup_py  # everything else comes from pyproject.toml


def test_changelog_has_an_unreleased_section() -> None:
    changelog = (REPO_ROOT / "CHANGELOG.md").read_text("utf-8")
    headings = re.findall(r"^## (.+)$", changelog, re.MULTILINE)
    assert headings and headings[0].strip("[] ").lower().startswith("unreleased"), headings
    unreleased = changelog.split("\n## ", 2)[1]
    assert "Addon" in unreleased and "parse_sitemap" in unreleased


def test_the_redis_client_is_loaded_only_by_queue_runs() -> None:
    # Scrapy loads every scrapy.commands entry point on every `scrapy` command, and every
    # crawl process loads the spider: the Redis client (~6 MiB a process) waits for a queue
    project = pyproject()["project"]
    assert isinstance(project, dict)
    commands = project["entry-points"]["scrapy.commands"]
    modules = sorted({target.split(":")[0] for target in commands.values()} | {"sitemap_crawl.spiders.sitemaps"})
    code = f"import sys\nfor m in {modules!r}: __import__(m)\nprint('redis' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False", modules
