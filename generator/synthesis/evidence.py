"""Evidence requests: after an answer, ask for a verbatim quote behind each citing sentence.

The request continues the answer's own conversation (its prompt, then the answer, then the
question), so on SGLang it shares the cached bundle and even the answer's tokens: only the
claims and the quotes are new work. Claims go in small batches, which decode side by side.
The quotes are checked mechanically at render time (`edition/evidence.py`); nothing here trusts
them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Sequence

from ..chat_models import Completion, Message, PromptRequest
from ..claims import Claim, claims_of
from ..config import EvidenceSettings
from ..kinds import KINDS, evidence_max_tokens
from .structured import EVIDENCE_SCHEMA, response_format, schema_instruction

TASK = """Evidence check. Your answer above cites papers of the bundle. For each numbered claim \
below, return the number of the cited paper that supports it and a quote of at most {words} \
words copied verbatim from that paper's text in the bundle (its abstract or full-text \
excerpt) that supports the claim. Copy the words exactly; do not paraphrase, do not quote the \
claim itself, and never quote another paper for it. If no passage of the cited papers supports \
the claim, return an empty quote.

Claims:
{claims}

{schema}"""


_NAME_RE = re.compile(r"evidence-(.+)-(\d+)-(\d+)")


def evidence_name(parent: str, batch: Sequence[Claim]) -> str:
    """`evidence-<answer>-<first claim>-<last claim>`: the name says what the request checks."""
    return f"evidence-{parent}-{batch[0].number}-{batch[-1].number}"


def parse_evidence_name(name: str) -> tuple[str, range] | None:
    """(the answer's request name, its claim numbers) from an evidence request's name."""
    match = _NAME_RE.fullmatch(name)
    if not match:
        return None
    return match.group(1), range(int(match.group(2)), int(match.group(3)) + 1)


def evidence_requests(parent: PromptRequest, completion: Completion, settings: EvidenceSettings,
                      papers: Collection[int]) -> list[PromptRequest]:
    """The evidence requests for one answer; none if it has no citing sentence or failed."""
    spec = KINDS[parent.kind]
    if not (settings.enabled and spec.evidence and completion.ok):
        return []
    claims = claims_of(completion.content, papers, spec.shift)
    size = settings.claims_per_request
    batches = [claims[i:i + size] for i in range(0, len(claims), size)]
    return [_request(parent, completion, batch, settings) for batch in batches]


def _request(parent: PromptRequest, completion: Completion, batch: list[Claim],
             settings: EvidenceSettings) -> PromptRequest:
    listed = "\n".join(
        f"[{c.number}] (cites {', '.join(f'Paper {n}' for n in c.papers)}) {c.sentence}"
        for c in batch)
    task = TASK.format(words=settings.max_quote_words, claims=listed,
                       schema=schema_instruction(EVIDENCE_SCHEMA))
    return PromptRequest(
        name=evidence_name(parent.name, batch),
        title=f"Evidence for {parent.title} (claims {batch[0].number}–{batch[-1].number})",
        kind="evidence",
        question="",
        messages=(*parent.messages, Message("assistant", completion.content),
                  Message("user", task)),
        max_tokens=evidence_max_tokens(len(batch), settings.max_quote_words),
        temperature=settings.temperature,
        thinking=False,
        extra_body_json=json.dumps({"response_format": response_format("evidence",
                                                                       EVIDENCE_SCHEMA)},
                                   sort_keys=True),
        page_title=parent.page_title,
    )
