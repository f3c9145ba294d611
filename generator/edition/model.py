"""The edition as frozen, typed data: what templates format.

`Edition` is everything a page shows, computed before any template runs; the part of it that
is published as edition.json is its `EditionRecord` (archive/record.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..archive.record import EditionRecord, Status
from ..archive.record_entries import STATUS_LABELS, STATUS_SECTIONS
from ..archive.values import Brief, Problem, Theme
from ..completions import Completion, PromptKind, PromptRequest
from ..evidence.checks import (
    STANDING_LABELS,
    STANDING_SHORT,
    VERDICT_LABELS,
    VERDICT_SHORT,
    ClaimCheck,
    EvidenceFigure,
    FigureCheck,
    Standing,
    Verdict,
)
from ..papers import Candidate, FullText, Paper, Triage, best_first
from .compare import Compared

__all__ = ["STANDING_LABELS", "STANDING_SHORT", "VERDICT_LABELS", "VERDICT_SHORT", "Brief",
           "ClaimCheck", "EvidenceFigure", "FigureCheck", "Problem", "Theme", "Verdict"]

# The whole edition, as pages show it ------------------------------------------------------------

@dataclass(frozen=True)
class Appearance:
    """One edition a paper appeared in, for the "Editions" list on its page."""

    edition: str
    slug: str
    arxiv_id: str


@dataclass(frozen=True)
class CitedIn:
    """A synthesis page that cites a paper, with the sentences around the citations, each
    with its verdict where it was checked."""

    stem: str
    title: str
    sentences: tuple[tuple[str, Standing | None], ...]


@dataclass(frozen=True)
class EditionPaper:
    number: int
    paper: Paper
    name: str  # the short name a reader knows it by (archive/names.py)
    full_text: FullText  # without its text: full text never reaches a page
    excerpt_chars: int
    status: Status
    brief: Brief | None
    themes: tuple[str, ...]
    cited_in: tuple[CitedIn, ...]
    appearances: tuple[Appearance, ...]
    withdrawn: str = ""  # arXiv's withdrawal notice, where its latest version is withdrawn

    @property
    def status_label(self) -> str:
        return STATUS_LABELS[self.status]


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
    follows: bool = False  # a follow-up of another answer (an evidence check, a judgement)


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
    compared: Compared | None = None  # conclusions and cited papers, side by side


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
    values: tuple[Any, ...] = ()  # a structured kind's page: its answers as typed values

    @property
    def ok(self) -> bool:
        return all(a.completion.ok for a in self.answers)

    @property
    def figure(self) -> EvidenceFigure:
        """Its claims counted (the one count every surface shows)."""
        return EvidenceFigure.of(self.evidence or ())

    @property
    def truncated(self) -> bool:
        return any(a.completion.truncated for a in self.answers)

    @property
    def cut(self) -> bool:
        return any(a.completion.cut for a in self.answers)


def _total(values: Iterable[int | None]) -> int | None:
    """The sum of the figures a server reported; None when it reported none of them."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None


@dataclass(frozen=True)
class TokenTotals:
    """Tokens summed over requests; a figure no request reported is None (unknown, not 0)."""

    prompt_tokens: int | None
    cached_tokens: int | None  # of the prompt tokens, those the server's prefix cache held
    completion_tokens: int | None
    unreported: int = 0  # requests whose token counts the server did not report

    @classmethod
    def of(cls, completions: Iterable[Completion]) -> TokenTotals:
        done = list(completions)
        return cls(_total(c.usage.prompt_tokens for c in done),
                   _total(c.usage.cached_tokens for c in done),
                   _total(c.usage.completion_tokens for c in done),
                   sum(1 for c in done if c.usage.completion_tokens is None))

    @property
    def cached_share(self) -> float | None:
        """The prefix cache's share of the prompt tokens, where both were reported."""
        if self.cached_tokens is None or not self.prompt_tokens:
            return None
        return self.cached_tokens / self.prompt_tokens


@dataclass(frozen=True)
class EvidenceSpend:
    """What the evidence checks cost, summed over their requests."""

    requests: int
    failed: int
    prompt_tokens: int | None
    cached_tokens: int | None
    completion_tokens: int | None


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
    judge: EvidenceSpend | None = None  # the judgements of the quotes found
    continued: EvidenceSpend | None = None  # the continuations of answers cut at their budget


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
    # Every structured kind's answers as typed values, by kind (generator.kinds parses them).
    structured: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)

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

    @property
    def evidence_figure(self) -> EvidenceFigure:
        """The edition's claims counted: checked, quote found, judged backed, partly or not."""
        return EvidenceFigure.of(c for _, c in self.evidence)

    def paper(self, number: int) -> EditionPaper:
        return next(p for p in self.papers if p.number == number)

    def neighbours(self, item: EditionPaper) -> tuple[EditionPaper | None, EditionPaper | None]:
        """The papers before and after `item` in the edition's order (None at either end)."""
        index = self.papers.index(item)
        return (self.papers[index - 1] if index else None,
                self.papers[index + 1] if index + 1 < len(self.papers) else None)

    def citing_label(self, item: EditionPaper) -> str:
        """What the papers' list says of where `item` is cited: a count that tells it from
        the others (synthesis pages, else sentences), not one every paper shares."""
        cited = [p for p in self.papers if p.cited_in]
        pages = {len(p.cited_in) for p in cited}
        if len(pages) > 1 or len(cited) == 1:
            n = len(item.cited_in)
            return f"cited on {n} synthesis page{'s' if n != 1 else ''}"
        sentences = {p.number: sum(page.citations.cited.get(p.number, 0) for page in self.pages)
                     for p in cited}
        if len(set(sentences.values())) > 1:
            n = sentences.get(item.number, 0)
            return f"cited in {n} sentence{'s' if n != 1 else ''}"
        return "where it is cited"

    def uncited(self) -> tuple[EditionPaper, ...]:
        """The papers no synthesis page cites."""
        cited = {n for page in self.pages for n in page.citations.cited}
        return tuple(p for p in self.papers if p.number not in cited)

    def cache_use(self) -> TokenTotals:
        """Tokens over every request of the run, evidence checks included."""
        return TokenTotals.of(a.completion for a in self.prompts if a.completion.ok)

    def papers_by_status(self) -> tuple[tuple[str, tuple[EditionPaper, ...]], ...]:
        """Sections like arXiv's listings: new, updated, seen before, and withdrawn apart (a
        withdrawal is no update; empty sections left out)."""
        sections = tuple((STATUS_SECTIONS[s], group) for s in ("new", "updated", "seen")
                         if (group := tuple(p for p in self.papers
                                            if p.status == s and not p.withdrawn)))
        gone = tuple(p for p in self.papers if p.withdrawn)
        return sections + ((("Withdrawn on arXiv", gone),) if gone else ())

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
