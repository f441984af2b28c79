"""``scrapy sitemaps-collect --trees 'trees-*.jsonl' --pages 'pages-*.jsonl' -O all.jsonl``:
each site's pages exactly once from the outputs of a queue's workers (see
:mod:`sitemap_crawl.queue.collect`)."""

from __future__ import annotations

import argparse
import os
import stat
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import IO

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from sitemap_crawl.output_paths import file_identity, shared_file
from sitemap_crawl.queue.collect import collect, expand


class Command(ScrapyCommand):
    requires_project = False
    requires_crawler_process = False
    default_settings = {"LOG_LEVEL": "WARNING"}  # noqa: RUF012 - Scrapy's own commands declare it so

    def syntax(self) -> str:
        return "--trees PATTERN --pages PATTERN -O FILE [--trees-out FILE]"

    def short_desc(self) -> str:
        return "Keep each site's pages once from the JSON lines outputs of a queue's workers"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--trees", action="append", default=[], metavar="PATTERN", help="tree files (.jsonl)")
        parser.add_argument("--pages", action="append", default=[], metavar="PATTERN", help="page feeds (.jsonl)")
        parser.add_argument("-O", "--output", metavar="FILE", help="where the pages go (JSON lines; - for stdout)")
        parser.add_argument(
            "--trees-out", metavar="FILE", help="also write the tree line of each site kept (- for stdout)"
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if args or not opts.trees or not opts.pages or not opts.output:
            raise UsageError("give --trees PATTERN, --pages PATTERN and -O FILE")
        trees, pages = expand(opts.trees), expand(opts.pages)
        for path in [*trees, *pages]:
            if not path.is_file():
                raise UsageError(f"{path} is not a file")
        outputs = [("-O", opts.output), ("--trees-out", opts.trees_out)]
        _check_outputs(outputs, [*trees, *pages])
        with ExitStack() as stack:
            out, trees_out = _open_outputs(stack, outputs)
            assert out is not None
            report = collect(trees, pages, out, trees_out)
        print(
            f"{report.sites} sites, {report.pages} pages kept; {report.left_out} rows of incomplete or "
            f"repeated attempts left out ({report.repeated_attempts} repeated complete attempts)",
            file=sys.stderr,
        )
        if report.repeated_tree_lines:
            print(
                f"{report.repeated_tree_lines} tree lines repeat the site and attempt of one read before, in "
                f"{', '.join(report.repeating_tree_files)} (a tree file given twice, or an earlier --trees-out "
                "matched by --trees?): each attempt counted once",
                file=sys.stderr,
            )
        if report.unreadable_lines:
            print(f"{report.unreadable_lines} lines cut short (by a crash) were skipped", file=sys.stderr)
        for site, (rows, count) in sorted(report.short_sites.items()):
            print(f"{site}: {rows} rows but its tree counts {count} pages (a feed file missing?)", file=sys.stderr)
        for site, (rows, count, files) in sorted(report.long_sites.items()):
            print(
                f"{site}: {rows} rows but its tree counts {count} pages; they came from {', '.join(files)} "
                "(a feed file given twice, or an earlier collect output matched by --pages?)",
                file=sys.stderr,
            )
        if report.short_sites or report.long_sites:
            self.exitcode = 1


def _check_outputs(outputs: list[tuple[str, str | None]], inputs: list[Path]) -> None:
    """The outputs may name no input (opened for writing, it would be emptied before it is
    read) and not the same file (standard output too: ``-`` and ``/dev/stdout``), whatever
    the spelling, a symlink or a hard link."""
    given = [(option, path) for option, path in outputs if path]
    clash = shared_file(given)
    if clash is not None:
        raise UsageError(clash)
    read = {file_identity(str(path)): path for path in inputs}
    for option, path in given:
        if (source := read.get(file_identity(path))) is not None:
            raise UsageError(f"{option} {path} is one of the files read ({source}): writing it would empty it first")


def _open_outputs(stack: ExitStack, outputs: list[tuple[str, str | None]]) -> list[IO[bytes] | None]:
    """The outputs opened for writing (``-``: standard output), emptied only once all could be
    opened: one that cannot be written is one usage error line, and no file was changed (a
    file this made is removed)."""
    opened: list[IO[bytes] | None] = []
    made: list[Path] = []
    for option, path in outputs:
        if not path or path == "-":
            opened.append(sys.stdout.buffer if path == "-" else None)
            continue
        target = Path(path)
        existed = target.exists()
        try:
            opened.append(stack.enter_context(target.open("ab")))  # (not emptied yet)
        except OSError as exc:
            for new in made:
                new.unlink(missing_ok=True)
            raise UsageError(f"{option} {path} cannot be written: {exc.strerror or exc}") from None
        if not existed:
            made.append(target)
    for handle in opened:  # (a regular file: /dev/stdout, /dev/null, a pipe cannot be emptied)
        if handle is not None and stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            handle.truncate(0)
    return opened
