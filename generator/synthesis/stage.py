"""The synthesize stage: run every prompt once, ever, and record what came back.

Answers are cached by what produced them (model, messages, parameters) as soon as each one
arrives, so an interrupted run resumes where it stopped and an unchanged edition sends nothing.
A prompt that fails is recorded with its error and the others go on.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from ..cache import Cache, completion_key, read_json, write_json
from ..errors import LlmRequestError
from ..kinds import KINDS, STRUCTURED, schema_for
from ..models import Completion, Message, PromptRequest, SynthesisResult
from ..urls import redact_text
from .llm_client import ChatClient, StreamEvents
from .planning import context_from_error
from .structured import InvalidAnswer, parse_answer

log = logging.getLogger(__name__)


class Observer:
    """What the synthesis stage reports while it runs (from worker threads); no-ops by default."""

    def started(self, request: PromptRequest) -> None: ...

    def progress(self, request: PromptRequest, pieces: int) -> None: ...

    def done(self, request: PromptRequest, completion: Completion) -> None: ...

    def planned(self, total: int, cached: int) -> None:
        """How many prompts the stage has, and how many of them the cache answers."""

    def stage(self, name: str) -> None:
        """A pipeline stage begins (called by the pipeline, not by synthesis)."""


# Rebuilds a request with a bundle that fits `context_tokens`, or None if it cannot be cut.
Shrink = Callable[[PromptRequest, int], PromptRequest | None]


class _Events(StreamEvents):
    def __init__(self, request: PromptRequest, observer: Observer, prefilled: threading.Event) -> None:
        self._request, self._observer, self._prefilled = request, observer, prefilled

    def first_token(self) -> None:
        self._prefilled.set()

    def progress(self, pieces: int) -> None:
        self._observer.progress(self._request, pieces)


def run_synthesis(
    requests: Sequence[PromptRequest],
    client: ChatClient,
    cache: Cache,
    *,
    bundle_chars: int,
    bundle_tokens: int,
    max_concurrency: int = 8,
    prefill_gate: bool = True,
    observer: Observer | None = None,
    shrink: Shrink | None = None,
) -> SynthesisResult:
    """Answer every request, from the cache where possible; results keep the requests' order.

    Requests are sent concurrently. Requests that share a prefix (same thinking mode) wait, with
    `prefill_gate`, until the first of them has its first token: its prefill has then put the
    bundle in the server's prefix cache, so the others prefill only their own task text.
    """
    observer = observer or Observer()
    started = time.perf_counter()
    keys = [completion_key(client.model, r) for r in requests]
    results: list[Completion | None] = [cache.get_completion(k) for k in keys]
    results = [None if c is None else _renamed(c, r.name)
               for c, r in zip(results, requests, strict=True)]
    todo = [i for i, c in enumerate(results) if c is None]
    log.info("%d prompt(s): %d cached, %d to send", len(requests), len(requests) - len(todo), len(todo))
    observer.planned(len(requests), len(requests) - len(todo))
    for request, completion in zip(requests, results, strict=True):
        if completion is not None:
            observer.done(request, completion)
    if not todo:
        return _result(client, requests, results, bundle_chars, bundle_tokens, started)

    client.check_ready()  # fail before any prompt is sent, naming the URL
    groups, order = dispatch_order(requests, todo)
    gates = {group: threading.Event() for group in groups}
    leaders = {members[0] for members in groups.values()}

    def work(index: int) -> Completion:
        request = requests[index]
        gate = gates[_group(request)]
        if index not in leaders and prefill_gate:
            gate.wait()
        observer.started(request)
        try:
            events = _Events(request, observer, gate)
            completion = _complete(client, cache, request, keys[index], events, shrink)
        finally:
            gate.set()  # a leader that failed before its first token must not hold the others
        observer.done(request, completion)
        return completion

    with ThreadPoolExecutor(max_workers=max(1, max_concurrency)) as pool:
        for index, completion in zip(order, pool.map(work, order), strict=True):
            results[index] = completion
    return _result(client, requests, results, bundle_chars, bundle_tokens, started)


def dispatch_order(requests: Sequence[PromptRequest], todo: Sequence[int]
                   ) -> tuple[dict[str, list[int]], list[int]]:
    """The prefix groups of the requests to send, and the order they are handed to workers.

    Prompts that carry the bundle form one group per thinking mode; a brief carries only its
    paper and goes alone. The thinking group first: its long decode bounds the stage. Then
    the bundle leaders, their followers (so a waiting follower's leader is always running),
    and the briefs, which wait for no one and decode short answers. Deterministic: the same
    requests always go out in the same order.
    """
    groups: dict[str, list[int]] = {}
    for index in sorted(todo, key=lambda i: (not requests[i].thinking,
                                             not KINDS[requests[i].kind].shares_bundle)):
        groups.setdefault(_group(requests[index]), []).append(index)
    shared = [m for g, m in groups.items() if g.startswith("bundle")]
    order = ([m[0] for m in shared] + [i for m in shared for i in m[1:]]
             + [m[0] for g, m in groups.items() if not g.startswith("bundle")])
    return groups, order


def _group(request: PromptRequest) -> str:
    if not KINDS[request.kind].shares_bundle:
        return request.name
    return "bundle-thinking" if request.thinking else "bundle"


def _complete(client: ChatClient, cache: Cache, request: PromptRequest, key: str,
              events: StreamEvents, shrink: Shrink | None) -> Completion:
    """One request, with one retry on a smaller bundle if the server says it is too long."""
    try:
        if request.kind in STRUCTURED:
            completion = _structured(client, request, events)
        else:
            completion = client.complete(request, events)
    except LlmRequestError as err:
        context = context_from_error(str(err)) if err.status == 400 else None
        smaller = shrink(request, context) if (context and shrink) else None
        if smaller is None:
            # The observer (the CLI's progress) and the edition report it; logged once, quietly.
            log.info("prompt %s failed: %s", request.name, err)
            return Completion(name=request.name, model=client.model, error=redact_text(str(err)))
        log.warning("prompt %s was too long for a %d-token context; retrying with shorter "
                    "excerpts", request.name, context)
        return _complete(client, cache, smaller, completion_key(client.model, smaller), events, None)
    cache.put_completion(key, completion)
    return completion


def _structured(client: ChatClient, request: PromptRequest, events: StreamEvents) -> Completion:
    """A JSON answer that matches the request's schema: constrained by the server where it can,
    else asked for in words (the schema is in the task either way), and asked once more if the
    answer does not parse or validate. The completion's content is the validated JSON."""
    schema = schema_for(request.kind)
    try:
        completion = client.complete(request, events)
    except LlmRequestError as err:
        if err.status not in (400, 422) or context_from_error(str(err)):
            raise
        log.info("the server refused response_format for %s (%s); asking in words",
                 request.name, err)
        request = _without_response_format(request)
        completion = client.complete(request, events)
    try:
        data = parse_answer(completion.content, schema)
    except InvalidAnswer as err:
        log.warning("%s: %s; asking once more", request.name, err)
        retry = replace(request, messages=(*request.messages,
                                           Message("assistant", completion.content[:4000]),
                                           Message("user", f"That answer was invalid: {err}. "
                                                   "Reply with the corrected JSON object only.")))
        completion = client.complete(retry, events)
        try:
            data = parse_answer(completion.content, schema)
        except InvalidAnswer as again:
            raise LlmRequestError(f"no valid structured answer after a retry: {again}") from again
    return replace(completion, content=json.dumps(data, ensure_ascii=False, indent=1))


def _without_response_format(request: PromptRequest) -> PromptRequest:
    body = json.loads(request.extra_body_json)
    body.pop("response_format", None)
    return replace(request, extra_body_json=json.dumps(body, sort_keys=True))


def _result(client: ChatClient, requests: Sequence[PromptRequest],
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


def _renamed(completion: Completion, name: str) -> Completion:
    # The same prompt text may be cached under another page name (a renamed deep dive).
    if completion.name == name:
        return completion
    data = completion.to_dict() | {"name": name}
    return Completion.from_dict(data, from_cache=True)


def save_synthesis(cache: Cache, edition: str, result: SynthesisResult) -> None:
    """Record the stage's outcome, failures included, for the render stage."""
    write_json(cache.synthesis_path(edition), synthesis_to_dict(result))


def load_synthesis(cache: Cache, edition: str) -> SynthesisResult | None:
    data = read_json(cache.synthesis_path(edition))
    if not isinstance(data, dict):
        return None
    try:
        return synthesis_from_dict(data)
    except (KeyError, TypeError, ValueError) as err:
        log.warning("ignoring malformed synthesis record for %s: %s", edition, err)
        return None


def synthesis_to_dict(result: SynthesisResult) -> dict[str, Any]:
    return {
        "model": result.model,
        "bundle_chars": result.bundle_chars,
        "bundle_tokens": result.bundle_tokens,
        "wall_time_s": result.wall_time_s,
        "prompts": [
            {
                "name": r.name,
                "title": r.title,
                "kind": r.kind,
                "question": r.question,
                "max_tokens": r.max_tokens,
                "temperature": r.temperature,
                "thinking": r.thinking,
                "page_title": r.page_title,
                "completion": c.to_dict() | {"from_cache": c.from_cache},
            }
            for r, c in result.pairs()
        ],
    }


def synthesis_from_dict(data: dict[str, Any]) -> SynthesisResult:
    requests: list[PromptRequest] = []
    completions: list[Completion] = []
    for item in data["prompts"]:
        requests.append(PromptRequest(
            name=item["name"], title=item["title"], kind=item["kind"], question=item["question"],
            messages=(), max_tokens=item["max_tokens"],
            temperature=item["temperature"], thinking=item["thinking"],
            page_title=item.get("page_title", ""),
        ))
        completion = item["completion"]
        completions.append(Completion.from_dict(completion, from_cache=completion.get("from_cache", False)))
    return SynthesisResult(
        model=data["model"],
        requests=tuple(requests),
        completions=tuple(completions),
        bundle_chars=data["bundle_chars"],
        bundle_tokens=data["bundle_tokens"],
        wall_time_s=data["wall_time_s"],
    )
