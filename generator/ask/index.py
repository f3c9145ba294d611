"""A full-text index of the archive (SQLite FTS5, BM25), kept in the cache and rebuilt at will.

One row per paper per edition: its title, authors and abstract, the digest's brief of it, the
checked claims that cite it (with their quotes) and what the edition noted about it (pick,
themes, follow-ups, revision, withdrawal). The records are the source: the index remembers each
record file's digest and indexes only the new or changed ones, drops the removed ones, and can
always be deleted and built again from the records alone. What each edition saw of withdrawals
is kept beside (its `Sighting`), so the current state of every paper needs no record read.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import re
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..archive.names import name_citations
from ..archive.record import EditionRecord, RecordPaper
from ..archive.withdrawn import Sighting, current
from ..errors import DigestError, LockedError, UsageError
from ..papers import Withdrawal
from ..store.codec import from_data, to_data
from ..store.fingerprint import file_digest

log = logging.getLogger(__name__)

Reader = Callable[[Path], EditionRecord]  # a record file, parsed

INDEX_FORMAT = 1  # a different format is rebuilt from the records
BUSY_TIMEOUT_S = 60.0  # how long a question waits for another's update of the index
COLUMNS = ("title", "authors", "abstract", "brief", "claims", "notes")
# BM25 weights of the columns above: a title or a brief says what a paper is about more
# surely than one sentence of its abstract.
WEIGHTS = (4.0, 1.0, 1.0, 2.0, 1.5, 1.0)
# A term found in more than this share of the archive's papers tells no paper apart.
COMMON_SHARE = 0.5
_TERM_RE = re.compile(r"[^\W_]+", re.UNICODE)
# Words of a question that say nothing about its subject.
STOPWORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before
being below between both but by can could did do does doing done down during each either few
for from further had has have having he her here hers how i if in into is it its itself just
me more most my no nor not now of off on once only or other our ours out over own same she
should so some such than that the their theirs them then there these they this those through
to too under until up very was we were what when where which while who whom why will with
would you your yours since ever seen say says said tell show shows paper papers work works
study studies archive digest edition editions agree agreed disagree summer winter spring
autumn week weeks month months year years recent recently lately new latest anything something
""".split())


@dataclass(frozen=True)
class IndexUpdate:
    """What an update did: editions indexed anew, indexed again (changed), dropped, kept."""

    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    kept: int = 0

    @property
    def touched(self) -> bool:
        return bool(self.added or self.changed or self.removed)


@dataclass(frozen=True)
class Hit:
    """A paper the index found: its base id, its best score (lower is better, BM25's sign),
    and the editions whose rows matched, newest first."""

    base_id: str
    score: float
    editions: tuple[str, ...]


def question_terms(question: str) -> list[str]:
    """The words of a question that can find papers, each once, in order."""
    words = [w.casefold() for w in _TERM_RE.findall(question)]
    return list(dict.fromkeys(w for w in words if w not in STOPWORDS and (len(w) > 1
                                                                           or w.isdigit())))


def paper_document(record: EditionRecord, paper: RecordPaper) -> dict[str, str]:
    """What the index holds of one paper in one edition, by column."""
    brief = record.briefs.get(paper.number)
    claims = [f"{name_citations(c.sentence, record.names)} {c.quote}"
              for checks in (record.checks or {}).values() for c in checks
              if paper.number in c.papers and c.verdict == "supported"]
    notes = [*(f"{pick.why}" for pick in record.picks if pick.number == paper.number),
             *record.themes_of(paper.number)]
    since = record.continuity
    if since:
        notes += [f"follows up {f.title}" for f in since.followups if f.number == paper.number]
        notes += [f"followed up by {record.names.get(f.number, '')}"
                  for f in since.followups if f.earlier == paper.base_id]
        notes += [f"withdrawn: {w.notice}" for w in since.withdrawn
                  if w.base_id == paper.base_id]
    return {
        "title": f"{paper.title} {paper.name}",
        "authors": " ".join(paper.authors),
        "abstract": paper.abstract,
        "brief": " ".join(filter(None, (brief.tldr, brief.problem, brief.method, brief.result,
                                        brief.limitations, brief.name))) if brief else "",
        "claims": "\n".join(claims),
        "notes": name_citations("\n".join(notes), record.names),
    }


class IndexLockedError(LockedError):
    """Another process holds the archive index locked past the wait: the index is left as it
    is (a locked index is in use, never damaged, and never rebuilt from under its holder)."""


class UnusableIndex(DigestError):
    """The file at the index's path is not an index this version wrote (another format,
    another program's tables, or not a database at all): `update` builds it again from the
    records; a read names it."""


def _locked(err: sqlite3.Error) -> bool:
    """Whether SQLite says the file is in use (busy or locked), not that it is damaged."""
    code = getattr(err, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(err) or "busy" in str(err)


def _create(db: sqlite3.Connection) -> None:
    db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS docs USING fts5("
               f"edition UNINDEXED, base_id UNINDEXED, arxiv_id UNINDEXED, "
               f"{', '.join(COLUMNS)}, tokenize = 'porter unicode61 remove_diacritics 2')")
    db.execute("CREATE TABLE IF NOT EXISTS editions (edition TEXT PRIMARY KEY, "
               "digest TEXT NOT NULL, sighting TEXT NOT NULL)")
    db.execute(f"PRAGMA user_version = {INDEX_FORMAT}")


def _tables(db: sqlite3.Connection) -> set[tuple[str, str, str]]:
    return set(db.execute("SELECT type, name, coalesce(sql, '') FROM sqlite_master"))


@functools.cache
def _our_tables() -> frozenset[tuple[str, str, str]]:
    """The schema of an index this version writes, as SQLite lists it (FTS5's own tables
    included): a file that lists anything else is not ours."""
    db = sqlite3.connect(":memory:")
    try:
        _create(db)
        return frozenset(_tables(db))
    finally:
        db.close()


class ArchiveIndex:
    """The archive's index in one SQLite file (`path`), opened per use; `busy_timeout_s`: how
    long a use waits for another process that holds the file locked (None: BUSY_TIMEOUT_S)."""

    def __init__(self, path: Path, busy_timeout_s: float | None = None) -> None:
        self.path = path
        self.busy_timeout_s = busy_timeout_s

    @property
    def _timeout(self) -> float:
        return BUSY_TIMEOUT_S if self.busy_timeout_s is None else self.busy_timeout_s

    @contextlib.contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        """The index, open and checked to be ours, on every path that reads or writes it:
        IndexLockedError where another process holds it locked for longer than the wait,
        UnusableIndex where the file is not ours or damaged (never said of a locked one)."""
        self._check_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db: sqlite3.Connection | None = None
        try:
            # Questions asked side by side share the file: one waits for the other's update.
            db = sqlite3.connect(self.path, timeout=self._timeout)
            with db:
                self._schema(db)
                yield db
        except sqlite3.Error as err:
            if _locked(err):
                raise self._locked_error(err) from err
            raise UnusableIndex(f"the archive index {self.path} is unreadable ({err}); the "
                                "next `digest ask` builds it again from the records") from err
        finally:
            if db is not None:
                db.close()

    def _check_path(self) -> None:
        """UsageError where the index's path holds something no run of the digest wrote there
        (a folder, a link, a device): it is neither read nor written through, nor deleted."""
        path = self.path
        if path.is_symlink() or (path.exists() and not path.is_file()):
            what = "a link" if path.is_symlink() else "a folder" if path.is_dir() else \
                "not a plain file"
            raise UsageError(f"the archive index's path {path} is {what}, which the digest "
                             "never writes there; move it away (the next `digest ask` builds "
                             "the index again from the records)")

    def _locked_error(self, err: sqlite3.Error) -> IndexLockedError:
        return IndexLockedError(
            f"the archive index {self.path} is locked by another process ({err}) and stayed "
            f"locked for {self._timeout:g} s; it was left as it is: ask again when that "
            "process is done")

    def _wait_for_holders(self) -> None:
        """Before a file that is not ours is deleted: wait until no other process holds it in
        a transaction (a newer digest writing its own format, say); IndexLockedError if one
        still does after the wait. Any other error: it is no database anyone can hold."""
        try:
            db = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None)
        except sqlite3.Error:
            return
        try:
            db.execute("BEGIN EXCLUSIVE")
            db.execute("ROLLBACK")
        except sqlite3.Error as err:
            if _locked(err):
                raise self._locked_error(err) from err
        finally:
            db.close()

    def _schema(self, db: sqlite3.Connection) -> None:
        """Create the tables in an empty file; refuse a file whose tables are not ours."""
        if not _tables(db) and not db.execute("PRAGMA user_version").fetchone()[0]:
            db.execute("BEGIN IMMEDIATE")  # one creator: another waits, then finds them
            if not _tables(db):
                _create(db)
            db.commit()
        found = db.execute("PRAGMA user_version").fetchone()[0]
        if found != INDEX_FORMAT:
            raise UnusableIndex(f"the archive index {self.path} is of format {found}, not "
                                f"{INDEX_FORMAT}")
        if _tables(db) != _our_tables():
            raise UnusableIndex(f"the file at the archive index's path {self.path} holds "
                                "tables this version did not write")

    def update(self, files: Sequence[tuple[str, Path]],
               read: Reader) -> IndexUpdate:
        """Index the records `files` lists (edition, path) that are new or changed since the
        last update, and drop the editions no longer listed; `read` parses a record (only
        the ones to index are read). A file that is not ours, or damaged, is built again from
        the records; a locked one is waited for, then left as it is (IndexLockedError)."""
        digests = {edition: file_digest(path).hex() for edition, path in files}
        paths = dict(files)
        try:
            return self._update(digests, paths, read)
        except UnusableIndex as err:
            return self._rebuilt(digests, paths, read, err)

    def _rebuilt(self, digests: dict[str, str], paths: dict[str, Path], read: Reader,
                 err: UnusableIndex) -> IndexUpdate:
        self._wait_for_holders()
        log.warning("%s: built again from the records", err)
        for stale in (self.path, *(self.path.with_name(self.path.name + suffix)
                                   for suffix in ("-journal", "-wal", "-shm"))):
            stale.unlink(missing_ok=True)
        return self._update(digests, paths, read)

    def _update(self, digests: dict[str, str], paths: dict[str, Path], read: Reader
                ) -> IndexUpdate:
        with self._db() as db:
            # What is indexed is read under the write lock: a question updating at the same
            # time waits for this one, then finds nothing left to do.
            db.execute("BEGIN IMMEDIATE")
            known = dict(db.execute("SELECT edition, digest FROM editions").fetchall())
            removed = tuple(sorted(set(known) - set(digests)))
            todo = sorted(e for e, d in digests.items() if known.get(e) != d)
            for edition in (*removed, *todo):
                db.execute("DELETE FROM docs WHERE edition = ?", (edition,))
                db.execute("DELETE FROM editions WHERE edition = ?", (edition,))
            for edition in todo:
                record = read(paths[edition])
                db.executemany(
                    f"INSERT INTO docs (edition, base_id, arxiv_id, {', '.join(COLUMNS)}) "
                    f"VALUES (?, ?, ?{', ?' * len(COLUMNS)})",
                    [(edition, p.base_id, p.arxiv_id,
                      *paper_document(record, p).values()) for p in record.papers])
                db.execute("INSERT INTO editions VALUES (?, ?, ?)",
                           (edition, digests[edition],
                            json.dumps(to_data(Sighting.of_record(record)))))
        update = IndexUpdate(tuple(e for e in todo if e not in known),
                             tuple(e for e in todo if e in known), removed,
                             len(digests) - len(todo))
        if update.touched:
            log.info("archive index: %d edition(s) indexed, %d again, %d dropped, %d kept",
                     len(update.added), len(update.changed), len(update.removed), update.kept)
        return update

    def editions(self) -> list[str]:
        with self._db() as db:
            return [e for (e,) in db.execute("SELECT edition FROM editions ORDER BY edition")]

    def covering(self, base_ids: Sequence[str]) -> dict[str, list[str]]:
        """The editions that covered each paper (any row of it, matched or not)."""
        wanted = set(base_ids)
        found: dict[str, list[str]] = {b: [] for b in base_ids}
        with self._db() as db:
            for edition, base_id in db.execute("SELECT edition, base_id FROM docs"):
                if base_id in wanted:
                    found[base_id].append(edition)
        return found

    def withdrawn(self) -> dict[str, Withdrawal]:
        """Every paper withdrawn as of the newest edition (archive/withdrawn.py), by base id."""
        with self._db() as db:
            rows = db.execute("SELECT sighting FROM editions").fetchall()
        return current(from_data(Sighting, json.loads(s)) for (s,) in rows)

    def search(self, question: str, limit: int, since: str = "", until: str = ""
               ) -> list[Hit]:
        """The `limit` papers most relevant to `question` (one per paper, whatever its
        editions), best first; none where no paper matches a term that tells papers apart.

        A term found in more than half the papers (of an archive about LLM serving,
        "inference") finds nothing by itself: "protein folding inference" is about proteins,
        which the archive lacks. Only a question all of whose terms are common there (the
        archive's very subject) is answered from those."""
        terms = question_terms(question)
        if not terms or limit < 1:
            return []
        window, args = _window(since, until)
        with self._db() as db:
            total = db.execute(f"SELECT count(DISTINCT base_id) FROM docs{window}",
                               args).fetchone()[0]
            if not total:
                return []
            found = {t: db.execute(
                f"SELECT count(DISTINCT base_id) FROM docs WHERE docs MATCH ?"
                f"{window.replace(' WHERE', ' AND')}", (_phrase(t), *args)).fetchone()[0]
                for t in terms}
            present = [t for t in terms if found[t]]
            telling = [t for t in present if found[t] <= max(1, total * COMMON_SHARE)]
            if not telling and present and len(present) == len(terms):
                telling = present  # every word of the question is the archive's subject
            if not telling:
                return []
            query = (f"({' OR '.join(map(_phrase, telling))}) AND "
                     f"({' OR '.join(map(_phrase, present))})")
            weights = ", ".join(str(w) for w in (0.0, 0.0, 0.0, *WEIGHTS))
            rows = db.execute(
                f"SELECT base_id, edition, bm25(docs, {weights}) AS score FROM docs "
                f"WHERE docs MATCH ?{window.replace(' WHERE', ' AND')} ORDER BY score",
                (query, *args)).fetchall()
        best: dict[str, float] = {}
        seen_in: dict[str, list[str]] = {}
        for base_id, edition, score in rows:
            best.setdefault(base_id, score)
            seen_in.setdefault(base_id, []).append(edition)
        ranked = sorted(best, key=lambda b: (best[b], b))[:limit]
        return [Hit(b, best[b], tuple(sorted(seen_in[b], reverse=True))) for b in ranked]


def _phrase(term: str) -> str:
    """A term as an FTS5 string: quoted, so no word of a question is query syntax."""
    return '"' + term.replace('"', '""') + '"'


def _window(since: str, until: str) -> tuple[str, tuple[str, ...]]:
    """The SQL that keeps the rows of editions in [since, until] (names sort by date)."""
    clauses, args = [], []
    if since:
        clauses.append("edition >= ?")
        args.append(since)
    if until:
        clauses.append("edition <= ?")
        args.append(until + "\uffff")  # "2026-12-02" takes "2026-12-02-special" too
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), tuple(args)
