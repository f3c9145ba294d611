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
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..completions import Completion, Message, PromptRequest
from ..config import EvidenceSettings
from ..kinds import EVIDENCE, KindRegistry
from ..synthesis.structured import response_format, schema_instruction
from .claims import Claim, answer_claims

TASK = """Evidence check. Your answer above cites papers of the bundle. For each numbered claim \
below and for each paper it cites, return the claim's number, that paper's number and a quote \
of at most {words} words copied verbatim from that paper's text in the bundle (its abstract or \
full-text excerpt) that supports the claim: one entry per claim and cited paper. Copy the \
words exactly; do not paraphrase, do not quote the claim itself, and never quote another paper \
for it. If no passage of a cited paper supports the claim, return an empty quote for it.

Claims:
{claims}

{schema}"""


EVIDENCE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "claims": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "claim": {"type": "integer"},
                    "paper": {"type": "integer"},
                    "quote": {"type": "string", "minLength": 0},  # "": no passage supports it
                },
                "required": ["claim", "paper", "quote"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["claims"],
    "additionalProperties": False,
}


def evidence_max_tokens(claims: int, max_quote_words: int) -> int:
    """Room for a JSON entry per claim: its numbers and a quote (a word is about 1.5 tokens)."""
    return claims * (2 * max_quote_words + 40) + 100


def check_tokens(settings: EvidenceSettings) -> int:
    """What an evidence check adds to the conversation of the answer it checks: its claims
    (about 120 tokens each) and its answer (0 where evidence is off)."""
    if not settings.enabled:
        return 0
    claims = settings.claims_per_request
    return claims * 120 + evidence_max_tokens(claims, settings.max_quote_words)


def evidence_name(parent: str, batch: Sequence[Claim]) -> str:
    """`evidence-<answer>-<first claim>-<last claim>`: the name says what the request checks."""
    return f"evidence-{parent}-{batch[0].number}-{batch[-1].number}"


def evidence_requests(parent: PromptRequest, completion: Completion, settings: EvidenceSettings,
                      titles: Mapping[int, str], kinds: KindRegistry
                      ) -> list[PromptRequest]:
    """The evidence requests for one answer over a bundle whose papers are `titles` (by
    number); none if it has no citing sentence or failed."""
    spec = kinds[parent.kind]
    if not (settings.enabled and spec.evidence and completion.ok):
        return []
    # A claim citing a paper the bundle does not have is never backed: nothing to ask.
    claims = [c for c in answer_claims(completion.content, titles, spec.shift)
              if c.papers and not c.phantoms]
    size = spec.evidence_batch or settings.claims_per_request
    batches = [claims[i:i + size] for i in range(0, len(claims), size)]
    return [_request(parent, completion, batch, settings) for batch in batches]


def _request(parent: PromptRequest, completion: Completion, batch: Sequence[Claim],
             settings: EvidenceSettings) -> PromptRequest:
    listed = "\n".join(
        f"[{c.number}] (cites {', '.join(f'Paper {n}' for n in c.papers)}) {c.sentence}"
        for c in batch)
    task = TASK.format(words=settings.max_quote_words, claims=listed,
                       schema=schema_instruction(EVIDENCE_SCHEMA))
    return PromptRequest(
        name=evidence_name(parent.name, batch),
        title=f"Evidence for {parent.title} (claims {batch[0].number}–{batch[-1].number})",
        kind=EVIDENCE,
        question="",
        messages=(*parent.messages, Message("assistant", completion.content),
                  Message("user", task)),
        max_tokens=evidence_max_tokens(sum(len(c.papers) for c in batch),
                                       settings.max_quote_words),
        temperature=settings.temperature,
        thinking=False,
        extra_body_json=json.dumps({"response_format": response_format("evidence",
                                                                       EVIDENCE_SCHEMA)},
                                   sort_keys=True),
        page_title=parent.page_title,
        parent=parent.name,
        claims=tuple(c.number for c in batch),
    )


# A check made in a conversation of its own, when its answer's conversation does not fit.
ALONE_TITLE = " (checked in a smaller conversation)"
_ALONE_ANSWER = ("(My answer is not repeated here: its citing sentences are listed below as "
                 "claims.)")
_SECTION_RE = re.compile(r"^## Paper (\d+): ", re.MULTILINE)
_CITED_RE = re.compile(r"\(cites ([^)]*)\)")
_CHARS_PER_TOKEN = 3  # a dense tokenizer's count: a smaller conversation must fit for sure
_SAFETY = 0.85


def standalone_check(request: PromptRequest, context_tokens: int) -> PromptRequest | None:
    """The same evidence check without its answer's conversation: the cited papers' sections
    of the bundle (cut alike to fit `context_tokens`), a stand-in for the answer, then the
    claims, which carry their sentences. None where even that cannot fit, or where the
    request is not a check of an answer's conversation."""
    if len(request.messages) != 4 or ALONE_TITLE in request.title:
        return None
    system, asked, _, task = request.messages
    cited = {int(n) for group in _CITED_RE.findall(task.content)
             for n in re.findall(r"Paper (\d+)", group)}
    bundle = asked.content.rsplit("\n---\n", 1)[0]
    starts = [(int(m.group(1)), m.start()) for m in _SECTION_RE.finditer(bundle)]
    sections = {number: bundle[start:end].strip() for (number, start), (_, end)
                in zip(starts, [*starts[1:], (0, len(bundle))], strict=True)
                if number in cited}
    if not sections:
        return None
    fixed = len(system.content) + len(task.content) + len(_ALONE_ANSWER) + 400
    budget = int((context_tokens * _SAFETY - request.max_tokens) * _CHARS_PER_TOKEN) - fixed
    share = budget // len(sections)
    if share < 400:  # not even a title and an abstract's first lines each
        return None
    shown = "\n\n".join(_cut_section(sections[n], share) for n in sorted(sections))
    papers = (f"# The cited papers\n\nThe papers of the research bundle that the claims below "
              f"cite, as the bundle gives them (a long text cut at {share:,} characters).\n\n"
              f"{shown}\n")
    return replace(request, title=request.title + ALONE_TITLE,
                   messages=(system, Message("user", papers),
                             Message("assistant", _ALONE_ANSWER), task))


def _cut_section(section: str, chars: int) -> str:
    if len(section) <= chars:
        return section
    return section[:chars].rsplit(" ", 1)[0] + " …"
