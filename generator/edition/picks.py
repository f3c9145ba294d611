"""The editor's picks: the few papers of an edition a reader should look at first, and why.

Picks are news: only papers new to the digest, or covered before in another version (the pick
says which version replaces which), are picked, so a paper never comes back week after week.
Chosen by triage score where triage ran (the reader's own interests), else by how much the
synthesis leans on each paper (the pages citing it), a paper a checked claim backs first; every
new paper before a revised one (this week's news first: the mail's subject names the top pick),
and never a paper triage scored under half of the best pickable paper's score (a 1/10 is no
pick beside a 7/10).
Each pick's one line on why it matters is a sentence of the synthesis about it whose quote was
found in that very paper (the claim, its quote and verdict go with the pick), so a pick is
checked like any claim; a paper no such sentence backs keeps the triage reason or the brief's
TL;DR, says it is not backed, and has any figure of that line the paper does not state flagged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..archive.values import Brief, Pick
from ..evidence.checks import ClaimCheck
from ..evidence.claims import FIGURE_RE
from ..papers import NumberedPaper, Triage
from .facts import PaperFacts, TextFacts

MAX_PICKS = 3


def editors_picks(papers: Sequence[NumberedPaper], names: Mapping[int, str],
                  briefs: Mapping[int, Brief], citing_pages: Mapping[int, int],
                  triage: Triage | None, facts: PaperFacts | None = None,
                  changes: Mapping[int, str] | None = None,
                  claims: Iterable[ClaimCheck] = ()) -> tuple[Pick, ...]:
    """The edition's picks, most important first (none when nothing marks any paper out).

    `changes`: where given, only these papers may be picked (the new and the updated ones), each
    with what changed ("" for a new paper); None: every paper may (no history to go by).
    `claims`: the edition's checked claims, in page order, for the sentences that back picks."""
    facts = facts or TextFacts(papers)
    backing = backing_claims(claims)
    if changes is not None:
        papers = [p for p in papers if p.number in changes]
    judged = {c.paper.base_id: c for c in triage.candidates} if triage else {}

    def score(item: NumberedPaper) -> int | None:
        candidate = judged.get(item.paper.base_id)
        return candidate.score if candidate else None

    def revised(item: NumberedPaper) -> bool:
        return bool((changes or {}).get(item.number))  # "" for a new paper

    def rank(item: NumberedPaper) -> tuple[bool, int, bool, int, int]:
        scored = score(item)
        return (revised(item), -(scored if scored is not None else -1),
                item.number not in backing, -citing_pages.get(item.number, 0), item.number)

    scores = [s for p in papers if (s := score(p)) is not None]
    floor = max(scores) / 2 if scores else 0.0

    def pickable(item: NumberedPaper) -> bool:
        scored = score(item)
        return citing_pages.get(item.number, 0) > 0 if scored is None else scored >= floor

    chosen = [p for p in sorted(papers, key=rank) if pickable(p)][:MAX_PICKS]
    picks = []
    for item in chosen:
        candidate = judged.get(item.paper.base_id)
        brief = briefs.get(item.number)
        reason = candidate.reason if candidate and candidate.score is not None else ""
        claim = backing.get(item.number)
        if claim is not None:
            why, source = claim.sentence, "synthesis"
        elif reason:
            why, source = reason, "triage"
        elif brief and brief.tldr:
            why, source = brief.tldr, "brief"
        else:
            why, source = "", ""
        unfound = () if claim else tuple(dict.fromkeys(
            m.group(0).strip() for m in FIGURE_RE.finditer(why)
            if not facts.states(item.number, m.group(1), m.group(2).strip())))
        picks.append(Pick(item.number, item.paper.arxiv_id, names[item.number], item.paper.title,
                          why, source, score(item), citing_pages.get(item.number, 0), unfound,
                          (changes or {}).get(item.number, ""), claim, reason))
    return tuple(picks)


def backing_claims(claims: Iterable[ClaimCheck]) -> dict[int, ClaimCheck]:
    """For each paper, the claim that says why it matters: a sentence about it alone whose
    quote was found in that very paper (a sentence citing several papers may state another's
    result), judged to back it where one was, a whole sentence before a table's row, the
    earliest page's first."""
    best: dict[int, ClaimCheck] = {}
    rank = {"backed": 0, "partly": 1, "supported": 2}  # judged to back it first; never one
    # whose quote was judged not to. A table's row ("Paper 3 KV cache in blocks 2.4×") says
    # a result, not why it matters: a sentence of prose is taken before it.

    def order(claim: ClaimCheck) -> tuple[int, bool]:
        return rank[claim.standing], not claim.sentence.rstrip().endswith((".", "!", "?"))

    for claim in claims:
        if claim.standing in rank and claim.papers == (claim.found_in,):
            held = best.get(claim.papers[0])
            if held is None or order(claim) < order(held):
                best[claim.papers[0]] = claim
    return best
