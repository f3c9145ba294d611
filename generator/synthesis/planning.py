"""Fit the bundle to the model's context before sending anything, and remember how it was fit.

When bundle + answer would not fit the context, the full-text excerpts are shortened fairly
across papers (short ones stay whole). The plan is kept with the edition, so reruns rebuild the
same bundle, hit the same cache entries, and need not ask the server its context length again.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..bundle import build_bundle, fair_excerpt_cap
from ..cache import Cache, read_json, write_json
from ..models import Bundle, PromptRequest, Source

log = logging.getLogger(__name__)

# Besides the bundle a prompt carries the system message and its task.
PROMPT_OVERHEAD_TOKENS = 1024
# Our estimate is ~4 characters a token; real tokenizers vary, so keep a margin.
SAFETY = 0.9

_CONTEXT_RE = re.compile(r"(?:maximum )?context (?:length|window)[^0-9]{0,40}?([0-9][0-9,]{2,})",
                         re.IGNORECASE)


@dataclass(frozen=True)
class BundlePlan:
    """How this edition's bundle is cut: one cap for all prompts, and caps for the prompts a
    server refused for their length."""

    full_tokens: int  # the uncut bundle's estimated tokens, to notice a changed bundle
    context_tokens: int | None = None
    excerpt_cap: int | None = None
    overrides: dict[str, int] = field(default_factory=dict)  # request name -> excerpt cap
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"full_tokens": self.full_tokens, "context_tokens": self.context_tokens,
                "excerpt_cap": self.excerpt_cap, "overrides": self.overrides, "note": self.note}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BundlePlan:
        return cls(full_tokens=data["full_tokens"], context_tokens=data.get("context_tokens"),
                   excerpt_cap=data.get("excerpt_cap"), overrides=dict(data.get("overrides", {})),
                   note=data.get("note", ""))


def context_from_error(message: str) -> int | None:
    """The context length a "maximum context length is N tokens" error names, if any."""
    match = _CONTEXT_RE.search(message)
    return int(match.group(1).replace(",", "")) if match else None


def cap_for(sources: list[Source], context_tokens: int, answer_tokens: int) -> int | None:
    """The excerpt cap that makes the bundle fit `context_tokens` with room for the answer."""
    excerpts = [len(s.full_text.text) for s in sources if s.full_text.status == "ok"]
    without = build_bundle(sources, excerpt_cap=0).chars
    budget_tokens = int(context_tokens * SAFETY) - PROMPT_OVERHEAD_TOKENS - answer_tokens
    return fair_excerpt_cap(excerpts, budget_tokens * 4 - without)


def make_plan(sources: list[Source], context_tokens: int | None, answer_tokens: int) -> BundlePlan:
    full = build_bundle(sources)
    if not context_tokens:
        return BundlePlan(full.estimated_tokens)
    cap = cap_for(sources, context_tokens, answer_tokens)
    if cap is None:
        return BundlePlan(full.estimated_tokens, context_tokens)
    cut = build_bundle(sources, excerpt_cap=cap)
    note = (f"The full-text excerpts were shortened to at most {cap:,} characters each so that "
            f"the bundle (now about {cut.estimated_tokens:,} tokens, from {full.estimated_tokens:,}) "
            f"and the longest answer fit the model's {context_tokens:,}-token context.")
    log.warning("%s", note)
    return BundlePlan(full.estimated_tokens, context_tokens, cap, note=note)


def load_plan(cache: Cache, edition: str, sources: list[Source]) -> BundlePlan | None:
    """The edition's saved plan, if it was made for these papers."""
    data = read_json(cache.plan_path(edition))
    if not isinstance(data, dict):
        return None
    try:
        plan = BundlePlan.from_dict(data)
    except (KeyError, TypeError):
        return None
    return plan if plan.full_tokens == build_bundle(sources).estimated_tokens else None


def save_plan(cache: Cache, edition: str, plan: BundlePlan) -> None:
    write_json(cache.plan_path(edition), plan.to_dict())


def bundles_for(sources: list[Source], plan: BundlePlan | None) -> tuple[Bundle, dict[int | None, Bundle]]:
    """The edition's bundle under `plan`, and a bundle for every cap the plan uses."""
    cap = plan.excerpt_cap if plan else None
    caps = {cap, *(plan.overrides.values() if plan else ())}
    bundles = {c: build_bundle(sources, excerpt_cap=c) for c in caps}
    return bundles[cap], bundles


# Rebuilds the edition's requests under a plan (prompt layout belongs to the caller).
Rebuild = Callable[[BundlePlan], Sequence[PromptRequest]]


class ContextFitter:
    """Cuts a prompt that the server refused for its length, and records how in the plan.

    Called from synthesis worker threads, hence the lock. The cut is fair across papers (see
    `cap_for`) and kept per request in the plan, so a rerun sends the same cut prompt and hits
    the cache instead of being refused again.
    """

    def __init__(self, sources: Sequence[Source], plan: BundlePlan, rebuild: Rebuild,
                 save: Callable[[BundlePlan], None]) -> None:
        self._sources = list(sources)
        self.plan = plan
        self._rebuild = rebuild
        self._save = save
        self._lock = threading.Lock()

    def shrink(self, request: PromptRequest, context: int) -> PromptRequest | None:
        """The same prompt with excerpts cut to fit `context`, or None if cutting cannot help."""
        cap = cap_for(self._sources, context, request.max_tokens)
        with self._lock:
            current = self.plan.overrides.get(request.name, self.plan.excerpt_cap)
            if cap is None or (current is not None and cap >= current):
                return None  # the prompt already fits by our estimate: cutting cannot help
            note = (f"The server refused {request.title!r} for its length ({context:,}-token "
                    f"context); it was retried with excerpts of at most {cap:,} characters.")
            self.plan = replace(self.plan, overrides={**self.plan.overrides, request.name: cap},
                                note=f"{self.plan.note} {note}".strip())
            self._save(self.plan)
            variants = self._rebuild(self.plan)
        return next(r for r in variants if r.name == request.name)
