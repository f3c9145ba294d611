"""Benchmark: PDF text extraction over the fixture PDFs, inline vs the fetch stage.

    python bench/extraction.py [--repeat 2]

The fetch stage extracts each PDF in one background thread while it downloads the next (which
arXiv's spacing of three seconds makes the slower of the two). This measures extraction alone,
every PDF already in hand, side by side in one run: the thread costs nothing over extracting
inline. (A process pool, which an earlier version used, extracted up to 2x faster in this
isolated setting on two cores but added a process start to every build and gained nothing
once downloads are spaced three seconds apart.)
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from generator.fetch.arxiv_source import HttpSession, RateLimiter  # noqa: E402
from generator.fetch.papers import fetch_full_texts  # noqa: E402
from generator.fetch.pdf_download import PdfDownloader  # noqa: E402
from generator.fetch.pdf_text import extract_text  # noqa: E402
from generator.papers import Paper  # noqa: E402
from generator.store.cache import Cache  # noqa: E402
from tests.conftest import FIXTURES  # noqa: E402

MAX_CHARS = 10**9  # every page


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=2, help="copies of each fixture PDF")
    args = parser.parse_args()
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    pdfs = sorted((FIXTURES / "pdfs").glob("*.pdf")) * args.repeat

    started = time.perf_counter()
    pages_one = sum(extract_text(p.read_bytes(), MAX_CHARS).pages for p in pdfs)
    one = time.perf_counter() - started

    with tempfile.TemporaryDirectory() as folder:
        cache = Cache(Path(folder))
        papers = []
        for i, pdf in enumerate(pdfs):
            paper = Paper(f"9999.{i:05d}v1", pdf.name, (), "", "", "", (), "", "http://unused/")
            cache.put_pdf(paper.arxiv_id, pdf.read_bytes())  # in hand: no download is timed
            papers.append(paper)
        downloader = PdfDownloader(HttpSession(timeout=1), RateLimiter(0), 1)
        started = time.perf_counter()
        texts = fetch_full_texts(papers, MAX_CHARS, downloader, cache)
        stage = time.perf_counter() - started
    pages_stage = sum(t.pages for t in texts.values())
    assert pages_stage == pages_one

    print(f"Extraction benchmark: {len(pdfs)} PDFs, {pages_one} pages, {os.cpu_count()} cores")
    print(f"  inline, one after another        {pages_one / one:7.1f} pages/s  ({one:.2f} s)")
    print(f"  fetch stage (extraction thread)  {pages_stage / stage:7.1f} pages/s  ({stage:.2f} s)")
    print(f"  fetch stage / inline             {one / stage:7.2f}x")


if __name__ == "__main__":
    main()
