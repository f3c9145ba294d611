"""What an OpenAI-compatible server can do, learnt once and remembered for the workspace.

SGLang says most of it (`/server_info`); vLLM, llama.cpp, llama-cpp-python and hosted APIs say
less, each in its own way. `digest doctor` probes everything (one tiny request for the
structured-output way and for usage in streams); a build probes what costs no request, learns
the rest from its own answers, and keeps what it found, so that the next run starts where this
one ended: the JSON request the server takes, the tokenizer endpoint, and the number of
prompts at once that its answers came back clean at.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from ..completions import Completion, Message, PromptRequest
from ..errors import LlmRequestError
from ..ports import ChatModel, ServerFacts
from ..store.cache import Cache, read_json, write_json
from ..store.codec import CodecError, from_data, to_data
from ..text.urls import redact_url
from .json_answers import StructuredFormats, format_refused, with_format
from .router import FLEET_SOURCE, ROUTER_NAMES
from .server import TOKENIZERS
from .structured import response_format

log = logging.getLogger(__name__)

_PROBE_SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
# A server family by its tokenizer endpoint (server.TOKENIZERS), for the pages' provenance.
SERVER_NAMES = {"sglang": "SGLang", "vllm": "vLLM", "llama-cpp-python": "llama-cpp-python",
                "llama.cpp": "llama.cpp"}
STRUCTURED_WORDS = {"json_schema": "json_schema (constrained decoding)",
                    "json_object": "json_object with the schema (constrained decoding)",
                    "": "none: the schema in words, the answer validated and asked for again"}


@dataclass(frozen=True)
class Capabilities:
    """What one server (base URL and model) was found to do; None: not known yet."""

    limits: bool | None = None  # says its limits at /server_info (SGLang)
    tokenizer: str | None = None  # the tokenizer endpoint's family (server.TOKENIZERS); "": none
    structured: str | None = None  # StructuredFormats.ORDER: the way of asking for JSON it takes
    stream_usage: bool | None = None  # reports token counts with its answers
    cache_report: bool | None = None  # reports prefix-cache hits (cached_tokens)
    context_tokens: int | None = None
    context_source: str = ""  # where the context length came from
    concurrency: int | None = None  # prompts at once: stated, or what the last run settled at
    concurrency_source: str = ""
    slots: int | None = None  # requests it serves at once, as /props says (llama-server)
    router_workers: int | None = None  # a router: its healthy workers; None: no router
    router: str = ""  # which router (router.ROUTER_NAMES: "smg", "sglang-router"; "": unshown)

    @property
    def server(self) -> str:
        """The kind of server, as far as it showed it ("" where it showed nothing)."""
        if self.router_workers is not None:
            return f"{_router_name(self.router)} ({_workers(self.router_workers)})"
        if self.limits:
            return "SGLang"  # /server_info with its limits: SGLang's own endpoint
        return SERVER_NAMES.get(self.tokenizer or "", "")

    @property
    def stated(self) -> bool:
        """Whether its concurrency is what the server (or every worker behind it) states, not
        what a run settled at."""
        return self.concurrency_source in ("/server_info", FLEET_SOURCE)

    def lines(self) -> list[tuple[str, str]]:
        """(what, found) for each capability, in words, for `digest doctor`."""
        def known(value: Any, words: str) -> str:
            return "not known yet (a build learns it)" if value is None else words

        shown = {t.name: t.shown_path for t in TOKENIZERS}
        tokenizer = (f"{shown[self.tokenizer]} ({self.tokenizer})" if self.tokenizer
                     else "none: token counts are estimated with a safety margin")
        context = (f"{self.context_tokens:,} tokens (from {self.context_source})"
                   if self.context_tokens else "not stated: set [llm] context_tokens")
        concurrency = (f"{self.concurrency} at once ({self.concurrency_source})"
                       if self.concurrency else "not stated: starts at 2 and grows while "
                       "answers come back clean, halves on 429/503, a dropped connection or a cut "
                       "stream")
        if self.slots and not self.stated:
            concurrency += f"; never more than its {self.slots} slot(s) (/props total_slots)"
        router = self.router_workers is not None
        limits = ("/server_info" if not router else FLEET_SOURCE) if self.limits else (
            "not stated (no /server_info)" if not router else
            "not stated: the workers' /server_info cannot be read from here")
        return [
            *([("router", f"{_router_name(self.router)}, {_workers(self.router_workers or 0)}"
                          " healthy behind it")] if router else []),
            ("limits", known(self.limits, limits)),
            ("tokenizer", known(self.tokenizer, tokenizer)),
            ("structured output", known(self.structured,
                                        STRUCTURED_WORDS.get(self.structured or "", ""))),
            ("usage", known(self.stream_usage, "reported with each answer" if self.stream_usage
                            else "not reported: token figures show as unknown")),
            ("prefix-cache report", known(self.cache_report, "reported" if self.cache_report
                                          else "not reported")),
            ("context", context),
            ("concurrency", concurrency),
        ]


def _router_name(kind: str) -> str:
    return ROUTER_NAMES.get(kind, ROUTER_NAMES[""])


def _workers(count: int) -> str:
    return f"{count} worker{'s' if count != 1 else ''}"


def _key(base_url: str, model: str) -> str:
    return hashlib.sha256(f"{redact_url(base_url)}\n{model}".encode()).hexdigest()[:16]


def load_capabilities(cache: Cache, base_url: str, model: str) -> Capabilities:
    data = read_json(cache.servers_path)
    entry = data.get(_key(base_url, model)) if isinstance(data, dict) else None
    if not isinstance(entry, dict):
        return Capabilities()
    try:
        # A newer version's findings are read for what this one knows of them.
        return from_data(Capabilities, entry.get("found", {}), unknown=[])
    except CodecError:
        return Capabilities()


def save_capabilities(cache: Cache, base_url: str, model: str, found: Capabilities) -> None:
    """Kept beside the cache, keyed by the URL (without credentials) and the model."""
    data = read_json(cache.servers_path)
    data = data if isinstance(data, dict) else {}
    data[_key(base_url, model)] = {"url": redact_url(base_url), "model": model,
                                   "found": to_data(found)}
    write_json(cache.servers_path, data)


def without_requests(probe: ServerFacts, model: str, configured_context: int | None,
                     known: Capabilities, info: dict[str, Any] | None) -> Capabilities:
    """What the server's informational endpoints say (no prompt sent), over what was known;
    `info`: its /server_info, as the caller fetched it (None: it has none)."""
    found = replace(known, limits=info is not None, router_workers=None, router="")
    fleet = probe.fleet() if info is None or info.get("router") else None
    if fleet is not None:
        found = replace(found, router=fleet.kind, router_workers=len(fleet.healthy))
    if info is None:  # llama-server states its slots (-np) at /props; SGLang its limits
        found = replace(found, slots=probe.slots())
        if known.stated:  # stated last time, not now: found again, gradually
            found = replace(found, concurrency=None, concurrency_source="")
    if info is not None:
        running = info.get("max_running_requests")
        source = FLEET_SOURCE if info.get("router") else "/server_info"
        if isinstance(running, int) and running > 0:
            found = replace(found, concurrency=running, concurrency_source=source)
        found = replace(found, cache_report=bool(info.get("enable_cache_report")))
    if probe.tokenize(model, ["Hello, world."]):
        found = replace(found, tokenizer=probe.tokenizer)
    else:
        found = replace(found, tokenizer="")
    if configured_context:
        return replace(found, context_tokens=configured_context,
                       context_source="[llm] context_tokens")
    context, where = probe.context_length(model, info)
    return replace(found, context_tokens=context, context_source=where)


def structured_and_usage(chat: ChatModel, known: Capabilities) -> Capabilities:
    """One tiny JSON request, in each way until the server takes one: which way it takes,
    and whether its answer carries token counts."""
    body = {"response_format": response_format("probe", _PROBE_SCHEMA)}
    request = PromptRequest(
        name="doctor-json", title="doctor", kind="probe", question="",
        messages=(Message("user", 'Reply with the JSON object {"n": 42} and nothing else.'),),
        max_tokens=32, temperature=0.0, thinking=False,
        extra_body_json=json.dumps(body, sort_keys=True))
    for way in StructuredFormats.ORDER:
        try:
            completion = chat.complete(with_format(request, way))
        except LlmRequestError as err:
            if way and format_refused(err):
                continue
            log.info("the JSON probe failed: %s", err)
            return known
        return replace(known, structured=way, stream_usage=_reports(completion),
                       cache_report=known.cache_report if known.limits else
                       completion.usage.cached_tokens is not None)
    return known


def _reports(completion: Completion) -> bool:
    return completion.usage.completion_tokens is not None


def after_run(known: Capabilities, formats: StructuredFormats, width: int | None,
              completions: Iterable[Completion]) -> Capabilities:
    """What a build's own answers taught: the JSON way that worked, whether usage came back,
    and the width a server that did not state its limits settled at."""
    sent = [c for c in completions if c.ok and not c.from_cache]
    found = known
    if formats.learnt is not None:
        found = replace(found, structured=formats.learnt)
    if sent:
        found = replace(found, stream_usage=any(_reports(c) for c in sent))
        if not found.limits:
            found = replace(found, cache_report=any(c.usage.cached_tokens is not None
                                                    for c in sent))
    if width is not None and not found.stated:
        found = replace(found, concurrency=width,
                        concurrency_source="settled at by the last run's answers")
    return found
