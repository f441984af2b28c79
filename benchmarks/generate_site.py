"""Deterministic generator of large, realistic sitemap sites for benchmarking.

The site is written as static files to a directory and later served by
``serve.py``.  All URLs inside the files are absolute and built from
``--base-url`` (which must therefore be the address the site is served on).

Shape (for N pages)::

    robots.txt                      Sitemap: lines (index, news index, text sitemap)
    sitemap_index.xml               index -> urlsets, RSS feed, nested index
      sitemaps/archive/sitemap-archive-index.xml.gz   nested index -> urlsets, Atom feed
    sitemaps/news/sitemap-news-index.xml              index -> news urlsets
    sitemaps/<section>/sitemap-<section>-NNNN.xml[.gz] urlsets (<= 50,000 entries)
    feeds/rss.xml, feeds/atom.xml, sitemaps/urllist.txt  (a few thousand URLs each)

Every page URL is unique site-wide and appears in exactly one sitemap, so the
expected page set is exact.  It is written to ``expected_urls.txt`` (tree
order, one URL per line) together with ``manifest.json`` (count, an
order-independent digest, file list, base URL).

Usage::

    python benchmarks/generate_site.py --pages 1m --out DIR [--seed 1]
        [--base-url http://127.0.0.1:8931]
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import hashlib
import json
import math
import os
import random
import shutil
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from multiprocessing import Pool
from pathlib import Path
from typing import BinaryIO
from xml.sax.saxutils import escape as _xml_escape

SIZES: dict[str, int] = {"200k": 200_000, "1m": 1_000_000, "5m": 5_000_000}
DEFAULT_BASE_URL = "http://127.0.0.1:8931"
DEFAULT_SEED = 1
MAX_URLSET = 50_000
MANIFEST = "manifest.json"
EXPECTED = "expected_urls.txt"
GENERATOR_VERSION = 1


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


NS_SITEMAP = "http://www.sitemaps.org/schemas/sitemap/0.9"
NS_IMAGE = "http://www.google.com/schemas/sitemap-image/1.1"
NS_NEWS = "http://www.google.com/schemas/sitemap-news/0.9"
NS_XHTML = "http://www.w3.org/1999/xhtml"
NS_ATOM = "http://www.w3.org/2005/Atom"

WORDS = _words(
    "alpha bright cedar delta ember falcon garden harbor island jasper "
    "kettle lantern meadow nimbus orchard pepper quartz river summit "
    "timber umber velvet willow yonder zephyr amber basil copper drift "
    "echo fable glacier hazel indigo juniper koala lotus maple nectar onyx "
    "pebble quill raven sable thistle ultra violet walnut xenon yarrow "
    "zinc atlas beacon canyon dune ember fjord grove heron iris jade kelp "
    "lagoon mesa north ocean prairie quest ridge sierra tundra upland "
    "valley wharf yukon zenith"
)
TITLE_WORDS = _words(
    "Guide Review Update Report Launch Season Market Weekly Tips Story "
    "Festival Science Travel Kitchen Garden Energy Budget Climate Design "
    "Museum Café Über Résumé Naïve Smörgåsbord"
)
CATEGORIES = _words("shoes jackets bags watches lamps chairs tables rugs kettles bikes tents books toys phones cameras")
# non-ASCII path segments, already percent-encoded as sitemaps require
ENCODED_SEGMENTS = (
    "k%C3%BCche",
    "caf%C3%A9",
    "%C3%BCber-uns",
    "stra%C3%9Fe",
    "ni%C3%B1os",
)
LANGS = ("en", "de", "fr", "es", "it", "nl")
CHANGEFREQ = ("always", "hourly", "daily", "weekly", "monthly", "yearly", "never")
PUBLICATIONS = (
    ("The Example Times", "en"),
    ("Beispiel Zeitung", "de"),
    ("Le Journal", "fr"),
)
EPOCH = dt.datetime(2019, 1, 1, tzinfo=dt.UTC)
SPAN_SECONDS = 6 * 365 * 86400
TZ_OFFSETS = ("+00:00", "+01:00", "+02:00", "-05:00", "+05:30", "-08:00", "+09:00")
RFC822_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
RFC822_MONTHS = (
    "Jan",
    "Feb",
    "Mar",
    "Apr",
    "May",
    "Jun",
    "Jul",
    "Aug",
    "Sep",
    "Oct",
    "Nov",
    "Dec",
)

# Per section: probability of an entry having images / news / alternates.
SECTIONS: dict[str, tuple[float, float, float]] = {
    "products": (0.6, 0.0, 0.0),
    "articles": (0.3, 0.0, 1.0),
    "news": (0.5, 1.0, 0.0),
    "pages": (0.1, 0.0, 0.0),
}
SECTION_CYCLE = (
    "products",
    "articles",
    "products",
    "pages",
    "articles",
    "news",
    "products",
)

esc = _xml_escape


def parse_size(text: str) -> int:
    """Parse ``200k``, ``1m``, ``5m``, ``20000``, ``50k``, ``2.5m`` into a page count."""
    t = text.strip().lower().replace("_", "")
    if t in SIZES:
        return SIZES[t]
    mult = 1
    if t.endswith("k"):
        mult, t = 1_000, t[:-1]
    elif t.endswith("m"):
        mult, t = 1_000_000, t[:-1]
    value = int(float(t) * mult)
    if value < 10:
        raise ValueError(f"size too small: {text!r} (need at least 10 pages)")
    return value


def size_label(pages: int) -> str:
    for label, n in SIZES.items():
        if n == pages:
            return label
    return str(pages)


@dataclass
class FileSpec:
    """One sitemap file of the site."""

    path: str  # relative to the site root, with '/' separators
    kind: str  # urlset | rss | atom | text | index
    section: str = ""
    first_id: int = 0
    count: int = 0
    gz: bool = False
    pretty: bool = False
    children: list[str] = field(default_factory=list)


@dataclass
class Plan:
    base: str
    seed: int
    pages: int
    files: list[FileSpec]
    robots_sitemaps: list[str]

    def page_files(self) -> list[FileSpec]:
        return [f for f in self.files if f.kind != "index"]


def make_plan(pages: int, seed: int, base: str) -> Plan:
    """Decide the files of the site (cheap, no content generated)."""
    rng = random.Random(f"plan-{seed}-{pages}")
    n_rss = min(3000, max(1, pages // 50))
    n_atom = min(2500, max(1, pages // 60))
    n_text = min(4000, max(1, pages // 40))
    rest = pages - n_rss - n_atom - n_text
    if rest < 1:
        raise ValueError("too few pages")
    # >= 42,500 entries per urlset on average, but small sites still get every section
    n_sets = max(1, math.ceil(rest / 42_500), min(len(SECTION_CYCLE), rest // 2000))
    while True:
        weights = [rng.uniform(0.7, 1.0) for _ in range(n_sets)]
        total = sum(weights)
        sizes = [int(rest * w / total) for w in weights]
        sizes[-1] += rest - sum(sizes)
        if max(sizes) <= MAX_URLSET and min(sizes) >= 1:
            break
        n_sets += 1

    files: list[FileSpec] = []
    next_id = 1
    urlsets: list[FileSpec] = []
    counters: dict[str, int] = {}
    for i, size in enumerate(sizes):
        section = SECTION_CYCLE[i % len(SECTION_CYCLE)] if n_sets > 1 else "products"
        counters[section] = counters.get(section, 0) + 1
        gz = i % 2 == 1
        name = f"sitemaps/{section}/sitemap-{section}-{counters[section]:04d}.xml"
        if gz:
            name += ".gz"
        urlsets.append(
            FileSpec(
                path=name,
                kind="urlset",
                section=section,
                first_id=next_id,
                count=size,
                gz=gz,
                pretty=i % 3 == 0,
            )
        )
        next_id += size
    rss = FileSpec(
        path="feeds/rss.xml",
        kind="rss",
        section="stories",
        first_id=next_id,
        count=n_rss,
    )
    next_id += n_rss
    atom = FileSpec(
        path="feeds/atom.xml",
        kind="atom",
        section="updates",
        first_id=next_id,
        count=n_atom,
    )
    next_id += n_atom
    text = FileSpec(
        path="sitemaps/urllist.txt",
        kind="text",
        section="legacy",
        first_id=next_id,
        count=n_text,
    )
    next_id += n_text
    assert next_id - 1 == pages

    news_sets = [u for u in urlsets if u.section == "news"]
    other_sets = [u for u in urlsets if u.section != "news"]
    half = (len(other_sets) + 1) // 2
    archive = FileSpec(
        path="sitemaps/archive/sitemap-archive-index.xml.gz",
        kind="index",
        gz=True,
        children=[u.path for u in other_sets[half:]] + [atom.path],
    )
    main = FileSpec(
        path="sitemap_index.xml",
        kind="index",
        pretty=True,
        children=[u.path for u in other_sets[:half]] + [rss.path, archive.path],
    )
    robots = [main.path]
    files = [main, *other_sets[:half], rss, archive, *other_sets[half:], atom]
    if news_sets:
        news_index = FileSpec(
            path="sitemaps/news/sitemap-news-index.xml",
            kind="index",
            children=[u.path for u in news_sets],
        )
        robots.append(news_index.path)
        files += [news_index, *news_sets]
    robots.append(text.path)
    files.append(text)
    return Plan(
        base=base.rstrip("/"),
        seed=seed,
        pages=pages,
        files=files,
        robots_sitemaps=robots,
    )


# --------------------------------------------------------------------------- content


class Gen:
    """Random field generator for one file (seeded per file: order-independent)."""

    def __init__(self, seed: int, spec: FileSpec, base: str) -> None:
        self.r = random.Random(f"{seed}:{spec.path}")
        self.base = base
        self.spec = spec

    def slug(self) -> str:
        r = self.r
        return "-".join(r.choice(WORDS) for _ in range(r.randint(2, 4)))

    def title(self) -> str:
        r = self.r
        words = [r.choice(TITLE_WORDS) for _ in range(r.randint(3, 7))]
        if r.random() < 0.1:
            words.insert(1, "&")
        return " ".join(words)

    def when(self) -> dt.datetime:
        return EPOCH + dt.timedelta(seconds=self.r.randrange(SPAN_SECONDS))

    def lastmod(self) -> str | None:
        r = self.r
        x = r.random()
        t = self.when()
        if x < 0.1:
            return None
        if x < 0.45:
            return t.strftime("%Y-%m-%d")
        if x < 0.75:
            return t.strftime("%Y-%m-%dT%H:%M:%S") + r.choice(TZ_OFFSETS)
        if x < 0.9:
            return t.strftime("%Y-%m-%dT%H:%M:%SZ")
        return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{r.randrange(1000):03d}+00:00"

    def rfc822(self, t: dt.datetime) -> str:
        return (
            f"{RFC822_DAYS[t.weekday()]}, {t.day:02d} {RFC822_MONTHS[t.month - 1]} "
            f"{t.year} {t.hour:02d}:{t.minute:02d}:{t.second:02d} +0000"
        )

    def page_url(self, page_id: int, lang: str | None = None) -> str:
        r = self.r
        b = self.base
        s = self.spec.section
        if s == "products":
            url = f"{b}/shop/{r.choice(CATEGORIES)}/{self.slug()}-p{page_id}.html"
            if r.random() < 0.03:
                url += f"?color={r.choice(WORDS)}&size={r.choice('SMLX')}"
            return url
        if s == "articles":
            t = self.when()
            return f"{b}/{lang or 'en'}/blog/{t.year}/{t.month:02d}/{self.slug()}-{page_id}/"
        if s == "news":
            t = self.when()
            return f"{b}/news/{t.year}/{t.month:02d}/{t.day:02d}/{self.slug()}-{page_id}.html"
        if s == "pages":
            if r.random() < 0.05:
                return f"{b}/de/{r.choice(ENCODED_SEGMENTS)}/{self.slug()}-{page_id}"
            return f"{b}/info/{self.slug()}-{page_id}"
        if s == "stories":
            return f"{b}/stories/{self.slug()}-{page_id}.html"
        if s == "updates":
            return f"{b}/updates/{page_id}/{self.slug()}"
        if s == "legacy":
            return f"{b}/legacy/page.php?id={page_id}&ref=txt"
        raise AssertionError(s)


def _url_entry(g: Gen, url: str, alternates: list[tuple[str, str]], nl: str, ind: str) -> str:
    r = g.r
    img_p, news_p, _ = SECTIONS[g.spec.section]
    parts = [f"<url>{nl}{ind}<loc>{esc(url)}</loc>"]
    lm = g.lastmod()
    if lm is not None:
        parts.append(f"{nl}{ind}<lastmod>{lm}</lastmod>")
    if r.random() < 0.8:
        parts.append(f"{nl}{ind}<changefreq>{r.choice(CHANGEFREQ)}</changefreq>")
    if r.random() < 0.8:
        parts.append(f"{nl}{ind}<priority>{r.randint(1, 10) / 10:.1f}</priority>")
    for lang, href in alternates:
        parts.append(f'{nl}{ind}<xhtml:link rel="alternate" hreflang="{lang}" href="{esc(href)}"/>')
    if news_p and r.random() < news_p:
        pub, lang = r.choice(PUBLICATIONS)
        t = g.when()
        kw = ", ".join(r.choice(WORDS) for _ in range(r.randint(1, 4)))
        parts.append(
            f"{nl}{ind}<news:news><news:publication><news:name>{esc(pub)}</news:name>"
            f"<news:language>{lang}</news:language></news:publication>"
            f"<news:publication_date>{t.strftime('%Y-%m-%dT%H:%M:%S')}{r.choice(TZ_OFFSETS)}"
            f"</news:publication_date><news:title>{esc(g.title())}</news:title>"
            f"<news:keywords>{esc(kw)}</news:keywords></news:news>"
        )
    if img_p and r.random() < img_p:
        path = url.split("/", 3)[3].split("?")[0].replace("/", "-")
        for k in range(r.randint(1, 3)):
            parts.append(
                f"{nl}{ind}<image:image><image:loc>{g.base}/img/{path}-{k}.jpg</image:loc>"
                f"<image:caption>{esc(g.title())}</image:caption>"
                f"<image:title>{esc(g.title())}</image:title></image:image>"
            )
    parts.append(f"{nl}</url>\n" if nl else "</url>\n")
    return "".join(parts)


def _urlset_chunks(g: Gen, spec: FileSpec, urls: list[str]) -> Iterator[str]:
    nl, ind = ("\n", "  ") if spec.pretty else ("", "")
    yield (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<urlset xmlns="{NS_SITEMAP}" xmlns:image="{NS_IMAGE}" '
        f'xmlns:news="{NS_NEWS}" xmlns:xhtml="{NS_XHTML}">\n'
    )
    r = g.r
    alt_p = SECTIONS[spec.section][2]
    page_id = spec.first_id
    end = spec.first_id + spec.count
    buf: list[str] = []
    while page_id < end:
        group = 1
        if alt_p and r.random() < alt_p:
            group = min(r.randint(2, 3), end - page_id)
        if group > 1:
            # one article in 2-3 languages: every version is a page of its own
            # and lists all versions (itself included) as hreflang alternates
            langs = r.sample(LANGS, group)
            state = r.getstate()
            versions = []
            for lang in langs:
                r.setstate(state)  # same slug and date for every language version
                versions.append((lang, g.page_url(page_id, lang)))
            for _, u in versions:
                urls.append(u)
                buf.append(_url_entry(g, u, versions, nl, ind))
        else:
            u = g.page_url(page_id)
            urls.append(u)
            buf.append(_url_entry(g, u, [], nl, ind))
        page_id += group
        if len(buf) >= 2000:
            yield "".join(buf)
            buf.clear()
    buf.append("</urlset>\n")
    yield "".join(buf)


def _rss_chunks(g: Gen, spec: FileSpec, urls: list[str]) -> Iterator[str]:
    yield (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<rss version="2.0" xmlns:atom="{NS_ATOM}">\n<channel>\n'
        "  <title>Example Stories</title>\n"
        f"  <link>{g.base}/</link>\n"
        "  <description>Latest stories</description>\n"
        f'  <atom:link href="{g.base}/{spec.path}" rel="self" type="application/rss+xml"/>\n'
    )
    buf: list[str] = []
    for page_id in range(spec.first_id, spec.first_id + spec.count):
        u = g.page_url(page_id)
        urls.append(u)
        t = g.when()
        buf.append(
            f"  <item>\n    <title>{esc(g.title())}</title>\n    <link>{esc(u)}</link>\n"
            f'    <guid isPermaLink="true">{esc(u)}</guid>\n'
            f"    <pubDate>{g.rfc822(t)}</pubDate>\n"
            f"    <description>{esc(g.title())}</description>\n  </item>\n"
        )
    buf.append("</channel>\n</rss>\n")
    yield "".join(buf)


def _atom_chunks(g: Gen, spec: FileSpec, urls: list[str]) -> Iterator[str]:
    yield (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        f'<feed xmlns="{NS_ATOM}">\n'
        "  <title>Example Updates</title>\n"
        f'  <link rel="self" href="{g.base}/{spec.path}"/>\n'
        f"  <id>{g.base}/</id>\n"
        "  <updated>2024-12-31T23:59:59Z</updated>\n"
    )
    buf: list[str] = []
    for page_id in range(spec.first_id, spec.first_id + spec.count):
        u = g.page_url(page_id)
        urls.append(u)
        t = g.when()
        buf.append(
            f"  <entry>\n    <title>{esc(g.title())}</title>\n"
            f'    <link rel="alternate" type="text/html" href="{esc(u)}"/>\n'
            f"    <id>urn:example:update:{page_id}</id>\n"
            f"    <published>{t.strftime('%Y-%m-%dT%H:%M:%SZ')}</published>\n"
            f"    <updated>{t.strftime('%Y-%m-%dT%H:%M:%SZ')}</updated>\n"
            f"    <summary>{esc(g.title())}</summary>\n  </entry>\n"
        )
    buf.append("</feed>\n")
    yield "".join(buf)


def _text_chunks(g: Gen, spec: FileSpec, urls: list[str]) -> Iterator[str]:
    buf: list[str] = []
    for page_id in range(spec.first_id, spec.first_id + spec.count):
        u = g.page_url(page_id)
        urls.append(u)
        buf.append(u + "\n")
    yield "".join(buf)


def _index_chunks(g: Gen, spec: FileSpec) -> Iterator[str]:
    nl, ind = ("\n", "    ") if spec.pretty else ("", "")
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>\n',
        f'<?xml-stylesheet type="text/xsl" href="{g.base}/sitemap.xsl"?>\n' if spec.pretty else "",
        f'<sitemapindex xmlns="{NS_SITEMAP}">\n',
    ]
    for child in spec.children:
        out.append(f"  <sitemap>{nl}{ind}<loc>{esc(g.base + '/' + child)}</loc>")
        lm = g.lastmod()
        if lm is not None:
            out.append(f"{nl}{ind}<lastmod>{lm}</lastmod>")
        out.append(f"{nl}  </sitemap>\n" if nl else "</sitemap>\n")
    out.append("</sitemapindex>\n")
    yield "".join(out)


def write_file(args: tuple[str, int, str, FileSpec]) -> tuple[str, list[str], int]:
    """Write one file; return (path, page URLs in document order, bytes written)."""
    root, seed, base, spec = args
    g = Gen(seed, spec, base)
    urls: list[str] = []
    if spec.kind == "urlset":
        chunks = _urlset_chunks(g, spec, urls)
    elif spec.kind == "rss":
        chunks = _rss_chunks(g, spec, urls)
    elif spec.kind == "atom":
        chunks = _atom_chunks(g, spec, urls)
    elif spec.kind == "text":
        chunks = _text_chunks(g, spec, urls)
    elif spec.kind == "index":
        chunks = _index_chunks(g, spec)
    else:
        raise AssertionError(spec.kind)
    path = Path(root) / spec.path
    path.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with open(path, "wb") as raw:
        out: BinaryIO | gzip.GzipFile = raw
        if spec.gz:
            # mtime=0 and no file name in the header: byte-identical output per seed
            out = gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=6, mtime=0)
        for chunk in chunks:
            data = chunk.encode("utf-8")
            written += len(data)
            out.write(data)
        if out is not raw:
            out.close()
    return spec.path, urls, written


def robots_txt(plan: Plan) -> str:
    lines = [
        "# robots.txt for the benchmark site",
        "User-agent: *",
        "Disallow: /cart/",
        "Disallow: /search",
        "Allow: /search/about",
        "",
        "User-agent: BadBot",
        "Disallow: /",
        "",
    ]
    lines += [f"Sitemap: {plan.base}/{p}" for p in plan.robots_sitemaps]
    return "\n".join(lines) + "\n"


def _digest_add(acc: int, url: str) -> int:
    return (acc + int.from_bytes(hashlib.sha256(url.encode()).digest(), "big")) % (1 << 256)


def url_set_digest(urls: Iterator[str] | list[str]) -> str:
    """Order-independent digest: sum of sha256(url) mod 2**256, hex."""
    acc = 0
    for u in urls:
        acc = _digest_add(acc, u)
    return f"{acc:064x}"


def generate(out_dir: Path, pages: int, seed: int, base: str, workers: int | None = None) -> dict[str, object]:
    """Generate the site into ``out_dir`` (replaced); return the manifest."""
    t0 = time.perf_counter()
    plan = make_plan(pages, seed, base)
    tmp = out_dir.with_name(out_dir.name + ".partial")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    (tmp / "robots.txt").write_text(robots_txt(plan), encoding="utf-8")
    workers = workers or os.cpu_count() or 1
    tasks = [(str(tmp), seed, plan.base, f) for f in plan.files]
    count = 0
    acc = 0
    total_bytes = 0
    files_out: list[dict[str, object]] = []
    with open(tmp / EXPECTED, "w", encoding="utf-8") as exp, Pool(workers) as pool:
        for (path, urls, written), spec in zip(pool.imap(write_file, tasks), plan.files, strict=True):
            assert path == spec.path
            for u in urls:
                acc = _digest_add(acc, u)
            exp.write("\n".join(urls) + ("\n" if urls else ""))
            count += len(urls)
            total_bytes += written
            d = asdict(spec)
            d["pages"] = len(urls)
            d["uncompressed_bytes"] = written
            d["bytes"] = (tmp / path).stat().st_size
            files_out.append(d)
    if count != pages:
        raise AssertionError(f"generated {count} pages, planned {pages}")
    manifest: dict[str, object] = {
        "generator_version": GENERATOR_VERSION,
        "pages": count,
        "seed": seed,
        "base_url": plan.base,
        "url_set_digest": f"{acc:064x}",
        "digest_method": "sum of sha256(url utf-8) over the page set, mod 2**256, hex",
        "uncompressed_bytes": total_bytes,
        "robots_sitemaps": plan.robots_sitemaps,
        "files": files_out,
        "generation_seconds": round(time.perf_counter() - t0, 2),
    }
    (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    if out_dir.exists():
        shutil.rmtree(out_dir)
    tmp.rename(out_dir)
    return manifest


def load_manifest(site_dir: Path) -> dict[str, object] | None:
    try:
        data: dict[str, object] = json.loads((site_dir / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--pages",
        "--size",
        dest="pages",
        default="1m",
        help="200k, 1m, 5m or an integer",
    )
    ap.add_argument("--out", type=Path, required=True, help="output directory (replaced)")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument(
        "--base-url",
        default=DEFAULT_BASE_URL,
        help="scheme://host:port the site will be served on",
    )
    ap.add_argument("--workers", type=int, default=None, help="processes (default: CPU count)")
    a = ap.parse_args(argv)
    m = generate(a.out, parse_size(a.pages), a.seed, a.base_url, a.workers)
    files = m["files"]
    assert isinstance(files, list)
    print(
        f"wrote {m['pages']} pages in {len(files)} sitemap files "
        f"({int(str(m['uncompressed_bytes'])) / 1e6:.0f} MB uncompressed) to {a.out} "
        f"in {m['generation_seconds']} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
