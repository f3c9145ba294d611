"""Benchmark: the size of an edition's record (edition.json) at the settings `digest init` writes.

    python bench/record_size.py [--editions 3]

Makes a workspace with `digest init`, then builds editions of 20 recorded papers each (the
recorded arXiv feeds; PDFs from the fixtures; answers from the SGLang-shaped double, so every
page kind, brief, theme map and evidence check is there), and prints each record's size in
bytes beside the size of the edition's Markdown. The record is committed with the site: this
is what the archive grows by each week. The double's answers are shorter than a real model's:
a real record is larger by the length of its answers (and the thinking answer's reasoning).
See README.md, "Benchmarks".
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import logging
import sys
import tempfile
from dataclasses import replace
from datetime import date, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.scale import fixture_papers  # noqa: E402
from generator import pipeline  # noqa: E402
from generator.cli import init  # noqa: E402
from generator.config import load_config  # noqa: E402
from generator.prompts.kinds import BUILTIN_KINDS  # noqa: E402
from tests.conftest import FIXTURES  # noqa: E402
from tests.doubles import MockModel, services  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--editions", type=int, default=3)
    args = parser.parse_args()
    logging.getLogger("pypdf").setLevel(logging.ERROR)  # the fixtures' odd fonts, said once each
    base = fixture_papers()
    pdfs = sorted((FIXTURES / "pdfs").glob("arxiv-*.pdf"))
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder) / "ws"
        with contextlib.redirect_stdout(io.StringIO()):
            init.callback(workspace)  # type: ignore[misc]
        config = load_config(workspace / "config.toml", registry=BUILTIN_KINDS)
        per = config.arxiv.max_papers
        print(f"digest init settings: {per} papers, {config.arxiv.full_text_papers} with full "
              f"text, briefs {config.briefs.enabled}, evidence {config.evidence.enabled}")
        print(f"{'edition':<12} {'edition.json':>14} {'gzipped':>10} {'Markdown':>10}")
        day = date(2026, 11, 18)
        for e in range(args.editions):
            name = (day + timedelta(weeks=e)).isoformat()
            papers = [replace(base[(e * 7 + i) % len(base)], arxiv_id=f"26{e:02d}.{i:05d}v1")
                      for i in range(per)]
            shelf = {str(p.pdf_url): pdfs[i % len(pdfs)].read_bytes()
                     for i, p in enumerate(papers)}
            run = services(config.cache_dir, papers, dict(shelf), MockModel())
            pipeline.run(config, run, name)
            folder_of = config.docs_dir / "editions" / name
            record = (folder_of / "edition.json").read_bytes()
            markdown = sum(p.stat().st_size for p in folder_of.rglob("*.md"))
            print(f"{name:<12} {len(record):>14,} {len(gzip.compress(record)):>10,} "
                  f"{markdown:>10,}")


if __name__ == "__main__":
    main()
