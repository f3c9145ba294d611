"""Fit the bundle to the model's context before sending anything, and remember how it was fit.

When bundle + answer would not fit the context, the full-text excerpts are shortened fairly
across papers (short ones stay whole). The plan is kept with the edition, so reruns rebuild the
same bundle, hit the same cache entries, and need not ask the server its context length again.
"""

from __future__ import annotations

import logging
import math
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from ..completions import PromptRequest
from ..papers import Bundle, Source
from ..store.cache import Cache, read_json, write_json
from ..store.codec import CodecError, from_data, to_data
from .bundle import build_bundle, fair_excerpt_cap

log = logging.getLogger(__name__)

# Besides the bundle a prompt carries the system message and its task.
PROMPT_OVERHEAD_TOKENS = 1024
# Without a count from the server, about four characters a token; real tokenizers vary (PDF
# text with math and tables runs well under three), so an estimate keeps a wider margin.
DEFAULT_CHARS_PER_TOKEN = 4.0
ESTIMATE_SAFETY = 0.9
COUNTED_SAFETY = 0.98  # counts from the server's tokenizer; the chat template adds a few tokens

_CONTEXT_RE = re.compile(r"(?:maximum )?context (?:length|window|size)[^0-9]{0,40}?([0-9][0-9,]{2,})",
                         re.IGNORECASE)
# SGLang: "... N tokens from the input messages ...", "The input (N tokens) is longer than ...";
# vLLM: "... your prompt contains at least N input tokens" or "(N in the messages, ...)".
_INPUT_RES = (
    re.compile(r"([0-9][0-9,]*) tokens from the input messages", re.IGNORECASE),
    re.compile(r"The input \(([0-9][0-9,]*) tokens\)", re.IGNORECASE),
    re.compile(r"prompt contains (?:at least )?([0-9][0-9,]*) input tokens", re.IGNORECASE),
    re.compile(r"\(([0-9][0-9,]*) in the messages", re.IGNORECASE),
    # llama-cpp-python: "Requested tokens (N) exceed context window of C" (prompt and answer).
    re.compile(r"Requested tokens \(([0-9][0-9,]*)\)", re.IGNORECASE),
    # llama.cpp's llama-server (recorded): "request (N tokens) exceeds the available context
    # size (C tokens), try increasing it" (the prompt alone; C is one slot's context).
    re.compile(r"request \(([0-9][0-9,]*) tokens\) exceeds", re.IGNORECASE),
)


@dataclass(frozen=True)
class Refusal:
    """What a server's "too long for my context" error says."""

    context: int
    input_tokens: int | None = None  # the prompt as the server's tokenizer counted it


@dataclass(frozen=True)
class BundlePlan:
    """How this edition's bundle is cut: one cap for all prompts, and caps for the prompts a
    server refused for their length."""

    full_tokens: int  # the uncut bundle's estimated tokens, to notice a changed bundle
    context_tokens: int | None = None
    excerpt_cap: int | None = None
    overrides: dict[str, int] = field(default_factory=dict)  # request name -> excerpt cap
    note: str = ""
    # Measured by the server's tokenizer (or from a refusal's counts); None: estimated.
    chars_per_token: float | None = None
    # The settings it was made under (`plan_basis`): a changed [llm] context_tokens or answer
    # budget makes a new plan instead of reusing one made for the old settings.
    basis: str = ""
    # Where the context cannot hold the bundle without excerpts and the longest conversation:
    # every answer's max_tokens is cut to this (the edition says so). None: budgets as set.
    answer_cap: int | None = None

    def summary(self) -> str:
        """What the edition says about how its bundle was cut."""
        if not self.overrides:
            return self.note
        caps = sorted(set(self.overrides.values()))
        size = f"{caps[0]:,}" if len(caps) == 1 else f"{caps[0]:,}–{caps[-1]:,}"
        context = f" ({self.context_tokens:,}-token context)" if self.context_tokens else ""
        refused = (f"The server refused {len(self.overrides)} prompt(s) for their length"
                   f"{context}; they were retried with full-text excerpts of at most {size} "
                   "characters each, cut fairly across papers.")
        return f"{self.note} {refused}".strip()

    def tokens(self, chars: int) -> int:
        """`chars` of bundle text in tokens, counted at the measured rate where there is one."""
        return math.ceil(chars / (self.chars_per_token or DEFAULT_CHARS_PER_TOKEN))


def refusal_from_error(message: str) -> Refusal | None:
    """The context length (and the prompt's size) a context-overflow error names, if any."""
    context = _CONTEXT_RE.search(message)
    if not context:
        return None
    found = (r.search(message) for r in _INPUT_RES)
    match = next((m for m in found if m), None)
    return Refusal(_number(context.group(1)), _number(match.group(1)) if match else None)


def context_from_error(message: str) -> int | None:
    """The context length a "maximum context length is N tokens" error names, if any."""
    refusal = refusal_from_error(message)
    return refusal.context if refusal else None


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def cap_for(sources: list[Source], context_tokens: int, answer_tokens: int,
            chars_per_token: float | None = None) -> int | None:
    """The excerpt cap that makes the bundle fit `context_tokens` with room for the answer."""
    excerpts = [len(s.full_text.text) for s in sources if s.full_text.status == "ok"]
    without = build_bundle(sources, excerpt_cap=0).chars
    safety = COUNTED_SAFETY if chars_per_token else ESTIMATE_SAFETY
    budget_tokens = int(context_tokens * safety) - PROMPT_OVERHEAD_TOKENS - answer_tokens
    ratio = chars_per_token or DEFAULT_CHARS_PER_TOKEN
    return fair_excerpt_cap(excerpts, int(budget_tokens * ratio) - without)


def plan_basis(configured_context: int | None, answer_tokens: int) -> str:
    return f"context_tokens={configured_context or 'server'};longest={answer_tokens}"


def make_plan(sources: list[Source], context_tokens: int | None, answer_tokens: int,
              chars_per_token: float | None = None, basis: str = "",
              largest_answer: int | None = None) -> BundlePlan:
    """`answer_tokens`: the longest request beside the bundle (an answer, or an evidence check
    with the answer it continues); `largest_answer`: the largest answer budget alone."""
    full = build_bundle(sources)
    plan = BundlePlan(full.estimated_tokens, context_tokens, chars_per_token=chars_per_token,
                      basis=basis)
    if not context_tokens:
        return plan
    cap = cap_for(sources, context_tokens, answer_tokens, chars_per_token)
    if cap is None:
        return plan
    cut = build_bundle(sources, excerpt_cap=cap)
    how = "counted by the server's tokenizer" if chars_per_token else "estimated"
    if cap == 0:
        return _without_room(plan, sources, context_tokens, answer_tokens,
                             largest_answer or answer_tokens, chars_per_token, how)
    note = (f"The full-text excerpts were shortened to at most {cap:,} characters each so that "
            f"the bundle (now about {plan.tokens(cut.chars):,} tokens, from "
            f"{plan.tokens(full.chars):,}; {how}) and the longest answer fit the model's "
            f"{context_tokens:,}-token context.")
    log.warning("%s", note)
    return replace(plan, excerpt_cap=cap, note=note)


# Below this an answer is not worth asking for: the plan says the context is too small.
MIN_ANSWER_TOKENS = 256


def _without_room(plan: BundlePlan, sources: list[Source], context_tokens: int, longest: int,
                  largest_answer: int, chars_per_token: float | None, how: str) -> BundlePlan:
    """No excerpts at all, and where even then the longest conversation does not fit, every
    answer's budget cut by what is missing: said in the note, never "cut to 0 characters so
    that it fits" when it does not."""
    bare = build_bundle(sources, excerpt_cap=0)
    safety = COUNTED_SAFETY if chars_per_token else ESTIMATE_SAFETY
    usable = int(context_tokens * safety) - PROMPT_OVERHEAD_TOKENS - plan.tokens(bare.chars)
    note = (f"The full-text excerpts were left out: the model's {context_tokens:,}-token "
            f"context holds the papers' abstracts and metadata (about "
            f"{plan.tokens(bare.chars):,} tokens; {how}) and little more.")
    answer_cap = None
    if usable < longest:
        answer_cap = max(MIN_ANSWER_TOKENS, largest_answer - (longest - usable))
        note += (f" Even so the longest request ({longest:,} tokens beside the bundle) does "
                 f"not fit, so every answer was limited to {answer_cap:,} tokens"
                 + (": the context is too small for this edition, and some requests may "
                    "still be refused; raise the server's context length." if usable
                    < MIN_ANSWER_TOKENS else "."))
    log.warning("%s", note)
    return replace(plan, excerpt_cap=0, note=note, answer_cap=answer_cap)


def load_plan(cache: Cache, edition: str, sources: list[Source],
              basis: str | None = None) -> BundlePlan | None:
    """The edition's saved plan, if it was made for these papers (and, given a `basis`, under
    these settings; a plan from before bases were kept is taken as it is)."""
    data = read_json(cache.plan_path(edition))
    if not isinstance(data, dict):
        return None
    try:
        plan = from_data(BundlePlan, data)
    except CodecError:
        return None
    if basis is not None and plan.basis and plan.basis != basis:
        return None
    return plan if plan.full_tokens == build_bundle(sources).estimated_tokens else None


def save_plan(cache: Cache, edition: str, plan: BundlePlan) -> None:
    write_json(cache.plan_path(edition), to_data(plan))


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

    def shrink(self, request: PromptRequest, refusal: Refusal) -> PromptRequest | None:
        """The same prompt with excerpts cut to fit, or None if cutting cannot help.

        Where the refusal says how many tokens the prompt was, the cut is sized by that count
        (the prompt's characters per token), not by our estimate, which may be the very
        reason it was refused.
        """
        ratio = self.plan.chars_per_token
        if refusal.input_tokens:
            ratio = sum(len(m.content) for m in request.messages) / refusal.input_tokens
        cap = cap_for(self._sources, refusal.context, request.max_tokens, ratio)
        with self._lock:
            current = self.plan.overrides.get(request.name, self.plan.excerpt_cap)
            if current is None:
                current = max((len(s.full_text.text) for s in self._sources), default=0)
            if cap is None or cap >= current:
                return None  # by the best count there is, the prompt already fits
            self.plan = replace(self.plan, overrides={**self.plan.overrides, request.name: cap},
                                context_tokens=refusal.context, chars_per_token=ratio)
            self._save(self.plan)
            variants = self._rebuild(self.plan)
        # A follow-up (an evidence check) is not among them: it fails like any refused prompt.
        return next((r for r in variants if r.name == request.name), None)
