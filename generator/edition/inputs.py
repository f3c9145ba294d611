"""What an edition is made from, without the papers' text: from the stages' results (a build,
with its cache) or from the edition's own record (a render with no cache). `assemble` takes
either and makes the same edition: the record holds every input but the text, and the facts
only the text could give (facts.py)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..archive.record import EditionRecord
from ..archive.record_parts import BundleFigures
from ..completions import SynthesisResult
from ..kinds import KindRegistry
from ..papers import Bundle, FetchResult, Lookup, NumberedPaper, Triage
from ..synthesis.continuation import with_continuations
from .facts import PaperFacts, RecordedFacts, TextFacts


@dataclass(frozen=True)
class EditionInputs:
    query: str
    fetched_at: str
    max_papers: int
    skipped: tuple[str, ...]
    triage: Triage | None
    papers: tuple[NumberedPaper, ...]  # their full text left out: it never reaches a page
    bundle: BundleFigures
    synthesis: SynthesisResult  # the requests without their messages, where read from a record
    lookup: Lookup | None = None  # the earlier papers looked up for withdrawals

    @classmethod
    def of_stages(cls, fetch: FetchResult, bundle: Bundle, synthesis: SynthesisResult,
                  bundle_note: str = "", *, kinds: KindRegistry
                  ) -> tuple[EditionInputs, TextFacts]:
        """The inputs of a build, and the facts of its papers' text (to be recorded)."""
        papers = tuple(replace(p, full_text=replace(p.full_text, text=""))
                       for p in bundle.papers)
        # An answer continued past its budget is published whole (its record keeps it so).
        pairs = with_continuations(synthesis.pairs())
        synthesis = replace(synthesis, completions=tuple(c for _, c in pairs))
        return cls(fetch.query, fetch.fetched_at, fetch.max_papers, fetch.skipped, fetch.triage,
                   papers, BundleFigures(bundle.chars, bundle.estimated_tokens, bundle_note),
                   synthesis, fetch.lookup), TextFacts(bundle.papers, kinds)

    @classmethod
    def of_record(cls, record: EditionRecord) -> tuple[EditionInputs, PaperFacts]:
        """The inputs as the edition's record kept them, and the facts it wrote down."""
        papers = tuple(NumberedPaper(p.number, p.paper, p.full_text, p.excerpt_chars)
                       for p in record.papers)
        synthesis = SynthesisResult(
            record.model, tuple(p.request for p in record.prompts),
            tuple(p.completion for p in record.prompts), record.bundle.chars,
            record.bundle.estimated_tokens, record.synthesis_wall_time_s, record.server)
        known = record.continuity
        lookup = Lookup(known.looked_up, known.withdrawn, known.lookup_error) if known else None
        return cls(record.query, record.fetched_at, record.max_papers, record.skipped_seen,
                   record.triage, papers, record.bundle, synthesis, lookup), RecordedFacts(record)
