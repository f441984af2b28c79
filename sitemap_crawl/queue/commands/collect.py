"""``scrapy sitemaps-collect --trees 'trees-*.jsonl' --pages 'pages-*.jsonl' -O all.jsonl``:
each site's pages exactly once from the outputs of a queue's workers (see
:mod:`sitemap_crawl.queue.collect`)."""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
from pathlib import Path

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

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
        parser.add_argument("--trees-out", metavar="FILE", help="also write the tree line of each site kept")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if args or not opts.trees or not opts.pages or not opts.output:
            raise UsageError("give --trees PATTERN, --pages PATTERN and -O FILE")
        trees, pages = expand(opts.trees), expand(opts.pages)
        for path in [*trees, *pages]:
            if not path.is_file():
                raise UsageError(f"{path} is not a file")
        with ExitStack() as stack:
            out = sys.stdout.buffer if opts.output == "-" else stack.enter_context(Path(opts.output).open("wb"))
            trees_out = stack.enter_context(Path(opts.trees_out).open("wb")) if opts.trees_out else None
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
