"""What earlier editions published: which papers are new, updated or seen before.

The published records (`<docs_dir>/editions/<edition>/edition.json`) are the history; nothing
else is needed, so a workspace's history travels with its Markdown.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from datetime import date, timedelta
from pathlib import Path

from ..errors import UsageError
from ..models import Paper
from ..store import RECORD, Docs
from ..store.jsonfile import JSONFileError, load_json
from .record import EditionRecord, RecordFormatError, RecordPaper, Status

log = logging.getLogger(__name__)

RECORD_MAX_BYTES = 16 * 1024 * 1024  # a record is ~100-150 KB; 16 MB is no edition's


class RecordMissingError(UsageError):
    """An edition's pages are published but its record is not: nothing may be written (the
    history would call its papers new, and its papers' pages would be swept away)."""


class History:
    """Every published edition's record, newest first: read once per run (pelican's context)
    and handed to every stage that needs it: the fetch (seen papers, the window since the last
    edition), the render (statuses, the home page, the feed, each paper's page) and the site
    (the navigation, which edition is the latest). Read when first asked for, so a rebuild
    that finds nothing changed reads none of it."""

    def __init__(self, records: Sequence[EditionRecord] | None = None, *,
                 docs_dir: Path | None = None, before: str | None = None,
                 of: History | None = None, remaking: Collection[str] = ()) -> None:
        self._records = None if records is None else tuple(records)
        self._docs_dir = docs_dir
        self._before, self._of = before, of
        # Editions this run makes again from the cache: their own missing record is no hole.
        self._remaking: frozenset[str] = frozenset(remaking) | (
            of._remaking if of is not None else frozenset())
        # Each record file read once, whichever of this history and its pasts asks first.
        self._read: dict[Path, EditionRecord] = of._read if of is not None else {}

    @classmethod
    def load(cls, docs_dir: Path, remaking: Collection[str] = ()) -> History:
        """The workspace's history (`remaking`: editions the run makes again, whose record
        may be missing: the run writes it)."""
        return cls(docs_dir=docs_dir, remaking=remaking)

    def check_complete(self) -> None:
        """RecordMissingError where an edition's pages are there but not its record (a
        listing, no record read: the run stops before it pays for anything or writes)."""
        docs_dir = self._docs_dir or (self._of._docs_dir if self._of is not None else None)
        if docs_dir is not None:
            missing = [f for f in Docs(docs_dir).folders_without_record()
                       if f.name not in self._remaking]
            if missing:
                raise RecordMissingError(_missing_message(missing))

    @property
    def records(self) -> tuple[EditionRecord, ...]:
        if self._records is None:
            if self._of is not None and self._of._records is None and self._of._docs_dir:
                # Only the earlier editions' files are read (a rebuild of the latest reads none).
                self._records = tuple(load_records(self._of._docs_dir, before=self._before,
                                                   read=self._read, remaking=self._remaking))
            elif self._of is not None:
                self._records = tuple(earlier(self._of.records, self._before or ""))
            else:
                self._records = tuple(load_records(self._docs_dir, read=self._read,
                                                   remaking=self._remaking)
                                      ) if self._docs_dir else ()
        return self._records

    def before(self, edition: str) -> History:
        """The editions published before `edition` (what a build of it may read: a rebuild
        sees the same past, whatever was published after it). Read when first asked for."""
        return History(before=edition, of=self)

    def covered(self, editions: int) -> list[str]:
        """The base ids of the papers the newest `editions` of these editions covered."""
        return sorted({p.base_id for record in self.records[:editions] for p in record.papers})

    @property
    def latest(self) -> str | None:
        return self.records[0].edition if self.records else None

    def with_record(self, record: EditionRecord) -> History:
        """This history with `record` published (in place of its edition's older record)."""
        others = [r for r in self.records if r.edition != record.edition]
        return History(tuple(sorted([*others, record], key=lambda r: r.edition, reverse=True)))


def load_records(docs_dir: Path, before: str | None = None,
                 read: dict[Path, EditionRecord] | None = None,
                 remaking: Collection[str] = ()) -> list[EditionRecord]:
    """Every published edition's record (only those before `before`, if given), newest first.

    A record this version cannot read, or one missing beside its pages, stops the run with a
    message naming the file, before anything is written (a history with a hole in it would
    mark old papers new and sweep their pages away).
    """
    docs = Docs(docs_dir)
    missing = [folder for folder in docs.folders_without_record()
               if folder.name not in remaking and (before is None or folder.name < before)]
    if missing:
        raise RecordMissingError(_missing_message(missing))
    records = []
    for path in docs.record_paths():
        if before is not None and path.parent.name >= before:
            continue
        if read is not None and path in read:
            records.append(read[path])
            continue
        record = read_record(path)
        if read is not None:
            read[path] = record
        records.append(record)
    return sorted(records, key=lambda r: r.edition, reverse=True)


def read_record(path: Path) -> EditionRecord:
    """One edition's record file (`editions/<edition>/edition.json`), checked; a file this
    version cannot read is named with what to do."""
    try:
        data = load_json(path, max_bytes=RECORD_MAX_BYTES)
    except JSONFileError as err:
        raise RecordFormatError(f"{err} (restore it from git, or take the edition off "
                                f"the site with `digest remove {path.parent.name}`)") from err
    record = EditionRecord.from_json(data, str(path))
    if record.edition != path.parent.name:
        raise RecordFormatError(f"{path} records edition {record.edition!r}, not "
                                f"{path.parent.name!r}")
    return record


def _missing_message(folders: Sequence[Path]) -> str:
    names = ", ".join(f.name for f in folders)
    first = folders[0]
    return (f"{first / RECORD} is missing" + (f" (and the records of {len(folders) - 1} more "
            f"edition(s): {names})" if len(folders) > 1 else "")
            + ": the edition's pages are published but not the record they are made from, so "
            "nothing was written. Restore it (`git checkout -- "
            f"{first / RECORD}`), or take the edition off the site on purpose with "
            f"`digest remove {first.name}`.")


def by_paper(records: Sequence[EditionRecord]
             ) -> dict[str, list[tuple[EditionRecord, RecordPaper]]]:
    """For each paper (id without version): the records it is in, in the order given."""
    seen: dict[str, list[tuple[EditionRecord, RecordPaper]]] = {}
    for record in records:
        for paper in record.papers:
            seen.setdefault(paper.base_id, []).append((record, paper))
    return seen


def appearances(records: Sequence[EditionRecord]) -> dict[str, list[dict[str, str]]]:
    """For each paper (id without version): the editions it appeared in, in the order given
    (newest first, as the callers give them)."""
    return {base: [{"edition": r.edition, "slug": p.slug, "arxiv_id": p.arxiv_id}
                   for r, p in seen]
            for base, seen in by_paper(records).items()}


def earlier(records: Sequence[EditionRecord], edition: str) -> list[EditionRecord]:
    """The records of editions published before `edition` (names sort by date)."""
    return [r for r in records if r.edition < edition]


def status(paper: Paper, history: dict[str, list[dict[str, str]]]) -> Status:
    """New (never published), updated (published in another version) or seen (this version)."""
    versions = {seen["arxiv_id"] for seen in history.get(paper.base_id, [])}
    if not versions:
        return "new"
    return "seen" if paper.arxiv_id in versions else "updated"


def windowed_query(query: str, edition_day: date, *, since: date | None = None,
                   days: int = 0) -> str:
    """`query` limited to papers submitted in the window, with arXiv's submittedDate syntax."""
    start = since if since is not None else (edition_day - timedelta(days=days) if days else None)
    if start is None:
        return query
    return (f"({query}) AND submittedDate:[{start:%Y%m%d}0000 TO {edition_day:%Y%m%d}2359]")


def last_edition_day(records: Sequence[EditionRecord], edition: str) -> date | None:
    """The date of the newest edition before `edition`."""
    for record in earlier(records, edition):
        try:
            return date.fromisoformat(record.edition[:10])
        except ValueError:
            continue
    return None
