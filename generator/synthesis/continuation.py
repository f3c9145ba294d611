"""Whole answers: a prose answer that stops at its token budget is continued before it is
published.

The model is given the conversation so far (its prompt, then the answer up to where it
stopped) and asked to go on exactly from there, at most twice; the parts are joined without
overlap, and only then are the answer's claims checked. Only an answer still cut after that
is published with the "truncated" box. Each continuation is a request of its own (kind
`continue`, a follow-up of the answer, its `parent`), cached and counted like any other, so
a rerun pays for none twice and the run report shows what continuing cost.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import replace

from ..completions import Completion, Message, PromptRequest
from ..kinds import CONTINUE, KindRegistry
from .batch import FollowUp

MAX_CONTINUATIONS = 2
TASK = ("Your answer above stopped at its length limit, in mid-flow. Continue it exactly where "
        "it stopped: do not repeat what is already written, do not start over, do not add a "
        "preamble or a summary of what came before; write only what comes next, in the same "
        "format, and finish the answer.")
_MIN_OVERLAP = 12  # characters a continuation may repeat of the answer's end, dropped


def continuation_request(parent: PromptRequest, so_far: str, part: int) -> PromptRequest:
    """The `part`th continuation (1, 2) of `parent`'s answer, which reads `so_far`."""
    body = {k: v for k, v in json.loads(parent.extra_body_json).items()
            if k != "chat_template_kwargs"}  # the answer goes on; no new thinking
    return PromptRequest(
        name=f"{parent.name}-continued-{part}",
        title=f"{parent.title} (continued, part {part + 1})",
        kind=CONTINUE,
        question="",
        messages=(*parent.messages, Message("assistant", so_far), Message("user", TASK)),
        max_tokens=parent.max_tokens,
        temperature=parent.temperature,
        thinking=False,
        extra_body_json=json.dumps(body, sort_keys=True),
        page_title=parent.page_title,
        parent=parent.name,
    )


def joined_text(first: str, more: str) -> str:
    """`first` and its continuation `more`, without what `more` repeats of `first`'s end."""
    start = more.lstrip("\n") if first.endswith("\n") else more
    for size in range(min(len(first), len(start), 400), _MIN_OVERLAP - 1, -1):
        if first.endswith(start[:size]):
            return first + start[size:]
    if first[-1:].isalnum() and start[:1].isalnum():  # cut inside a word: the rest of it
        return first + start
    return first + start


def joined(answer: Completion, parts: Sequence[Completion]) -> Completion:
    """The answer with its continuations' text: ended as the last ended (still "length" where
    the last was cut too). The continuations' own usage is theirs (the run report counts it)."""
    content = answer.content
    last = answer
    for part in parts:
        if not part.ok or not part.content.strip():
            break
        content, last = joined_text(content, part.content), part
    return replace(answer, content=content, finish_reason=last.finish_reason)


class Continued:
    """Follow-ups that continue a prose answer cut at its budget before the answer's own
    follow-ups (its evidence checks) are asked of the whole answer; safe across threads."""

    def __init__(self, kinds: KindRegistry, then: FollowUp | None = None) -> None:
        self._kinds = kinds
        self._then = then
        self._open: dict[str, tuple[PromptRequest, Completion, list[Completion]]] = {}
        self._lock = threading.Lock()

    def __call__(self, request: PromptRequest, completion: Completion) -> Sequence[PromptRequest]:
        if request.kind == CONTINUE:
            with self._lock:
                opened = self._open.get(request.parent)
                if opened is None:
                    return []
                parent, first, parts = opened
                parts.append(completion)
                whole = joined(first, parts)
                more = (completion.ok and completion.truncated
                        and len(parts) < MAX_CONTINUATIONS)
                if not more:
                    del self._open[request.parent]
            if more:
                return [continuation_request(parent, whole.content, len(parts) + 1)]
            return self._then(parent, whole) if self._then else []
        spec = self._kinds.get(request.kind)
        if (spec is not None and completion.ok and completion.truncated
                and spec.schema is None and spec.template is not None and not spec.follows):
            with self._lock:
                self._open[request.name] = (request, completion, [])
            return [continuation_request(request, completion.content, 1)]
        return self._then(request, completion) if self._then else []


def with_continuations(pairs: Sequence[tuple[PromptRequest, Completion]]
                       ) -> list[tuple[PromptRequest, Completion]]:
    """The pairs with each answer joined to its continuations (which stay in the list, for
    what they cost, after it)."""
    parts: dict[str, list[tuple[str, Completion]]] = {}
    for request, completion in pairs:
        if request.kind == CONTINUE:
            parts.setdefault(request.parent, []).append((request.name, completion))
    ordered = {parent: [c for _, c in sorted(found, key=lambda item: _part(item[0]))]
               for parent, found in parts.items()}
    return [(r, joined(c, ordered[r.name]) if r.name in ordered and r.kind != CONTINUE else c)
            for r, c in pairs]


def _part(name: str) -> int:
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0
