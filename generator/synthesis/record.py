"""The synthesis's record of an edition: every prompt with its answer or its error.

Kept in the cache (`editions/<edition>/synthesis.json`) for the render stage and for reruns;
the requests are stored without their messages (the bundle is not stored twice).
"""

from __future__ import annotations

import logging
import re
from typing import Any

from ..completions import Completion, PromptRequest, SynthesisResult
from ..kinds import EVIDENCE, JUDGE, legacy_subject
from ..store.cache import Cache, read_json, write_json
from ..store.codec import CodecError, from_data, to_data

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
    except (KeyError, TypeError, ValueError, CodecError) as err:
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
                **({"parent": r.parent, "claims": list(r.claims)} if r.parent else {}),
                "completion": to_data(c),
            }
            for r, c in result.pairs()
        ],
    }


# A follow-up as a cache written before 0.9 names it: `evidence-<answer>-<first>-<last>` or
# `judge-<answer>-<first>-<last>`, its claims a range. Read here once, into typed fields.
_LEGACY_FOLLOW_UP_RE = re.compile(r"(?:evidence|judge)-(.+)-(\d+)-(\d+)")


def _follows(item: dict[str, Any]) -> tuple[str, tuple[int, ...]]:
    """(the answer it follows up, the claims it covers) of a recorded request."""
    if "parent" in item:
        return str(item["parent"]), tuple(int(n) for n in item.get("claims", ()))
    legacy = (_LEGACY_FOLLOW_UP_RE.fullmatch(item["name"])
              if item["kind"] in (EVIDENCE, JUDGE) else None)
    if legacy is None:
        return "", ()
    return legacy.group(1), tuple(range(int(legacy.group(2)), int(legacy.group(3)) + 1))


def synthesis_from_dict(data: dict[str, Any]) -> SynthesisResult:
    requests: list[PromptRequest] = []
    completions: list[Completion] = []
    for item in data["prompts"]:
        parent, claims = _follows(item)
        requests.append(PromptRequest(
            name=item["name"], title=item["title"], kind=item["kind"], question=item["question"],
            messages=(), max_tokens=item["max_tokens"],
            temperature=item["temperature"], thinking=item["thinking"],
            page_title=item.get("page_title", ""),
            subject=legacy_subject(item["kind"], item["name"], item.get("subject")),
            sent_hash=item.get("prompt_hash", ""), parent=parent, claims=claims,
        ))
        completions.append(from_data(Completion, item["completion"], "completion"))
    return SynthesisResult(
        model=data["model"],
        requests=tuple(requests),
        completions=tuple(completions),
        bundle_chars=data["bundle_chars"],
        bundle_tokens=data["bundle_tokens"],
        wall_time_s=data["wall_time_s"],
        server=data.get("server", ""),
    )
