"""In what order an edition's prompts go to the server, and how many at once.

Every prompt that carries the bundle shares one cached prefix on SGLang (DeepSeek V4's thinking
and non-thinking prompts differ only after the final assistant marker). One of them, the
*leader*, goes first; the others (*followers*) wait until its first token says the bundle is in
the prefix cache, or until a short timeout, and never for a whole answer. Prompts that share
nothing (briefs) fill free slots meanwhile. The leader is the thinking prompt: its long decode
bounds the stage, so it must start first.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..kinds import KINDS
from ..models import PromptRequest

# How long followers wait for the leader's first token before they go anyway. A server that
# matches prefixes when it schedules (SGLang) still serves them from the cache; one that does
# not loses only this much.
GATE_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class DispatchPlan:
    """The prompts to send, by role; indexes into the edition's requests."""

    leader: int | None
    followers: tuple[int, ...]  # longest answers first
    free: tuple[int, ...]  # in request order

    @property
    def order(self) -> list[int]:
        """The order with the gate open from the start."""
        return ([] if self.leader is None else [self.leader]) + [*self.followers, *self.free]


def dispatch_plan(requests: Sequence[PromptRequest], todo: Sequence[int]) -> DispatchPlan:
    """Deterministic: the same requests always give the same plan."""
    shared = sorted((i for i in todo if KINDS[requests[i].kind].shares_bundle),
                    key=lambda i: (not requests[i].thinking, -requests[i].max_tokens, i))
    free = tuple(i for i in todo if not KINDS[requests[i].kind].shares_bundle)
    if not shared:
        return DispatchPlan(None, (), free)
    return DispatchPlan(shared[0], tuple(shared[1:]), free)


class Dispatcher:
    """Hands request indexes to worker threads in the plan's order of priority.

    The leader first; while the gate is closed, free prompts; once it opens (the leader's first
    token, its end, or `timeout` after it started), followers before any free prompt left.
    Follow-ups (`add`) go before the remaining free prompts: they finish an answer's work.
    `next()` returns None when nothing is left and nothing running can add more; a worker calls
    `finished()` after each request, once it has added that request's follow-ups.
    """

    def __init__(self, plan: DispatchPlan, *, gate: bool = True,
                 timeout: float = GATE_TIMEOUT_S, clock: Any = time.monotonic) -> None:
        self._leader = [] if plan.leader is None else [plan.leader]
        self._followers = list(plan.followers)
        self._free = list(plan.free)
        self._open = not gate or plan.leader is None
        self._timeout, self._clock = timeout, clock
        self._deadline: float | None = None
        self._running = 0
        self._cond = threading.Condition()

    def open_gate(self) -> None:
        with self._cond:
            self._open = True
            self._cond.notify_all()

    def add(self, indexes: Sequence[int]) -> None:
        with self._cond:
            self._free[:0] = indexes
            self._cond.notify_all()

    def finished(self) -> None:
        with self._cond:
            self._running -= 1
            self._cond.notify_all()

    def next(self) -> int | None:
        with self._cond:
            while True:
                index = self._pick()
                if index is not None:
                    self._running += 1
                    return index
                if not self._followers and not self._running:
                    return None
                wait = None if self._deadline is None else max(0.0, self._deadline - self._clock())
                self._cond.wait(wait)

    def _pick(self) -> int | None:
        if self._leader:
            self._deadline = self._clock() + self._timeout
            return self._leader.pop()
        if self._deadline is not None and self._clock() >= self._deadline:
            self._open = True
        if self._open and self._followers:
            return self._followers.pop(0)
        if self._free:
            return self._free.pop(0)
        return None


def concurrency(configured: int, server_info: dict[str, Any] | None, prompts: int,
                private_tokens: int, shared_tokens: int) -> int:
    """How many prompts to keep in flight.

    `configured` (`[llm] max_concurrency`) wins when set. Otherwise as many as the server runs
    at once (`max_running_requests`), no more than its KV-cache budget holds beside the shared
    bundle (`max_total_num_tokens`, each prompt holding `private_tokens` of its own), and no
    more than there are prompts: a server that says nothing gets the whole edition at once and
    queues what it cannot run.
    """
    if configured > 0:
        return max(1, min(configured, prompts))
    limit = prompts
    info = server_info or {}
    running = _positive(info.get("max_running_requests"))
    if running is None:
        states = info.get("internal_states")
        if isinstance(states, list) and states and isinstance(states[0], dict):
            running = _positive(states[0].get("max_running_requests"))
    if running is not None:
        limit = min(limit, running)
    budget = _positive(info.get("max_total_num_tokens"))
    if budget is not None and private_tokens > 0:
        limit = min(limit, max(1, (budget - shared_tokens) // private_tokens))
    return max(1, limit)


def _positive(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
