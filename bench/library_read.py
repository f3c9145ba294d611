"""How long reading a reader's library takes: a Zotero-shaped BibTeX export of N entries
(title with protected words, authors, arXiv eprint, a month macro, a 400-character abstract),
read by `load_library` as triage reads it. CPU seconds, the file written once per size.

    python bench/library_read.py --entries 8000,100000
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from generator.marks.library import load_library

ABSTRACT = "We study how batches of requests are scheduled. " * 8


def export(entries: int) -> str:
    return "\n".join(
        f"@article{{key{i},\n  title = {{A Study of Thing {i}: {{Batch}} Scheduling for LLM "
        f"Inference}},\n  author = {{Doe, Jane and Roe, Rick}},\n  journal = {{arXiv preprint}},"
        f"\n  eprint = {{26{i % 12 + 1:02d}.{i % 99999:05d}}},\n  archivePrefix = {{arXiv}},\n"
        f"  year = {{2026}},\n  month = jan,\n  abstract = {{{ABSTRACT}}}\n}}\n"
        for i in range(entries))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", default="8000,100000", help="sizes, comma-separated")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for entries in (int(n) for n in args.entries.split(",")):
            path = Path(folder) / f"library-{entries}.bib"
            path.write_text(export(entries), encoding="utf-8")
            started = time.process_time()
            library = load_library(path)
            spent = time.process_time() - started
            print(f"{entries:>7,} entries ({path.stat().st_size / 2**20:.1f} MB): "
                  f"{len(library.papers):,} papers in {spent:.2f} CPU-s")


if __name__ == "__main__":
    main()
