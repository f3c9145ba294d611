"""What a checked claim is and how it stands: one verdict per cited sentence, decided here.

A claim is a sentence that cites papers of the bundle. Each paper it cites must back it: the
model is asked for a quote from each, and each quote is looked up in that paper's text
(quotes.py) into a `Verdict`; a claim whose every quote was found is judged a second time, from
the sentence and its quotes alone (judge.py), into a `Judgement`. `decide` turns those into the
one `Standing` a reader is told, which the edition keeps in its record (`ClaimCheck.decided`),
and every surface (pages, summaries, picks, run report, feed, mail, terminal, `--json`) shows
that standing with the words and marks of `MARKS`, and counts claims with `EvidenceFigure`
alone. Plain frozen data, importing nothing of the edition.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal


@dataclass(frozen=True)
class FigureCheck:
    paper: int
    figure: str
    found: bool
    sentence: str


# What the mechanical check found of one cited paper's quote.
Verdict = Literal["supported", "figure_missing", "wrong_paper", "not_in_paper", "no_quote",
                  "not_checked"]
VERDICT_LABELS: dict[str, str] = {
    "supported": "quote found in the paper",
    "figure_missing": "quote found, but a figure of the sentence is not in the paper",
    "wrong_paper": "quote found in another paper (wrong citation)",
    "not_in_paper": "quote not in the paper (fabricated)",
    "no_quote": "no quote",
    "not_checked": "not checked",
}
VERDICT_SHORT: dict[str, str] = {
    "supported": "Quote found", "figure_missing": "Figure missing", "wrong_paper": "Wrong paper",
    "not_in_paper": "Not in paper", "no_quote": "No quote", "not_checked": "Not checked",
}
# The worst first: a claim citing several papers takes the worst of their verdicts.
_VERDICT_ORDER: tuple[Verdict, ...] = ("not_in_paper", "wrong_paper", "figure_missing",
                                       "no_quote", "not_checked", "supported")


# The second judgement of a claim whose quotes were found: do they support it?
# "failed": asked, but no verdict came back (a failed request, an answer that did not parse, a
# claim it left out); the claim stays "quote found", never "backed".
Support = Literal["supports", "partly", "does_not", "failed"]


@dataclass(frozen=True)
class Judgement:
    """Whether the quotes found in the papers support their claim, judged from them alone."""

    support: Support
    reason: str = ""


@dataclass(frozen=True)
class PaperQuote:
    """The quote given for one of the papers a claim cites, and what its check found."""

    paper: int
    verdict: Verdict
    quote: str
    found_in: int | None
    note: str = ""


# What a reader is told of a claim. "supported": its quotes were found, not judged.
Standing = Literal["backed", "partly", "unbacked", "supported", "figure_missing", "wrong_paper",
                   "not_in_paper", "phantom", "no_quote", "not_checked"]
StandingGroup = Literal["backed", "partly", "unbacked", "found", "problem", "unchecked"]


@dataclass(frozen=True)
class Mark:
    """How every surface shows a standing: the sign and word after the sentence, the group
    it is counted in, a heading-sized word and the sentence that says what it means."""

    sign: str
    word: str
    group: StandingGroup
    short: str
    label: str
    code: str  # its name where scripts read it (`digest ask --json`)

    @property
    def text(self) -> str:
        return f"{self.sign} {self.word}"


MARKS: dict[Standing, Mark] = {
    "backed": Mark("✓", "backed", "backed", "Backed",
                   "quote found in the paper and judged to support the sentence", "backed"),
    "partly": Mark("◐", "partly", "partly", "Partly",
                   "quote found in the paper and judged to support part of the sentence",
                   "partly"),
    "unbacked": Mark("✗", "not supported", "unbacked", "Not supported",
                     "quote found in the paper, but judged not to support the sentence",
                     "not_supported"),
    "supported": Mark("○", "quote found, not judged", "found", "Quote found",
                      "quote found in the paper (whether it supports the sentence was not "
                      "judged)", "quote_found"),
    "figure_missing": Mark("⚠", "figure not in paper", "problem", "Figure missing",
                           VERDICT_LABELS["figure_missing"], "figure_missing"),
    "wrong_paper": Mark("⚠", "wrong paper", "problem", "Wrong paper",
                        VERDICT_LABELS["wrong_paper"], "wrong_paper"),
    "not_in_paper": Mark("⚠", "quote not in paper", "problem", "Not in paper",
                         VERDICT_LABELS["not_in_paper"], "not_in_paper"),
    "phantom": Mark("⚠", "cites a paper not in the bundle", "problem", "Phantom citation",
                    "cites a paper that is not in the bundle the answer was written from",
                    "phantom_citation"),
    "no_quote": Mark("⚠", "no quote found", "problem", "No quote",
                     "no passage of the cited paper was given for it", "no_quote"),
    "not_checked": Mark("–", "not checked", "unchecked", "Not checked",
                        "not checked (the check failed or did not fit)", "not_checked"),
}
# Beside the first mark of a page: what the marks mean, in one line.
KEY = ("✓ backed · ◐ partly · ✗ not supported · ○ quote found, not judged · ⚠ problem · "
       "– not checked")
# Kept for the record's older readers and the templates that name them.
STANDING_MARKS: dict[str, str] = {k: m.text for k, m in MARKS.items()}
STANDING_LABELS: dict[str, str] = {k: m.label for k, m in MARKS.items()}
STANDING_SHORT: dict[str, str] = {k: m.short for k, m in MARKS.items()}

_JUDGED: dict[str, Standing] = {"supports": "backed", "partly": "partly", "does_not": "unbacked"}


def worst(verdicts: Iterable[Verdict]) -> Verdict:
    """A claim's verdict from its papers': every quote found, or the worst of what was not."""
    seen = set(verdicts)
    return next((v for v in _VERDICT_ORDER if v in seen), "not_checked")


@dataclass(frozen=True)
class ClaimCheck:
    """One citing sentence of an answer and what its quoted evidence showed."""

    sentence: str
    papers: tuple[int, ...]  # the bundle's papers it cites
    verdict: Verdict  # the worst of its papers' (each must be found)
    quote: str  # the first paper's quote, as given (cut for show)
    found_in: int | None  # the paper whose text holds that quote
    note: str
    id: str = ""  # stable: the answer's request name and the claim's number ("research-map#3")
    # The second judgement of its found quotes (None: not judged; an older record, or off).
    judgement: Judgement | None = None
    # A claim citing several papers: each one's quote and verdict (the fields above hold the
    # first's quote and the worst verdict); () for a claim citing one paper.
    parts: tuple[PaperQuote, ...] = ()
    # Paper numbers it cites that the bundle does not have: never backed.
    phantoms: tuple[int, ...] = ()
    # The standing as decided when the edition (or question) was made, kept in its record;
    # None in a record written before it was kept, which `decide` reads the same way.
    decided: Standing | None = None

    @property
    def standing(self) -> Standing:
        """What a reader is told of it: as its record keeps it."""
        return self.decided or decide(self)

    @property
    def mark(self) -> Mark:
        return MARKS[self.standing]

    @property
    def label(self) -> str:
        return self.mark.label

    @property
    def backed(self) -> bool:
        """Whether a second judgement said its found quotes support it."""
        return self.standing == "backed"

    @property
    def mark_text(self) -> str:
        """The mark in words, as every surface shows it: a sentence citing several papers
        says what was found per paper ("⚠ quoted for 2 of 5", "⚠ wrong paper · quoted for 2
        of 5") where some of its quotes were found, never a bare "no quote found"."""
        mark = self.mark
        parts = self.quotes
        found = sum(1 for p in parts if p.verdict == "supported")
        if len(parts) < 2 or not found or mark.group not in ("problem", "unchecked") \
                or self.phantoms:
            return mark.text
        if self.standing == "no_quote":
            return f"{mark.sign} quoted for {found} of {len(parts)}"
        return f"{mark.text} · quoted for {found} of {len(parts)}"

    def standing_for(self, paper: int) -> Standing:
        """What the check found of one cited paper's part (a paper's own page shows its part,
        not the sentence's worst): its quote's verdict, or the sentence's standing where that
        quote was found and every other was too (then the judgement speaks for all)."""
        part = next((p for p in self.parts if p.paper == paper), None)
        if part is None or self.phantoms:
            return self.standing
        if part.verdict != "supported":
            return part.verdict
        return self.standing if self.verdict == "supported" else "supported"

    def for_paper(self, paper: int) -> ClaimCheck:
        """The claim as one cited paper's page tells it: that paper's part decided."""
        return replace(self, decided=self.standing_for(paper))

    @property
    def quotes(self) -> tuple[PaperQuote, ...]:
        """Every cited paper's quote and verdict, in the order it cites them."""
        if self.parts:
            return self.parts
        return (PaperQuote(self.papers[0] if self.papers else 0, self.verdict, self.quote,
                           self.found_in, self.note),)


def decide(check: ClaimCheck) -> Standing:
    """The one standing of a claim: a phantom citation is never backed; a claim whose cited
    papers' quotes were all found is what its judgement says (or "quote found" where it was
    not judged); otherwise the worst of its papers' verdicts."""
    if check.phantoms:
        return "phantom"
    if check.verdict == "supported" and check.judgement is not None:
        return _JUDGED.get(check.judgement.support, "supported")
    return check.verdict


def decided(checks: Iterable[ClaimCheck]) -> tuple[ClaimCheck, ...]:
    """`checks` with their standing decided, as a record keeps them."""
    return tuple(c if c.decided else replace(c, decided=decide(c)) for c in checks)


def verdict_counts(claims: Iterable[ClaimCheck]) -> dict[str, int]:
    counts = dict.fromkeys(VERDICT_LABELS, 0)
    for claim in claims:
        counts[claim.verdict] += 1
    return counts


@dataclass(frozen=True)
class EvidenceFigure:
    """The one count of a set of checked claims (an edition's, a page's, a question's, a
    paper's), from their standings: every "N of M" any surface shows is read from here."""

    claims: int  # claims checked
    backed: int
    partly: int
    unbacked: int  # quotes found, judged not to support the claim
    unjudged: int  # quotes found, not judged (a judgement failed, or judging is off)
    problems: int  # a wrong paper, a quote not in the paper, a missing figure, no quote, a phantom
    unchecked: int  # the check failed or did not fit
    failed: int  # of the unjudged, those whose judgement was asked for and came back empty
    # Every standing with its count (zeros left out), in MARKS' order.
    by_standing: tuple[tuple[Standing, int], ...] = ()
    # Why claims were not checked, with how many each, the most frequent first.
    unchecked_notes: tuple[tuple[str, int], ...] = ()

    @classmethod
    def of(cls, claims: Iterable[ClaimCheck]) -> EvidenceFigure:
        every = list(claims)
        groups = [c.mark.group for c in every]
        standings = [c.standing for c in every]
        notes: dict[str, int] = {}
        for check in every:
            if check.standing == "not_checked":
                notes[check.note or "not checked"] = notes.get(check.note or "not checked", 0) + 1
        return cls(len(every), groups.count("backed"), groups.count("partly"),
                   groups.count("unbacked"), groups.count("found"), groups.count("problem"),
                   groups.count("unchecked"),
                   sum(1 for c in every if c.mark.group == "found" and c.judgement is not None
                       and c.judgement.support == "failed"),
                   tuple((s, standings.count(s)) for s in MARKS if s in standings),
                   tuple(sorted(notes.items(), key=lambda item: -item[1])))

    def count(self, standing: Standing) -> int:
        return dict(self.by_standing).get(standing, 0)

    def not_backed(self, short: bool = False) -> str:
        """The claims that are neither backed nor found unjudged, counted in words ("" when
        there are none): "1 quote found in another paper (wrong citation), 2 no quote"; with
        `short`, in a table's few words ("1 wrong paper, 2 no quote")."""
        return ", ".join(f"{n} {MARKS[s].short.lower() if short else MARKS[s].label}"
                         for s, n in self.by_standing if MARKS[s].group not in
                         ("backed", "partly", "found"))

    @property
    def found(self) -> int:
        """Claims whose every quote was found in its paper (judged or not)."""
        return self.backed + self.partly + self.unbacked + self.unjudged

    @property
    def judged(self) -> int:
        return self.backed + self.partly + self.unbacked

    @property
    def short(self) -> str:
        """The one form of the figure on every surface: "3 backed · 2 found, not judged · 1
        with a problem" (a claim partly backed, not supported or not checked named where there
        is one), so no page counts in one unit and the next in another."""
        if not self.claims:
            return "no cited claim"
        parts = [f"{self.backed} backed",
                 f"{self.partly} partly" if self.partly else "",
                 f"{self.unbacked} not supported" if self.unbacked else "",
                 f"{self.unjudged} found, not judged",
                 f"{self.problems} with a problem",
                 f"{self.unchecked} not checked" if self.unchecked else ""]
        return " · ".join(filter(None, parts))

    @property
    def sentence(self) -> str:
        """"Of 8 cited claims: 3 backed · 2 found, not judged · 1 with a problem." The same
        figure as `short`, with what it counts."""
        if not self.claims:
            return "No sentence cites a paper, so there was nothing to check."
        return (f"Of {self.claims} cited claim{'s' if self.claims != 1 else ''}: "
                f"{self.short}.")
