"""What a chat answer is made of, read off what the server sent: the answer apart from its
reasoning (where a `<think>` block leaked into the content), and the usage it reported."""

from __future__ import annotations

import re
from typing import Any

from ..completions import Usage

_THINK_RE = re.compile(r"<think>(.*?)</think>", re.DOTALL)


def split_reasoning(content: str, reasoning: str) -> tuple[str, str]:
    """Separate a `<think>` block that leaked into the answer; return (answer, reasoning)."""
    leaked = _THINK_RE.findall(content)
    if leaked:
        content = _THINK_RE.sub("", content)
        reasoning = reasoning or "\n\n".join(part.strip() for part in leaked)
    elif "</think>" in content:
        # Some templates open the think block in the prompt, so only the closing tag comes back.
        head, _, content = content.partition("</think>")
        reasoning = reasoning or head.strip()
    elif content.lstrip().startswith("<think>"):
        # A think block never closed: the answer stopped while the model was still thinking.
        reasoning = reasoning or content.lstrip()[len("<think>"):].strip()
        content = ""
    return content.strip(), reasoning.strip()


def usage_of(usage: Any) -> Usage:
    """The usage a server reported (SGLang's extras included), as our record keeps it."""
    if usage is None:
        return Usage()
    extra = usage.model_extra or {}
    cached = getattr(usage.prompt_tokens_details, "cached_tokens", None)
    reasoning = getattr(usage.completion_tokens_details, "reasoning_tokens", None)
    if reasoning is None and isinstance(extra.get("reasoning_tokens"), int):
        reasoning = extra["reasoning_tokens"]
    return Usage(
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        cached_tokens=cached,
        reasoning_tokens=reasoning,
    )
