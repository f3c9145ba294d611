"""Every kind of prompt, declared once: its page, its template, its grouping, budget and schema.

Adding a deep dive is configuration; adding a new kind of prompt or page is one entry here and
one template. Everything that lists kinds (prompt building, context planning, synthesis order,
the edition model, the navigation) iterates this registry instead of spelling kind names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .config import Config
from .models import PromptKind, PromptRequest
from .synthesis.structured import BRIEF_SCHEMA, EVIDENCE_SCHEMA, THEMES_SCHEMA, TRIAGE_SCHEMA


@dataclass(frozen=True)
class KindSpec:
    """What one kind of prompt is and where its answer goes."""

    kind: PromptKind
    # The page template of its answer; None: a structured answer shown inside other pages.
    template: str | None
    # The page's file stem: fixed (both thinking answers share one page) or the request's name.
    page: str | None
    # Whether it carries the whole bundle (and so shares the server's cached prefix) or only
    # its own paper (a brief).
    shares_bundle: bool
    # The answer lengths the configuration allows this kind (the context must leave room).
    budget: Callable[[Config], list[int]]
    schema: dict[str, Any] | None = None
    # The H1 of its page, from the page title.
    heading: str = "{title}"
    # How many levels the model's own headings move down on the page (the page owns the H1,
    # and the thinking page its H2 sections).
    shift: int = 1
    # Whether its answer's citing sentences are checked against quotes ([evidence]).
    evidence: bool = False


def _prose_budget(c: Config) -> list[int]:
    return [c.prompts.research_map.max_tokens, c.prompts.thinking.max_tokens,
            c.prompts.thinking.thinking_max_tokens, *(d.max_tokens for d in c.prompts.deep_dives)]


def evidence_max_tokens(claims: int, max_quote_words: int) -> int:
    """Room for a JSON entry per claim: its numbers and a quote (a word is about 1.5 tokens)."""
    return claims * (2 * max_quote_words + 40) + 100


def _evidence_budget(c: Config) -> list[int]:
    """An evidence prompt carries the answer and its claims, then asks for the quotes."""
    if not c.evidence.enabled:
        return []
    claims = c.evidence.claims_per_request
    return [max(_prose_budget(c)) + claims * 120 + evidence_max_tokens(
        claims, c.evidence.max_quote_words)]


KINDS: dict[PromptKind, KindSpec] = {spec.kind: spec for spec in (
    KindSpec("research_map", "research_map.md.j2", None, True,
             lambda c: [c.prompts.research_map.max_tokens], evidence=True),
    KindSpec("themes", None, None, True,
             lambda c: [c.prompts.themes.max_tokens] if c.prompts.themes.enabled else [],
             schema=THEMES_SCHEMA),
    KindSpec("deep_dive", "deep_dive.md.j2", None, True,
             lambda c: [d.max_tokens for d in c.prompts.deep_dives], heading="Deep dive: {title}",
             evidence=True),
    KindSpec("thinking", "thinking.md.j2", "thinking", True,
             lambda c: [c.prompts.thinking.max_tokens, c.prompts.thinking.thinking_max_tokens],
             shift=2, evidence=True),
    KindSpec("brief", None, None, False,
             lambda c: [c.briefs.max_tokens] if c.briefs.enabled else [], schema=BRIEF_SCHEMA),
    # A follow-up of an answer: its own prompt plus the answer, so it shares their prefix.
    KindSpec("evidence", None, None, True, _evidence_budget, schema=EVIDENCE_SCHEMA),
    # One candidate paper after the reader's interests: all share that prefix, not the bundle
    # (it runs before there is one), so it is gated like the bundle prompts.
    KindSpec("triage", None, None, True, lambda c: [], schema=TRIAGE_SCHEMA),
)}

STRUCTURED: frozenset[PromptKind] = frozenset(k for k, s in KINDS.items() if s.schema)


def page_stem(request: PromptRequest) -> str | None:
    """The file stem of the page that shows a request's answer; None for structured answers."""
    spec = KINDS[request.kind]
    if spec.template is None:
        return None
    return spec.page or request.name


def answer_tokens(config: Config) -> int:
    """The most tokens beside the bundle a prompt that carries it may need: its answer, and for
    an evidence check also the answer it checks."""
    return max(n for spec in KINDS.values() if spec.shares_bundle for n in spec.budget(config))


def schema_for(kind: PromptKind) -> dict[str, Any]:
    schema = KINDS[kind].schema
    if schema is None:
        raise KeyError(f"{kind} has no schema")
    return schema
