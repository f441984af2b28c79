"""``scrapy sitemaps-collect --trees 'trees-*.jsonl' --pages 'pages-*.jsonl' -O all.jsonl``:
each site's pages exactly once from the outputs of a queue's workers (see
:mod:`sitemap_crawl.queue.collect`)."""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import IO

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from sitemap_crawl.output_paths import shared_file
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
        parser.add_argument("-O", "--output", metavar="FILE", help="where the pages go (JSON lines; - : stdout)")
        parser.add_argument(
            "--trees-out", metavar="FILE", help="also write the tree line of each site kept (- : stdout)"
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
            out, trees_out = (_open_output(stack, option, path) for option, path in outputs)
            assert out is not None
            report = collect(trees, pages, out, trees_out)
        print(
            f"{report.sites} sites, {report.pages} pages kept; {report.left_out} rows of incomplete or "
            f"repeated attempts left out ({report.repeated_attempts} repeated complete attempts)",
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
    read) and not the same file (or both standard output)."""
    given = [(option, path) for option, path in outputs if path]
    if sum(path == "-" for _option, path in given) > 1:
        raise UsageError("-O and --trees-out cannot both be standard output (-)")
    clash = shared_file([(option, path) for option, path in given if path != "-"])
    if clash is not None:
        raise UsageError(clash)
    read = {path.resolve(): path for path in inputs}
    for option, path in given:
        if path != "-" and (source := read.get(Path(path).resolve())) is not None:
            raise UsageError(f"{option} {path} is one of the files read ({source}): writing it would empty it first")


def _open_output(stack: ExitStack, option: str, path: str | None) -> IO[bytes] | None:
    """An output opened for writing (``-``: standard output); a path that cannot be written
    is one usage error line."""
    if not path:
        return None
    if path == "-":
        return sys.stdout.buffer
    try:
        return stack.enter_context(Path(path).open("wb"))
    except OSError as exc:
        raise UsageError(f"{option} {path} cannot be written: {exc.strerror or exc}") from None
