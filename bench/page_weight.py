"""The weight of each page kind in a built site (HTML bytes; the theme's CSS and JS are shared).

    python bench/page_weight.py my-digest/site [EDITION]

One page of each kind from the given edition (default: the newest), and the search index,
so a template change can be judged by what a reader downloads.
"""

from __future__ import annotations

import argparse
from pathlib import Path


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
        "search index": site / "search" / "search_index.json",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("site", type=Path)
    parser.add_argument("edition", nargs="?")
    args = parser.parse_args()
    editions = sorted(p.name for p in (args.site / "editions").iterdir() if p.is_dir())
    edition = args.edition or editions[-1]
    deep = [p for p in sorted((args.site / "editions" / edition).glob("*.html"))
            if p.stem not in ("index", "research-map", "thinking", "run-report", "triage")]
    pages = kinds(args.site, edition) | {"deep dive": deep[0] if deep else None}
    print(f"edition {edition} in {args.site}")
    for kind, path in pages.items():
        size = f"{path.stat().st_size / 1024:7.1f} KiB" if path and path.is_file() else "      –"
        print(f"  {kind:18} {size}")


if __name__ == "__main__":
    main()
