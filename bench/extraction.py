"""Benchmark: PDF text extraction over the fixture PDFs, process pool vs one process.

    python bench/extraction.py [--repeat 2]

The fetch stage extracts PDFs in a process pool across the cores while it downloads the next
one; this measures the extraction part alone, side by side in one run. On two cores expect at
most 2x.
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

from generator.arxiv_source import HttpSession, PdfDownloader, RateLimiter  # noqa: E402
from generator.cache import Cache  # noqa: E402
from generator.fetch import fetch_full_texts  # noqa: E402
from generator.models import Paper  # noqa: E402
from generator.pdf_text import extract_text  # noqa: E402

FIXTURES = ROOT.parent / "shared" / "fixtures" / "pdfs"
MAX_CHARS = 10**9  # every page


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=2, help="copies of each fixture PDF")
    args = parser.parse_args()
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    pdfs = sorted(FIXTURES.glob("*.pdf")) * args.repeat

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
        pool = time.perf_counter() - started
    pages_pool = sum(t.pages for t in texts.values())
    assert pages_pool == pages_one

    print(f"Extraction benchmark: {len(pdfs)} PDFs, {pages_one} pages, {os.cpu_count()} cores")
    print(f"  one process                      {pages_one / one:7.1f} pages/s  ({one:.2f} s)")
    print(f"  process pool (fetch stage)       {pages_pool / pool:7.1f} pages/s  ({pool:.2f} s)")
    print(f"  pool / one process               {one / pool:7.2f}x")


if __name__ == "__main__":
    main()
