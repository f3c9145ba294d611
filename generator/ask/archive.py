"""What the archive holds of the papers a question found, and the bundle an answer reads.

A paper seen in several editions is one paper here: its newest version, every edition that
covered it, the newest brief, the checked claims of every edition that cite it (only those whose
quote was found), its picks and follow-ups, and whether arXiv lists it as withdrawn now. The
bundle numbers them Paper 1..N like an edition's, so the same prompts, evidence checks and
citation links work on it; the text a quote is checked against is what the bundle shows of each
paper: its abstract, the digest's notes and its cached full text, where the cache has it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..archive.names import name_citations
from ..archive.record import EditionRecord, RecordPaper
from ..papers import Bundle, FullText, NumberedPaper, Withdrawal
from ..synthesis.bundle import fair_excerpt_cap
from ..text.safe_text import MAX_AUTHOR_CHARS, MAX_TITLE_CHARS, cut
from .index import Hit

log = logging.getLogger(__name__)

MAX_CLAIMS = 6  # checked claims shown per paper, newest edition first
MAX_CLAIM_CHARS = 400


@dataclass(frozen=True)
class Seen:
    """One edition that covered the paper, and the version it covered."""

    edition: str
    arxiv_id: str
    status: str
    picked: bool = False


@dataclass(frozen=True)
class ArchivePaper:
    """One paper as the whole archive knows it."""

    base_id: str
    paper: RecordPaper  # its newest version in the archive
    seen: tuple[Seen, ...]  # newest edition first
    name: str
    notes: str  # the digest's brief, checked claims, picks and follow-ups, as the bundle says
    withdrawn: str = ""  # arXiv's notice, where it lists the paper as withdrawn now
    excerpt: str = ""  # the cached full text ("" where the cache has none)

    @property
    def editions(self) -> tuple[str, ...]:
        return tuple(s.edition for s in self.seen)


def gather(hits: Sequence[Hit], records: Mapping[str, EditionRecord],
           withdrawn: Mapping[str, Withdrawal], full_text: Callable[[str, str], str]
           ) -> list[ArchivePaper]:
    """The hits as papers, in the hits' order: `records` holds (at least) every edition that
    covered one of them, by name; `full_text(edition, arxiv_id)` the cached text, or ""."""
    newest_first = sorted(records.values(), key=lambda r: r.edition, reverse=True)
    papers = []
    for hit in hits:
        covered = [(r, p) for r in newest_first for p in r.papers if p.base_id == hit.base_id]
        if not covered:
            log.warning("the index names %s, which no record holds now: left out", hit.base_id)
            continue
        record, newest = covered[0]
        gone = withdrawn.get(hit.base_id)
        seen = tuple(Seen(r.edition, p.arxiv_id, p.status,
                          any(pick.number == p.number for pick in r.picks)) for r, p in covered)
        text = next((t for r, p in covered if (t := full_text(r.edition, p.arxiv_id))), "")
        papers.append(ArchivePaper(hit.base_id, newest, seen, newest.name or newest.title,
                                   _notes(covered), gone.notice if gone else "", text))
    return papers


def _notes(covered: Sequence[tuple[EditionRecord, RecordPaper]]) -> str:
    """What the digest wrote of a paper, newest edition first: a brief, checked claims (each
    with the quote found in the paper), why it was picked, what followed it up."""
    lines: list[str] = []
    brief = next(((r, r.briefs[p.number]) for r, p in covered if p.number in r.briefs), None)
    if brief is not None:
        record, b = brief
        lines.append(f"Brief (edition {record.edition}):")
        lines += [f"- {label}: {text}" for label, text in (
            ("TL;DR", b.tldr), ("Problem", b.problem), ("Method", b.method),
            ("Result", b.result), ("Limitations", b.limitations)) if text]
    claims = []
    for record, paper in covered:
        for checks in (record.checks or {}).values():
            for check in checks:
                if paper.number in check.papers and check.verdict == "supported":
                    sentence = cut(name_citations(check.sentence, record.names), MAX_CLAIM_CHARS)
                    claims.append(f"- ({record.edition}) {sentence} Quote: “{check.quote}”")
    if claims:
        lines.append("Checked claims of the digest about it:")
        lines += list(dict.fromkeys(claims))[:MAX_CLAIMS]
    for record, paper in covered:
        for pick in record.picks:
            if pick.number == paper.number and pick.why:
                lines.append(f"Picked in edition {record.edition}: "
                             f"{name_citations(pick.why, record.names)}")
        since = record.continuity
        for f in since.followups if since else ():
            if f.number == paper.number:
                lines.append(f"It follows up {f.title} (covered in edition {f.edition}).")
    return "\n".join(lines)


def ask_bundle(papers: Sequence[ArchivePaper], excerpt_cap: int | None) -> Bundle:
    """Papers 1..N in relevance order, each as an edition's bundle shows a paper (title,
    metadata, abstract) with what the digest wrote of it and an excerpt of its cached text.

    Each paper's `full_text` holds exactly what the bundle shows beyond its abstract, so a
    quote is checked against what the model was given, nothing else."""
    numbered, blocks = [], [
        f"# Archive bundle\n\n{len(papers)} papers from earlier editions of this digest, the "
        "most relevant to the reader's question first. Cite them as Paper 1 ... "
        f"Paper {len(papers)}."]
    for number, item in enumerate(papers, start=1):
        paper = item.paper
        excerpt = item.excerpt[:excerpt_cap] if excerpt_cap is not None else item.excerpt
        shown = item.notes + (f"\n\nFull-text excerpt:\n{excerpt}" if excerpt else "")
        numbered.append(NumberedPaper(number, paper.paper, FullText("ok", shown), len(shown)))
        editions = ", ".join(f"{s.edition} ({s.arxiv_id}{', picked' if s.picked else ''})"
                             for s in item.seen)
        lines = [f"## Paper {number}: {cut(paper.title, MAX_TITLE_CHARS)}", "",
                 f"- arXiv id: {paper.arxiv_id}",
                 f"- Authors: {cut(paper.paper.short_authors(), 5 * MAX_AUTHOR_CHARS)}",
                 f"- Submitted: {paper.published}",
                 f"- Covered in editions: {editions}"]
        if item.withdrawn:
            lines.append(f"- WITHDRAWN on arXiv since: {item.withdrawn}")
        lines += ["", "### Abstract", "", paper.abstract]
        if item.notes:
            lines += ["", "### What the digest found", "", item.notes]
        if excerpt:
            lines += ["", f"### Full-text excerpt ({len(excerpt)} characters)", "", excerpt]
        blocks.append("\n".join(lines))
    return Bundle(tuple(numbered), "\n\n".join(blocks) + "\n")


def fitted_bundle(papers: Sequence[ArchivePaper], excerpt_chars: int, budget_chars: int | None
                  ) -> Bundle:
    """The bundle with each excerpt at most `excerpt_chars`, cut further (fairly, short ones
    whole) where the model's context leaves `budget_chars` for the whole bundle; where even no
    excerpt at all is too long, the excerpts go and the server's refusal says the rest."""
    cap = excerpt_chars
    if budget_chars is not None:
        bare = ask_bundle(papers, 0).chars
        lengths = [min(len(p.excerpt), excerpt_chars) for p in papers]
        fair = fair_excerpt_cap(lengths, budget_chars - bare)
        if fair is not None:
            cap = min(cap, fair)
    return ask_bundle(papers, cap)
