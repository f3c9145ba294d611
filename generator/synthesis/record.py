"""The synthesis stage's record of an edition: every prompt with its answer or its error.

Kept in the cache (`editions/<edition>/synthesis.json`) for the render stage and for reruns;
the requests are stored without their messages (the bundle is not stored twice).
"""

from __future__ import annotations

import logging
from typing import Any

from ..chat_models import Completion, PromptRequest, SynthesisResult
from ..store.cache import Cache, read_json, write_json

log = logging.getLogger(__name__)


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
        "server": result.server,
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
                "subject": r.subject,
                "prompt_hash": r.prompt_hash,
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
            page_title=item.get("page_title", ""), subject=item.get("subject"),
            sent_hash=item.get("prompt_hash", ""),
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
        server=data.get("server", ""),
    )
