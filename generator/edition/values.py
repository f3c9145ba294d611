"""The values an edition computes from its answers and keeps in its record: briefs, themes,
claim checks, citation problems. Plain frozen data, importing nothing of the edition, so the
record (record.py) and the page model (model.py) can both use them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from ..models import Withdrawal


@dataclass(frozen=True)
class Brief:
    tldr: str
    problem: str
    method: str
    result: str
    limitations: str
    name: str = ""  # the short name the paper uses for its system or method, if it gave one


@dataclass(frozen=True)
class Theme:
    name: str
    description: str
    papers: tuple[int, ...]


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
    "supported": "Quote found", "figure_missing": "Figure missing", "wrong_paper": "Wrong paper",
    "not_in_paper": "Not in paper", "no_quote": "No quote", "not_checked": "Not checked",
}
VERDICT_LABELS: dict[str, str] = {
    "supported": "quote found in the paper",
    "figure_missing": "quote found, but a figure of the sentence is not in the paper",
    "wrong_paper": "quote found in another paper (wrong citation)",
    "not_in_paper": "quote not in the paper (fabricated)",
    "no_quote": "no quote",
    "not_checked": "not checked",
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
    id: str = ""  # stable: the answer's request name and the claim's number ("research-map#3")

    @property
    def label(self) -> str:
        return VERDICT_LABELS[self.verdict]


def verdict_counts(claims: Iterable[ClaimCheck]) -> dict[str, int]:
    counts = dict.fromkeys(VERDICT_LABELS, 0)
    for claim in claims:
        counts[claim.verdict] += 1
    return counts


@dataclass(frozen=True)
class Pick:
    number: int
    arxiv_id: str
    name: str
    title: str
    # Why it matters, one line citing papers as "Paper N": the synthesis sentence about it that
    # a quote found in the paper backs (`claim`), else the triage reason or the brief's TL;DR.
    why: str
    why_from: str  # "synthesis" (a checked claim), "triage" (the reason it scored) or "brief"
    score: int | None  # triage score, where triage ran
    pages: int  # synthesis pages that cite it
    unfound: tuple[str, ...]  # figures in `why` that the paper's text does not contain
    # What changed, for a paper covered before in another version ("" for a new paper).
    change: str = ""
    claim: ClaimCheck | None = None  # the checked sentence behind `why`, with its quote
    reason: str = ""  # the triage model's reason for its score, where triage ran

    @property
    def backed(self) -> bool:
        """Whether `why` is a claim a quote found in this very paper supports."""
        return self.claim is not None and self.claim.verdict == "supported"


@dataclass(frozen=True)
class FollowUp:
    """A paper of this edition that names one covered in an earlier edition."""

    number: int  # this edition's paper
    earlier: str  # the earlier paper's base id
    title: str  # its title
    name: str  # the name the digest called it by
    edition: str  # the edition that last covered it
    quote: str  # the sentence of this edition's paper that names it
    by: str  # how it names it: "arXiv id", "title" or "name"


@dataclass(frozen=True)
class Revision:
    """A paper covered before that is here in a new version: its abstract, word by word."""

    number: int
    before: str  # the version covered before
    edition: str  # the edition that covered it
    diff: tuple[tuple[str, str], ...]  # runs of words: ("=", kept), ("-", gone), ("+", new)

    @property
    def changed(self) -> bool:
        return any(op != "=" for op, _ in self.diff)


@dataclass(frozen=True)
class Disagreement:
    """A new paper's result set against a claim of the previous edition, each with its quote."""

    number: int  # this edition's paper
    sentence: str  # the line of the comparison that says so
    quote: str  # the new paper's quote behind it ("" where none was found in the paper)
    verdict: Verdict
    claim: str  # the earlier claim's id ("research-map#3")
    earlier_sentence: str
    earlier_quote: str
    earlier_edition: str


@dataclass(frozen=True)
class Continuity:
    """What an edition says about the ones before it ("Since last edition")."""

    previous: str = ""  # the edition it is compared with ("": the first edition)
    followups: tuple[FollowUp, ...] = ()
    revised: tuple[Revision, ...] = ()
    withdrawn: tuple[Withdrawal, ...] = ()  # papers of the last editions, withdrawn since
    looked_up: tuple[str, ...] = ()  # the base ids looked up on arXiv for withdrawals
    lookup_error: str = ""  # why the lookup is incomplete
    themes_new: tuple[str, ...] = ()
    themes_continuing: tuple[str, ...] = ()
    themes_quiet: tuple[str, ...] = ()  # in the previous edition, not in this one
    disagreements: tuple[Disagreement, ...] = ()
