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

from ..completions import PromptRequest
from ..kinds import KindRegistry

# How long followers wait for the leader's first token before they go anyway. A server that
# matches prefixes when it schedules (SGLang) still serves them from the cache; one that does
# not loses only this much.
GATE_TIMEOUT_S = 10.0
# Prompts in flight at first on a server that does not say its limits (no /server_info: vLLM,
# llama.cpp, hosted APIs); one more for each answer that comes back whole.
UNKNOWN_START = 2


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


def dispatch_plan(requests: Sequence[PromptRequest], todo: Sequence[int],
                  kinds: KindRegistry) -> DispatchPlan:
    """Deterministic: the same requests always give the same plan."""
    shared = sorted((i for i in todo if kinds.shares_bundle(requests[i])),
                    key=lambda i: (not requests[i].thinking, -requests[i].max_tokens, i))
    free = tuple(i for i in todo if not kinds.shares_bundle(requests[i]))
    if not shared:
        return DispatchPlan(None, (), free)
    return DispatchPlan(shared[0], tuple(shared[1:]), free)


class Dispatcher:
    """Hands request indexes to worker threads in the plan's order of priority.

    A *gate* holds prompts that share a prefix with a *lead* until the lead's first token says
    that prefix is in the server's cache (`prefilled`), its end, or `timeout` after it went
    out. The plan's leader holds its followers; the follow-ups of one answer (`add`), which
    share that answer, are led by their first. Released prompts go before the free prompts
    left (briefs), which fill slots meanwhile. `next()` returns None when nothing is left and
    nothing running can add more; a worker calls `finished()` after each request, once it has
    added that request's follow-ups.
    """

    def __init__(self, plan: DispatchPlan, *, gate: bool = True,
                 timeout: float = GATE_TIMEOUT_S, clock: Any = time.monotonic) -> None:
        self._gating, self._timeout, self._clock = gate, timeout, clock
        self._leads: list[int] = []  # to hand out before anything else
        self._held: dict[int, list[int]] = {}  # lead -> the prompts its gate holds
        self._deadlines: dict[int, float] = {}  # lead -> when its gate opens regardless
        self._free = list(plan.free)
        self._running = 0
        self._cond = threading.Condition()
        if plan.leader is None or not gate:
            self._free[:0] = plan.order[:len(plan.order) - len(plan.free)]
        else:
            self._leads.append(plan.leader)
            self._held[plan.leader] = list(plan.followers)

    def prefilled(self, lead: int) -> None:
        """`lead`'s prompt is in the cache (its first token, or its end): open its gate."""
        with self._cond:
            self._release(lead)
            self._cond.notify_all()

    def add(self, indexes: Sequence[int]) -> None:
        """Follow-ups of one answer: the first leads, the rest wait for its prefill."""
        if not indexes:
            return
        with self._cond:
            if self._gating and len(indexes) > 1:
                self._leads.append(indexes[0])
                self._held[indexes[0]] = list(indexes[1:])
            else:
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
                if not self._held and not self._running:
                    return None
                # Prompts held by a gate: wake at its deadline; otherwise at a change.
                wait = min(self._deadlines.values(), default=None)
                self._cond.wait(None if wait is None else max(0.0, wait - self._clock()))

    def _release(self, lead: int) -> None:
        self._free[:0] = self._held.pop(lead, [])
        self._deadlines.pop(lead, None)

    def _pick(self) -> int | None:
        now = self._clock()
        for lead, deadline in list(self._deadlines.items()):
            if now >= deadline:
                self._release(lead)
        if self._leads:
            lead = self._leads.pop(0)
            if lead in self._held:
                self._deadlines[lead] = now + self._timeout
            return lead
        if self._free:
            return self._free.pop(0)
        return None


class AdaptiveWidth:
    """How many prompts a server that did not say its limits gets at once: additive increase,
    multiplicative decrease. `UNKNOWN_START` at first, one more for each answer that comes back
    whole, half as many (never under one) after a sign of overload (429, 503, a dropped
    connection, a cut stream), and never again as many as showed it: a server that cuts
    streams when another request waits (llama-cpp-python) backs the digest off before every
    request fails. The batch runner sends a request that met overload again
    (OVERLOAD_RETRIES) once the width has narrowed.

    What it remembers for the next run (`settled`) is only what the server was seen to hold:
    the most requests in flight at once of which none met overload. `ceiling`: what the
    server says it serves at once without a queue (llama-server's slots), never exceeded."""

    def __init__(self, start: int | None = None, ceiling: int | None = None) -> None:
        ceiling = max(1, ceiling) if ceiling else None
        self._width = max(1, start or UNKNOWN_START)
        if ceiling is not None:
            self._width = min(self._width, ceiling)
        self.used = False  # set by the batch runner when the server did not state its limits
        self._ceiling: int | None = ceiling
        self._overloads = 0
        self._backed_off_at = 0  # tickets from here on were sent after the last back-off
        self._next = 0
        self._open: set[int] = set()  # tickets in flight
        self._groups: list[frozenset[int]] = []  # what was in flight at each send, undecided
        self._held_by: dict[int, bool] = {}  # ticket -> answered without a sign of overload
        self._held = 0  # the most in flight at once, every one of them held
        self._lock = threading.Condition()

    @property
    def width(self) -> int:
        with self._lock:
            return self._width

    @property
    def settled(self) -> int:
        """What to start at next time: what the server was seen to hold, never above the
        width that showed overload; where it was seen to hold nothing, one."""
        with self._lock:
            if self._held:
                return min(self._held, self._ceiling or self._held)
            return 1 if self._overloads else self._width

    def sent(self) -> int:
        """A request goes out, once fewer than `width` are in flight (a worker that took it
        before the width fell waits here): its ticket, handed back to `answered`."""
        with self._lock:
            self._lock.wait_for(lambda: len(self._open) < self._width)
            ticket = self._next
            self._next += 1
            self._open.add(ticket)
            self._groups.append(frozenset(self._open))
            return ticket

    def answered(self, ok: bool, overloaded: bool, ticket: int | None = None) -> None:
        with self._lock:
            if ticket is not None:
                self._open.discard(ticket)
                self._held_by[ticket] = ok and not overloaded
                self._settle_groups()
            if overloaded:
                self._overloads += 1
                if ticket is None or ticket >= self._backed_off_at:
                    # Never again as wide as what showed overload: a server with one slot that
                    # cuts a stream when another request waits (llama-cpp-python) stays at one.
                    # Requests sent before this back-off met the same crowd: they say nothing
                    # of the narrower width, so they do not narrow it again.
                    self._ceiling = max(1, min(self._ceiling or self._width, self._width - 1))
                    self._width = max(1, self._width // 2)
                    self._backed_off_at = self._next
            elif ok and (self._ceiling is None or self._width < self._ceiling):
                self._width += 1
            self._lock.notify_all()

    def _settle_groups(self) -> None:
        """Credit each group of requests that were in flight together once all are answered."""
        undecided = []
        for group in self._groups:
            if any(member not in self._held_by for member in group):
                undecided.append(group)
            elif all(self._held_by[member] for member in group):
                self._held = max(self._held, len(group))
        self._groups = undecided


def concurrency(configured: int, server_info: dict[str, Any] | None, prompts: int,
                private_tokens: int, shared_tokens: int) -> int:
    """How many prompts to keep in flight.

    `configured` (`[llm] max_concurrency`) wins when set. Otherwise as many as the server runs
    at once (`max_running_requests`), no more than its KV-cache budget holds beside the shared
    bundle (`max_total_num_tokens`, each prompt holding `private_tokens` of its own), and no
    more than there are prompts. Behind SGLang's router (`workers`, synthesis/router.py) that
    is the sum of each worker's own limit: each holds the bundle in its own cache. A server
    that says nothing is given UNKNOWN_START at first by the batch runner, and more as its
    answers come back whole.
    """
    if configured > 0:
        return max(1, min(configured, prompts))
    info = server_info or {}
    workers = info.get("workers")
    if isinstance(workers, list) and workers:
        limits = [_one_server(w, private_tokens, shared_tokens) if isinstance(w, dict) else None
                  for w in workers]
        # Every worker states its limits where the fleet is read (router.fleet_limits).
        limit = sum(w or 1 for w in limits)
    else:
        limit = _one_server(info, private_tokens, shared_tokens) or prompts
    return max(1, min(limit, prompts))


def stated_running(info: dict[str, Any]) -> int | None:
    """`max_running_requests` as SGLang states it (some versions under `internal_states`)."""
    running = _positive(info.get("max_running_requests"))
    if running is None:
        states = info.get("internal_states")
        if isinstance(states, list) and states and isinstance(states[0], dict):
            running = _positive(states[0].get("max_running_requests"))
    return running


def _one_server(info: dict[str, Any], private_tokens: int, shared_tokens: int) -> int | None:
    """One server's limit from its /server_info; None where it states none."""
    limit = stated_running(info)
    budget = _positive(info.get("max_total_num_tokens"))
    if budget is not None and private_tokens > 0:
        held = max(1, (budget - shared_tokens) // private_tokens)
        limit = held if limit is None else min(limit, held)
    return limit


def _positive(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
