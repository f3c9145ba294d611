"""Frozen records of the synthesis: the requests sent to the model and what came back.

Like papers.py (papers, fetch results, the bundle), each record turns itself into JSON-ready
data and back, so the cache and edition.json share one format.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class Message:
    role: Role
    content: str


# A kind of prompt, as registered in `generator.kinds` (open: a new kind is one registration).
PromptKind = str


@dataclass(frozen=True)
class PromptRequest:
    """One chat completion to run; its cache key is derived from everything sent."""

    name: str  # stable identifier, also the page's file stem, e.g. "deep-dive-1"
    title: str  # shown to readers
    kind: PromptKind
    question: str  # the task text, shown on the page
    messages: tuple[Message, ...]
    max_tokens: int
    temperature: float
    thinking: bool = False
    extra_body_json: str = "{}"  # JSON text, so the record stays hashable and frozen
    page_title: str = ""  # the title of the page its answer appears on (not part of the cache key)
    subject: int | None = None  # the bundle's paper a per-paper request is about (a brief)
    # A follow-up's answer and claims: the request whose answer it checks (an evidence check's
    # and a judgement's parent) and the numbers of that answer's claims it covers. Not sent,
    # so not part of the cache key: what it checks is in its messages too.
    parent: str = ""
    claims: tuple[int, ...] = ()
    # `prompt_hash` as recorded, for a request read back without its messages.
    sent_hash: str = field(default="", compare=False)

    @property
    def payload(self) -> dict[str, Any]:
        """What is sent for it, whatever the model: the messages and the parameters (the
        cache's key adds the model; the prompt hash is this alone)."""
        return {"messages": [[m.role, m.content] for m in self.messages],
                "max_tokens": self.max_tokens, "temperature": self.temperature,
                "thinking": self.thinking, "extra_body": json.loads(self.extra_body_json)}

    @property
    def prompt_hash(self) -> str:
        """A short hash of the prompt as sent (messages and parameters): which prompt wrote an
        answer, shown with it, so a reader can tell two answers of the same prompt apart."""
        if not self.messages:
            return self.sent_hash
        blob = json.dumps(self.payload, sort_keys=True, ensure_ascii=False).encode()
        return hashlib.sha256(blob).hexdigest()[:12]


@dataclass(frozen=True)
class Usage:
    """Token counts as the server reported them; None where it reported none (a stream
    without usage, a failed request): shown as unknown, never as 0."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None

    def __post_init__(self) -> None:
        # A server's counts are untrusted numbers: a negative, fractional, NaN or absurd one
        # (10^30) is not a count, and a part larger than its whole is not either. Unknown.
        for name in ("prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens"):
            object.__setattr__(self, name, _count(getattr(self, name)))
        if None not in (self.cached_tokens, self.prompt_tokens) \
                and self.cached_tokens > self.prompt_tokens:  # type: ignore[operator]
            object.__setattr__(self, "cached_tokens", None)
        if None not in (self.reasoning_tokens, self.completion_tokens) \
                and self.reasoning_tokens > self.completion_tokens:  # type: ignore[operator]
            object.__setattr__(self, "reasoning_tokens", None)


MAX_TOKENS = 100_000_000  # more than any model's context and answer: beyond it, not a count


def _count(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            return None
        value = int(value)
    return value if 0 <= value <= MAX_TOKENS else None


# The error of an evidence check that did not fit the model's context even with the bundle
# cut: its claims are shown as not checked, and the run does not count it as failed.
UNFIT_CHECK = ("not checked: the answer's conversation and its claims are too long for the "
               "model's context")


@dataclass(frozen=True)
class Completion:
    """The outcome of one prompt: an answer, or the error that prevented one."""

    name: str
    model: str
    content: str = ""
    reasoning: str = ""
    finish_reason: str = ""
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    ttft_s: float | None = None  # time to first token, where the answer was streamed
    error: str = ""  # non-empty: the prompt failed and `content` is empty
    from_cache: bool = False
    reasoning_leaked: bool = False  # the reasoning came inside the answer as <think> text
    # The failure was a sign of overload (LlmRequestError.overload): a run's, not recorded.
    overloaded: bool = field(default=False, compare=False, metadata={"codec": False})

    @property
    def ok(self) -> bool:
        return not self.error

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"

    @property
    def cut(self) -> bool:
        """Kept although it stops mid-sentence: a stream cut behind a proxy (synthesis/cuts.py)."""
        return self.finish_reason == "cut"


@dataclass(frozen=True)
class SynthesisResult:
    """Every prompt of an edition with its completion, in the configured order."""

    model: str
    requests: tuple[PromptRequest, ...]
    completions: tuple[Completion, ...]
    bundle_chars: int
    bundle_tokens: int
    wall_time_s: float
    server: str = ""  # the kind of server that answered ("SGLang", "vLLM", ...), where known

    def pairs(self) -> list[tuple[PromptRequest, Completion]]:
        return list(zip(self.requests, self.completions, strict=True))
