"""Turn the configured prompts and a bundle into the chat requests of an edition.

Every request starts with the same two things, the system message and then the bundle, and only
then the task. Identical leading tokens let SGLang's radix cache prefill the bundle once for
all of them (DeepSeek V4's thinking and non-thinking prompts differ only at the end).
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..bundle import paper_section
from ..config import BriefSettings, PromptSettings
from ..models import Bundle, Message, PromptKind, PromptRequest
from .structured import BRIEF_SCHEMA, THEMES_SCHEMA, response_format, schema_instruction

_SEPARATOR = "\n\n---\n\n"
_SLUG_RE = re.compile(r"[^a-z0-9]+")


def slugify(text: str) -> str:
    return _SLUG_RE.sub("-", text.lower()).strip("-") or "page"


def system_message(prompts: PromptSettings, language: str) -> str:
    if language.strip().lower() == "english":
        return prompts.system
    return f"{prompts.system} Write every answer in {language}, whatever the papers' language."


def build_requests(
    prompts: PromptSettings, bundle: Bundle, thinking_extra_body: dict[str, Any],
    *, language: str = "English", briefs: BriefSettings | None = None,
) -> list[PromptRequest]:
    """The research map, its themes, each deep dive, the thinking question without and with
    thinking, then (if enabled) one brief per paper."""
    system = system_message(prompts, language)

    def request(
        name: str, title: str, kind: PromptKind, question: str, task: str,
        max_tokens: int, temperature: float, thinking: bool = False,
        extra: dict[str, Any] | None = None, context: str = bundle.text, page_title: str = "",
    ) -> PromptRequest:
        body = dict(extra or {})
        if thinking:
            body.update(thinking_extra_body)
        return PromptRequest(
            name=name,
            title=title,
            kind=kind,
            question=question,
            messages=(
                Message("system", system),
                Message("user", context + _SEPARATOR + task),
            ),
            max_tokens=max_tokens,
            temperature=temperature,
            thinking=thinking,
            extra_body_json=json.dumps(body, sort_keys=True),
            page_title=page_title or title,
        )

    rm = prompts.research_map
    requests = [
        request("research-map", rm.title, "research_map", rm.instruction,
                f"Task: {rm.instruction}", rm.max_tokens, rm.temperature)
    ]
    if prompts.themes.enabled:
        tm = prompts.themes
        requests.append(request(
            "themes", "Theme map", "themes", tm.instruction,
            f"Task: {tm.instruction}\n\n{schema_instruction(THEMES_SCHEMA)}", tm.max_tokens,
            tm.temperature, extra={"response_format": response_format("themes", THEMES_SCHEMA)}))
    used = {"research-map", "thinking-off", "thinking-on", "index", "papers", "themes",
            "thinking", "triage", "run-report"}  # the stems of the edition's other pages
    for dive in prompts.deep_dives:
        name = slugify(dive.label)
        while name in used:
            name += "-2"
        used.add(name)
        task = (f"Deep-dive question ({dive.label}): {dive.question}\n\n"
                "Answer this question specifically, naming the papers you draw on by number "
                "and title.")
        requests.append(request(name, dive.label, "deep_dive", dive.question, task,
                                dive.max_tokens, dive.temperature))
    th = prompts.thinking
    task = f"Hard question: {th.question}"
    requests.append(request("thinking-off", f"{th.title}: without thinking", "thinking",
                            th.question, task, th.max_tokens, th.temperature,
                            page_title=th.title))
    requests.append(request("thinking-on", f"{th.title}: with thinking", "thinking",
                            th.question, task, th.thinking_max_tokens, th.thinking_temperature,
                            thinking=True, page_title=th.title))
    if briefs and briefs.enabled:
        task = f"Task: {briefs.instruction}\n\n{schema_instruction(BRIEF_SCHEMA)}"
        for item in bundle.papers:
            requests.append(request(
                f"brief-{item.number}", f"Brief of Paper {item.number}", "brief",
                briefs.instruction, task, briefs.max_tokens, briefs.temperature,
                extra={"response_format": response_format("paper_brief", BRIEF_SCHEMA)},
                context=paper_section(item)))
    return requests
