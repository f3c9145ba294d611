"""The copy of the shared recordings in tests/fixtures/ against its upstream, ../shared/fixtures/.

The suite and bench/ read tests/fixtures/ only, so a clone runs them with nothing beside it.
Recordings are made (and their provenance kept) upstream; what is copied here is byte for byte,
every file but the few PDFs in LEFT_OUT. Recordings made here (a server the shared set does not
hold, with their own README) have no upstream and are not compared.

    python -m tests.fixture_copy            # what differs (exit 1 if anything does)
    python -m tests.fixture_copy --update   # copy upstream's changed and new files here
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COPY = ROOT / "tests" / "fixtures"
UPSTREAM = ROOT.parent / "shared" / "fixtures"

# Upstream PDFs the suite does not need, left out to keep the clone small (5.7 MB of 7.9).
# bench/extraction.py and bench/synthesis.py read every PDF they find: point DIGEST_FIXTURES at
# ../shared/fixtures to run them over all nine.
LEFT_OUT = {
    "pdfs/arxiv-2203.00130v1_acm-1col-39p.pdf": "3.3 MB",
    "pdfs/arxiv-2302.07302v1_acm-chi-2col.pdf": "2.0 MB",
    "pdfs/arxiv-1001.0012v2_astro-ph_emulateapj-2col.pdf": "dvips + Ghostscript, as the AAAI one",
}


def _files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


def differences(upstream: Path = UPSTREAM, copy: Path = COPY) -> list[str]:
    """Each upstream file that is missing here or differs from its copy, in words."""
    found = []
    for name in sorted(_files(upstream) - LEFT_OUT.keys()):
        here = copy / name
        if not here.is_file():
            found.append(f"{name}: upstream only (copy it, or list it in LEFT_OUT)")
        elif here.read_bytes() != (upstream / name).read_bytes():
            found.append(f"{name}: differs from upstream")
    found += [f"{name}: in LEFT_OUT but copied" for name in sorted(LEFT_OUT.keys() & _files(copy))]
    return found


def update(upstream: Path = UPSTREAM, copy: Path = COPY) -> list[str]:
    """Copy upstream's missing and changed files (not LEFT_OUT) here; the names copied."""
    copied = []
    for name in sorted(_files(upstream) - LEFT_OUT.keys()):
        source, target = upstream / name, copy / name
        if not target.is_file() or target.read_bytes() != source.read_bytes():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            copied.append(name)
    return copied


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--update", action="store_true", help="copy upstream's changes here")
    args = parser.parse_args(argv)
    if not UPSTREAM.is_dir():
        print(f"no upstream at {UPSTREAM}: nothing to compare")
        return 0
    if args.update:
        for name in update():
            print(f"copied {name}")
    found = differences()
    print("\n".join(found) or f"tests/fixtures/ matches {UPSTREAM}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
