"""The archive as `digest mcp`'s tools read it: the committed records (edition/history.py), the
full-text index over them (ask/index.py), the reader's library and each paper's BibTeX.

Nothing here writes into the archive: the index lives in the cache and is brought up to date
from the records (as `digest ask` does), and every value is read from a record, never computed
again (a claim's verdict is its recorded standing, the news line `News.line`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..archive.bibtex import Citable, entry
from ..archive.history import History, read_record
from ..archive.names import name_citations
from ..archive.news import News
from ..archive.record import EditionRecord, RecordPaper
from ..archive.withdrawn import withdrawn_now
from ..ask.index import ArchiveIndex, question_terms
from ..config import Config
from ..errors import UsageError
from ..evidence.checks import ClaimCheck, EvidenceFigure
from ..marks.library import LibraryError, load_library
from ..pipeline.ask import INDEX_FILE
from ..store import Docs
from ..text.safe_text import cut
from . import answers as a
from .inputs import (
    MAX_QUERY_CHARS,
    checked_base_id,
    checked_edition,
    checked_limit,
    checked_text,
    checked_window,
)

log = logging.getLogger(__name__)

DEFAULT_LIMIT = 10
CLAIMS_PER_HIT = 5  # the claims of a hit that share a word with the query
MAX_PAPER_CLAIMS = 40  # a paper's claims across the archive, newest edition first
MAX_ABSTRACT_CHARS = 6000
PAGE_URI = "digest://editions/{edition}/{page}"


class NotInArchive(UsageError):
    """What the agent asked for is not in the archive (an id or edition it has not covered)."""


@dataclass(frozen=True)
class PageFile:
    """One page of an edition, as a resource: its URI, title and file in the workspace."""

    uri: str
    edition: str
    stem: str
    path: Path


def claim_value(check: ClaimCheck, ids: Mapping[int, str], edition: str = "", page: str = "",
                names: Mapping[int, str] | None = None) -> a.Claim:
    """A recorded claim as the tools return it, its verdict code as its record decided it;
    `ids`: the arXiv id of each paper number it may cite, `names` the names its citations
    are written with (None: as "Paper N"). Its mark is in the words every page shows
    (`ClaimCheck.mark_text`), beside the code."""
    sentence = name_citations(check.sentence, names) if names else check.sentence
    return a.Claim(
        edition, check.id, page, a.model_text(sentence), check.mark.code, check.mark_text,
        tuple(a.Quote(ids.get(q.paper, f"Paper {q.paper}"), a.paper_text(q.quote),
                      q.verdict == "supported", q.note) for q in check.quotes if check.papers),
        a.model_text(check.judgement.reason) if check.judgement else None)


def claim(record: EditionRecord, answer: str, check: ClaimCheck) -> a.Claim:
    """A claim of an edition's answer `answer`, with the page it is on."""
    page = next((p.page or "" for p in record.prompts if p.name == answer), "")
    return claim_value(check, {p.number: p.arxiv_id for p in record.papers}, record.edition,
                       page, record.names)


def evidence(figure: EvidenceFigure | None) -> a.Evidence | None:
    if figure is None:
        return None
    return a.Evidence(figure.claims, figure.backed, figure.partly, figure.unbacked,
                      figure.unjudged, figure.problems, figure.unchecked, figure.sentence)


def _checks(record: EditionRecord) -> Iterator[tuple[str, ClaimCheck]]:
    for answer, checks in (record.checks or {}).items():
        for check in checks:
            yield answer, check


class ArchiveReader:
    """The workspace's archive, read afresh on every call (a build may publish meanwhile)."""

    def __init__(self, config: Config, index_path: Path | None = None) -> None:
        self.config = config
        self.docs_dir = config.docs_dir
        self.index_path = index_path or config.cache_dir / INDEX_FILE

    def records(self) -> tuple[EditionRecord, ...]:
        """Every edition's record, newest first; a folder without its record is named."""
        history = History.load(self.docs_dir)
        history.check_complete()
        return history.records

    def index(self) -> ArchiveIndex:
        index = ArchiveIndex(self.index_path)
        files = [(path.parent.name, path) for path in Docs(self.docs_dir).record_paths()]
        index.update(files, read_record)
        return index

    # The tools.

    def search(self, query: str, since: str | None = None, until: str | None = None,
               limit: int | None = None) -> a.SearchAnswer:
        words = checked_text(query, "query", MAX_QUERY_CHARS)
        start, end = checked_window(since, until)
        count = checked_limit(limit, DEFAULT_LIMIT)
        index = self.index()
        hits = index.search(words, count, start, end)
        if not hits:
            return a.SearchAnswer(words, (), "Nothing in the archive matches these words "
                                  "(they are read as words, never as query syntax); try "
                                  "others, or a wider since/until.")
        terms = question_terms(words)
        gone = index.withdrawn()
        by_name = {r.edition: r for r in self.records()}
        found = []
        for hit in hits:
            covered = [(by_name[e], p) for e in hit.editions if e in by_name
                       for p in by_name[e].papers if p.base_id == hit.base_id]
            if not covered:
                continue
            record, paper = covered[0]
            claims = [claim(r, answer, check) for r, p in covered
                      for answer, check in _checks(r)
                      if p.number in check.papers and _mentions(check, terms)]
            found.append(a.SearchHit(
                paper.arxiv_id, paper.base_id, a.paper_text(paper.title), hit.editions,
                "withdrawn" if hit.base_id in gone else _status(record, paper),
                tuple(claims[:CLAIMS_PER_HIT])))
        return a.SearchAnswer(words, tuple(found), f"{len(found)} paper(s), best first.")

    def paper(self, arxiv_id: str) -> a.PaperAnswer:
        base = checked_base_id(arxiv_id)
        records = self.records()
        covered = [(r, p) for r in records for p in r.papers if p.base_id == base]
        if not covered:
            raise NotInArchive(f"no edition of the archive covered arXiv {base} "
                               "(`search` finds papers by words)")
        record, newest = covered[0]
        gone = withdrawn_now(records).get(base)
        brief = next(((r, r.briefs[p.number]) for r, p in covered if p.number in r.briefs), None)
        claims = [claim(r, answer, check) for r, p in covered for answer, check in _checks(r)
                  if p.number in check.papers]
        follows = tuple(dict.fromkeys(
            f.earlier for r, p in covered if r.continuity
            for f in r.continuity.followups if f.number == p.number))
        return a.PaperAnswer(
            base, newest.arxiv_id, a.paper_text(newest.title),
            tuple(a.paper_text(name) for name in newest.authors),
            a.paper_text(cut(newest.abstract, MAX_ABSTRACT_CHARS)), newest.abs_url,
            "withdrawn" if gone else _status(record, newest),
            a.paper_text(gone.notice) if gone else None, self._in_library(newest),
            tuple(a.Appearance(r.edition, p.arxiv_id, _status(r, p), a.paper_text(p.title),
                               any(pick.number == p.number for pick in r.picks),
                               tuple(page.stem for page, _ in r.cited_by(p.number)))
                  for r, p in covered),
            None if brief is None else a.Brief(
                brief[0].edition, *(a.model_text(t) for t in (
                    brief[1].tldr, brief[1].problem, brief[1].method, brief[1].result,
                    brief[1].limitations))),
            tuple(claims[:MAX_PAPER_CLAIMS]), follows,
            a.paper_text(entry(Citable(newest.arxiv_id, newest.title, newest.authors,
                                       newest.published, newest.categories))))

    def edition(self, name: str = "latest") -> a.EditionAnswer:
        wanted = checked_edition(name)
        records = self.records()
        if not records:
            raise NotInArchive("the archive has no edition yet (`digest build` makes the first)")
        record = records[0] if wanted == "latest" else next(
            (r for r in records if r.edition == wanted), None)
        if record is None:
            newest = ", ".join(r.edition for r in records[:5])
            raise NotInArchive(f"the archive has no edition {wanted}; its newest: {newest}")
        since = record.continuity
        paper = {p.number: p for p in record.papers}
        changes: list[a.Change] = []
        if since:
            changes += [a.Change("follow-up", paper[f.number].arxiv_id,
                                 a.paper_text(paper[f.number].title),
                                 a.paper_text(f"follows up {f.title} (edition {f.edition}): "
                                              f"“{f.quote}”"))
                        for f in since.followups if f.number in paper]
            changes += [a.Change("revised", paper[r.number].arxiv_id,
                                 a.paper_text(paper[r.number].title),
                                 a.paper_text(f"a new version of {r.before}, covered in "
                                              f"edition {r.edition}"))
                        for r in since.revised if r.number in paper]
            changes += [a.Change("withdrawn", w.arxiv_id, a.paper_text(w.title),
                                 a.paper_text(w.notice)) for w in since.withdrawn]
        return a.EditionAnswer(
            record.edition, record.title, record.built_at, tuple(r.edition for r in records),
            News.of(record).line, since.previous if since else "",
            tuple(a.Pick(p.arxiv_id, a.model_text(p.name or p.title),
                         a.model_text(name_citations(p.why, record.names)),
                         claim(record, _answer_of(record, p.claim), p.claim) if p.claim
                         else None) for p in record.picks),
            tuple(changes), evidence(record.evidence_figure),
            tuple(a.PageLink(f.stem, _title(record, f.stem), f.uri)
                  for f in self.pages(record)))

    # The resources.

    def pages(self, record: EditionRecord) -> list[PageFile]:
        """The edition's Markdown pages (its overview, synthesis pages, run report), each a
        plain file inside the workspace's docs folder."""
        folder = Docs(self.docs_dir).edition_folder(record.edition)
        root = self.docs_dir.resolve()
        found = []
        for path in sorted(folder.glob("*.md")):
            if path.is_symlink() or not path.is_file() or not path.resolve().is_relative_to(root):
                continue  # a link could lead out of the workspace: never followed
            found.append(PageFile(PAGE_URI.format(edition=record.edition, page=path.name),
                                  record.edition, path.stem, path))
        return found

    def _in_library(self, paper: RecordPaper) -> bool | None:
        path = self.config.library_file
        if path is None:
            return None
        try:
            return load_library(path).holds(paper.paper)
        except LibraryError as err:
            log.warning("%s", err)
            return None


def _mentions(check: ClaimCheck, terms: list[str]) -> bool:
    text = f"{check.sentence} {' '.join(q.quote for q in check.quotes)}".casefold()
    return any(t in text for t in terms)


def _status(record: EditionRecord, paper: RecordPaper) -> str:
    """The paper's state in one edition, in the words the pages use."""
    if paper.number in record.withdrawn_numbers:
        return "withdrawn"
    since = record.continuity
    if since and any(f.number == paper.number for f in since.followups):
        return "follow-up"
    return {"updated": "revised"}.get(paper.status, paper.status)


def _answer_of(record: EditionRecord, check: ClaimCheck) -> str:
    return next((answer for answer, c in _checks(record) if c == check), "")


def _title(record: EditionRecord, stem: str) -> str:
    known = {p.stem: p.title for p in record.pages}
    return known.get(stem, {"index": f"Edition {record.edition}",
                            "run-report": "Run report"}.get(stem, stem))
