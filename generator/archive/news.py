"""An edition's news, counted once: its new papers (and how many of them follow up an earlier
edition's), the revised ones and the withdrawn ones.

The home page, the edition's overview, the feed, the mail and the terminal all print
`News.line` of the record, so that no surface counts them its own way or calls a state by
another word: a paper arXiv lists as withdrawn counts as withdrawn only, never also as new or
revised.
"""

from __future__ import annotations

from dataclasses import dataclass

from .record import EditionRecord


@dataclass(frozen=True)
class News:
    new: int
    followups: int  # of the new papers, those that name an earlier edition's paper
    revised: int  # a new version of a paper an earlier edition covered
    withdrawn: int
    seen: int  # covered before in this very version
    papers: int

    @classmethod
    def of(cls, record: EditionRecord) -> News:
        gone = record.withdrawn_numbers
        new = {p.number for p in record.new_papers}
        follow = {f.number for f in record.continuity.followups} if record.continuity else set()
        return cls(new=len(new), followups=len(follow & new),
                   revised=len(record.updated_papers), withdrawn=len(gone),
                   seen=sum(1 for p in record.papers
                            if p.status == "seen" and p.number not in gone),
                   papers=len(record.papers))

    @property
    def line(self) -> str:
        """"2 new (1 a follow-up) · 1 revised · 1 withdrawn": what changed, zero counts left
        out ("nothing new" where there is none of the three)."""
        parts = []
        if self.new:
            parts.append(f"{self.new} new" + (
                "" if not self.followups else
                " (a follow-up)" if self.new == 1 else
                f" ({self.followups} a follow-up)" if self.followups == 1 else
                f" ({self.followups} follow-ups)"))
        parts += [f"{self.revised} revised"] if self.revised else []
        parts += [f"{self.withdrawn} withdrawn"] if self.withdrawn else []
        return " · ".join(parts) or "nothing new"

    @property
    def sentence(self) -> str:
        """The line with the edition's size, for the feed, the mail and the terminal: "2 new ·
        1 revised, of 4 papers"."""
        return f"{self.line}, of {self.papers} paper{'s' if self.papers != 1 else ''}"
