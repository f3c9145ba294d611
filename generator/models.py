"""Frozen records that flow between the pipeline stages.

Dicts exist only at the I/O edges (TOML, JSON, HTTP); each record here knows how to turn itself
into JSON-ready data and back, so the cache and edition.json share one format.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

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

    def to_dict(self) -> dict[str, Any]:
        return {
            "arxiv_id": self.arxiv_id,
            "title": self.title,
            "authors": list(self.authors),
            "published": self.published,
            "updated": self.updated,
            "abstract": self.abstract,
            "categories": list(self.categories),
            "abs_url": self.abs_url,
            "pdf_url": self.pdf_url,
            "comment": self.comment,
            "code": list(self.code),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Paper:
        return cls(
            arxiv_id=data["arxiv_id"],
            title=data["title"],
            authors=tuple(data["authors"]),
            published=data["published"],
            updated=data["updated"],
            abstract=data["abstract"],
            categories=tuple(data["categories"]),
            abs_url=data["abs_url"],
            pdf_url=data.get("pdf_url"),
            comment=data.get("comment", ""),
            code=tuple(data.get("code", ())),
        )


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "text": self.text,
            "pages": self.pages,
            "total_pages": self.total_pages,
            "reason": self.reason,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FullText:
        return cls(
            status=data["status"],
            text=data.get("text", ""),
            pages=data.get("pages", 0),
            total_pages=data.get("total_pages", 0),
            reason=data.get("reason", ""),
        )


@dataclass(frozen=True)
class Source:
    """A paper with whatever full text the fetch stage could get for it."""

    paper: Paper
    full_text: FullText

    def to_dict(self) -> dict[str, Any]:
        return {"paper": self.paper.to_dict(), "full_text": self.full_text.to_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Source:
        return cls(Paper.from_dict(data["paper"]), FullText.from_dict(data["full_text"]))


TriageStatus = Literal["selected", "below_cut", "excluded", "unscored"]


@dataclass(frozen=True)
class Candidate:
    """One paper of the window, as triage judged it."""

    paper: Paper
    status: TriageStatus
    score: int | None = None  # 0-10; None: excluded or unscored
    reason: str = ""  # the model's reason; the matching phrase; or why it went unscored
    interests: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"paper": self.paper.to_dict(), "status": self.status, "score": self.score,
                "reason": self.reason, "interests": list(self.interests)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Candidate:
        return cls(Paper.from_dict(data["paper"]), data["status"], data.get("score"),
                   data.get("reason", ""), tuple(data.get("interests", ())))


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

    def selected_papers(self) -> list[Paper]:
        """The papers the edition bundles, best first (ties: the newer)."""
        return [self.candidates[i].paper for i in best_first(self.candidates)
                if self.candidates[i].status == "selected"]

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query, "max_candidates": self.max_candidates,
                "candidates": [c.to_dict() for c in self.candidates], "total": self.total,
                "capped": self.capped, "incomplete": self.incomplete,
                "interests": self.interests, "marks": self.marks, "marked": list(self.marked),
                "shown": list(self.shown)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Triage:
        return cls(data["query"], data["max_candidates"],
                   tuple(Candidate.from_dict(c) for c in data["candidates"]), data.get("total"),
                   data.get("capped", False), data.get("incomplete", ""),
                   str(data.get("interests", "")), int(data.get("marks", 0)),
                   tuple(data.get("marked", ())), tuple(data.get("shown", ())))


@dataclass(frozen=True)
class Withdrawal:
    """A paper covered in an earlier edition whose latest version arXiv lists as withdrawn."""

    base_id: str
    arxiv_id: str  # the withdrawn version
    title: str
    notice: str  # arXiv's withdrawal notice, as its abstract or comment gives it

    def to_dict(self) -> dict[str, Any]:
        return {"base_id": self.base_id, "arxiv_id": self.arxiv_id, "title": self.title,
                "notice": self.notice}


@dataclass(frozen=True)
class Lookup:
    """The ids of earlier editions' papers looked up on arXiv for this edition, and what was
    found withdrawn (a rebuild reads this instead of asking again)."""

    ids: tuple[str, ...] = ()  # base ids, sorted
    withdrawn: tuple[Withdrawal, ...] = ()
    error: str = ""  # why the lookup is incomplete ("" when every id was answered)

    def to_dict(self) -> dict[str, Any]:
        return {"ids": list(self.ids), "withdrawn": [w.to_dict() for w in self.withdrawn],
                "error": self.error}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Lookup:
        return cls(tuple(data.get("ids", ())),
                   tuple(Withdrawal(**w) for w in data.get("withdrawn", ())),
                   data.get("error", ""))


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "max_papers": self.max_papers,
            "fetched_at": self.fetched_at,
            "sources": [s.to_dict() for s in self.sources],
            "skipped": list(self.skipped),
            **({"triage": self.triage.to_dict()} if self.triage else {}),
            **({"lookup": self.lookup.to_dict()} if self.lookup else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FetchResult:
        return cls(
            query=data["query"],
            max_papers=data["max_papers"],
            fetched_at=data["fetched_at"],
            sources=tuple(Source.from_dict(s) for s in data["sources"]),
            skipped=tuple(data.get("skipped", ())),
            triage=Triage.from_dict(data["triage"]) if data.get("triage") else None,
            lookup=Lookup.from_dict(data["lookup"]) if data.get("lookup") else None,
        )


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
