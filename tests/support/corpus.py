"""Where the real-world corpus is (see docs/development.md): $SITEMAP_CRAWL_CORPUS, or one of
the folders below, beside this checkout or at a fixed path (for a clone made elsewhere)."""

from __future__ import annotations

import os
from pathlib import Path

from .crawl import REPO_ROOT


def _corpus_dir() -> Path:
    candidates = [
        os.environ.get("SITEMAP_CRAWL_CORPUS", ""),
        str(REPO_ROOT.parent / "shared" / "corpus" / "real"),
        "/work/shared/corpus/real",
    ]
    for candidate in candidates:
        if candidate and (Path(candidate) / "MANIFEST.tsv").is_file():
            return Path(candidate)
    return Path(candidates[1])


CORPUS_DIR = _corpus_dir()
"""The corpus folder (it may be missing: tests that need it skip)."""
