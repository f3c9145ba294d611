"""Turn the configured prompts and a bundle into the chat requests of an edition.

Every request starts with the same two things, the system message and then the bundle, and only
then the task. Identical leading tokens let SGLang's radix cache prefill the bundle once for
all prompts of the same thinking mode.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .config import PromptSettings
from .models import Bundle, Message, PromptKind, PromptRequest

_SEPARATOR = "\n\n---\n\n"
_SLUG_RE = re.compile(r"[^a-z0-9]+")


def slugify(text: str) -> str:
    return _SLUG_RE.sub("-", text.lower()).strip("-") or "page"


def build_requests(
    prompts: PromptSettings, bundle: Bundle, thinking_extra_body: dict[str, Any]
) -> list[PromptRequest]:
    """The research map, each deep dive, then the thinking question without and with thinking."""

    def request(
        name: str, title: str, kind: PromptKind, question: str, task: str,
        max_tokens: int, temperature: float, thinking: bool = False,
    ) -> PromptRequest:
        return PromptRequest(
            name=name,
            title=title,
            kind=kind,
            question=question,
            messages=(
                Message("system", prompts.system),
                Message("user", bundle.text + _SEPARATOR + task),
            ),
            max_tokens=max_tokens,
            temperature=temperature,
            thinking=thinking,
            extra_body_json=json.dumps(thinking_extra_body if thinking else {}, sort_keys=True),
        )

    rm = prompts.research_map
    requests = [
        request("research-map", rm.title, "research_map", rm.instruction,
                f"Task: {rm.instruction}", rm.max_tokens, rm.temperature)
    ]
    used = {"research-map", "thinking-off", "thinking-on", "index", "papers"}
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
                            th.question, task, th.max_tokens, th.temperature))
    requests.append(request("thinking-on", f"{th.title}: with thinking", "thinking",
                            th.question, task, th.thinking_max_tokens, th.thinking_temperature,
                            thinking=True))
    return requests
