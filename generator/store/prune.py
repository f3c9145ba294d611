"""The cache pruned to what the next run needs (`digest workflow prune-cache`).

The workflow saves `.cache` once a run, and GitHub keeps every entry until it is evicted: left
alone, it carried every PDF ever downloaded and every answer ever given, growing each week.
What the next run can use is: the text and answers this run used (a rerun of this edition
reads them again: `Cache` stamps an entry's time when it is read as well as written), the
newest editions' stage records and what was sent to whom for them, and the small files every
run reads (what each server does, the library's lookups, arXiv's rate limit). PDFs go: the
text extracted from them is kept, and a PDF is read again only when its text is not.
"""

from __future__ import annotations

import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from .cache import Cache

log = logging.getLogger(__name__)

USED_WITHIN_S = 24 * 3600.0  # a run's entries are all used within a day of it
KEEP_EDITIONS = 4


@dataclass(frozen=True)
class Pruned:
    files: int  # files removed
    bytes: int  # their size
    kept_bytes: int  # what the cache holds now


def prune(cache: Cache, *, used_within_s: float = USED_WITHIN_S,
          keep_editions: int = KEEP_EDITIONS, now: float | None = None) -> Pruned:
    """Remove every PDF, every text and answer not used within `used_within_s` of `now`, and
    the stage records of all but the newest `keep_editions` editions."""
    now = time.time() if now is None else now
    removed = [*_files(cache.root / "pdf")]
    for folder in ("text", "completions"):
        removed += [p for p in _files(cache.root / folder)
                    if now - p.stat().st_mtime > used_within_s]
    editions = cache.root / "editions"
    names = sorted((p for p in editions.iterdir() if p.is_dir()), reverse=True) \
        if editions.is_dir() else []
    old = names[max(keep_editions, 0):]
    size = sum(p.stat().st_size for p in removed)
    for path in removed:
        path.unlink(missing_ok=True)
    for edition in old:
        files = list(_files(edition))
        size += sum(p.stat().st_size for p in files)
        removed += files
        shutil.rmtree(edition, ignore_errors=True)
    for folder in ("pdf", "text", "completions"):  # the empty subfolders of completions/
        for sub in sorted((cache.root / folder).glob("**/"), reverse=True):
            if sub.is_dir() and not any(sub.iterdir()):
                sub.rmdir()
    kept = sum(p.stat().st_size for p in _files(cache.root))
    log.info("pruned %d file(s) (%d bytes) from %s; %d bytes kept", len(removed), size,
             cache.root, kept)
    return Pruned(len(removed), size, kept)


def _files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()] if folder.is_dir() else []
