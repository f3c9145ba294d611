"""The edition as frozen, typed data: what templates format and what edition.json records.

`Edition` is everything a page shows, computed before any template runs. `EditionRecord` is
the part that is published as edition.json and read back by history, the navigation, the feed,
`skip_seen` and `render --all`; its format version is checked when it is read.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from ..config import ThinkingPrompt
from ..errors import DigestError
from ..models import (
    Candidate,
    Completion,
    FullText,
    Paper,
    PromptKind,
    PromptRequest,
    Triage,
    best_first,
)

RECORD_FORMAT = 2  # 1: the untyped record of research-digest 0.1 (same fields, read as is)
READABLE_FORMATS = (1, 2)

Status = Literal["new", "updated", "seen"]
STATUS_LABELS: dict[str, str] = {
    "new": "new in this edition",
    "updated": "a new version of a paper published before",
    "seen": "seen in an earlier edition",
}
STATUS_SECTIONS: dict[str, str] = {"new": "New", "updated": "Updated", "seen": "Seen before"}


class RecordFormatError(DigestError):
    """An edition.json this version cannot read (written by an older or newer version)."""


# The published record ---------------------------------------------------------------------------

@dataclass(frozen=True)
class RecordPaper:
    number: int
    arxiv_id: str
    base_id: str
    slug: str
    title: str
    status: Status


@dataclass(frozen=True)
class RecordPage:
    """A synthesis page of an edition: its file stem and title (for the navigation)."""

    stem: str
    title: str
    kind: PromptKind


@dataclass(frozen=True)
class EditionRecord:
    """What an edition published, as the later editions, the navigation and the feed need it.

    `data` keeps the whole JSON object, so that writing a record back loses nothing.
    """

    edition: str
    title: str
    query: str
    model: str
    built_at: str
    overview: str
    papers: tuple[RecordPaper, ...]
    pages: tuple[RecordPage, ...]
    data: dict[str, Any] = field(repr=False, compare=False, default_factory=dict)

    @property
    def new_papers(self) -> tuple[RecordPaper, ...]:
        return tuple(p for p in self.papers if p.status == "new")

    def to_json(self) -> dict[str, Any]:
        return self.data

    @classmethod
    def from_json(cls, data: Any, source: str) -> EditionRecord:
        """Read a record, checking its format; RecordFormatError names the file otherwise."""
        if not isinstance(data, dict):
            raise RecordFormatError(f"{source} is not an edition record (a JSON object)")
        version = data.get("format")
        if version not in READABLE_FORMATS:
            newer = isinstance(version, int) and version > RECORD_FORMAT
            raise RecordFormatError(
                f"{source} has record format {version!r}, which this version of research-digest "
                f"does not read (it reads {', '.join(map(str, READABLE_FORMATS))}); "
                + ("upgrade research-digest" if newer else
                   "render the edition again with `digest render --all`"))
        try:
            papers = tuple(RecordPaper(int(p["number"]), str(p["arxiv_id"]), str(p["base_id"]),
                                       str(p["slug"]), str(p["title"]), p.get("status", "new"))
                           for p in data["papers"])
            pages: dict[str, RecordPage] = {}
            for c in data["completions"]:
                if c.get("page"):
                    stem = str(c["page"]).removesuffix(".md")
                    # Format 1 had no page titles: its thinking page had the default title.
                    title = str(c.get("page_title") or (
                        ThinkingPrompt().title if c["kind"] == "thinking" else c["title"]))
                    pages.setdefault(stem, RecordPage(stem, title, c["kind"]))
            return cls(edition=str(data["edition"]), title=str(data["title"]),
                       query=str(data.get("query", "")), model=str(data.get("model", "")),
                       built_at=str(data["built_at"]),
                       overview=str(data.get("overview", "")), papers=papers,
                       pages=tuple(pages.values()), data=data)
        except (KeyError, TypeError, ValueError) as err:
            raise RecordFormatError(f"{source} is missing or mangles {err} "
                                    "(render the edition again with `digest render --all`)") from err


# The whole edition, as pages show it ------------------------------------------------------------

@dataclass(frozen=True)
class Brief:
    tldr: str
    problem: str
    method: str
    result: str
    limitations: str


@dataclass(frozen=True)
class Theme:
    name: str
    description: str
    papers: tuple[int, ...]


@dataclass(frozen=True)
class Appearance:
    """One edition a paper appeared in, for the "Editions" list on its page."""

    edition: str
    slug: str
    arxiv_id: str


@dataclass(frozen=True)
class CitedIn:
    """A synthesis page that cites a paper, with the sentences around the citations."""

    stem: str
    title: str
    sentences: tuple[str, ...]


@dataclass(frozen=True)
class EditionPaper:
    number: int
    paper: Paper
    full_text: FullText  # without its text: full text never reaches a page
    excerpt_chars: int
    status: Status
    brief: Brief | None
    themes: tuple[str, ...]
    cited_in: tuple[CitedIn, ...]
    appearances: tuple[Appearance, ...]

    @property
    def status_label(self) -> str:
        return STATUS_LABELS[self.status]


@dataclass(frozen=True)
class Problem:
    text: str
    number: int
    reason: str


@dataclass(frozen=True)
class FigureCheck:
    paper: int
    figure: str
    found: bool
    sentence: str


Verdict = Literal["supported", "figure_missing", "wrong_paper", "not_in_paper", "no_quote",
                  "not_checked"]
VERDICT_SHORT: dict[str, str] = {
    "supported": "Supported", "figure_missing": "Figure missing", "wrong_paper": "Wrong paper",
    "not_in_paper": "Not in paper", "no_quote": "No quote", "not_checked": "Not checked",
}
VERDICT_LABELS: dict[str, str] = {
    "supported": "supported by a quote found in the paper",
    "figure_missing": "quote found, but a figure of the sentence is not in the paper",
    "wrong_paper": "quote found in another paper (wrong citation)",
    "not_in_paper": "quote not in the paper (fabricated)",
    "no_quote": "no quote",
    "not_checked": "not checked (the evidence request failed)",
}


@dataclass(frozen=True)
class ClaimCheck:
    """One citing sentence of an answer and what its quoted evidence showed."""

    sentence: str
    papers: tuple[int, ...]  # the papers it cites
    verdict: Verdict
    quote: str
    found_in: int | None  # the paper whose text holds the quote
    note: str

    @property
    def label(self) -> str:
        return VERDICT_LABELS[self.verdict]


def verdict_counts(claims: Iterable[ClaimCheck]) -> dict[str, int]:
    counts = dict.fromkeys(VERDICT_LABELS, 0)
    for claim in claims:
        counts[claim.verdict] += 1
    return counts


@dataclass(frozen=True)
class Citations:
    """What one synthesis page cites, as found while linking it."""

    cited: dict[int, int]  # paper number -> sentences citing it
    problems: tuple[Problem, ...]
    figures: tuple[FigureCheck, ...]


@dataclass(frozen=True)
class Answer:
    """One prompt's outcome as its page shows it: the answer already linked and made inert."""

    request: PromptRequest
    completion: Completion
    linked: str  # the answer as safe Markdown with citation links ("" when it failed)
    reasoning_linked: str  # the same for the reasoning (thinking answers)


@dataclass(frozen=True)
class ThinkingSummary:
    off_completion: int | None
    on_completion: int | None
    reasoning_tokens: int | None
    reasoning_estimated: bool
    off_words: int
    on_words: int
    reasoning_words: int
    extra_tokens: int | None
    ratio: float | None


@dataclass(frozen=True)
class SynthesisPage:
    stem: str
    kind: PromptKind
    title: str  # the page's title (its H1 comes from the kind's heading)
    heading: str
    question: str
    template: str
    answers: tuple[Answer, ...]
    citations: Citations
    thinking: ThinkingSummary | None = None
    # Every citing sentence's verdict; None when no evidence was asked for ([evidence] off).
    evidence: tuple[ClaimCheck, ...] | None = None

    @property
    def ok(self) -> bool:
        return all(a.completion.ok for a in self.answers)

    @property
    def supported(self) -> int:
        return sum(1 for c in self.evidence or () if c.verdict == "supported")

    def verdict_counts(self) -> dict[str, int]:
        """Claims by verdict, every verdict listed (in VERDICT_LABELS' order)."""
        return verdict_counts(self.evidence or ())

    def unsupported(self) -> str:
        """The claims not supported, counted by verdict in words ("" when there are none)."""
        return ", ".join(f"{count} {VERDICT_LABELS[verdict]}"
                         for verdict, count in self.verdict_counts().items()
                         if count and verdict != "supported")

    @property
    def truncated(self) -> bool:
        return any(a.completion.truncated for a in self.answers)


@dataclass(frozen=True)
class EvidenceSpend:
    """What the evidence checks cost, summed over their requests."""

    requests: int
    failed: int
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class RunFigures:
    bundle_chars: int
    bundle_tokens: int
    bundle_note: str
    wall_time_s: float
    answers_from_cache: int
    answers: int
    token_chart: str  # inline SVG
    timeline: str  # inline SVG
    evidence: EvidenceSpend | None = None


@dataclass(frozen=True)
class Edition:
    """Everything one edition's pages show, computed before any template runs."""

    name: str
    title: str
    query: str
    model: str
    papers: tuple[EditionPaper, ...]
    pages: tuple[SynthesisPage, ...]
    prompts: tuple[Answer, ...]  # every prompt, in order, for the run table
    themes: tuple[Theme, ...]
    skipped_seen: tuple[str, ...]
    overview: str
    figures: RunFigures
    record: EditionRecord
    triage: Triage | None = None  # with [triage] interests: every paper of the window, judged

    def count(self, status: Status) -> int:
        return sum(1 for p in self.papers if p.status == status)

    @property
    def failed(self) -> tuple[Answer, ...]:
        return tuple(a for a in self.prompts if not a.completion.ok)

    @property
    def problems(self) -> tuple[tuple[SynthesisPage, Problem], ...]:
        return tuple((page, p) for page in self.pages for p in page.citations.problems)

    @property
    def figure_checks(self) -> tuple[tuple[SynthesisPage, FigureCheck], ...]:
        return tuple((page, f) for page in self.pages for f in page.citations.figures)

    @property
    def figures_found(self) -> int:
        return sum(1 for _, f in self.figure_checks if f.found)

    @property
    def evidence(self) -> tuple[tuple[SynthesisPage, ClaimCheck], ...]:
        return tuple((page, c) for page in self.pages for c in page.evidence or ())

    @property
    def evidence_checked(self) -> bool:
        return any(page.evidence is not None for page in self.pages)

    def verdict_counts(self) -> dict[str, int]:
        """Claims by verdict, every verdict listed (in VERDICT_LABELS' order)."""
        return verdict_counts(c for _, c in self.evidence)

    def papers_by_status(self) -> tuple[tuple[str, tuple[EditionPaper, ...]], ...]:
        """Sections like arXiv's listings: new, updated, seen before (empty ones left out)."""
        return tuple((STATUS_SECTIONS[s], group) for s in ("new", "updated", "seen")
                     if (group := tuple(p for p in self.papers if p.status == s)))

    def triaged(self, arxiv_id: str) -> Candidate | None:
        """How triage judged a paper of this edition (None without triage)."""
        if self.triage is None:
            return None
        return next((c for c in self.triage.candidates if c.paper.arxiv_id == arxiv_id), None)

    def paper_slug(self, arxiv_id: str) -> str | None:
        """The page of a paper of this edition; None for a paper not bundled."""
        return next((p.paper.slug for p in self.papers if p.paper.arxiv_id == arxiv_id), None)

    def triage_sections(self) -> list[tuple[str, str, list[Candidate]]]:
        """(status, label, candidates) for the triage page, best first within a status; empty
        statuses left out."""
        if self.triage is None:
            return []
        ordered = [self.triage.candidates[i] for i in best_first(self.triage.candidates)]
        ordered += [c for c in self.triage.candidates if c.score is None]
        return [(status, label, group) for status, label in TRIAGE_LABELS.items()
                if (group := [c for c in ordered if c.status == status])]

    def triage_counts(self) -> dict[str, int]:
        counts = dict.fromkeys(TRIAGE_LABELS, 0)
        for candidate in self.triage.candidates if self.triage else ():
            counts[candidate.status] += 1
        return counts


TRIAGE_LABELS: dict[str, str] = {
    "selected": "selected", "below_cut": "below the cut", "unscored": "unscored",
    "excluded": "excluded",
}
