"""The values an edition computes from its answers and keeps in its record: briefs, themes,
picks, citation problems, continuity. Plain frozen data, importing nothing of the edition, so
the record (record.py) and the page model (model.py) can both use them (a claim's check and
verdict are the evidence package's: evidence/checks.py)."""

from __future__ import annotations

from dataclasses import dataclass

from ..evidence.checks import ClaimCheck, Verdict
from ..papers import Withdrawal


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
        """Whether `why` is a claim whose quote was found in this very paper (and, where it
        was judged, not judged to miss the claim)."""
        return self.claim is not None and self.claim.standing in ("backed", "partly",
                                                                   "supported")

    @property
    def unbacked_note(self) -> str:
        """Why it is a pick although no checked sentence about it backs it ("" where one
        does): what it was picked for, and what the line given for it is."""
        if self.backed:
            return ""
        basis = (f"its triage score ({self.score}/10)" if self.score is not None else
                 f"the synthesis citing it on {self.pages} page{'s' if self.pages != 1 else ''}"
                 if self.pages else "being new")
        line = {"triage": "the line given is the triage model's reason, not checked against "
                          "the paper",
                "brief": "the line given is its brief's summary, not checked against the paper",
                "synthesis": "the line given is its sentence in the synthesis"}.get(self.why_from, "")
        return (f"Picked for {basis}; no sentence of the synthesis about it alone is backed by "
                f"a quote from it" + (f" ({line})" if line else "") + ".")

    @property
    def mark(self) -> str:
        """The mark of the sentence behind `why`, as where it was written ("✓ backed")."""
        return self.claim.mark.text if self.claim is not None else ""


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
