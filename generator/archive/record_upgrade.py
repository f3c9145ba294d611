"""Records of formats 1 and 2 (research-digest 0.1 to 0.3: no answers, untyped) read in the
shape of the current format, marked incomplete: what they held is kept, what they never held
is left empty, and only a render with the cache makes them whole (`record.EditionRecord`).
"""

from __future__ import annotations

from typing import Any

from ..kinds import THINKING
from ..papers import Candidate, Paper
from ..store.codec import to_data

RECORD_FORMAT = 3  # edition.json's format now (record.py), the shape upgrade() writes
_THINKING_TITLE = "Thinking comparison"  # format 1 had no page titles: its thinking page's


def upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """A record of format 1 or 2 (no answers, untyped) in this format's shape, marked
    incomplete: what it held is kept, what it never held is left empty."""
    papers = []
    for p in data["papers"]:
        p = dict(p)
        text = dict(p.pop("full_text", None) or {"status": "missing"})
        p["excerpt_chars"] = text.pop("excerpt_chars", 0)
        p["full_text"] = text
        papers.append(p)
    prompts = []
    for c in data["completions"]:
        page = str(c["page"]).removesuffix(".md") if c.get("page") else None
        title = c.get("page_title") or (_THINKING_TITLE if c["kind"] == THINKING
                                        else c["title"])
        completion = {k: c[k] for k in ("model", "usage", "latency_s", "ttft_s",
                                         "finish_reason", "error", "from_cache") if k in c}
        prompts.append({"name": c["name"], "title": c["title"], "kind": c["kind"],
                        "completion": {"name": c["name"], "model": c.get("model", ""),
                                       **completion},
                        "max_tokens": c.get("max_tokens", 0),
                        "temperature": c.get("temperature", 0.0),
                        "thinking": c.get("thinking", False), "page": page,
                        "page_title": title})
    evidence = data.get("evidence")
    checks = None
    if isinstance(evidence, dict):  # format 2 kept them by page, not by answer
        checks = {stem: page.get("checks", []) for stem, page in evidence["pages"].items()}
    triage = data.get("triage")
    if isinstance(triage, dict):
        triage = {
            "query": data.get("query", ""), "max_candidates": triage["max_candidates"],
            "total": triage.get("window"), "capped": triage.get("capped", False),
            "incomplete": triage.get("incomplete", ""),
            "interests": triage.get("interests", ""),
            "candidates": [_candidate(c) for c in triage["candidates"]]}
    kept = ("edition", "title", "built_at", "query", "fetched_at", "generator", "model",
            "synthesis_wall_time_s", "overview", "skipped_seen", "names", "briefs", "themes",
            "picks", "citations", "structured", "feed")
    return {k: data[k] for k in kept if k in data} | {
        "format": RECORD_FORMAT, "papers": papers, "prompts": prompts, "checks": checks,
        "triage": triage, "complete": False,
        "bundle": {k: v for k, v in (data.get("bundle") or {}).items()
                   if k in ("chars", "estimated_tokens", "note")}}


def _candidate(c: dict[str, Any]) -> dict[str, Any]:
    paper = Paper(c["arxiv_id"], c["title"], (), c.get("published", ""), "", "", (),
                  c.get("abs_url", ""), None)
    candidate = Candidate(paper, c["status"], c.get("score"), c.get("reason", ""),
                          tuple(c.get("interests", ())))
    return dict(to_data(candidate))
