"""Run the real ``scrapy crawl sitemaps`` command in a subprocess, as a user would, and
read back what it produced: the feed, the tree file, the log.

    result = run_crawl({"homepage": site.base}, settings={"RETRY_TIMES": 0})
    result.assert_ok()
    assert result.urls() == [site.url("/a"), site.url("/b")]
    assert result.kinds()[site.url("/sitemap.xml")] == "xml_urlset"

In tests use the ``crawl`` fixture, which gives every run its own directory under
pytest's ``tmp_path``: ``result = crawl({"homepage": site.base})``.
"""

from __future__ import annotations

import ast
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypedDict, Unpack

from lxml import etree

from .feeds import FEED_FORMATS, read_feed

__all__ = [
    "DEFAULT_SETTINGS",
    "FEED_FORMATS",
    "REPO_ROOT",
    "CrawlOptions",
    "CrawlResult",
    "CrawlRunner",
    "CrawlTimeoutError",
    "RunningCrawl",
    "StartOptions",
    "build_command",
    "run_crawl",
    "start_crawl",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
SPIDER_NAME = "sitemaps"
TREE_SETTING = "SITEMAP_CRAWL_TREE_FILE"

DEFAULT_SETTINGS: dict[str, object] = {
    "LOG_LEVEL": "DEBUG",
    # Not under test, and its port range (6023-6073) is shared by every crawl running at once.
    "TELNETCONSOLE_ENABLED": False,
}
"""Passed with -s before the test's own settings, which override them."""

# Inherited variables that would change what the crawl does: another Scrapy project, or a
# proxy that Scrapy's HttpProxyMiddleware would send the 127.0.0.1 requests through.
_SCRUBBED_ENV = (
    "SCRAPY_SETTINGS_MODULE",
    "SCRAPY_PROJECT",
    "SCRAPY_PYTHON_SHELL",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
)

SpiderArg = str | Mapping[str, object]
"""``"key=value"`` (as given to -a) or a mapping of argument name to value."""

_LOG_RECORD = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \[(?P<logger>[^\]]*)\] (?P<level>[A-Z]+): ",
    re.MULTILINE,
)


class CrawlTimeoutError(AssertionError):
    """The crawl did not finish in time; it was killed. The message ends with the log's tail."""


class StartOptions(TypedDict, total=False):
    """Keyword options of :func:`start_crawl` (besides tmp_dir)."""

    settings: Mapping[str, object] | None
    output_format: str | None
    cwd: Path | str
    env: Mapping[str, str] | None
    extra_args: Sequence[str]


class CrawlOptions(StartOptions, total=False):
    """Keyword options of :func:`run_crawl` (besides tmp_dir)."""

    timeout: float


def _arg_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def _setting_value(value: object) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)  # Settings.getlist() splits a str on ","
    if isinstance(value, dict):
        return json.dumps(value)  # Settings.getdict() parses a str as JSON
    if value is None:
        return ""
    return str(value)


def _spider_args(spider_args: Sequence[SpiderArg]) -> list[str]:
    args: list[str] = []
    for arg in spider_args:
        if isinstance(arg, str):
            if "=" not in arg:
                raise ValueError(f"a spider argument is 'name=value', got {arg!r}")
            args += ["-a", arg]
        else:
            for name, value in arg.items():
                args += ["-a", f"{name}={_arg_value(value)}"]
    return args


def build_command(
    *spider_args: SpiderArg,
    tmp_dir: Path,
    settings: Mapping[str, object] | None = None,
    output_format: str | None = "jsonl",
    cwd: Path | str = REPO_ROOT,
    extra_args: Sequence[str] = (),
) -> tuple[list[str], Path | None, Path | None]:
    """The command line of a crawl, with the feed and tree paths it will write (None: not asked)."""
    settings = dict(settings or {})
    command = [
        sys.executable,
        "-m",
        "scrapy",
        "crawl",
        SPIDER_NAME,
        *_spider_args(spider_args),
    ]
    feed_path: Path | None = None
    if output_format is not None:
        if output_format not in FEED_FORMATS:
            raise ValueError(f"output_format is one of {sorted(FEED_FORMATS)} or None, not {output_format!r}")
        feed_path = tmp_dir / f"pages.{FEED_FORMATS[output_format]}"
        command += ["-O", str(feed_path)]
    tree_path: Path | None = tmp_dir / "tree.json"
    if TREE_SETTING in settings:
        tree_value = settings.pop(TREE_SETTING)
        tree_path = None if tree_value in (None, "") else Path(cwd, str(tree_value))
    if tree_path is not None:
        command += ["-s", f"{TREE_SETTING}={tree_path}"]
    for name, value in {**DEFAULT_SETTINGS, **settings}.items():
        command += ["-s", f"{name}={_setting_value(value)}"]
    command += list(extra_args)
    return command, feed_path, tree_path


def _crawl_env(extra: Mapping[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED_ENV}
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


def _tail(text: str, lines: int = 60) -> str:
    return "\n".join(text.splitlines()[-lines:])


def start_crawl(
    *spider_args: SpiderArg,
    settings: Mapping[str, object] | None = None,
    output_format: str | None = "jsonl",
    cwd: Path | str = REPO_ROOT,
    tmp_dir: Path | None = None,
    env: Mapping[str, str] | None = None,
    extra_args: Sequence[str] = (),
) -> RunningCrawl:
    """Start a crawl in the background (for tests that stop it early or watch it run).

    stdout and stderr go to files in tmp_dir (a new temporary directory if None).
    """
    tmp_dir = Path(tempfile.mkdtemp(prefix="sitemap-crawl-")) if tmp_dir is None else tmp_dir
    tmp_dir.mkdir(parents=True, exist_ok=True)
    command, feed_path, tree_path = build_command(
        *spider_args,
        tmp_dir=tmp_dir,
        settings=settings,
        output_format=output_format,
        cwd=cwd,
        extra_args=extra_args,
    )
    return RunningCrawl(
        command=command,
        cwd=Path(cwd),
        env=_crawl_env(env),
        tmp_dir=tmp_dir,
        feed_path=feed_path,
        tree_path=tree_path,
        output_format=output_format,
    )


def run_crawl(
    *spider_args: SpiderArg,
    settings: Mapping[str, object] | None = None,
    output_format: str | None = "jsonl",
    timeout: float = 120,
    cwd: Path | str = REPO_ROOT,
    tmp_dir: Path | None = None,
    env: Mapping[str, str] | None = None,
    extra_args: Sequence[str] = (),
) -> CrawlResult:
    """Run ``scrapy crawl sitemaps`` to the end and return what it produced.

    spider_args: ``"homepage=http://..."`` strings and/or ``{"homepage": ..., "use_robots": False}``
        mappings (bools become true/false, lists are comma-joined), each passed with -a.
    settings: extra -s KEY=VALUE (bools True/False, lists comma-joined, dicts as JSON); they
        override DEFAULT_SETTINGS. ``SITEMAP_CRAWL_TREE_FILE`` defaults to tmp_dir/tree.json;
        set it to None to leave it out.
    output_format: jsonl, json, csv or xml: the feed is written with ``-O tmp_dir/pages.<ext>``;
        None: no feed.
    timeout: seconds; past it the crawl is killed and CrawlTimeoutError raised.
    """
    running = start_crawl(
        *spider_args,
        settings=settings,
        output_format=output_format,
        cwd=cwd,
        tmp_dir=tmp_dir,
        env=env,
        extra_args=extra_args,
    )
    return running.wait(timeout)


class RunningCrawl:
    """A crawl subprocess started by :func:`start_crawl`; also a context manager that kills
    the process on exit if it is still running."""

    def __init__(
        self,
        *,
        command: list[str],
        cwd: Path,
        env: dict[str, str],
        tmp_dir: Path,
        feed_path: Path | None,
        tree_path: Path | None = None,
        output_format: str | None = None,
    ) -> None:
        self.command = command
        self.tmp_dir = tmp_dir
        self.feed_path = feed_path
        self.tree_path = tree_path
        self.output_format = output_format
        self.stdout_path = tmp_dir / "stdout.txt"
        self.stderr_path = tmp_dir / "stderr.txt"
        self.started = time.monotonic()
        with (
            self.stdout_path.open("wb") as stdout,
            self.stderr_path.open("wb") as stderr,
        ):
            self.process = subprocess.Popen(
                command,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                start_new_session=True,  # a Ctrl-C aimed at pytest does not reach it; interrupt() does
            )

    @property
    def pid(self) -> int:
        return self.process.pid

    def running(self) -> bool:
        return self.process.poll() is None

    def session_processes(self) -> list[int]:
        """Live processes of the crawl's session (the crawl and what it started: parsing
        workers, helper crawl processes), read from /proc; empty where there is no /proc."""
        found = []
        for entry in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = entry.read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[3]) == self.process.pid and fields[0] != "Z":  # fields: state, ppid, pgrp, session
                found.append(int(entry.parent.name))
        return found

    def log(self) -> str:
        """The log (stderr) written so far."""
        return self.stderr_path.read_text("utf-8", errors="replace")

    def wait_for_log(self, text: str, timeout: float = 30.0) -> bool:
        """Wait until ``text`` appears in the log; False if the timeout passes or the crawl
        ends without it."""
        deadline = time.monotonic() + timeout
        while True:
            finished = not self.running()
            if text in self.log():
                return True
            if finished or time.monotonic() >= deadline:
                return False
            time.sleep(0.05)

    def interrupt(self) -> None:
        """Send SIGINT, as Ctrl-C does (Scrapy shuts down gracefully; a second one forces it)."""
        self._signal(signal.SIGINT)

    def terminate(self) -> None:
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL: no clean-up at all (kill -9)."""
        self._signal(signal.SIGKILL)

    def _signal(self, signum: int) -> None:
        if self.running():
            self.process.send_signal(signum)

    def wait(self, timeout: float = 120) -> CrawlResult:
        """Wait for the crawl to end and collect its result; kill it and raise CrawlTimeoutError
        if it takes longer than timeout seconds."""
        try:
            returncode = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            self.process.wait()
            raise CrawlTimeoutError(
                f"crawl still running after {timeout}s, killed: {' '.join(self.command)}\n"
                f"--- log tail ---\n{_tail(self.log())}"
            ) from None
        return CrawlResult(
            command=self.command,
            returncode=returncode,
            stdout=self.stdout_path.read_text("utf-8", errors="replace"),
            stderr=self.log(),
            feed_path=self.feed_path,
            tree_path=self.tree_path,
            output_format=self.output_format,
            tmp_dir=self.tmp_dir,
            duration=time.monotonic() - self.started,
        )

    def close(self) -> None:
        if self.running():
            self.kill()
        self.process.wait()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


@dataclass
class CrawlResult:
    """What a finished crawl produced. ``pages`` and ``tree`` are read on first access."""

    command: list[str]
    returncode: int
    stdout: str
    stderr: str
    feed_path: Path | None
    tree_path: Path | None
    output_format: str | None
    tmp_dir: Path
    duration: float

    # -- feed -----------------------------------------------------------------------------

    @cached_property
    def pages(self) -> list[dict[str, Any]]:
        """The feed's rows: jsonl/json as written; csv as DictReader rows (all str, nested
        columns are JSON text); xml as nested dicts/lists of str (best effort: an element
        whose children are all <value> is a list, an empty element is "")."""
        if self.feed_path is None or self.output_format is None:
            raise AssertionError("this crawl was run without a feed (output_format=None)")
        if not self.feed_path.exists():
            raise AssertionError(f"the crawl wrote no feed at {self.feed_path}\n{self._context()}")
        try:
            return read_feed(self.feed_path, self.output_format)
        except (ValueError, etree.XMLSyntaxError) as error:
            raise AssertionError(f"cannot parse the feed {self.feed_path}: {error}\n{self._context()}") from error

    def urls(self) -> list[str]:
        """Page URLs in feed order (with repeats)."""
        return [page["url"] for page in self.pages]

    # -- tree -----------------------------------------------------------------------------

    @cached_property
    def tree(self) -> dict[str, Any] | None:
        """The parsed tree file, or None when the crawl wrote none."""
        if self.tree_path is None or not self.tree_path.exists():
            return None
        tree: dict[str, Any] = json.loads(self.tree_path.read_text("utf-8"))
        return tree

    def walk(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """(depth, node) for every tree node, depth-first in document order; the root is depth 0."""
        if self.tree is None:
            return
        stack: list[tuple[int, dict[str, Any]]] = [(0, self.tree)]
        while stack:
            depth, node = stack.pop()
            yield depth, node
            children = node.get("sub_sitemaps") or []
            stack.extend((depth + 1, child) for child in reversed(children))

    def node(self, url: str) -> list[dict[str, Any]]:
        """Every tree node with this URL, depth-first (a sitemap in two indexes is there twice)."""
        return [node for _, node in self.walk() if node.get("url") == url]

    def kinds(self) -> dict[str, str]:
        """url -> kind of every tree node (the first occurrence of a repeated URL)."""
        kinds: dict[str, str] = {}
        for _, node in self.walk():
            kinds.setdefault(node["url"], node["kind"])
        return kinds

    def tree_text(self) -> str:
        """An indented rendering of the tree, for assertion messages."""
        if self.tree is None:
            return "(no tree)"
        lines = []
        for depth, node in self.walk():
            error = f" error={node.get('error')!r}" if node.get("error") else ""
            lines.append(f"{'  ' * depth}{node.get('kind')} {node.get('url')} pages={node.get('page_count')}{error}")
        return "\n".join(lines)

    # -- log ------------------------------------------------------------------------------

    @property
    def log(self) -> str:
        """The crawl's log (Scrapy logs to stderr)."""
        return self.stderr

    def log_has(self, text: str) -> bool:
        return text in self.stderr

    def log_count(self, text: str) -> int:
        return self.stderr.count(text)

    def log_lines(self, level: str | None = None) -> list[str]:
        """The first line of each log record, optionally only those of one level ("ERROR")."""
        return [
            line
            for line in self.stderr.splitlines()
            if (match := _LOG_RECORD.match(line)) and (level is None or match["level"] == level)
        ]

    @cached_property
    def stats(self) -> dict[str, Any]:
        """The stats Scrapy dumps at the end ({} if not found); datetimes are kept as their repr."""
        return _parse_stats(self.stderr)

    def _context(self) -> str:
        return f"returncode={self.returncode} command={' '.join(self.command)}\n--- log tail ---\n{_tail(self.stderr)}"

    def assert_ok(self) -> CrawlResult:
        """Fail unless the crawl exited 0 without any traceback in its log."""
        problems = []
        if self.returncode != 0:
            problems.append(f"exit status {self.returncode}")
        if "Traceback (most recent call last)" in self.stderr:
            problems.append("a traceback in the log")
        if problems:
            raise AssertionError(f"crawl failed ({', '.join(problems)})\n{self._context()}")
        return self


_DATETIME_CALL = re.compile(r"datetime\.\w+\(")


def _quote_datetime_calls(text: str) -> str:
    """Replace every ``datetime.xxx(...)`` call (balanced parentheses) by its repr as a
    string, so that the rest is a Python literal."""
    out = []
    position = 0
    while match := _DATETIME_CALL.search(text, position):
        depth = 1
        end = match.end()
        while end < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            end += 1
        out += [text[position : match.start()], repr(text[match.start() : end])]
        position = end
    out.append(text[position:])
    return "".join(out)


def _parse_stats(log: str) -> dict[str, Any]:
    marker = "Dumping Scrapy stats:\n"
    start = log.rfind(marker)
    if start == -1:
        return {}
    body = log[start + len(marker) :]
    if next_record := _LOG_RECORD.search(body):
        body = body[: next_record.start()]
    body = _quote_datetime_calls(body)
    try:
        stats = ast.literal_eval(body.strip())
    except (ValueError, SyntaxError):
        return {}
    return stats if isinstance(stats, dict) else {}


class CrawlRunner:
    """What the ``crawl`` fixture returns: ``crawl(...)`` runs a crawl like :func:`run_crawl`
    and ``crawl.start(...)`` starts one like :func:`start_crawl`, each in its own directory
    under ``base_dir``; crawls still running when the test ends are killed."""

    def __init__(self, base_dir: Path) -> None:
        self.base_dir = base_dir
        self._count = 0
        self._running: list[RunningCrawl] = []

    def _next_dir(self) -> Path:
        self._count += 1
        return self.base_dir / f"crawl-{self._count}"

    def __call__(self, *spider_args: SpiderArg, **options: Unpack[CrawlOptions]) -> CrawlResult:
        return run_crawl(*spider_args, tmp_dir=self._next_dir(), **options)

    def start(self, *spider_args: SpiderArg, **options: Unpack[StartOptions]) -> RunningCrawl:
        running = start_crawl(*spider_args, tmp_dir=self._next_dir(), **options)
        self._running.append(running)
        return running

    def close(self) -> None:
        for running in self._running:
            running.close()
