"""Lower bound ("floor") for parsing a benchmark site: no HTTP, no item pipeline.

Usage: python floor.py SITE_DIR BASE_URL OUT_FILE

Discovers the sitemaps like a crawler would (robots.txt ``Sitemap:`` lines, then
sitemap indexes recursively), but reads each file straight from disk (URL path ->
file under SITE_DIR), gunzips by magic bytes, and parses XML with
``lxml.etree.iterparse`` (tag-filtered, elements cleared as it goes) keeping only
the page URL: ``<url><loc>`` in urlsets, ``<item><link>`` in RSS, the first
``<entry><link href>`` in Atom, absolute-URL lines in plain-text sitemaps.  It writes
one URL per line.  The well-known-path probes are not done.
"""

from __future__ import annotations

import gzip
import io
import sys
from pathlib import Path

from lxml import etree

SM = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
ATOM = "{http://www.w3.org/2005/Atom}"
TAGS = (SM + "url", SM + "sitemap", "item", ATOM + "entry")


def open_body(path: Path) -> io.BufferedIOBase:
    """The file, gunzipped when it starts with the gzip magic bytes."""
    with open(path, "rb") as f:
        magic = f.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rb")
    return open(path, "rb")


def parse_xml(body: io.BufferedIOBase, out: io.TextIOBase, children: list[str]) -> int:
    n = 0
    for _event, el in etree.iterparse(
        body,
        events=("end",),
        tag=TAGS,
        resolve_entities=False,
        no_network=True,
        huge_tree=True,
    ):
        tag = el.tag
        if tag == SM + "url":
            loc = el.findtext(SM + "loc")
            if loc and loc.strip():
                out.write(loc.strip() + "\n")
                n += 1
        elif tag == SM + "sitemap":
            loc = el.findtext(SM + "loc")
            if loc and loc.strip():
                children.append(loc.strip())
        elif tag == "item":
            link = el.findtext("link")
            if link and link.strip():
                out.write(link.strip() + "\n")
                n += 1
        else:
            link_el = el.find(ATOM + "link")
            href = link_el.get("href") if link_el is not None else None
            if href:
                out.write(href.strip() + "\n")
                n += 1
        el.clear(keep_tail=False)
        parent = el.getparent()
        if parent is not None:
            while el.getprevious() is not None:
                del parent[0]
    return n


def main() -> int:
    site, base, out_path = Path(sys.argv[1]), sys.argv[2].rstrip("/"), sys.argv[3]

    def local(url: str) -> Path:
        assert url.startswith(base + "/"), url
        return site / url[len(base) + 1 :]

    robots = (site / "robots.txt").read_text(encoding="utf-8")
    queue = [
        line.split(":", 1)[1].split("#", 1)[0].strip()
        for line in robots.splitlines()
        if line.strip().lower().startswith("sitemap:")
    ]
    seen: set[str] = set()
    total = 0
    with open(out_path, "w", encoding="utf-8") as out:
        while queue:
            url = queue.pop(0)
            if url in seen:
                continue
            seen.add(url)
            with open_body(local(url)) as sniff:
                head = sniff.read(256)
            with open_body(local(url)) as body:
                if head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<"):
                    children: list[str] = []
                    total += parse_xml(body, out, children)
                    queue.extend(children)
                else:
                    text = body.read().decode("utf-8", errors="replace")
                    for raw in text.splitlines():
                        line = raw.strip()
                        if line.startswith(("http://", "https://")):
                            out.write(line + "\n")
                            total += 1
    print(f"floor: {total} pages from {len(seen)} sitemaps", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
