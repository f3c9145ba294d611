"""edition.json: an assembled edition as the record later editions, the navigation, the feed
and `render --all` read back (see record.py), and how to tell a record that changed only its
date."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .. import __version__
from ..chat_models import SynthesisResult
from ..kinds import KINDS, page_stem
from ..models import Bundle, FetchResult, NumberedPaper, Triage
from ..safe_text import clean_data
from .model import Brief, Citations, SynthesisPage, Theme, verdict_counts
from .picks import Pick
from .record import RECORD_FORMAT


def same_but_date(old: dict[str, Any], new: dict[str, Any]) -> bool:
    def canonical(data: dict[str, Any]) -> str:
        return json.dumps(clean_data({k: v for k, v in data.items()
                                      if k not in ("built_at", "feed")}),
                          sort_keys=True, ensure_ascii=False)

    return canonical(old) == canonical(new)


def record_data(edition: str, title: str, fetch: FetchResult, bundle: Bundle,
            synthesis: SynthesisResult, statuses: Mapping[int, str], bundle_note: str,
            overview: str, briefs: dict[int, Brief], themes: list[Theme],
            pages: list[tuple[SynthesisPage, dict[int, list[str]]]], built_at: str, *,
            structured: Mapping[str, tuple[Any, ...]], names: Mapping[int, str],
            picks: Sequence[Pick]) -> dict[str, Any]:
    """edition.json: what was fetched and asked, with figures, and never any full text."""
    numbered = {p.number: p for p in bundle.papers}
    return {
        "format": RECORD_FORMAT,
        "edition": edition,
        "title": title,
        "query": fetch.query,
        "fetched_at": fetch.fetched_at,
        "built_at": built_at,
        "generator": f"research-digest {__version__}",
        "model": synthesis.model,
        "bundle": {"chars": bundle.chars, "estimated_tokens": bundle.estimated_tokens,
                   "note": bundle_note},
        "synthesis_wall_time_s": synthesis.wall_time_s,
        "papers": [_record_paper(p, statuses[p.number]) for p in bundle.papers],
        "completions": [
            {
                "name": r.name,
                "title": r.title,
                "kind": r.kind,
                "page": f"{stem}.md" if (stem := page_stem(r)) else None,
                "page_title": r.page_title or r.title,
                "thinking": r.thinking,
                "max_tokens": r.max_tokens,
                "temperature": r.temperature,
                "model": c.model,
                "usage": c.usage.to_dict(),
                "latency_s": c.latency_s,
                "ttft_s": c.ttft_s,
                "finish_reason": c.finish_reason,
                "truncated": c.truncated,
                "error": c.error,
                "from_cache": c.from_cache,
            }
            for r, c in synthesis.pairs()
        ],
        "overview": overview,
        "skipped_seen": list(fetch.skipped),
        "briefs": {str(n): vars(b) for n, b in briefs.items()},
        "themes": [{"name": t.name, "description": t.description, "papers": list(t.papers)}
                   for t in themes],
        "citations": {page.stem: _citation_record(page.citations, numbered)
                      for page, _ in pages},
    } | _evidence_record([page for page, _ in pages]) | _triage_record(fetch.triage) | (
        _structured_record(structured)) | {
        "names": {str(n): name for n, name in names.items()},
        "picks": [pick.to_record() for pick in picks]}


def _triage_record(triage: Triage | None) -> dict[str, Any]:
    """Every candidate of the window with its score, reason and status (only with triage)."""
    if triage is None:
        return {}
    return {"triage": {
        "window": triage.total if triage.total is not None else len(triage.candidates),
        "max_candidates": triage.max_candidates, "capped": triage.capped,
        "incomplete": triage.incomplete, "interests": triage.interests,
        "candidates": [{"arxiv_id": c.paper.arxiv_id, "title": c.paper.title,
                        "abs_url": c.paper.abs_url, "published": c.paper.published,
                        "status": c.status, "score": c.score, "reason": c.reason,
                        "interests": list(c.interests)} for c in triage.candidates]}}


def _evidence_record(pages: list[SynthesisPage]) -> dict[str, Any]:
    """Per page and for the edition: how many cited claims a quote found in the paper supports
    (nothing when no evidence was asked for)."""
    checked = [p for p in pages if p.evidence is not None]
    if not checked:
        return {}

    every = [c for p in checked for c in p.evidence or ()]
    return {"evidence": {
        "claims": len(every),
        "supported": sum(1 for c in every if c.verdict == "supported"),
        "verdicts": verdict_counts(every),
        "pages": {p.stem: {
            "claims": len(p.evidence or ()),
            "supported": p.supported,
            "verdicts": p.verdict_counts(),
            "checks": [{"sentence": c.sentence, "papers": list(c.papers), "verdict": c.verdict,
                        "quote": c.quote, "found_in": c.found_in, "note": c.note}
                       for c in p.evidence or ()],
        } for p in checked},
    }}


def _record_paper(p: NumberedPaper, paper_status: str) -> dict[str, Any]:
    return {
        "number": p.number,
        "arxiv_id": p.paper.arxiv_id,
        "base_id": p.paper.base_id,
        "slug": p.paper.slug,
        "title": p.paper.title,
        "authors": list(p.paper.authors),
        "published": p.paper.published,
        "categories": list(p.paper.categories),
        "abstract": p.paper.abstract,
        "abs_url": p.paper.abs_url,
        "pdf_url": p.paper.pdf_url,
        "full_text": {
            "status": p.full_text.status,
            "reason": p.full_text.reason,
            "pages": p.full_text.pages,
            "total_pages": p.full_text.total_pages,
            "excerpt_chars": p.excerpt_chars,
        },
        "status": paper_status,
    }


def _citation_record(c: Citations, papers: dict[int, NumberedPaper]) -> dict[str, Any]:
    return {
        "resolved": [{"number": n, "arxiv_id": papers[n].paper.arxiv_id, "count": count}
                     for n, count in c.cited.items()],
        "unresolved": [{"text": p.text, "number": p.number, "reason": p.reason}
                       for p in c.problems],
        "figures": [{"paper": f.paper, "figure": f.figure, "found": f.found,
                     "sentence": f.sentence} for f in c.figures],
    }


def _structured_record(structured: Mapping[str, tuple[Any, ...]]) -> dict[str, Any]:
    """The registered kinds' values that have a record form, under "structured"."""
    recorded: dict[str, list[Any]] = {}
    for kind, values in structured.items():
        to_record = KINDS[kind].to_record
        if to_record is not None:
            recorded[kind] = [to_record(v) for v in values]
    return {"structured": recorded} if recorded else {}
