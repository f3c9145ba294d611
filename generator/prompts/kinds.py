"""The built-in kinds of prompt: the research map, themes, deep dives, the thinking question,
briefs, the comparison with the last edition, a reader's question, and the follow-ups that
check them (evidence, judge) and triage. Each is one `KindSpec` of the registry
(`generator.kinds`), with its budget, request builder (builders.py), schema and parser.

Declared here, above the config and the edition, so that the registry itself can sit at the
bottom of the package: `load_config` is given `BUILTIN_KINDS` by the CLI (or a registry with
more kinds by a plugin or a test).
"""

from __future__ import annotations

from typing import Any

from ..archive.prose import without_disagreements
from ..archive.record import EditionRecord
from ..archive.theme_pages import merge_themes
from ..archive.values import Brief, Theme
from ..completions import PromptRequest
from ..config import Config
from ..evidence.judge import JUDGE_SCHEMA, judge_max_tokens
from ..evidence.requests import EVIDENCE_SCHEMA, check_tokens, standalone_check
from ..kinds import (
    ASK,
    BRIEF,
    CHANGES,
    CONTINUE,
    DEEP_DIVE,
    EVIDENCE,
    JUDGE,
    RESEARCH_MAP,
    THEMES,
    THINKING,
    TRIAGE,
    KindRegistry,
    KindSpec,
)
from ..synthesis.triage import TRIAGE_SCHEMA
from ..text.safe_text import clean
from . import builders
from .builders import BRIEF_SCHEMA, THEMES_SCHEMA


def _evidence_budget(c: Config) -> list[int]:
    """An evidence prompt carries the answer and its claims, then asks for the quotes."""
    if not c.evidence.enabled:
        return []
    return [max(c.registry.prose_budget(c)) + check_tokens(c.evidence)]


def _judge_budget(c: Config) -> list[int]:
    """A judgement answers a verdict and a short reason per claim of an evidence batch (it
    carries no bundle, so it never sizes the context plan)."""
    if not (c.evidence.enabled and c.evidence.judge):
        return []
    return [judge_max_tokens(c.evidence.claims_per_request)]


def _brief(data: Any, request: PromptRequest, papers: frozenset[int]) -> tuple[int, Brief]:
    """(the paper it is about, its brief)."""
    assert request.subject is not None  # every brief's request names its paper
    return request.subject, Brief(**{k: clean(str(data.get(k, ""))) for k in
                            ("tldr", "problem", "method", "result", "limitations", "name")})


def _recorded_brief(record: EditionRecord, request: PromptRequest) -> tuple[int, Brief] | None:
    brief = record.briefs.get(request.subject) if request.subject is not None else None
    return (request.subject, brief) if request.subject is not None and brief else None


def _recorded_themes(record: EditionRecord, request: PromptRequest) -> tuple[Theme, ...] | None:
    return record.themes or None


def _themes(data: Any, request: PromptRequest, papers: frozenset[int]) -> tuple[Theme, ...]:
    """The themes, naming papers of the bundle only, one per page (merge_themes)."""
    return merge_themes([Theme(clean(str(t["name"])), clean(str(t["description"])),
                               tuple(sorted({n for n in t["papers"] if n in papers})))
                         for t in data["themes"]])


# Each kind's answer budgets, typed (a spec's callables cannot name `Config`: kinds.py is below it).

def _research_map_budget(c: Config) -> list[int]:
    return [c.prompts.research_map.max_tokens]


def _themes_budget(c: Config) -> list[int]:
    return [c.prompts.themes.max_tokens] if c.prompts.themes.enabled else []


def _deep_dive_budget(c: Config) -> list[int]:
    return [d.max_tokens for d in c.prompts.deep_dives]


def _thinking_budget(c: Config) -> list[int]:
    return [c.prompts.thinking.max_tokens, c.prompts.thinking.thinking_max_tokens]


def _brief_budget(c: Config) -> list[int]:
    return [c.briefs.max_tokens] if c.briefs.enabled else []


def _changes_budget(c: Config) -> list[int]:
    return [c.continuity.max_tokens] if c.continuity.enabled else []


def _ask_budget(c: Config) -> list[int]:
    return [c.ask.max_tokens]


def _no_budget(c: Config) -> list[int]:
    return []


BUILTIN_KINDS = KindRegistry((
    KindSpec(RESEARCH_MAP, "research_map.md.j2", None, True,
             _research_map_budget, builders.research_map,
             evidence=True, overview=True, stems=("research-map",)),
    KindSpec(THEMES, None, None, True,
             _themes_budget,
             builders.themes, schema=THEMES_SCHEMA, parse=_themes, stems=("themes",),
             from_record=_recorded_themes),
    KindSpec(DEEP_DIVE, "deep_dive.md.j2", None, True,
             _deep_dive_budget, builders.deep_dives,
             heading="Deep dive: {title}", evidence=True),
    KindSpec(THINKING, "thinking.md.j2", "thinking", True,
             _thinking_budget,
             builders.thinking, shift=2, evidence=True,
             stems=("thinking-off", "thinking-on")),
    KindSpec(BRIEF, None, None, False,
             _brief_budget, builders.briefs,
             schema=BRIEF_SCHEMA, parse=_brief, from_record=_recorded_brief),
    # What changed since the previous edition: its claims checked in one request, so
    # continuity costs an edition two requests at most.
    KindSpec(CHANGES, "changes.md.j2", None, True,
             _changes_budget,
             builders.changes, evidence=True, evidence_batch=12, backs_picks=False,
             published=without_disagreements),
    # A follow-up of an answer: its own prompt plus the answer, so it shares their prefix.
    KindSpec(EVIDENCE, None, None, True, _evidence_budget, schema=EVIDENCE_SCHEMA,
             follows=True, alone=standalone_check),
    # A reader's question over the archive (`digest ask`): written like a deep dive over a
    # bundle of the papers the archive's index found, its claims checked like any page's.
    KindSpec(ASK, "question.md.j2", None, True, _ask_budget,
             builders.ask, heading="Question: {title}", evidence=True, backs_picks=False,
             asks=True),
    # The second judgement of the quotes an evidence check found: the claim and its quote alone
    # (evidence/judge.py says why), so it carries no bundle.
    KindSpec(JUDGE, None, None, False, _judge_budget, schema=JUDGE_SCHEMA, follows=True),
    # The rest of an answer cut at its budget (synthesis/continuation.py): its conversation
    # and the answer so far, so it shares their prefix; it sizes no plan (where it does not
    # fit, the answer stays cut and says so).
    KindSpec(CONTINUE, None, None, True, _no_budget, follows=True),
    # One candidate paper after the reader's interests: all share that prefix, not the bundle
    # (it runs before there is one), so it is gated like the bundle prompts.
    KindSpec(TRIAGE, None, None, True, _no_budget, schema=TRIAGE_SCHEMA),
))
