"""What a checked claim is and how it stands: one verdict per cited sentence, decided here.

A claim's quote is checked mechanically (quotes.py) into a `Verdict`, and a quote found in the
paper is judged a second time (judge.py) into a `Judgement`; `ClaimCheck.standing` is the one
word a reader is told of it, and every count of an edition, a page or a question is a function
of those standings (`standing_counts`, `EvidenceFigure`). Plain frozen data, importing nothing
of the edition, so the record, the page model and every surface share it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal


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


# The second judgement of a claim whose quote was found: does the quote support it?
# "failed": asked, but no verdict came back (a failed request, an answer that did not parse, a
# claim it left out); the claim stays "quote found", never "backed".
Support = Literal["supports", "partly", "does_not", "failed"]


@dataclass(frozen=True)
class Judgement:
    """Whether a quote found in the paper supports its claim, judged from the two alone."""

    support: Support
    reason: str = ""


# What a reader is told of a claim: its verdict, refined by the judgement where its quote was
# found and judged ("supported" alone: the quote was found, no verdict on what it shows).
Standing = Literal["backed", "partly", "supported", "unbacked", "figure_missing", "wrong_paper",
                   "not_in_paper", "no_quote", "not_checked"]
STANDING_LABELS: dict[str, str] = {
    "backed": "quote found in the paper and judged to support the sentence",
    "partly": "quote found in the paper and judged to support part of the sentence",
    "supported": "quote found in the paper (whether it supports the sentence was not judged)",
    "unbacked": "quote found in the paper, but judged not to support the sentence",
    **{k: v for k, v in VERDICT_LABELS.items() if k != "supported"},
}
STANDING_SHORT: dict[str, str] = {
    "backed": "Supported", "partly": "Partly", "supported": "Quote found",
    "unbacked": "Does not support",
    **{k: v for k, v in VERDICT_SHORT.items() if k != "supported"},
}


# The mark after a sentence, the same words on every one (a mark is read where it stands, and
# a success weighs as much as a failure); none for a sentence with no quote or not checked.
STANDING_MARKS: dict[str, str] = {
    "backed": "✓ backed", "partly": "◐ partly", "unbacked": "✗ does not support",
    "supported": "○ quote found", "figure_missing": "? figure not in paper",
    "wrong_paper": "⚠ wrong paper", "not_in_paper": "⚠ quote not in paper",
}


_JUDGED: dict[str, Standing] = {"supports": "backed", "partly": "partly", "does_not": "unbacked"}


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
    # The second judgement of a found quote (None: not judged; an older record, or judging off).
    judgement: Judgement | None = None

    @property
    def label(self) -> str:
        return STANDING_LABELS[self.standing]

    @property
    def standing(self) -> Standing:
        """The verdict as a reader is told it: a found quote is "backed" only when judged to
        support the sentence; one not judged, or whose judgement failed, is "quote found"."""
        if self.verdict == "supported" and self.judgement is not None:
            return _JUDGED.get(self.judgement.support, "supported")
        return self.verdict

    @property
    def backed(self) -> bool:
        """Whether a second judgement said its found quote supports it."""
        return self.standing == "backed"


def verdict_counts(claims: Iterable[ClaimCheck]) -> dict[str, int]:
    counts = dict.fromkeys(VERDICT_LABELS, 0)
    for claim in claims:
        counts[claim.verdict] += 1
    return counts


def standing_counts(claims: Iterable[ClaimCheck]) -> dict[str, int]:
    """Claims by standing, every standing listed (in STANDING_LABELS' order)."""
    counts = dict.fromkeys(STANDING_LABELS, 0)
    for claim in claims:
        counts[claim.standing] += 1
    return counts


@dataclass(frozen=True)
class EvidenceFigure:
    """What an edition's checks found, counted for its home page, feed and mail."""

    claims: int  # claims checked
    found: int  # of them, with their quote found in the paper
    backed: int  # of those, judged to support the claim
    partly: int
    unbacked: int  # judged not to support it
    judged: int  # found quotes with a verdict (a failed judgement has none)
    failed: int  # judgements asked for that came back with no verdict

    @classmethod
    def of(cls, claims: Iterable[ClaimCheck]) -> EvidenceFigure:
        every = list(claims)
        counts = standing_counts(every)
        judged = counts["backed"] + counts["partly"] + counts["unbacked"]
        failed = sum(1 for c in every if c.judgement and c.judgement.support == "failed")
        return cls(sum(counts.values()), judged + counts["supported"], counts["backed"],
                   counts["partly"], counts["unbacked"], judged, failed)

    @property
    def sentence(self) -> str:
        """"7 of 12 cited claims judged supported by their quote (2 partly, 1 not; 2 with a
        quote found, not judged)." An edition whose quotes were not judged says what was
        found, as it always did: "9 of 12 cited claims have their quote found in the paper."."""
        if not self.judged:
            return (f"{self.found} of {self.claims} cited claims have their quote found in the "
                    "paper.")
        said = [f"{self.partly} partly" if self.partly else "",
                f"{self.unbacked} not" if self.unbacked else ""]
        rest = self.found - self.judged
        extra = "; ".join(filter(None, (", ".join(filter(None, said)),
                                        f"{rest} with a quote found, not judged" if rest else "")))
        return (f"{self.backed} of {self.claims} cited claims judged supported by their quote"
                + (f" ({extra})" if extra else "") + ".")
