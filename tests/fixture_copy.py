"""The copy of the shared recordings in tests/fixtures/ against its upstream, ../shared/fixtures/.

The suite and bench/ read tests/fixtures/ only, so a clone runs them with nothing beside it.
Recordings are made (and their provenance kept) upstream; what is copied here is byte for byte,
every file but the few PDFs in LEFT_OUT. Recordings made here (a server the shared set does not
hold, with their own README) have no upstream and are not compared.

    python -m tests.fixture_copy            # what differs (exit 1 if anything does)
    python -m tests.fixture_copy --update   # copy upstream's changed and new files here,
                                            # and pin their digests anew
    python -m tests.fixture_copy --strict   # the same, and exit 1 where there is no upstream

A clone has no upstream beside it, so the copy is also checked against PIN, the sha256 of each
upstream file copied, checked in beside the copy: a file edited here, or lost, fails the suite
in any clone; where the upstream is beside the checkout, the pin is checked against it too.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COPY = ROOT / "tests" / "fixtures"
UPSTREAM = ROOT.parent / "shared" / "fixtures"
PIN = COPY / "UPSTREAM.sha256"  # `sha256sum` lines: digest, two spaces, the path in the copy

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


def digests(upstream: Path = UPSTREAM) -> dict[str, str]:
    """The sha256 of each upstream file that is copied (every one but LEFT_OUT), by name."""
    return {name: hashlib.sha256((upstream / name).read_bytes()).hexdigest()
            for name in sorted(_files(upstream) - LEFT_OUT.keys())}


def pinned(pin: Path = PIN) -> dict[str, str]:
    """The digests the pin holds, by name ({} where there is no pin)."""
    if not pin.is_file():
        return {}
    lines = (line.split("  ", 1) for line in pin.read_text(encoding="utf-8").splitlines())
    return {name: digest for digest, name in lines}


def write_pin(upstream: Path = UPSTREAM, pin: Path = PIN) -> None:
    """Pin the digests of upstream's files as they are now."""
    pin.write_text("".join(f"{digest}  {name}\n" for name, digest in digests(upstream).items()),
                   encoding="utf-8")


def pin_differences(copy: Path = COPY, pin: Path = PIN) -> list[str]:
    """Each pinned file that is missing here or differs from its digest, in words."""
    found = [] if pinned(pin) else [f"{pin.name}: no digests pinned"]
    for name, digest in pinned(pin).items():
        here = copy / name
        if not here.is_file():
            found.append(f"{name}: pinned, missing here")
        elif hashlib.sha256(here.read_bytes()).hexdigest() != digest:
            found.append(f"{name}: differs from its pinned digest")
    return found


def stale_pins(upstream: Path = UPSTREAM, pin: Path = PIN) -> list[str]:
    """Where the pin and upstream's files disagree, in words (pin them anew with --update)."""
    now, held = digests(upstream), pinned(pin)
    return [f"{name}: " + ("not pinned" if name not in held else "no longer upstream"
                           if name not in now else "pinned digest differs from upstream")
            for name in sorted(now.keys() | held.keys()) if now.get(name) != held.get(name)]


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
    parser.add_argument("--update", action="store_true",
                        help="copy upstream's changes here and pin their digests")
    parser.add_argument("--strict", action="store_true", help="fail where there is no upstream")
    args = parser.parse_args(argv)
    if not UPSTREAM.is_dir():
        found = pin_differences()
        print("\n".join(found) or f"tests/fixtures/ matches {PIN.name}")
        print(f"no upstream at {UPSTREAM}: the pin is not compared with it")
        return 1 if found or args.strict else 0
    if args.update:
        for name in update():
            print(f"copied {name}")
        write_pin()
    found = differences() + pin_differences() + stale_pins()
    print("\n".join(found) or f"tests/fixtures/ and {PIN.name} match {UPSTREAM}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
