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
from ..papers import Paper
from ..store import RECORD, Docs
from ..store.fingerprint import bytes_digest
from ..store.jsonfile import JSONFileError, parse_json, read_bounded
from .question_record import QuestionRecord, load_questions
from .record import EditionRecord, RecordFormatError, RecordPaper, Status, record_text

log = logging.getLogger(__name__)

RECORD_MAX_BYTES = 16 * 1024 * 1024  # a record is ~100-150 KB; 16 MB is no edition's


class RecordMissingError(UsageError):
    """An edition's pages are published but its record is not: nothing may be written (the
    history would call its papers new, and its papers' pages would be swept away)."""


class History:
    """Every published edition's record, newest first, and every published question: read
    once per run (pelican's context) and handed to every stage that needs it: the fetch (seen
    papers, the window since the last edition), the render (statuses, the home page, the feed,
    each paper's page), `ask --publish` (the feed) and the site (the navigation, which edition
    is the latest). Read when first asked for, so a rebuild that finds nothing changed reads
    none of it."""

    def __init__(self, records: Sequence[EditionRecord] | None = None, *,
                 docs_dir: Path | None = None, before: str | None = None,
                 of: History | None = None, remaking: Collection[str] = (),
                 files: dict[Path, bytes] | None = None,
                 questions: Sequence[QuestionRecord] | None = None) -> None:
        self._records = None if records is None else tuple(records)
        self._docs_dir: Path | None = docs_dir or (of._docs_dir if of is not None else None)
        self._before, self._of = before, of
        # Editions this run makes again from the cache: their own missing record is no hole.
        self._remaking: frozenset[str] = frozenset(remaking) | (
            of._remaking if of is not None else frozenset())
        # Each record file read once, whichever of this history and its pasts asks first:
        # its bytes (what a step's fingerprint digests) and the record parsed from them.
        self._files: dict[Path, bytes] = (of._files if of is not None
                                          else files if files is not None else {})
        self._read: dict[Path, EditionRecord] = of._read if of is not None else {}
        # The published questions, read once for this history and every history made from it
        # (a one-element box they share), unless given.
        self._questions: list[tuple[QuestionRecord, ...]] = (
            [tuple(questions)] if questions is not None
            else of._questions if of is not None else [])

    @classmethod
    def load(cls, docs_dir: Path, remaking: Collection[str] = ()) -> History:
        """The workspace's history (`remaking`: editions the run makes again, whose record
        may be missing: the run writes it)."""
        return cls(docs_dir=docs_dir, remaking=remaking)

    def check_complete(self) -> None:
        """RecordMissingError where an edition's pages are there but not its record (a
        listing, no record read: the run stops before it pays for anything or writes)."""
        docs_dir = self._docs_dir
        if docs_dir is not None:
            missing = [f for f in Docs(docs_dir).folders_without_record()
                       if f.name not in self._remaking]
            if missing:
                raise RecordMissingError(_missing_message(missing))

    @property
    def records(self) -> tuple[EditionRecord, ...]:
        if self._records is None:
            if self._of is not None and self._of._records is None and self._docs_dir:
                # Only the earlier editions' files are read (a rebuild of the latest reads none).
                self._records = tuple(load_records(self._docs_dir, before=self._before,
                                                   read=self._read, remaking=self._remaking,
                                                   files=self._files))
            elif self._of is not None:
                self._records = tuple(earlier(self._of.records, self._before or ""))
            else:
                self._records = tuple(load_records(self._docs_dir, read=self._read,
                                                   remaking=self._remaking, files=self._files)
                                      ) if self._docs_dir else ()
        return self._records

    @property
    def questions(self) -> tuple[QuestionRecord, ...]:
        """Every published question (`digest ask --publish`), newest first."""
        if not self._questions:
            self._questions.append(tuple(load_questions(self._docs_dir)) if self._docs_dir
                                   else ())
        return self._questions[0]

    def with_questions(self, questions: Sequence[QuestionRecord]) -> History:
        """This history with `questions` as the published questions (a question just
        published among them)."""
        return History(self.records, docs_dir=self._docs_dir, files=dict(self._files),
                       questions=sorted(questions, key=lambda q: (q.asked_at, q.slug),
                                        reverse=True))

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
        """This history with `record` published (in place of its edition's older record): as
        the render wrote it, so its file need not be read again."""
        others = [r for r in self.records if r.edition != record.edition]
        files = dict(self._files)
        if self._docs_dir is not None and not record.not_rewritable:
            files[Docs(self._docs_dir).record_path(record.edition)] = record_text(
                record).encode()
        made = History(tuple(sorted([*others, record], key=lambda r: r.edition, reverse=True)),
                       docs_dir=self._docs_dir, files=files)
        made._questions = self._questions  # the questions did not change: read once for both
        return made

    def record_of(self, edition: str) -> EditionRecord:
        """One edition's record, parsed from the bytes this run already read where it did
        (a rebuild that changed nothing reads each record file once, for its fingerprint)."""
        for record in self._records or ():
            if record.edition == edition:
                return record
        if self._docs_dir is None:
            raise RecordMissingError(f"no record of edition {edition} in this history")
        path = Docs(self._docs_dir).record_path(edition)
        if path not in self._read:
            self._read[path] = read_record(path, self._files)
        return self._read[path]

    def record_digests(self) -> dict[Path, bytes]:
        """The digest of every record file of the workspace (`files` below), each read at
        most once in a run: what a step's fingerprint takes instead of reading it again."""
        if self._docs_dir is None:
            return {}
        found = {}
        for path in Docs(self._docs_dir).record_paths():
            raw = self._files.get(path)
            if raw is None:
                try:
                    raw = self._files[path] = read_bounded(path, RECORD_MAX_BYTES)
                except (FileNotFoundError, JSONFileError):
                    continue  # the step reads it itself, and says what is wrong with it
            found[path] = bytes_digest(raw)
        return found


def load_records(docs_dir: Path, before: str | None = None,
                 read: dict[Path, EditionRecord] | None = None,
                 remaking: Collection[str] = (),
                 files: dict[Path, bytes] | None = None) -> list[EditionRecord]:
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
        record = read_record(path, files)
        if read is not None:
            read[path] = record
        records.append(record)
    return sorted(records, key=lambda r: r.edition, reverse=True)


def read_record(path: Path, files: dict[Path, bytes] | None = None) -> EditionRecord:
    """One edition's record file (`editions/<edition>/edition.json`), checked; a file this
    version cannot read is named with what to do. `files`: the bytes of the files read so far
    in this run, where they are kept (and where this one's are then kept)."""
    try:
        raw = files.get(path) if files is not None else None
        if raw is None:
            raw = read_bounded(path, RECORD_MAX_BYTES)
            if files is not None:
                files[path] = raw
        data = parse_json(raw, str(path), max_bytes=RECORD_MAX_BYTES)
    except FileNotFoundError:
        raise RecordFormatError(f"{path} does not exist (restore it from git, or take the "
                                f"edition off the site with `digest remove "
                                f"{path.parent.name}`)") from None
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
