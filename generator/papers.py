"""Frozen records that flow between the pipeline stages.

Dicts exist only at the I/O edges (TOML, JSON, HTTP); each record here knows how to turn itself
into JSON-ready data and back, so the cache and edition.json share one format.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from .errors import InvalidPaperId

FullTextStatus = Literal["ok", "missing", "not_requested"]

_VERSION_RE = re.compile(r"v\d+$", re.ASCII)
# arXiv's identifier grammar: new style (YYMM.NNNN or YYMM.NNNNN since 2015) and old style
# (archive[.SC]/YYMMNNN), each with an optional version. An id names files, so nothing else
# is accepted: no dots alone, no slashes but the one of an old-style id, no underscores, and
# ASCII digits only (`\d` alone would take "２４０１.０１２３４", which names another file).
ARXIV_ID_RE = re.compile(
    r"(?:\d{4}\.\d{4,5}|[a-z]+(?:-[a-z]+)?(?:\.[A-Z]{2})?/\d{7})(?:v[1-9]\d{0,3})?", re.ASCII)


def valid_arxiv_id(arxiv_id: str) -> bool:
    """Whether `arxiv_id` follows arXiv's identifier grammar (new or old style)."""
    return ARXIV_ID_RE.fullmatch(arxiv_id) is not None


def base_of(arxiv_id: str) -> str:
    """The id without its version, which names the paper across editions."""
    return _VERSION_RE.sub("", arxiv_id)


def paper_slug(arxiv_id: str) -> str:
    """A file-name-safe form of an arXiv id: a slash in an old-style id is never a path.

    Only valid ids have slugs, and no valid id has an underscore, so two papers never share
    a page, a cache entry or a PDF.
    """
    if not valid_arxiv_id(arxiv_id):
        raise InvalidPaperId(arxiv_id)
    return arxiv_id.replace("/", "_")


@dataclass(frozen=True)
class Paper:
    """arXiv metadata for one paper, as fetched (the abstract already cut to size)."""

    arxiv_id: str  # with version, e.g. "2401.01234v2" or "quant-ph/0201082v1"
    title: str
    authors: tuple[str, ...]  # every author; display code shortens the list
    published: str  # ISO date (YYYY-MM-DD)
    updated: str
    abstract: str
    categories: tuple[str, ...]
    abs_url: str
    pdf_url: str | None
    comment: str = ""  # the authors' arXiv comment ("12 pages; code at github.com/...")
    code: tuple[str, ...] = ()  # code or data repositories the paper names (fetch/code.py)

    def __post_init__(self) -> None:
        if not valid_arxiv_id(self.arxiv_id):
            raise InvalidPaperId(self.arxiv_id)

    @property
    def base_id(self) -> str:
        """The id without its version, which names the paper across editions."""
        return base_of(self.arxiv_id)

    @property
    def slug(self) -> str:
        return paper_slug(self.arxiv_id)

    @property
    def base_slug(self) -> str:
        """The slug of the paper's own page, the same in every edition and for every version."""
        return paper_slug(self.base_id)

    @property
    def arxiv_pdf(self) -> str:
        """The PDF on arXiv itself, for links: `pdf_url` keeps the host it was fetched from (an
        API mirror, a test server), as `abs_url` does not."""
        return f"https://arxiv.org/pdf/{self.arxiv_id}"

    def short_authors(self, limit: int = 5) -> str:
        """First `limit` authors, then "et al."."""
        names = list(self.authors[:limit])
        if len(self.authors) > limit:
            names.append("et al.")
        return ", ".join(names)


@dataclass(frozen=True)
class Window:
    """The papers of a query's window, as far as arXiv listed them."""

    papers: tuple[Paper, ...]
    total: int | None  # as arXiv counted the window
    capped: bool  # more papers than the limit
    incomplete: str = ""  # why the listing stopped early ("": it did not)


@dataclass(frozen=True)
class FullText:
    """The extracted text of a paper's PDF, or why there is none."""

    status: FullTextStatus
    text: str = ""
    pages: int = 0  # pages read
    total_pages: int = 0
    reason: str = ""  # for "missing": what went wrong, shown on the paper's page


@dataclass(frozen=True)
class Source:
    """A paper with whatever full text the fetch stage could get for it."""

    paper: Paper
    full_text: FullText


@dataclass(frozen=True)
class LibraryPaper:
    """A paper of the reader's own library (a BibTeX or RIS export, or a list of arXiv ids):
    what triage is shown of it, and where the file has it."""

    arxiv_id: str = ""  # without version; "" for an entry that names no arXiv paper
    title: str = ""
    abstract: str = ""
    date: str = ""  # as far as the file tells: "2026", "2026-11" or "2026-11-25"
    where: str = ""  # the entry in its file, for messages ("entry 3 (vaswani2017)", "line 4")


TriageStatus = Literal["selected", "below_cut", "excluded", "unscored"]


@dataclass(frozen=True)
class Candidate:
    """One paper of the window, as triage judged it."""

    paper: Paper
    status: TriageStatus
    score: int | None = None  # 0-10; None: excluded or unscored
    reason: str = ""  # the model's reason; the matching phrase; or why it went unscored
    interests: tuple[str, ...] = ()


def best_first(candidates: Sequence[Candidate]) -> list[int]:
    """Indexes of the scored candidates, highest score first; ties keep the window's order
    (newest first)."""
    return sorted((i for i, c in enumerate(candidates) if c.score is not None),
                  key=lambda i: (-(candidates[i].score or 0), i))


@dataclass(frozen=True)
class Triage:
    """Every paper of an edition's window, scored, and which of them the edition bundles."""

    query: str
    max_candidates: int
    candidates: tuple[Candidate, ...]  # newest first, as arXiv listed them
    total: int | None = None  # papers in the window, as arXiv counted them
    capped: bool = False  # the window held more than max_candidates
    incomplete: str = ""  # why the window could not be read to its end ("": it was)
    interests: str = ""  # what the papers were scored against, as [triage] interests said
    marks: int = 0  # the reader's marked papers shown to it as examples (feedback.py)
    marked: tuple[str, ...] = ()  # the window's papers the reader marked: never a pick
    # The marks it was judged with ("more:2611.00001"), so a rebuild judges with the same:
    # kept with the fetch, never in the published record (record_data leaves it out).
    shown: tuple[str, ...] = ()
    library: int = 0  # papers of the reader's library ([triage] library) shown as examples
    # The window's papers already in the reader's library (base ids): listed, never bundled.
    in_library: tuple[str, ...] = ()
    # The library's papers it was judged with, as shown: kept with the fetch (a rebuild judges
    # with the same), never in the published record (a lab's library is its own).
    seeds: tuple[LibraryPaper, ...] = ()

    def selected_papers(self) -> list[Paper]:
        """The papers the edition bundles, best first (ties: the newer)."""
        return [self.candidates[i].paper for i in best_first(self.candidates)
                if self.candidates[i].status == "selected"]


@dataclass(frozen=True)
class Withdrawal:
    """A paper covered in an earlier edition whose latest version arXiv lists as withdrawn."""

    base_id: str
    arxiv_id: str  # the withdrawn version
    title: str
    notice: str  # arXiv's withdrawal notice, as its abstract or comment gives it


@dataclass(frozen=True)
class Lookup:
    """The ids of earlier editions' papers looked up on arXiv for this edition, and what was
    found withdrawn (a rebuild reads this instead of asking again)."""

    ids: tuple[str, ...] = ()  # base ids, sorted
    withdrawn: tuple[Withdrawal, ...] = ()
    error: str = ""  # why the lookup is incomplete ("" when every id was answered)


@dataclass(frozen=True)
class FetchResult:
    """What the fetch stage leaves for the later ones."""

    query: str
    max_papers: int
    fetched_at: str  # ISO timestamp, UTC
    sources: tuple[Source, ...]
    skipped: tuple[str, ...] = ()  # ids left out because an earlier edition published them
    triage: Triage | None = None  # with [triage] interests: the window the sources came from
    lookup: Lookup | None = None  # earlier papers looked up for withdrawals (continuity)


@dataclass(frozen=True)
class NumberedPaper:
    """A paper with its number in the bundle ("Paper 3")."""

    number: int
    paper: Paper
    full_text: FullText
    excerpt_chars: int  # characters of full text that went into the bundle


@dataclass(frozen=True)
class Bundle:
    """The research bundle every synthesis prompt carries."""

    papers: tuple[NumberedPaper, ...]
    text: str

    @property
    def chars(self) -> int:
        return len(self.text)

    @property
    def estimated_tokens(self) -> int:
        # ~4 characters a token for English prose with LaTeX; good enough to size a context.
        return (len(self.text) + 3) // 4
