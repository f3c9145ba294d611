"""The batch of an edition's prompts: run every prompt once, ever, and record what came back.

Answers are cached by what produced them (model, messages, parameters) as soon as each one
arrives, so an interrupted run resumes where it stopped and an unchanged edition sends nothing.
A prompt that fails is recorded with its error and the others go on.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from ..completions import UNFIT_CHECK, Completion, PromptRequest, SynthesisResult
from ..kinds import KindRegistry
from ..ports import ChatModel, StreamEvents
from ..store.cache import Cache, completion_key
from .cuts import SUSPECT_CUT
from .dispatch import GATE_TIMEOUT_S, AdaptiveWidth, Dispatcher, concurrency, dispatch_plan
from .json_answers import StructuredFormats
from .one_request import Shrink, complete_one, renamed
from .share import FleetShare

log = logging.getLogger(__name__)


class Observer:
    """What the synthesis stage reports while it runs (from worker threads); no-ops by default."""

    def started(self, request: PromptRequest) -> None: ...

    def progress(self, request: PromptRequest, pieces: int) -> None: ...

    def done(self, request: PromptRequest, completion: Completion) -> None: ...

    def planned(self, total: int, cached: int) -> None:
        """How many prompts the stage has, and how many of them the cache answers."""

    def added(self, count: int) -> None:
        """An answer brought `count` more prompts to send (its evidence checks)."""

    def stage(self, name: str) -> None:
        """A pipeline stage begins (called by the pipeline, not by synthesis)."""


class _Events(StreamEvents):
    def __init__(self, request: PromptRequest, observer: Observer, prefilled: Callable[[], None]) -> None:
        self._request, self._observer, self._prefilled = request, observer, prefilled

    def first_token(self) -> None:
        self._prefilled()

    def progress(self, pieces: int) -> None:
        self._observer.progress(self._request, pieces)


# The requests that follow from an answer (evidence checks) or from a follow-up (the
# judgement of a check's quotes), given the request and its answer.
FollowUp = Callable[[PromptRequest, Completion], Sequence[PromptRequest]]


def run_batch(
    requests: Sequence[PromptRequest],
    client: ChatModel,
    cache: Cache,
    *,
    bundle_chars: int,
    bundle_tokens: int,
    max_concurrency: int = 0,
    server_info: Callable[[], dict[str, Any] | None] | None = None,
    prefill_gate: bool = True,
    gate_timeout: float = GATE_TIMEOUT_S,
    observer: Observer | None = None,
    shrink: Shrink | None = None,
    follow_up: FollowUp | None = None,
    formats: StructuredFormats | None = None,
    width: AdaptiveWidth | None = None,
    load: Callable[[], int | None] | None = None,
    kinds: KindRegistry,
) -> SynthesisResult:
    """Answer every request, from the cache where possible, and then their follow-ups.

    Requests are sent concurrently (see `dispatch.concurrency`) in the order `dispatch_plan`
    gives: the prompts that carry the bundle wait, with `prefill_gate`, for the first one's
    first token, so that they prefill only their own task text. A request's follow-ups go out
    as soon as its answer is in. Results: the requests in order, then the follow-ups in the
    order of the requests they follow (whatever order they finished in). With `load` (the
    server's requests in flight, where it reports them), a server that states its limits is
    shared: the run takes only the width that others' requests leave (share.FleetShare).
    """
    observer = observer or Observer()
    started = time.perf_counter()
    run = _Run(list(requests), client, cache, follow_up)
    formats = formats or StructuredFormats()
    todo = run.todo()
    log.info("%d prompt(s): %d cached, %d to send", len(run.requests),
             len(run.requests) - len(todo), len(todo))
    observer.planned(len(run.requests), len(run.requests) - len(todo))
    for request, completion in zip(run.requests, run.results, strict=True):
        if completion is not None:
            observer.done(request, completion)
    if todo:
        client.check_ready()  # fail before any prompt is sent, naming the URL
        plan = dispatch_plan(run.requests, todo, kinds)
        dispatcher = Dispatcher(plan, gate=prefill_gate, timeout=gate_timeout)
        todo_requests = [run.requests[i] for i in todo]
        private = max(r.max_tokens + sum(len(m.content) for m in r.messages) // 4
                      - (bundle_tokens if kinds.shares_bundle(r) else 0)
                      for r in todo_requests)
        # The server's limits, asked for only now that something is to be sent.
        info = server_info() if server_info and not max_concurrency else None
        # A server that did not say its limits is never flooded (AdaptiveWidth): `width`,
        # where given, starts where the last run against this server settled.
        adaptive = (width or AdaptiveWidth()) if info is None and not max_concurrency else None
        if adaptive is not None:
            adaptive.used = True
        elif info is not None and info.get("router") and not max_concurrency:
            # Behind SGLang's router the workers' sum is a ceiling, not a promise: the router
            # may take fewer at once (--max-concurrent-requests) without saying so, and answer
            # 429; the width then narrows, and grows back to the fleet's, never beyond it.
            fleet = concurrency(0, info, len(todo) + (1 << 20), private, bundle_tokens)
            adaptive = AdaptiveWidth(fleet, ceiling=fleet)

        # Others on the same server (another digest, a reader's ask) keep their part of it.
        share = FleetShare(concurrency(0, info, 1 << 20, private, bundle_tokens), load) \
            if load is not None and info is not None and not max_concurrency else None

        def limit(sent: int) -> int:
            width = concurrency(max_concurrency, info, sent, private, bundle_tokens)
            width = min(width, adaptive.width) if adaptive else width
            return share.cap(width) if share else width

        pool = _Pool(limit)
        overloads: dict[int, int] = defaultdict(int)  # request index -> times sent again
        suspected: set[int] = set()  # requests sent again because their answer looked cut
        log.info("sending %d prompt(s), up to %d at a time", len(todo), pool.limit(len(todo)))

        def work(index: int) -> None:
            request = run.requests[index]
            observer.started(request)
            events = _Events(request, observer, lambda: dispatcher.prefilled(index))
            if share is not None:
                try:  # what the others on the server leave, read just now; a request that
                    share.admit()  # waits for them is not yet in flight for the width below
                except BaseException:
                    dispatcher.prefilled(index)
                    raise
            ticket = adaptive.sent() if adaptive is not None else None
            try:
                # Where the width is ours to find, a sign of overload comes back at once and
                # is sent again below, fewer at a time, never by the client itself.
                # An answer that reads as cut is suspected only of a server that says nothing
                # of itself (a proxy that turns a cut into `stop`), not of SGLang's workers.
                completion, sent = complete_one(client, cache, request, run.keys[index],
                                             events, shrink, formats=formats,
                                             retry=adaptive is None,
                                             cuts=index in suspected if info is None and
                                             adaptive is not None else None, kinds=kinds,
                                             crowded=_crowded(adaptive, ticket))
            except BaseException:
                if adaptive is not None:  # workers waiting for a slot must not wait for ever
                    adaptive.answered(False, False, ticket)
                raise
            finally:  # a lead that failed before its first token must not hold the others
                dispatcher.prefilled(index)
                if share is not None:
                    share.ended()
            if adaptive is not None:
                overloaded = _overloaded(completion)
                # An answer kept although it still looked cut says the server cut it: the
                # width narrows, though the answer is not sent again.
                adaptive.answered(completion.ok and not completion.cut,
                                  overloaded or completion.cut, ticket)
                if overloaded and overloads[index] < OVERLOAD_RETRIES:
                    # A sign to back off, not yet a failure: sent again, fewer at a time, as
                    # it was last sent (cut to fit, perhaps: the cut is not made twice).
                    overloads[index] += 1
                    run.sent_as(index, sent)
                    if SUSPECT_CUT in completion.error:
                        suspected.add(index)
                    log.info("%s met an overloaded server (%s); sending it again, %d at a time",
                             request.name, completion.error, adaptive.width)
                    dispatcher.add([index])
                    return
                pool.grow(0, worker)  # wider if the server kept up
            observer.done(request, completion)

            added = run.answered(index, completion, sent)
            if added:
                observer.added(len(added))
                dispatcher.add(added)
                pool.grow(len(added), worker)  # follow-ups get slots of their own

        def worker() -> bool:
            """Send requests until none is left; True if it retired early (see _Pool)."""
            while True:
                if pool.retire():
                    return True
                index = dispatcher.next()
                if index is None:
                    return False
                try:
                    work(index)
                finally:
                    dispatcher.finished()

        pool.run(len(todo), worker)
        cache.sync()  # the answers written above, to disk at once
    requests_, results = run.ordered()
    return _result(client, requests_, results, bundle_chars, bundle_tokens, started)


OVERLOAD_RETRIES = 5  # times a request that met overload is sent again, fewer at a time


def _crowded(adaptive: AdaptiveWidth | None, ticket: int | None) -> Callable[[], bool]:
    """Whether the request of `ticket` had company at the server (AdaptiveWidth.crowded)."""
    if adaptive is None or ticket is None:
        return lambda: False
    return lambda: adaptive.crowded(ticket)


def _overloaded(completion: Completion) -> bool:
    """Whether a failed request met an overloaded server (judged from the response when it
    failed: a status, a dropped connection, a cut stream), not a prompt the server refused."""
    return not completion.ok and completion.overloaded


class _Pool:
    """Worker threads, as many as `limit(sent)` allows for the requests sent so far: follow-ups
    are known only as answers come in, and each batch of them may widen the pool (up to what
    the server runs at once), so that they do not queue behind a width sized without them.
    When the limit falls (a server that showed overload), workers retire between requests."""

    def __init__(self, limit: Callable[[int], int]) -> None:
        self.limit = limit
        self._sent = 0
        self._live = 0  # workers started and not yet returned
        self._futures: list[Future[None]] = []
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def grow(self, more: int, worker: Callable[[], bool]) -> None:
        with self._lock:
            self._sent += more
            assert self._executor is not None
            while self._live < min(self.limit(self._sent), self._sent):
                self._live += 1
                self._futures.append(self._executor.submit(self._counted, worker))

    def retire(self) -> bool:
        """Whether the calling worker should stop now (more are running than the limit allows;
        the last one never does). A worker told so returns True and is counted out here."""
        with self._lock:
            if self._live > max(1, self.limit(self._sent)):
                self._live -= 1
                return True
            return False

    def _counted(self, worker: Callable[[], bool]) -> None:
        retired = False
        try:
            retired = worker()
        finally:
            if not retired:
                with self._lock:
                    self._live -= 1

    def run(self, sent: int, worker: Callable[[], bool]) -> None:
        """Start the workers for `sent` requests and wait for every worker, started now or
        later; the first worker's exception is raised."""
        with ThreadPoolExecutor(max_workers=1024) as self._executor:
            self.grow(sent, worker)
            waited = 0
            while True:
                with self._lock:
                    if waited == len(self._futures):
                        break
                    future = self._futures[waited]
                future.result()
                waited += 1


class _Run:
    """The requests of one synthesis run, growing as answers bring follow-ups (thread-safe)."""

    def __init__(self, requests: list[PromptRequest], client: ChatModel, cache: Cache,
                 follow_up: FollowUp | None) -> None:
        self.requests: list[PromptRequest] = []
        self.keys: list[str] = []
        self.results: list[Completion | None] = []
        self.parents: list[int | None] = []
        self._client, self._cache, self._follow_up = client, cache, follow_up
        self._lock = threading.Lock()
        for request in requests:
            self._append(request, None)

    def _append(self, request: PromptRequest, parent: int | None) -> list[int]:
        """Append a request (and, where the cache answers it, its follow-ups); the indexes
        of those still to send."""
        key = completion_key(self._client.model, request)
        cached = self._cache.get_completion(key)
        self.requests.append(request)
        self.keys.append(key)
        self.results.append(None if cached is None else renamed(cached, request.name))
        self.parents.append(parent)
        index = len(self.requests) - 1
        return [index] if cached is None else self._expand(index)

    def _expand(self, index: int) -> list[int]:
        """Append the follow-ups of an answered request (and theirs, where the cache answers
        them); the indexes of those still to send."""
        completion = self.results[index]
        if self._follow_up is None or completion is None:
            return []
        return [i for r in self._follow_up(self.requests[index], completion)
                for i in self._append(r, index)]

    def todo(self) -> list[int]:
        return [i for i, c in enumerate(self.results) if c is None]

    def answered(self, index: int, completion: Completion, sent: PromptRequest) -> list[int]:
        """`sent`: the request as it went out (cut to fit, perhaps), which its follow-ups
        continue: an evidence check of a cut answer carries the cut bundle, as a rerun's will."""
        with self._lock:
            self._sent_as(index, sent)
            self.results[index] = completion
            return self._expand(index)

    def sent_as(self, index: int, sent: PromptRequest) -> None:
        """The request at `index` is, from now on, as it was last sent (to be sent again)."""
        with self._lock:
            self._sent_as(index, sent)

    def _sent_as(self, index: int, sent: PromptRequest) -> None:
        if sent is not self.requests[index]:
            self.requests[index] = sent
            self.keys[index] = completion_key(self._client.model, sent)

    def ordered(self) -> tuple[list[PromptRequest], list[Completion | None]]:
        """The requests, then their follow-ups in the requests' order, then the follow-ups'
        own (a check's judgement) in theirs: the same order however they finished."""
        children: dict[int | None, list[int]] = defaultdict(list)
        for i, p in enumerate(self.parents):
            children[p].append(i)
        order, level = [], children[None]
        while level:
            order += level
            level = [child for i in level for child in children.get(i, ())]
        return [self.requests[i] for i in order], [self.results[i] for i in order]


def failed(completion: Completion) -> bool:
    """Whether a completion is a failure of the run (an unfit check is reported, not failed)."""
    return not completion.ok and not completion.error.startswith(UNFIT_CHECK)


def _result(client: ChatModel, requests: Sequence[PromptRequest],
            results: Sequence[Completion | None], bundle_chars: int, bundle_tokens: int,
            started: float) -> SynthesisResult:
    return SynthesisResult(
        model=client.model,
        requests=tuple(requests),
        completions=tuple(c for c in results if c is not None),
        bundle_chars=bundle_chars,
        bundle_tokens=bundle_tokens,
        wall_time_s=round(time.perf_counter() - started, 3),
    )
