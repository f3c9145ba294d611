"""The editor's picks: the few papers of an edition a reader should look at first, and why.

Picks are news: only papers new to the digest, or covered before in another version (the pick
says which version replaces which), are picked, so a paper never comes back week after week.
Chosen by triage score where triage ran (the reader's own interests), else by how much the
synthesis leans on each paper (the pages citing it); each with one line on why it matters, from
the model's structured output (the triage reason, else the brief's TL;DR), and checked like
any claim: a figure in that line that the paper's text does not contain is flagged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..claims import FIGURE_RE
from ..models import NumberedPaper, Triage
from .facts import PaperFacts, TextFacts
from .values import Brief, Pick

MAX_PICKS = 3


def editors_picks(papers: Sequence[NumberedPaper], names: Mapping[int, str],
                  briefs: Mapping[int, Brief], citing_pages: Mapping[int, int],
                  triage: Triage | None, facts: PaperFacts | None = None,
                  changes: Mapping[int, str] | None = None) -> tuple[Pick, ...]:
    """The edition's picks, most important first (none when nothing marks any paper out).

    `changes`: where given, only these papers may be picked (the new and the updated ones), each
    with what changed ("" for a new paper); None: every paper may (no history to go by)."""
    facts = facts or TextFacts(papers)
    if changes is not None:
        papers = [p for p in papers if p.number in changes]
    judged = {c.paper.base_id: c for c in triage.candidates} if triage else {}

    def score(item: NumberedPaper) -> int | None:
        candidate = judged.get(item.paper.base_id)
        return candidate.score if candidate else None

    def rank(item: NumberedPaper) -> tuple[int, int, int]:
        scored = score(item)
        return (-(scored if scored is not None else -1), -citing_pages.get(item.number, 0),
                item.number)

    chosen = [p for p in sorted(papers, key=rank)
              if score(p) is not None or citing_pages.get(p.number, 0)][:MAX_PICKS]
    picks = []
    for item in chosen:
        candidate = judged.get(item.paper.base_id)
        brief = briefs.get(item.number)
        if candidate and candidate.reason and candidate.score is not None:
            why, source = candidate.reason, "triage"
        elif brief and brief.tldr:
            why, source = brief.tldr, "brief"
        else:
            why, source = "", ""
        unfound = tuple(dict.fromkeys(
            m.group(0).strip() for m in FIGURE_RE.finditer(why)
            if not facts.states(item.number, m.group(1), m.group(2).strip())))
        picks.append(Pick(item.number, item.paper.arxiv_id, names[item.number], item.paper.title,
                          why, source, score(item), citing_pages.get(item.number, 0), unfound,
                          (changes or {}).get(item.number, "")))
    return tuple(picks)
