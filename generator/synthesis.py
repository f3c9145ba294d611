"""The synthesize stage: run every prompt once, ever, and record what came back.

Answers are cached by what produced them (model, messages, parameters) as soon as each one
arrives, so an interrupted run resumes where it stopped and an unchanged edition sends nothing.
A prompt that fails is recorded with its error and the others go on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .cache import Cache, completion_key, read_json, write_json
from .errors import LlmRequestError
from .llm_client import ChatClient
from .models import Completion, Message, PromptRequest, SynthesisResult

log = logging.getLogger(__name__)

# Called as (request, completion) when a prompt finishes, from worker threads.
OnDone = Callable[[PromptRequest, Completion], None]


def run_synthesis(
    requests: Sequence[PromptRequest],
    client: ChatClient,
    cache: Cache,
    *,
    bundle_chars: int,
    bundle_tokens: int,
    max_concurrency: int = 4,
    on_done: OnDone | None = None,
) -> SynthesisResult:
    """Answer every request, from the cache where possible; results keep the requests' order."""
    started = time.perf_counter()
    keys = [completion_key(client.model, r) for r in requests]
    cached = [cache.get_completion(k) for k in keys]
    todo = [i for i, c in enumerate(cached) if c is None]
    log.info("%d prompt(s): %d cached, %d to send", len(requests), len(requests) - len(todo), len(todo))
    results: list[Completion | None] = [
        None if c is None else _renamed(c, requests[i].name) for i, c in enumerate(cached)
    ]
    for i, c in enumerate(results):
        if c is not None and on_done:
            on_done(requests[i], c)

    if todo:
        client.check_ready()  # fail before any prompt is sent, naming the URL

        def work(index: int) -> Completion:
            request = requests[index]
            try:
                completion = client.complete(request)
            except LlmRequestError as err:
                log.error("prompt %s failed: %s", request.name, err)
                completion = Completion(name=request.name, model=client.model, error=str(err))
            else:
                cache.put_completion(keys[index], completion)
            if on_done:
                on_done(request, completion)
            return completion

        with ThreadPoolExecutor(max_workers=max(1, max_concurrency)) as pool:
            for index, completion in zip(todo, pool.map(work, todo), strict=True):
                results[index] = completion

    final = tuple(c for c in results if c is not None)
    return SynthesisResult(
        model=client.model,
        requests=tuple(requests),
        completions=final,
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
            messages=(Message("user", ""),), max_tokens=item["max_tokens"],
            temperature=item["temperature"], thinking=item["thinking"],
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
