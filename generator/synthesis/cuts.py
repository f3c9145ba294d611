"""An answer that a proxy called finished when it was cut.

A server that interrupts a stream leaves signs on the wire (no finish reason, no `[DONE]`, an
error event), which the client reads. A proxy can erase all of them: LiteLLM 1.108.7 passes a
stream that llama-cpp-python cut on as `finish_reason: "stop"`, with usage it computed from
what arrived (recorded in ../shared/fixtures/servers/). What is left is usage that counts far
more tokens than arrived (a proxy that passes the server's own count on), and the text itself:
prose that stops mid-sentence far below its token budget. Such an answer is sent again, once fewer
are in flight; one that still looks cut is kept, marked as cut on its page, and never cached.
Only for servers that do not state their limits: SGLang neither cuts for a waiter nor hides it.
An answer with no text is judged for every server (`no_answer`): a stream cut while the model
was still thinking leaves reasoning and no answer, and a `stop` after it.
"""

from __future__ import annotations

import json
import re

from ..completions import Completion, PromptRequest

SUSPECT_CUT = "stopped mid-sentence"  # in the error of an answer sent again for looking cut
CUT = "cut"  # the finish reason of an answer kept although it still looked cut
_BUDGET_SHARE = 0.25  # an answer this far below its max_tokens that stops mid-sentence
_WHOLE_LINE_RE = re.compile(r"^\s*(?:[-*+] |\d+[.)] |\||#|```|\$\$|>)")


def looks_cut(request: PromptRequest, completion: Completion, structured: bool = False) -> bool:
    """Whether a prose answer that says it stopped by itself reads as cut off (`structured`:
    the request asked for JSON, which is whole when it parses)."""
    if structured or completion.finish_reason != "stop":
        return False
    text = completion.content.rstrip()
    if not text:
        return False
    usage = completion.usage
    used = usage.completion_tokens
    if used is not None and usage.reasoning_tokens is not None:
        # Usage that counts more tokens than there are bytes of what arrived (a token is at
        # least a byte): the rest was lost. Only where the reasoning's share is known: a
        # server may count reasoning it does not return.
        visible = used - (0 if completion.reasoning else usage.reasoning_tokens)
        if visible > len((completion.content + completion.reasoning).encode()) + 64:
            return True
    if used is None:
        used = (len(completion.content) + len(completion.reasoning)) // 4
    if used >= request.max_tokens * _BUDGET_SHARE:
        return False
    last = text.splitlines()[-1]
    if _WHOLE_LINE_RE.match(last):  # a list item, table row, heading or fence needs no stop
        return False
    return text[-1].isalnum() or text[-1] in ",;:(-–—"


EMPTY = "returned an empty answer"  # in the error of an answer with no text


def no_answer(base_url: str, request: PromptRequest, reasoning: str,
              finish_reason: str) -> tuple[str, bool]:
    """Why an answer with no text is not one, in our words (the reasoning is never quoted),
    and whether it is a cut (to be sent again, fewer at a time) rather than a spent budget.

    A stream that a proxy ended as `stop` before the model wrote its answer (LiteLLM over a
    one-slot llama-cpp-python: a few words of reasoning, then `stop`) is a cut, on any server;
    one that ended at its budget (`length`) spent it thinking, and asking again as is would
    spend it again."""
    if finish_reason == "length":
        spent = " thinking" if reasoning else ""
        return (f"the server at {base_url} {EMPTY}: the model spent its whole "
                f"{request.max_tokens:,}-token budget{spent} before it wrote one; raise the "
                f"max_tokens of {request.kind} in config.toml"), False
    got = f"{len(reasoning):,} characters of reasoning" if reasoning else "no text at all"
    return (f"the server at {base_url} {EMPTY} ({got}, then {finish_reason!r}), as a stream "
            "cut before its answer does behind a proxy that hides the cut"), True


def suspect_message(base_url: str, request: PromptRequest, completion: Completion) -> str:
    used = completion.usage.completion_tokens
    size = f"{used:,} tokens" if used is not None else f"{len(completion.content):,} characters"
    return (f"the answer from {base_url} {SUSPECT_CUT} after {size} of its "
            f"{request.max_tokens:,}-token budget, as a cut stream does behind a proxy that "
            "hides the cut")


def json_cut(completion: Completion, max_tokens: int) -> bool:
    """Whether a JSON answer that says it stopped by itself ends before its JSON does (the
    parser ran out of text, not into a wrong character), far below its budget."""
    if completion.finish_reason != "stop":
        return False
    used = completion.usage.completion_tokens
    if used is not None and used >= max_tokens * _BUDGET_SHARE:
        return False
    text = completion.content.strip()
    text = text.removeprefix("```json").removeprefix("```").removesuffix("```").strip()
    if not text.startswith(("{", "[")):
        return False
    try:
        json.loads(text)
    except json.JSONDecodeError as err:  # a string left open, or the text ran out
        if err.msg.startswith("Extra data"):  # whole JSON, and more after it
            return False
        return err.msg.startswith("Unterminated string") or err.pos >= len(text) - 1
    return False
