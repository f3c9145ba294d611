"""An OpenAI-compatible server shaped like SGLang, for tests, on 127.0.0.1.

Like SGLang it returns `reasoning_content` when thinking is on, reports
`usage.prompt_tokens_details.cached_tokens` from a prefix cache over earlier prompts, and
answers errors with flat JSON bodies (`{"object": "error", "message": ..., "code": ...}`).
Tests choose answers with `responder` and inject faults with `faults`.
"""

from __future__ import annotations

import json
import re
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PAGE_TOKENS = 16  # prefix-cache granularity, in (4-character) tokens


@dataclass
class Answer:
    content: str
    reasoning: str = ""
    finish_reason: str = "stop"
    completion_tokens: int | None = None


@dataclass
class Fault:
    status: int
    message: str
    error_type: str = "BadRequestError"


Responder = Callable[[dict[str, Any]], Answer | Fault]


def task_of(body: dict[str, Any]) -> str:
    """The task text of a request: what follows the bundle in the last user message."""
    return str(body["messages"][-1]["content"]).rsplit("\n---\n", 1)[-1].strip()


def thinking_of(body: dict[str, Any]) -> bool:
    return bool((body.get("chat_template_kwargs") or {}).get("thinking"))


def is_structured(body: dict[str, Any]) -> bool:
    """A brief or theme-map prompt (or the retry of one): its task carries a JSON Schema."""
    return any("JSON Schema" in str(m["content"]) for m in body["messages"])


_SECTION_RE = re.compile(r"^## Paper (\d+): .*?^### Abstract\n\n(.*?)(?=\n\n#{2,3} |\Z)",
                         re.MULTILINE | re.DOTALL)
_CLAIM_RE = re.compile(r"^\[(\d+)\] \(cites ([^)]*)\)", re.MULTILINE)
INVENTED = "a quote that no paper of this bundle contains anywhere in its abstract or text"


def abstracts(body: dict[str, Any]) -> dict[int, str]:
    """The abstracts of the bundle in a prompt, by paper number."""
    return {int(n): text for n, text in _SECTION_RE.findall(str(body["messages"][1]["content"]))}


def evidence_answer(body: dict[str, Any]) -> Answer:
    """Quotes for an evidence check, by claim number: 1 from the cited paper, 2 from another
    paper, 3 invented, 4 none, and so on round."""
    papers = abstracts(body)
    entries = []
    task = next(str(m["content"]) for m in body["messages"] if "Evidence check." in m["content"])
    for claim, cited in ((int(c), p) for c, p in _CLAIM_RE.findall(task)):
        for paper in (int(n) for n in re.findall(r"Paper (\d+)", cited)):  # a quote from each
            other = next((n for n in sorted(papers) if n != paper), paper)  # a bundle of one
            quote = {1: " ".join(papers.get(paper, "").split()[2:14]),
                     2: " ".join(papers[other].split()[2:14]),
                     3: INVENTED, 0: ""}[claim % 4]
            entries.append({"claim": claim, "paper": paper, "quote": quote})
    return Answer(json.dumps({"claims": entries}))


def is_evidence(body: dict[str, Any]) -> bool:
    """An evidence check, or the corrective retry of one."""
    return any("Evidence check." in str(m["content"]) for m in body["messages"][2:])


_JUDGED_RE = re.compile(r'^\{"claim": (\d+), "sentence": ', re.MULTILINE)
JUDGED = {1: "supports", 2: "partly", 0: "does_not"}


def judgement_answer(body: dict[str, Any]) -> Answer:
    """Verdicts for a support check, by claim number: supports, partly, does not, and so on
    round (the claims whose quote is found are 1, 5, 9...: each verdict comes up)."""
    task = next(str(m["content"]) for m in body["messages"] if "Support check." in m["content"])
    return Answer(json.dumps({"claims": [
        {"claim": int(n), "verdict": JUDGED[int(n) % 3],
         "reason": {1: "The quote states it.", 2: "The quote states part of it.",
                    0: "The quote does not state it."}[int(n) % 3]}
        for n in _JUDGED_RE.findall(task)]}))


def is_judgement(body: dict[str, Any]) -> bool:
    """A judgement of found quotes (a support check), or the corrective retry of one."""
    return any("Support check." in str(m["content"]) for m in body["messages"][1:])


_TRIAGED_RE = re.compile(r"^Paper arXiv:(\S+)$", re.MULTILINE)


def triaged(body: dict[str, Any]) -> str | None:
    """The arXiv id a triage request judges; None for any other request."""
    if "The reader's interests:" not in str(body["messages"][0]["content"]):
        return None
    match = _TRIAGED_RE.search(str(body["messages"][1]["content"]))
    return match.group(1) if match else None


def triage_score(arxiv_id: str) -> int:
    """The score the test server gives a paper: fixed by its id, spread over 0-10."""
    return zlib.crc32(arxiv_id.encode()) % 11


def structured_answer(body: dict[str, Any]) -> Answer | None:
    """Schema-valid JSON for the brief, theme-map, evidence, judgement and triage prompts, None
    for the others."""
    if not is_structured(body):
        return None
    if (paper := triaged(body)) is not None:
        title = str(body["messages"][1]["content"]).split("\nTitle: ", 1)[-1].split("\n", 1)[0]
        return Answer(json.dumps({"score": triage_score(paper),
                                  "reason": f"Judged on its title: {title[:80]}",
                                  "interests": ["software testing"]}))
    if is_evidence(body):
        return evidence_answer(body)
    if is_judgement(body):
        return judgement_answer(body)
    task = str(body["messages"][1]["content"]).rsplit("\n---\n", 1)[-1]
    if '"themes"' in task:
        return Answer(json.dumps({"themes": [
            {"name": "Testing", "description": "How systems are tested.", "papers": [1, 2, 4]},
            {"name": "Security", "description": "Attacks and defences.", "papers": [3, 99]},
        ]}))
    title = str(body["messages"][1]["content"]).split("\n", 1)[0].split(": ", 1)[-1]
    return Answer(json.dumps({
        "tldr": f"A study of {title[:60]}.", "problem": "A problem.", "method": "A method.",
        "result": "A 12% gain.", "limitations": "Few datasets."}))


def default_responder(body: dict[str, Any]) -> Answer:
    structured = structured_answer(body)
    if structured:
        return structured
    task = task_of(body)
    content = (
        f"# Answer\n\nThis answer addresses: {task[:80]}\n\n"
        "- Paper 1 and Paper 2 share an approach.\n- Paper 3 departs from it.\n\n"
        "| Paper | Point |\n|---|---|\n| Paper 1 | first |\n"
    )
    if thinking_of(body):
        return Answer(content=content + "\nThought it through.",
                      reasoning="First, compare Paper 1 with Paper 2. Then weigh Paper 3.")
    return Answer(content=content)


def realistic_responder(body: dict[str, Any]) -> Answer:
    """Answers written the way models write them: sections, a list right under a line of text
    with two-space nesting, a table, inline and display TeX, citations by number and title."""
    structured = structured_answer(body)
    if structured:
        return structured
    numbers = sorted(abstracts(body)) or [1, 2, 3]
    first, second, last = numbers[0], numbers[min(1, len(numbers) - 1)], numbers[-1]
    content = (
        "## Field overview\n\n"
        f"Work on testing splits into search and learning. Paper {first} frames coverage as "
        f"$O(m \\cdot t)$ for $m$ modules and $t$ tests, and Paper {second} adds "
        "$\\omega$-regular properties.\n"
        "Key findings:\n"
        f"- Paper {first} finds more faults\n"
        f"  - by about 12% over random search\n"
        f"- Paper {last} trades cost for recall\n\n"
        "The trade-off, with $p$ the fault rate:\n\n"
        "$$\\frac{\\text{faults found}}{\\text{tests run}} \\approx 1 - (1-p)^{t}$$\n\n"
        "| Paper | Strength | Cost |\n|---|---|---|\n"
        f"| Paper {first} | coverage | high |\n| Paper {last} | recall | low |\n\n"
        "## Open problems\n\n"
        f"Neither Paper {second} nor Paper {last} measures flakiness.\n"
    )
    if thinking_of(body):
        return Answer(content=content, reasoning=(
            f"Compare Paper {first} with Paper {second}: the bound $O(m \\cdot t)$ holds when "
            "tests are independent.\nThen:\n- weigh recall\n- weigh cost"))
    return Answer(content=content)


@dataclass
class FleetCount:
    """Chats in flight on several servers together (workers behind one router), and the most
    at once: what a fleet's width bounds."""

    in_flight: int = 0
    max_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, change: int) -> None:
        with self.lock:
            self.in_flight += change
            self.max_in_flight = max(self.max_in_flight, self.in_flight)


@dataclass
class SglangState:
    models: list[str] = field(default_factory=lambda: ["deepseek-ai/DeepSeek-V4-Flash"])
    max_model_len: int = 131072
    responder: Responder = default_responder
    # Answers the brief and theme-map prompts (those whose task carries a JSON Schema).
    structured_responder: Responder = field(default=lambda body: structured_answer(body) or Fault(
        500, "no structured answer"))
    reject_response_format: bool = False  # a server that does not support json_schema
    # The response_format types it takes (None: any); others are refused with this status, as
    # llama-cpp-python refuses json_schema (HTTP 500, "Input should be 'text' or 'json_object'").
    accepted_formats: tuple[str, ...] | None = None
    format_refusal_status: int = 500
    faults: list[Fault] = field(default_factory=list)  # served, in order, before any answer
    delay_s: float = 0.0
    # Server settings, as SGLang reports them at /server_info.
    radix_cache_off: bool = False
    cache_report: bool = True
    schedule_policy: str = "lpm"
    reasoning_parser: str | None = "deepseek-v4"  # None: thinking leaks into content as <think>
    starting_until: float = 0.0  # time.monotonic() before which the server is still loading
    # Or: loading until it has answered this many more readiness requests (/health, else
    # /v1/models) with its 503: a start that lasts as many checks as a test says, however
    # slow the machine.
    starting_health_checks: int = 0
    plain_openai: bool = False  # only the plain OpenAI endpoints (vLLM, llama.cpp, hosted APIs)
    enforce_context: bool = False  # refuse prompt + max_tokens beyond max_model_len, as SGLang does
    # Refuse it inside a streamed 200 instead: "event", an error event; "empty", a 200 with
    # no event at all, then the connection closed (llama-cpp-python, recorded); "stop", one
    # `finish_reason: stop` chunk and [DONE] (LiteLLM passing that on, recorded).
    refuse_in_stream: str = ""
    prefill_delay_s: float = 0.0  # sleep before the first streamed token
    # Hold every first token until this many requests have arrived (0: do not hold): a
    # client that waits for a first token before sending more would then never get one.
    hold_first_tokens_until: int = 0
    first_tokens: list[tuple[float, dict[str, Any]]] = field(default_factory=list)  # sent at
    # The next `cut_streams` streamed answers end cleanly after a few chunks: no finish
    # reason, no usage, no [DONE] (a proxy or server that gave up without an error).
    cut_streams: int = 0
    # What a cut stream ends with after its last token (None: the connection just closes),
    # as recorded: llama-cpp-python `[DONE]` with no finish reason, LiteLLM a made-up `stop`.
    cut_ending: list[str] | None = None
    # The recorded (status, body) of the server's refusal of json_schema, and of a prompt over
    # its context (None: SGLang's flat bodies).
    format_refusal_body: tuple[int, bytes] | None = None
    recorded_kind: str = ""
    # Connections beyond this many chats in flight are closed without a response (0: never),
    # as a server past its capacity or a full accept queue does.
    drop_beyond: int = 0
    dropped: int = 0
    # A stream that never ends, by request: "trickle" sends a token every 0.5 s and no finish
    # reason, "keepalive" only `: keep-alive` comments after the 200, "stall" one token and
    # then only comments (each for at most 60 s, or until the client goes away).
    endless: Callable[[dict[str, Any]], str] = lambda body: ""
    in_flight: int = 0
    max_in_flight: int = 0
    fleet: FleetCount | None = None  # counts this server's chats with other servers' (a fleet)
    others_in_flight: int = 0  # reported at /v1/loads beside its own: other clients' requests
    # When each answer was complete, taken before its last chunk is sent: whatever a client
    # does because the answer came back happens after it (an order, not a race).
    finished: list[float] = field(default_factory=list)
    arrivals: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    authorizations: list[str] = field(default_factory=list)
    chat_requests: list[dict[str, Any]] = field(default_factory=list)
    model_requests: int = 0
    seen_prompts: list[str] = field(default_factory=list)
    # Guards the counts; notified when a request is counted in or out of flight, or finishes:
    # a test's responder can wait on it for a state of the server, not for a time.
    lock: threading.Condition = field(default_factory=threading.Condition)
    # No answer finishes before this many requests have been in flight at once (each waits
    # up to 10 s): an overlap that happens every time, however slow the machine.
    hold_until_in_flight: int = 0
    # The tokenizer: this many characters a token (our estimate assumes 4; PDF text runs lower).
    chars_per_token: float = 4.0
    tokenize_endpoint: bool = True  # SGLang's /v1/tokenize (and /tokenize)
    tokenize_requests: int = 0
    max_running_requests: int | None = None  # reported at /server_info when set
    # The server family whose extras it has (its tokenizer endpoint, /health, /props,
    # max_model_len); see `like`. "sglang": all of SGLang's.
    kind: str = "sglang"
    stream_usage: bool = True  # token counts in a stream's last chunk
    # Requests served at once (0: any). With slots, a request waits for one, and a stream is
    # cut (no finish reason) while another request waits, as llama-cpp-python's
    # interrupt_requests does.
    slots: int = 0
    # With slots: the first streamed answer, once its first token is sent, waits (up to 5 s)
    # for another request to queue, so that the first overlap, and the cut it brings, happens
    # after that token every time, whenever the client sends its next request.
    hold_first_for_waiter: bool = False
    # With slots: how many pieces of an answer are out before a waiter interrupts it (at most
    # half the answer's): 1, the waiter was there from the start; more, the second request
    # arrived late in a long answer, whose cut then stops far into it (no usage follows).
    slot_patience: int = 1
    waiting: int = 0
    cut_count: int = 0
    cuts: list[str] = field(default_factory=list)  # what each interrupted stream was sending
    slot_lock: threading.Condition = field(default_factory=threading.Condition)
    busy: int = 0

    def like(self, kind: str) -> SglangState:
        """Behave as a server of `kind` does, with the defaults each is launched with."""
        self.kind = kind
        if kind in ("llama-cpp-python", "litellm"):
            # llama-cpp-python 0.3.36 (recorded): one slot that interrupts a stream for a
            # waiter, no usage in streams, json_object only; LiteLLM 1.108.7 in front of it
            # passes its refusals on in its own words, turns a cut into `stop`, makes usage up.
            from .recorded import cut_ending, format_refusal

            self.recorded_kind = kind
            self.accepted_formats = ("text", "json_object")
            self.format_refusal_body = format_refusal(kind)
            self.cut_ending = cut_ending(kind)
            self.refuse_in_stream = "empty" if kind == "llama-cpp-python" else "stop"
            self.stream_usage = kind == "litellm"
            self.slots = 1
            self.hold_first_for_waiter = True
            self.cache_report = False
        elif kind in ("vllm", "llama.cpp"):
            self.cache_report = False  # vLLM: only with --enable-prompt-tokens-details
        return self

    def tokens(self, text: str) -> int:
        return int(len(text) / self.chars_per_token)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    counted = False  # this request is counted in state.in_flight

    def log_message(self, format: str, *args: object) -> None:
        pass

    def answered(self) -> None:
        """Count this request out of flight, before the last bytes of its answer are written:
        a client sends its next request only once it has them, so the two are never counted
        at once (counted out after the write, a quick client's next one was counted beside
        it). A stream cut with no ending is counted out before its connection closes."""
        if self.counted:
            self.counted = False
            with self.server.state.lock:
                self.server.state.in_flight -= 1
                if self.server.state.fleet is not None:
                    self.server.state.fleet.count(-1)
                self.server.state.lock.notify_all()

    def do_GET(self) -> None:
        state = self.server.state
        starting = time.monotonic() < state.starting_until or state.starting_health_checks > 0
        if self.path == "/v1/models":
            with state.lock:
                state.model_requests += 1
        sglang = state.kind == "sglang" and not state.plain_openai
        if (self.path in ("/server_info", "/get_server_info") and not sglang) or (self.path == "/health" and (
                state.plain_openai or state.kind in ("llama-cpp-python", "litellm"))):
            self._error(404, "Not Found", "NotFoundError")
        elif self.path == "/props" and state.kind == "llama.cpp":
            self._json(200, {"default_generation_settings": {"n_ctx": state.max_model_len},
                             "total_slots": 1})
        elif starting and self.path in ("/health", "/v1/models", "/server_info"):
            with state.lock:
                state.starting_health_checks = max(0, state.starting_health_checks - 1)
            self._error(503, "The server is starting.", "ServiceUnavailableError")
        elif self.path == "/health":
            self._json(200, {})
        elif self.path == "/v1/models":
            models = []
            for m in state.models:
                entry: dict[str, Any] = {"id": m, "object": "model", "created": 0,
                                         "owned_by": "sglang", "root": m}
                if not state.plain_openai and state.kind in ("sglang", "vllm"):
                    entry["max_model_len"] = state.max_model_len
                models.append(entry)
            self._json(200, {"object": "list", "data": models})
        elif self.path in ("/model_info", "/get_model_info") and sglang:
            # What SGLang's router reads of a worker, beside /server_info.
            self._json(200, {"model_path": state.models[0], "is_generation": True})
        elif self.path.split("?")[0] in ("/v1/loads", "/get_load") and sglang:
            # SGLang's load report (`/get_load` its deprecated alias), which the routers ask.
            with state.lock:
                running = state.in_flight + state.others_in_flight
            rank = {"dp_rank": 0, "num_running_reqs": running, "num_waiting_reqs": 0,
                    "num_total_reqs": running}
            self._json(200, [rank] if self.path == "/get_load" else {
                "timestamp": "2026-12-07T00:00:00Z", "version": "0.5.23", "dp_rank_count": 1,
                "loads": [rank]})
        elif self.path in ("/server_info", "/get_server_info"):  # the second: its old alias
            self._json(200, {
                "model_path": state.models[0], "served_model_name": state.models[0],
                "context_length": state.max_model_len,
                "disable_radix_cache": state.radix_cache_off,
                "enable_cache_report": state.cache_report,
                "schedule_policy": state.schedule_policy,
                "reasoning_parser": state.reasoning_parser,
                "max_total_num_tokens": 1_000_000, "version": "0.5.23",
                "max_running_requests": state.max_running_requests})
        else:
            self._error(404, "Not Found", "NotFoundError")

    def do_POST(self) -> None:
        state = self.server.state
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        if self._tokenize(body):
            return
        if self.path != "/v1/chat/completions":
            self._error(404, "Not Found", "NotFoundError")
            return
        self._body = body
        with state.lock:
            state.authorizations.append(self.headers.get("Authorization", ""))
            state.chat_requests.append(body)
            state.arrivals.append((time.monotonic(), body))
            drop = bool(state.drop_beyond) and state.in_flight >= state.drop_beyond
            state.dropped += drop
            fault = None if drop or not state.faults else state.faults.pop(0)
            state.in_flight += not drop
            self.counted = not drop
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
            if state.fleet is not None and not drop:
                state.fleet.count(+1)
            state.lock.notify_all()
        if drop:  # past its capacity: the connection closes with no response at all
            self.close_connection = True
            return
        try:
            if state.slots:
                with state.slot_lock:
                    state.waiting += 1
                    state.slot_lock.notify_all()
                    while state.busy >= state.slots:
                        state.slot_lock.wait()
                    state.waiting -= 1
                    state.busy += 1
            try:
                self._chat(body, fault)
            finally:
                if state.slots:
                    with state.slot_lock:
                        state.busy -= 1
                        state.slot_lock.notify_all()
        finally:
            self.answered()

    def _tokenize(self, body: dict[str, Any]) -> bool:
        """Each family's tokenizer endpoint, body and answer; True if this was one."""
        state = self.server.state
        kind, path = state.kind, self.path
        if not state.tokenize_endpoint or state.plain_openai:
            return False
        if kind == "sglang" and path in ("/v1/tokenize", "/tokenize") or (
                kind == "vllm" and path == "/tokenize"):
            if "prompt" not in body:
                self._error(422, "field required: prompt", "BadRequestError")
                return True
            texts = body["prompt"] if isinstance(body["prompt"], list) else [body["prompt"]]
            counts = [state.tokens(t) for t in texts]
            answer: dict[str, Any] = {"tokens": [], "max_model_len": state.max_model_len,
                                      "count": counts if isinstance(body["prompt"], list)
                                      else counts[0]}
        elif kind == "llama-cpp-python" and path == "/extras/tokenize/count":
            answer = {"count": state.tokens(str(body.get("input", "")))}
        elif kind == "llama.cpp" and path == "/tokenize":  # a field it does not know: no tokens
            answer = {"tokens": [0] * state.tokens(str(body.get("content", "")))}
        else:
            return False
        with state.lock:
            state.tokenize_requests += 1
        self._json(200, answer)
        return True

    def _chat(self, body: dict[str, Any], fault: Fault | None) -> None:
        state = self.server.state
        if state.delay_s:
            time.sleep(state.delay_s)
        if fault:
            self._error(fault.status, fault.message, fault.error_type)
            return
        if body.get("model") not in state.models:
            self._error(404, f"The model `{body.get('model')}` does not exist.", "NotFoundError")
            return
        if time.monotonic() < state.starting_until or state.starting_health_checks:
            self._error(503, "The server is starting.", "ServiceUnavailableError")
            return
        if state.reject_response_format and "response_format" in body:
            self._error(400, "response_format json_schema is not supported", "BadRequestError")
            return
        kind = (body.get("response_format") or {}).get("type")
        if kind and state.accepted_formats is not None and kind not in state.accepted_formats \
                and state.format_refusal_body is not None:
            self._raw(*state.format_refusal_body)
            return
        if kind and state.accepted_formats is not None and kind not in state.accepted_formats:
            self._error(state.format_refusal_status, "1 validation error for request: "
                        "response_format.type: Input should be 'text' or 'json_object'",
                        "InternalServerError")
            return
        answer = (state.structured_responder if is_structured(body) else state.responder)(body)
        if isinstance(answer, Fault):
            self._error(answer.status, answer.message, answer.error_type)
            return
        if answer.reasoning and (state.reasoning_parser is None or state.plain_openai):
            answer = Answer(f"<think>{answer.reasoning}</think>{answer.content}",
                            finish_reason=answer.finish_reason,
                            completion_tokens=answer.completion_tokens)
        prompt = "".join(str(m["content"]) for m in body["messages"])
        # DeepSeek V4's encoder: the modes differ only after the final assistant marker, so
        # thinking and non-thinking prompts share the bundle's cached prefix.
        prompt += "<think>" if thinking_of(body) else "</think>"
        prompt_tokens = max(1, state.tokens(prompt))
        wanted = prompt_tokens + int(body.get("max_tokens") or 0)
        if state.enforce_context and wanted > state.max_model_len and state.refuse_in_stream \
                and body.get("stream"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.close_connection = True
            self.answered()
            if state.refuse_in_stream == "event":
                error = {"message": f"Requested tokens ({prompt_tokens}) exceed context window "
                                    f"of {state.max_model_len}", "type": "internal_server_error"}
                self.wfile.write(f"data: {json.dumps({'error': error})}\n\n".encode())
            elif state.refuse_in_stream == "stop":
                chunk = {"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 0,
                         "model": body["model"],
                         "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode())
            self.wfile.flush()  # "empty": no event at all, and the connection closes
            return
        if state.enforce_context and wanted > state.max_model_len and state.recorded_kind:
            from .recorded import context_refusal

            self._raw(*context_refusal(state.recorded_kind, state.max_model_len, prompt_tokens,
                                       int(body.get("max_tokens") or 0)))
            return
        if state.enforce_context and wanted > state.max_model_len:
            self._error(400, "Requested token count exceeds the model's maximum context length "
                        f"of {state.max_model_len} tokens. You requested a total of {wanted} "
                        f"tokens: {prompt_tokens} tokens from the input messages and "
                        f"{body.get('max_tokens')} tokens for the completion.", "BadRequestError")
            return
        with state.lock:
            best = max((_common(prompt, p) for p in state.seen_prompts), default=0)
            state.seen_prompts.append(prompt)
        cached = 0 if state.radix_cache_off else min(
            state.tokens(prompt[:best]) // PAGE_TOKENS * PAGE_TOKENS, prompt_tokens - 1)
        reasoning_tokens = len(answer.reasoning) // 4
        completion_tokens = answer.completion_tokens or (
            max(1, len(answer.content) // 4) + reasoning_tokens)
        message: dict[str, Any] = {"role": "assistant", "content": answer.content,
                                   "reasoning_content": answer.reasoning or None,
                                   "tool_calls": None}
        usage: dict[str, Any] = {
            "prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens + completion_tokens,
            "completion_tokens": completion_tokens, "reasoning_tokens": reasoning_tokens}
        if state.cache_report and not state.plain_openai:
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
        ident = f"chatcmpl-{len(state.chat_requests)}"
        if body.get("stream"):
            self._stream(ident, body["model"], answer, usage)
            return
        self._finish()
        self._json(200, {
            "id": ident, "object": "chat.completion",
            "created": int(time.time()), "model": body["model"],
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": answer.finish_reason, "matched_stop": 1}],
            "usage": usage,
        })

    def _stream(self, ident: str, model: str, answer: Answer, usage: dict[str, Any]) -> None:
        """Server-sent events as SGLang sends them: reasoning deltas, content deltas, usage."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

        def send(delta: dict[str, Any], finish: str | None = None,
                 with_usage: dict[str, Any] | None = None) -> None:
            chunk: dict[str, Any] = {"id": ident, "object": "chat.completion.chunk",
                                     "created": int(time.time()), "model": model,
                                     "choices": [] if with_usage else [
                                         {"index": 0, "delta": delta, "logprobs": None,
                                          "finish_reason": finish}],
                                     "usage": with_usage}
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            self.wfile.flush()

        send({"role": "assistant", "content": ""})
        state = self.server.state
        endless = state.endless(self._body)
        if endless:
            self._endless(endless, send)
            return
        if state.prefill_delay_s:
            time.sleep(state.prefill_delay_s)
        deadline = time.monotonic() + 10  # bounded: a test that waits in vain fails, never hangs
        while (state.hold_first_tokens_until and len(state.arrivals) < state.hold_first_tokens_until
               and time.monotonic() < deadline):
            time.sleep(0.01)
        with state.lock:
            state.first_tokens.append((time.monotonic(), self._body))
        with self.server.state.lock:
            cut = self.server.state.cut_streams > 0
            self.server.state.cut_streams -= cut
        # The slot interrupts whatever is being generated, the thinking included: a thinking
        # answer cut for a waiter is reasoning and no answer (LiteLLM then says `stop`).
        pieces = [("reasoning_content", piece) for piece in _pieces(answer.reasoning)]
        pieces += [("content", piece) for piece in _pieces(answer.content)]
        thought = len(pieces) - len(_pieces(answer.content))
        for index, (where, piece) in enumerate(pieces):
            if cut and index - thought == 3:
                self._cut_ending()
                return
            if index == 1 and state.slots and state.hold_first_for_waiter:
                # The first stream's first token is out (a client that gates its next
                # requests on it sends them now): it goes on once one of them waits.
                with state.slot_lock:
                    held, state.hold_first_for_waiter = state.hold_first_for_waiter, False
                    if held:
                        state.slot_lock.wait_for(lambda: state.waiting > 0, timeout=5)
            patience = max(1, min(state.slot_patience, len(pieces) // 2))
            if state.slots and state.waiting and index >= patience:  # interrupted for the waiter
                with state.lock:
                    state.cut_count += 1
                    state.cuts.append(where)
                self._cut_ending()
                return
            send({where: piece})
            if state.slots:
                time.sleep(0.002)  # a model generates; a waiter arrives meanwhile
        self._finish()
        send({}, finish=answer.finish_reason)
        if state.stream_usage:
            send({}, with_usage=usage)
        self.answered()
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def _finish(self) -> None:
        """Note when this answer was complete (held first while fewer than
        `hold_until_in_flight` requests have been in flight at once)."""
        state = self.server.state
        with state.lock:
            state.lock.wait_for(lambda: state.max_in_flight >= state.hold_until_in_flight,
                                timeout=10)
            state.finished.append(time.monotonic())
            state.lock.notify_all()

    def _endless(self, how: str, send: Callable[..., None]) -> None:
        until = time.monotonic() + 60
        try:
            if how == "stall":
                send({"content": "A start"})
            while time.monotonic() < until:
                time.sleep(0.5)
                if how == "trickle":
                    send({"content": "and "})
                else:
                    self.wfile.write(b": keep-alive\n\n")
                    self.wfile.flush()
        except OSError:  # the client cut the stream: what a deadline is for
            pass

    def _cut_ending(self) -> None:
        """The end of a cut stream as the server recorded it (else none: the socket closes)."""
        self.answered()
        for event in self.server.state.cut_ending or ():
            self.wfile.write(f"data: {event}\n\n".encode())
        self.wfile.flush()

    def _raw(self, status: int, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.answered()
        self.wfile.write(data)

    def _error(self, status: int, message: str, error_type: str) -> None:
        self._json(status, {"object": "error", "message": message, "type": error_type,
                            "param": None, "code": status})

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.answered()
        self.wfile.write(data)


def _pieces(text: str, size: int = 40) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


def _common(a: str, b: str) -> int:
    """The length of the prefix `a` and `b` share: halved by slices compared at C speed (a
    loop over characters was a tenth of a build's CPU, every prompt against every one seen)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a.startswith(b[low:middle], low):
            low = middle
        else:
            high = middle - 1
    return low


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # SGLang (uvicorn) accepts a backlog of 2048; the default of 5 dropped connections when a
    # triage run opened 26 at once on a loaded machine, so a test's count of requests depended
    # on how the threads were scheduled.
    request_queue_size = 256
    state: SglangState


class SglangServer:
    """Start with `start()`; `base_url` goes into [llm] base_url."""

    def __init__(self, port: int = 0) -> None:
        self.state = SglangState()
        self._server = _Server(("127.0.0.1", port), _Handler)
        self._server.state = self.state
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> SglangServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
