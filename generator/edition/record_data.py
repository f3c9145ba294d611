"""The record of an assembled edition (record.py): built from the typed values assemble computed,
with every answer and the facts of the papers' text, never the text itself."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from .. import __version__
from ..archive.record import EditionRecord, RecordPaper, RecordPrompt, Status
from ..archive.record_parts import CitedPaper, PageCitations
from ..archive.values import Continuity, Pick
from ..fetch.withdrawals import withdrawal_notice
from ..kinds import KindRegistry
from ..papers import NumberedPaper
from .facts import Checks, PaperFacts
from .inputs import EditionInputs
from .model import Brief, Citations, SynthesisPage, Theme


def build_record(edition: str, title: str, inputs: EditionInputs, facts: PaperFacts,
                 checks: Checks | None, statuses: Mapping[int, Status], overview: str, *,
                 names: Mapping[int, str], briefs: Mapping[int, Brief], themes: Sequence[Theme],
                 pages: Sequence[SynthesisPage], picks: Sequence[Pick],
                 structured: Mapping[str, tuple[Any, ...]], built_at: str,
                 kinds: KindRegistry, continuity: Continuity | None = None) -> EditionRecord:
    """edition.json: what was fetched and asked, every answer, and what was made of them."""
    numbered = {p.number: p for p in inputs.papers}
    synthesis = inputs.synthesis
    return EditionRecord(
        edition=edition, title=title, built_at=built_at,
        papers=tuple(_paper(p, statuses[p.number], names[p.number]) for p in inputs.papers),
        prompts=tuple(RecordPrompt.of(r, c, kinds.page_stem(r)) for r, c in synthesis.pairs()),
        query=inputs.query, fetched_at=inputs.fetched_at,
        generator=f"research-digest {__version__}", model=synthesis.model,
        server=synthesis.server,
        max_papers=inputs.max_papers, bundle=inputs.bundle,
        synthesis_wall_time_s=synthesis.wall_time_s, overview=overview,
        skipped_seen=inputs.skipped,
        # Which marks and library papers triage was shown stays in the workspace: neither is
        # published.
        triage=replace(inputs.triage, shown=(), seeds=()) if inputs.triage else None,
        names=dict(names),
        briefs=dict(briefs), themes=tuple(themes), picks=tuple(picks),
        citations={page.stem: _citations(page.citations, numbered) for page in pages},
        checks=checks, figures=facts.recorded(), structured=_structured(structured, kinds),
        continuity=continuity)


def _paper(p: NumberedPaper, status: Status, name: str) -> RecordPaper:
    paper = p.paper
    return RecordPaper(
        p.number, paper.arxiv_id, paper.base_id, paper.slug, paper.title,
        status,
        paper.authors, paper.published, paper.categories, paper.abstract, paper.abs_url,
        paper.pdf_url, paper.updated, replace(p.full_text, text=""), p.excerpt_chars, name,
        paper.code, withdrawal_notice(paper))


def _citations(c: Citations, papers: Mapping[int, NumberedPaper]) -> PageCitations:
    return PageCitations(
        tuple(CitedPaper(n, papers[n].paper.arxiv_id, count) for n, count in c.cited.items()),
        c.problems, c.figures)


def _structured(structured: Mapping[str, tuple[Any, ...]], kinds: KindRegistry
                ) -> dict[str, tuple[Any, ...]]:
    """The registered kinds' values that have a record form, each through its kind's codec."""
    recorded = {}
    for kind, values in structured.items():
        to_record = kinds[kind].to_record
        if to_record is not None:
            recorded[kind] = tuple(to_record(v) for v in values)
    return recorded
