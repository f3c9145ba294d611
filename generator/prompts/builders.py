"""The request builders of the built-in kinds, and the one factory every request is made by.

Every request starts with the same two things, the system message and then the bundle, and only
then the task. Identical leading tokens let SGLang's radix cache prefill the bundle once for
all of them (DeepSeek V4's thinking and non-thinking prompts differ only at the end). Which
builders run, and in what order, is the kind registry's business (`generator.kinds`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from ..archive.history import History
from ..archive.names import name_citations
from ..completions import Message, PromptKind, PromptRequest
from ..config import Config
from ..config.prompts import PromptSettings
from ..fetch.withdrawals import withdrawal_notice
from ..kinds import ASK, BRIEF, CHANGES, DEEP_DIVE, RESEARCH_MAP, THEMES, THINKING
from ..papers import Bundle
from ..synthesis.bundle import paper_section
from ..synthesis.structured import response_format, schema_instruction
from ..text.safe_text import cut

_SEPARATOR = "\n\n---\n\n"
_SLUG_RE = re.compile(r"[^a-z0-9]+")


def slugify(text: str) -> str:
    return _SLUG_RE.sub("-", text.lower()).strip("-") or "page"


def system_message(prompts: PromptSettings, language: str) -> str:
    if language.strip().lower() == "english":
        return prompts.system
    return f"{prompts.system} Write every answer in {language}, whatever the papers' language."


@dataclass(frozen=True)
class RequestContext:
    """What a kind's request builder is given: the config, the bundle, the page stems other
    kinds and the edition already use, the editions published before this one (`history`,
    typed records; None where the caller has none, as in a benchmark), and `make`, the factory
    every request goes through."""

    config: Config
    bundle: Bundle
    reserved: Collection[str]
    history: History | None = None
    question: str = ""  # a reader's question (`digest ask`): the bundle is the archive's

    def make(self, name: str, title: str, kind: PromptKind, question: str, task: str,
             max_tokens: int, temperature: float, *, thinking: bool = False,
             schema: dict[str, Any] | None = None, schema_name: str = "",
             context: str | None = None, page_title: str = "", subject: int | None = None
             ) -> PromptRequest:
        """A request: the system message, then `context` (the bundle unless given), then the
        task; with `schema`, the answer is asked for as JSON (constrained where the server can)
        under `schema_name` (the kind's name unless given)."""
        body: dict[str, Any] = {}
        if schema is not None:
            task = f"{task}\n\n{schema_instruction(schema)}"
            body["response_format"] = response_format(schema_name or kind, schema)
        if thinking:
            body.update(self.config.llm.thinking_switch(True))
        system = system_message(self.config.prompts, self.config.digest.language)
        return PromptRequest(
            name=name, title=title, kind=kind, question=question,
            messages=(Message("system", system),
                      Message("user", (self.bundle.text if context is None else context)
                              + _SEPARATOR + task)),
            max_tokens=max_tokens, temperature=temperature, thinking=thinking,
            extra_body_json=json.dumps(body, sort_keys=True), page_title=page_title or title,
            subject=subject)


def build_requests(config: Config, bundle: Bundle, history: History | None = None,
                   question: str = "") -> list[PromptRequest]:
    """Every request of an edition over `bundle`, kind by kind in the order of the config's
    registry; `history`: the editions published before this one, for kinds that read them.
    With a `question` (`digest ask`, over an archive bundle), the requests of the kinds that
    answer questions instead."""
    registry = config.registry
    context = RequestContext(config, bundle, registry.reserved_stems(), history,
                             question=question)
    return [request for spec in registry.values()
            if spec.requests and spec.asks == bool(question)
            for request in spec.requests(context)]


def research_map(ctx: RequestContext) -> list[PromptRequest]:
    rm = ctx.config.prompts.research_map
    return [ctx.make("research-map", rm.title, RESEARCH_MAP, rm.instruction,
                     f"Task: {rm.instruction}", rm.max_tokens, rm.temperature)]


def themes(ctx: RequestContext) -> list[PromptRequest]:
    tm = ctx.config.prompts.themes
    if not tm.enabled:
        return []
    task = f"Task: {tm.instruction}"
    earlier = earlier_theme_names(ctx.history)
    if earlier:  # themes over time: the same theme keeps its name, and so its page
        task += ("\n\nEarlier editions of this digest named these themes: "
                 + "; ".join(earlier) + ". Where a theme of these papers is one of them, use "
                 "its name exactly as written; give a new theme a new name.")
    return [ctx.make("themes", "Theme map", THEMES, tm.instruction, task,
                     tm.max_tokens, tm.temperature, schema=THEMES_SCHEMA)]


EARLIER_THEME_EDITIONS = 8
MAX_EARLIER_THEMES = 40


def earlier_theme_names(history: History | None) -> list[str]:
    """The theme names of the last editions, newest first, each once."""
    if history is None:
        return []
    names: dict[str, str] = {}
    for record in history.records[:EARLIER_THEME_EDITIONS]:
        for theme in record.themes:
            names.setdefault(theme.name.casefold(), " ".join(theme.name.split()))
    return list(names.values())[:MAX_EARLIER_THEMES]


def deep_dives(ctx: RequestContext) -> list[PromptRequest]:
    used = set(ctx.reserved)
    requests = []
    for dive in ctx.config.prompts.deep_dives:
        name = slugify(dive.label)
        while name in used:
            name += "-2"
        used.add(name)
        task = (f"Deep-dive question ({dive.label}): {dive.question}\n\n"
                "Answer this question specifically, naming the papers you draw on by number "
                "and title.")
        requests.append(ctx.make(name, dive.label, DEEP_DIVE, dive.question, task,
                                 dive.max_tokens, dive.temperature))
    return requests


def thinking(ctx: RequestContext) -> list[PromptRequest]:
    th = ctx.config.prompts.thinking
    task = f"Hard question: {th.question}"
    return [
        ctx.make("thinking-off", f"{th.title}: without thinking", THINKING, th.question, task,
                 th.max_tokens, th.temperature, page_title=th.title),
        ctx.make("thinking-on", f"{th.title}: with thinking", THINKING, th.question, task,
                 th.thinking_max_tokens, th.thinking_temperature, thinking=True,
                 page_title=th.title),
    ]


def briefs(ctx: RequestContext) -> list[PromptRequest]:
    settings = ctx.config.briefs
    if not settings.enabled:
        return []
    # The schema's name stays "paper_brief": it is part of every cached brief's request.
    return [ctx.make(f"brief-{item.number}", f"Brief of Paper {item.number}", BRIEF,
                     settings.instruction, f"Task: {settings.instruction}", settings.max_tokens,
                     settings.temperature, schema=BRIEF_SCHEMA, schema_name="paper_brief",
                     context=paper_section(item), subject=item.number)
            for item in ctx.bundle.papers
            if not withdrawal_notice(item.paper)]  # a notice has nothing to brief


MAX_PREVIOUS_MAP_CHARS = 6000
MAX_EARLIER_CLAIMS = 25
MAX_OLD_ABSTRACT_CHARS = 800


def changes(ctx: RequestContext) -> list[PromptRequest]:
    """What changed in the field since the previous edition: the bundle, then the previous
    research map (its papers by name: their numbers were that bundle's), the revised papers'
    old abstracts and the previous edition's checked claims by id. None for a first edition,
    or when the previous record holds no research map to compare with."""
    settings = ctx.config.continuity
    if not settings.enabled or ctx.history is None or not ctx.history.records:
        return []
    previous = ctx.history.records[0]
    research_map = next((p.completion.content for p in previous.prompts
                         if p.kind == RESEARCH_MAP and p.completion.ok), "")
    if not previous.complete or not research_map:
        return []
    named = cut(name_citations(research_map, previous.names), MAX_PREVIOUS_MAP_CHARS)
    covered = {p.base_id: (p, r.edition) for r in reversed(ctx.history.records) for p in r.papers}
    revised = [f"- Paper {item.number} is version {item.paper.arxiv_id} of "
               f"{old.arxiv_id}, covered in edition {edition}. Its abstract then: "
               f"{cut(old.abstract, MAX_OLD_ABSTRACT_CHARS)}"
               for item in ctx.bundle.papers
               if (found := covered.get(item.paper.base_id)) is not None
               and (old := found[0]).arxiv_id != item.paper.arxiv_id
               and (edition := found[1])]
    claims = [f"- [{c.id}] {cut(name_citations(c.sentence, previous.names), 300)}"
              for checks in (previous.checks or {}).values() for c in checks
              if c.verdict == "supported" and c.id][:MAX_EARLIER_CLAIMS]
    task = (f"Task: {settings.instruction}\n\n"
            f"The previous edition ({previous.edition}), its research map:\n\n{named}\n\n"
            "Revised papers of this edition:\n" + ("\n".join(revised) or "- none") + "\n\n"
            "Claims of the previous edition, each with its id:\n"
            + ("\n".join(claims) or "- none"))
    return [ctx.make("since-last-edition", f"What changed since {previous.edition}", CHANGES,
                     settings.instruction, task, settings.max_tokens, settings.temperature)]


def ask(ctx: RequestContext) -> list[PromptRequest]:
    """A reader's question over the archive bundle: one request, named after the question,
    so that the same question over the same papers is answered from the cache."""
    settings = ctx.config.ask
    question = " ".join(ctx.question.split())
    task = f"Task: {settings.instruction}\n\nThe reader's question: {question}"
    return [ctx.make("ask", f"Question: {cut(question, 120)}", ASK, question, task,
                     settings.max_tokens, settings.temperature, page_title=cut(question, 120))]


BRIEF_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 40,
                 "description": "the short name the paper itself uses for its system, method "
                                "or benchmark (e.g. PagedAttention); empty if it has none"},
        "tldr": {"type": "string", "description": "one sentence: what the paper shows"},
        "problem": {"type": "string"},
        "method": {"type": "string"},
        "result": {"type": "string", "description": "the headline result with its figures"},
        "limitations": {"type": "string"},
    },
    "required": ["tldr", "problem", "method", "result", "limitations"],
    "additionalProperties": False,
}


THEMES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "themes": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "description": {"type": "string"},
                    "papers": {"type": "array", "items": {"type": "integer"}},
                },
                "required": ["name", "description", "papers"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["themes"],
    "additionalProperties": False,
}
