"""The weight of the built site: each page kind's HTML, and what a first visit transfers.

    python bench/page_weight.py my-digest/site [EDITION]
    python bench/page_weight.py --first-visit [--editions 1,8,52]

With a SITE: one page of each kind from the given edition (default: the newest), and the search
index (HTML bytes; the theme's CSS and JS are shared), so a template change can be judged by
what a reader downloads.

With --first-visit: makes a workspace with `digest init` and builds editions 1, 2, … of 20
recorded papers each as bench/record_size.py does (answers from the SGLang-shaped double), the
site only at each count in --editions (as `digest site` builds it: site_stage), with
site_url set to the local server's address as the publishing workflow sets DIGEST_SITE_URL (so
sitemap.xml lists every page, as on a published site). At each count the home page is loaded in
Chromium over http from 127.0.0.1, in a fresh browser context, until the network is idle, and
the bodies of every response the server sent are summed (HTML, CSS, JS, the search worker, the
sitemap, the favicon, the search index when it is asked for): "after" as shipped (the index
waits for the reader to start a search), "before" the same site served with
assets/javascripts/lazy-search.js answered as an empty file, so Material asks for the index on
load as it did before. "gz": each body gzipped (level 6), as a server that compresses sends it.
See README.md, "Benchmarks".
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gzip
import http.server
import io
import logging
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from generator.archive.history import History  # noqa: E402
from generator.pipeline.fetch import fetch_stage  # noqa: E402
from generator.pipeline.render import render_stage  # noqa: E402
from generator.pipeline.site import site_stage  # noqa: E402
from generator.pipeline.synthesize import synthesize_stage  # noqa: E402
from generator.prompts.kinds import BUILTIN_KINDS  # noqa: E402
from generator.publish.site import LAZY_SEARCH  # noqa: E402

INDEX = "search/search_index.json"


def kinds(site: Path, edition: str) -> dict[str, Path | None]:
    folder = site / "editions" / edition

    def first(pattern: Path) -> Path | None:
        return next(iter(sorted(pattern.parent.glob(pattern.name))), None)

    return {
        "home": site / "index.html", "overview": folder / "index.html",
        "research map": folder / "research-map.html",
        "thinking": folder / "thinking.html", "run report": folder / "run-report.html",
        "paper (edition)": first(folder / "papers" / "*.html"),
        "paper (own page)": first(site / "papers" / "*.html"),
        "search index": site / INDEX,
    }


def page_weights(site: Path, edition: str | None) -> None:
    editions = sorted(p.name for p in (site / "editions").iterdir() if p.is_dir())
    edition = edition or editions[-1]
    deep = [p for p in sorted((site / "editions" / edition).glob("*.html"))
            if p.stem not in ("index", "research-map", "thinking", "run-report", "triage")]
    pages = kinds(site, edition) | {"deep dive": deep[0] if deep else None}
    print(f"edition {edition} in {site}")
    for kind, path in pages.items():
        size = f"{path.stat().st_size / 1024:7.1f} KiB" if path and path.is_file() else "      –"
        print(f"  {kind:18} {size}")


@dataclass(frozen=True)
class Sent:
    path: str
    size: int
    gzipped: int


@dataclass
class Visit:
    sent: list[Sent] = field(default_factory=list)

    def total(self, gzipped: bool = False) -> int:
        return sum(s.gzipped if gzipped else s.size for s in self.sent)

    def asked_for_index(self) -> bool:
        return any(s.path.endswith("/" + INDEX) for s in self.sent)


class _Server(http.server.ThreadingHTTPServer):
    """The site on 127.0.0.1, recording the body of every response it sends."""

    lazy = True
    visit = Visit()


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass

    def send_head(self) -> Any:
        server = self.server
        assert isinstance(server, _Server)
        if not server.lazy and urlsplit(self.path).path.endswith("/" + LAZY_SEARCH):
            self.send_response(200)  # "before": the script's effect disabled
            self.send_header("Content-Type", "text/javascript")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return io.BytesIO(b"")
        return super().send_head()

    def copyfile(self, source: Any, outputfile: Any) -> None:
        body = source.read()
        outputfile.write(body)
        server = self.server
        assert isinstance(server, _Server)
        server.visit.sent.append(Sent(urlsplit(self.path).path, len(body),
                                      len(gzip.compress(body, compresslevel=6))))


def first_visit(browser: Any, server: _Server, url: str, *, lazy: bool) -> Visit:
    """What loading `url` in a fresh browser context transfers, until the network is idle."""
    server.lazy, server.visit = lazy, Visit()
    context = browser.new_context()
    try:
        context.new_page().goto(url, wait_until="networkidle")
    finally:
        context.close()
    visit = server.visit
    if visit.asked_for_index() == lazy:
        sys.exit(f"the {'after' if lazy else 'before'} visit {'asked' if lazy else 'did not ask'}"
                 f" for the search index: the measurement would be wrong")
    return visit


def first_visits(counts: list[int]) -> None:
    from bench.scale import fixture_papers
    from generator.cli import init
    from generator.config import SITE_URL_ENV, load_config
    from tests.browser import launch_chromium
    from tests.conftest import FIXTURES
    from tests.doubles import MockModel, services

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # the fixtures' odd fonts, said once each
    base_papers = fixture_papers()
    pdfs = sorted((FIXTURES / "pdfs").glob("arxiv-*.pdf"))
    with tempfile.TemporaryDirectory() as folder, launch_chromium(missing=sys.exit) as browser:
        workspace = Path(folder) / "ws"
        with contextlib.redirect_stdout(io.StringIO()):
            init.callback(workspace)  # type: ignore[misc]
        server = _Server(("127.0.0.1", 0),
                         functools.partial(_Handler, directory=str(workspace / "site")))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        config = load_config(workspace / "config.toml", {SITE_URL_ENV: url}, registry=BUILTIN_KINDS)
        per = config.arxiv.max_papers
        print(f"digest init settings: {per} papers an edition, {config.arxiv.full_text_papers} "
              f"with full text; the home page at {url}, first visit in a fresh context")
        print(f"{'editions':>8} {'pages':>6} {'search index':>13} {'sitemap':>9} {'before':>11} "
              f"{'after':>11} {'after/before':>12} {'before gz':>10} {'after gz':>10} "
              f"{'ratio gz':>8}", flush=True)
        day, started, last = date(2026, 11, 18), time.monotonic(), Visit()
        # Each edition fetched, synthesized and rendered; the site is built only at the
        # counts measured (a build after every edition would be most of a year's time).
        for e in range(max(counts)):
            name = (day + timedelta(weeks=e)).isoformat()
            papers = [replace(base_papers[(e * 7 + i) % len(base_papers)],
                              arxiv_id=f"26{e:02d}.{i:05d}v1") for i in range(per)]
            shelf: dict[str, bytes | str] = {
                str(p.pdf_url): pdfs[i % len(pdfs)].read_bytes() for i, p in enumerate(papers)}
            run = services(config.cache_dir, papers, shelf, MockModel())
            fetch_stage(config, run, name, history=History.load(config.docs_dir))
            synthesize_stage(config, run, name, history=History.load(config.docs_dir))
            render_stage(config, run.cache, name, history=History.load(config.docs_dir, remaking=(name,)))
            if e + 1 not in counts:
                continue
            site = site_stage(config, history=History.load(config.docs_dir))  # what `digest site` runs
            before = first_visit(browser, server, url, lazy=False)
            last = after = first_visit(browser, server, url, lazy=True)
            pages = sum(1 for _ in site.rglob("*.html"))
            index, sitemap = ((site / n).stat().st_size for n in (INDEX, "sitemap.xml"))
            print(f"{e + 1:>8} {pages:>6} {index:>13,} {sitemap:>9,} {before.total():>11,} "
                  f"{after.total():>11,} {after.total() / before.total():>12.3f} "
                  f"{before.total(True):>10,} {after.total(True):>10,} "
                  f"{after.total(True) / before.total(True):>8.3f}", flush=True)
        server.shutdown()
    print(f"\n(built in {time.monotonic() - started:.0f} s) the last first visit, as shipped:")
    for sent in sorted(last.sent, key=lambda s: -s.size):
        print(f"  {sent.path:58} {sent.size:>10,} {sent.gzipped:>9,} gz")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("site", type=Path, nargs="?", help="a built site: each page kind's HTML")
    parser.add_argument("edition", nargs="?", help="with SITE: the edition (default: newest)")
    parser.add_argument("--first-visit", action="store_true",
                        help="build sites and measure a first visit of the home page")
    parser.add_argument("--editions", default="1,8,52",
                        help="with --first-visit: the edition counts to measure at")
    args = parser.parse_args()
    if args.first_visit:
        counts = sorted({int(n) for n in args.editions.split(",") if n.strip()})
        if not counts or counts[0] < 1:
            parser.error("--editions takes counts from 1, e.g. 1,8,52")
        first_visits(counts)
    elif args.site:
        page_weights(args.site, args.edition)
    else:
        parser.error("give a built SITE, or --first-visit")


if __name__ == "__main__":
    main()
