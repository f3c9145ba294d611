"""Asking a server for JSON: the ways it may take the request, the fallbacks, one retry.

SGLang and vLLM constrain decoding to a JSON schema (`response_format: json_schema`);
llama-cpp-python refuses that (HTTP 500) but takes `json_object` with the schema; others take
neither, and get the schema in words only. Which way works is learnt from the first refusal
and kept for the run. Whatever came back is parsed and validated against the kind's schema,
and an invalid answer is asked for once more with the error named.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import replace
from typing import Any

from ..completions import Completion, Message, PromptRequest
from ..errors import LlmRequestError
from ..ports import ChatModel, StreamEvents
from .cuts import json_cut, suspect_message
from .server_errors import format_refusal
from .structured import PARSED, InvalidAnswer, parse_answer

log = logging.getLogger(__name__)


class StructuredFormats:
    """Which way of asking for JSON this server takes, learnt from its first refusal and kept
    for the rest of the run: `json_schema` (SGLang, vLLM), `json_object` with the schema
    (llama-cpp-python refuses json_schema with HTTP 500), or none (the schema in words only)."""

    ORDER = ("json_schema", "json_object", "")

    def __init__(self, start: str | None = None) -> None:
        """`start`: the way this server was found to take before (Capabilities.structured)."""
        self._first = self.ORDER.index(start) if start in self.ORDER else 0
        self.learnt: str | None = None  # the way the server took in this run
        self._lock = threading.Lock()

    def tries(self) -> tuple[str, ...]:
        with self._lock:
            return self.ORDER[self._first:]

    def refused(self, kind: str) -> None:
        with self._lock:
            self._first = max(self._first, self.ORDER.index(kind) + 1)

    def taken(self, kind: str) -> None:
        with self._lock:
            self.learnt = kind


def format_refused(err: LlmRequestError) -> bool:
    """Whether the server refused how the JSON was asked for (not the prompt or its length)."""
    return format_refusal(err.status, err.detail or str(err))


def ask_for_json(client: ChatModel, request: PromptRequest, events: StreamEvents,
                formats: StructuredFormats, schema: dict[str, Any], *, retry: bool = True,
                cuts: bool | None = None) -> Completion:
    """A JSON answer that matches the request's schema: constrained by the server where it can,
    else asked for in words (the schema is in the task either way), and asked once more if the
    answer does not parse or validate. The completion's content is the validated JSON."""
    completion: Completion | None = None
    for kind in formats.tries():
        attempt = with_format(request, kind)
        try:
            completion = client.complete(attempt, events, retry=retry)
        except LlmRequestError as err:
            if not kind or not format_refused(err):
                raise
            log.info("the server refused response_format %s for %s (%s); asking another way",
                     kind, request.name, err)
            formats.refused(kind)
            continue
        formats.taken(kind)
        request = attempt
        break
    assert completion is not None  # the last way (in words) raises rather than continue
    try:
        data = parse_answer(completion.content, schema)
    except InvalidAnswer as err:
        if cuts is False and json_cut(completion, request.max_tokens):
            # A proxy's `stop` on a stream cut mid-JSON (cuts.py): a sign of overload, sent
            # again fewer at a time rather than corrected.
            raise LlmRequestError(suspect_message(client.base_url, request, completion),
                                  overload=True) from err
        log.warning("%s: %s; asking once more", request.name, err)
        corrected = replace(request, messages=(*request.messages,
                                           Message("assistant", completion.content[:4000]),
                                           Message("user", f"That answer was invalid: {err}. "
                                                   "Reply with the corrected JSON object only.")))
        completion = client.complete(corrected, events, retry=retry)
        try:
            data = parse_answer(completion.content, schema)
        except InvalidAnswer as again:
            if completion.truncated:
                raise LlmRequestError(
                    f"the JSON answer was cut at max_tokens ({request.max_tokens}) before it "
                    f"was complete, twice; raise the max_tokens of {request.kind} in "
                    "config.toml") from again
            raise LlmRequestError(f"no valid structured answer after a retry: {again}") from again
    content = json.dumps(data, ensure_ascii=False, indent=1)
    PARSED.put(content, schema, data)  # the value, for the edition that reads this answer
    return replace(completion, content=content)


def with_format(request: PromptRequest, kind: str) -> PromptRequest:
    """The request asking for its JSON as `kind` says ("": in words only, no response_format)."""
    body = json.loads(request.extra_body_json)
    given = body.pop("response_format", None)
    if kind == "json_schema" and given is not None:
        return request
    if kind == "json_object" and given is not None:
        schema = given.get("json_schema", {}).get("schema")
        body["response_format"] = {"type": "json_object", "schema": schema}
    return replace(request, extra_body_json=json.dumps(body, sort_keys=True))
