"""llama.cpp's `llama-server` on 127.0.0.1, answering as build b10359 did when recorded.

Every answer's shape comes from tests/fixtures/servers/llama-server-b10359/ (its README):
the recorded bodies are loaded and only this request's values put in (the model's path, the
context, the slots, the token counts, the answer's text), in the recorded key order, with the
recorded headers. What it does, as recorded:

- `/health` answers 503 `{"error": {..., "type": "unavailable_error"}}` while the model loads
  (every other endpoint too), then `{"status": "ok"}`;
- `/v1/models` has no `max_model_len` (its `meta.n_ctx` is the whole context); `/props`
  states one slot's context (`default_generation_settings.n_ctx`: `-c` divided by `-np`, or
  the whole of it with the default unified cache) and `total_slots`; `/slots` lists them;
- `/tokenize` counts `content` (a list of ids) and answers `{"tokens": []}` to a body with
  `prompt` instead (vLLM's field); `/v1/tokenize`, `/extras/tokenize/count`, `/server_info`:
  404 `not_found_error`;
- the `model` field is not checked (any name is served); `json_schema` is taken (an invalid
  schema is a 400 `invalid_request_error`); a prompt over one slot's context is a 400
  `exceed_context_size_error` naming both counts, streamed or not (only the prompt counts:
  `max_tokens` beyond the context is answered);
- requests beyond the slots wait in its queue (two streams on one slot both end `[DONE]`);
- with `-np` left at its default, 4 slots share one cache of `-c` tokens: requests in flight
  that together outgrow it get `{"error": {"code": 500, "message": "Context size has been
  exceeded.", ...}}` as an event in their streamed 200, before or after some of the answer
  (recorded from a `digest build`, 14a and 14b);
- usage carries `prompt_tokens_details.cached_tokens` (its prefix cache) and every answer
  `timings`; a stream has usage only with `stream_options.include_usage` (then in a last
  chunk with no choices), else its timings ride on the finish chunk.

Not recorded (SmolLM2 has no thinking mode): reasoning is sent as `reasoning_content`, which
llama-server's default `--reasoning-format` uses for models that think.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .recorded import exchange
from .sglang import (
    Answer,
    Fault,
    Responder,
    _common,
    _pieces,
    default_responder,
    is_structured,
    structured_answer,
)

KIND = "llama-server"
SCHEMA_TYPES = {"string", "integer", "number", "boolean", "object", "array", "null"}
# What the chat template (SmolLM2's ChatML) adds around each message, in tokens.
TEMPLATE_TOKENS = 5


def _recorded(prefix: str) -> dict[str, Any]:
    return dict(exchange(KIND, prefix)["response"])


def _recorded_json(prefix: str) -> Any:
    return json.loads(_recorded(prefix)["body"]["text"])


def _recorded_events(prefix: str) -> list[dict[str, Any]]:
    text = "".join(read["text"] for read in _recorded(prefix)["reads"])
    return [json.loads(block[len("data: "):]) for block in text.split("\n\n")
            if block.startswith("data: {")]


@dataclass
class LlamaState:
    model_path: str = "/models/SmolLM2-135M-Instruct.Q4_1.gguf"
    n_ctx: int = 8192  # -c
    n_parallel: int = 1  # -np
    unified: bool = False  # -np left at its default (4 slots sharing the whole context)
    loading_until: float = 0.0  # time.monotonic() before which the model is still loading
    responder: Responder = default_responder
    structured_responder: Responder = field(default=lambda body: structured_answer(body) or Fault(
        500, "no structured answer"))
    chars_per_token: float = 4.0
    chat_requests: list[dict[str, Any]] = field(default_factory=list)
    tokenize_requests: int = 0
    seen_prompts: list[str] = field(default_factory=list)
    busy: int = 0
    max_busy: int = 0
    queued: int = 0  # requests that waited for a slot
    in_flight: int = 0
    max_in_flight: int = 0  # requests at the server at once, queued ones included
    held_tokens: int = 0  # of the unified cache, by the answers being generated
    cache_full: int = 0  # streams that met "Context size has been exceeded."
    # A stream holding the unified cache, once its first token is sent (a client may wait for
    # it before sending more), keeps its share until the cache has filled once (5 s at most):
    # whether it fills then depends on what the client sends at once, not on how fast this
    # machine streams or schedules each answer.
    hold_for_overlap: bool = False
    filled: threading.Condition = field(default_factory=threading.Condition)
    slot_lock: threading.Condition = field(default_factory=threading.Condition)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def slot_ctx(self) -> int:
        return self.n_ctx if self.unified else self.n_ctx // self.n_parallel

    def tokens(self, text: str) -> int:
        return int(len(text) / self.chars_per_token)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    counted = False  # this request is counted in state.in_flight, and holds a slot
    held = 0  # tokens of the unified cache this request's answer holds

    def log_message(self, format: str, *args: object) -> None:
        pass

    def answered(self) -> None:
        """Count this request out of flight (its slot and cache given back), before the last
        bytes of its answer are written: a client sends its next request only once it has
        them, so the two are never counted at once (counted out after the write, a quick
        client's next request was counted beside it)."""
        state = self.server.state
        if self.counted:
            self.counted = False
            with state.slot_lock:
                state.busy -= 1
                state.slot_lock.notify_all()
            with state.lock:
                state.in_flight -= 1
                state.held_tokens -= self.held
                self.held = 0

    def do_GET(self) -> None:
        state = self.server.state
        path = self.path.split("?")[0]
        if time.monotonic() < state.loading_until:
            self._recorded_body("01a_")
        elif path == "/health":
            self._recorded_body("01b_")
        elif path in ("/v1/models", "/models"):
            self._send_json(200, self._models())
        elif path == "/props":
            props = _recorded_json("02b_")
            props["default_generation_settings"]["n_ctx"] = state.slot_ctx
            props["total_slots"] = state.n_parallel
            props["model_alias"] = props["model_path"] = state.model_path
            self._send_json(200, props)
        elif path == "/slots":
            slot = _recorded_json("02c_")[0]
            self._send_json(200, [{**slot, "id": i, "n_ctx": state.slot_ctx}
                                  for i in range(state.n_parallel)])
        else:
            self._recorded_body("02d_")

    def do_POST(self) -> None:
        state = self.server.state
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        path = self.path.split("?")[0]
        if time.monotonic() < state.loading_until:
            self._recorded_body("01a_")
        elif path == "/tokenize":
            with state.lock:
                state.tokenize_requests += 1
            ids = _recorded_json("03d_")["tokens"]
            count = state.tokens(str(body["content"])) if "content" in body else 0
            self._send_json(200, {"tokens": [ids[i % len(ids)] for i in range(count)]})
        elif path in ("/v1/chat/completions", "/chat/completions"):
            with state.lock:
                state.chat_requests.append(body)
                state.in_flight += 1
                state.max_in_flight = max(state.max_in_flight, state.in_flight)
            with state.slot_lock:  # beyond its slots a request waits in the queue
                if state.busy >= state.n_parallel:
                    state.queued += 1
                state.slot_lock.wait_for(lambda: state.busy < state.n_parallel)
                state.busy += 1
                state.max_busy = max(state.max_busy, state.busy)
                self.counted = True
            try:
                self._chat(body)
            finally:
                self.answered()
        else:
            self._recorded_body("02d_")

    def _models(self) -> dict[str, Any]:
        state, models = self.server.state, _recorded_json("02a_")
        for entry in models["models"]:
            entry["name"] = entry["model"] = state.model_path
        for entry in models["data"]:
            entry["id"], entry["aliases"] = state.model_path, [state.model_path]
            entry["meta"]["n_ctx"] = state.n_ctx
        return dict(models)

    def _chat(self, body: dict[str, Any]) -> None:
        state = self.server.state
        invalid = _invalid_schema(body.get("response_format"))
        if invalid is not None:
            refusal = _recorded_json("04c_")
            said = refusal["error"]["message"]
            refusal["error"]["message"] = (said[:said.index("Unrecognized schema: ")]
                                           + "Unrecognized schema: "
                                           + json.dumps(invalid, separators=(",", ":")))
            self._send_json(400, refusal)
            return
        prompt = "".join(str(m.get("content", "")) for m in body.get("messages", []))
        prompt_tokens = state.tokens(prompt) + TEMPLATE_TOKENS * len(body.get("messages", []))
        if prompt_tokens > state.slot_ctx:  # the prompt alone: max_tokens is not counted
            refusal = _recorded_json("05a_")
            refusal["error"]["message"] = (
                f"request ({prompt_tokens} tokens) exceeds the available context size "
                f"({state.slot_ctx} tokens), try increasing it")
            refusal["error"]["n_prompt_tokens"], refusal["error"]["n_ctx"] = (
                prompt_tokens, state.slot_ctx)
            self._send_json(400, refusal)
            return
        responder = state.structured_responder if is_structured(body) else state.responder
        answer = responder(body)
        if isinstance(answer, Fault):  # what a test scripts: in llama-server's error shape
            self._send_json(answer.status, {"error": {"code": answer.status,
                                                      "message": answer.message,
                                                      "type": "server_error"}})
            return
        with state.lock:
            best = max((_common(prompt, p) for p in state.seen_prompts), default=0)
            state.seen_prompts.append(prompt)
        cached = min(state.tokens(prompt[:best]), prompt_tokens - 1)
        completion_tokens = answer.completion_tokens or max(
            1, (len(answer.content) + len(answer.reasoning)) // 4)
        usage = {"completion_tokens": completion_tokens, "prompt_tokens": prompt_tokens,
                 "total_tokens": prompt_tokens + completion_tokens,
                 "prompt_tokens_details": {"cached_tokens": cached}}
        timings = _timings(cached, prompt_tokens - cached, completion_tokens)
        ident = f"chatcmpl-{len(state.chat_requests):032d}"
        if body.get("stream"):
            usage_wanted = bool((body.get("stream_options") or {}).get("include_usage"))
            held = prompt_tokens + completion_tokens
            with state.lock:
                full = state.unified and state.held_tokens + held > state.n_ctx
                state.cache_full += full
                self.held = 0 if full else held
                state.held_tokens += self.held
            if full:
                with state.filled:
                    state.filled.notify_all()
            self._stream(ident, answer, usage if usage_wanted else None, timings, full)
            return
        reply = _recorded_json("07_")
        message: dict[str, Any] = {"role": "assistant", "content": answer.content}
        if answer.reasoning:
            message["reasoning_content"] = answer.reasoning
        reply["choices"] = [{"finish_reason": answer.finish_reason, "index": 0,
                             "message": message}]
        reply.update(created=int(time.time()), model=state.model_path, usage=usage, id=ident,
                     timings=timings)
        self._send_json(200, reply)

    def _stream(self, ident: str, answer: Answer, usage: dict[str, Any] | None,
                timings: dict[str, Any], full: bool = False) -> None:
        events = _recorded_events("06a_")
        first, piece, finish, last = events[0], events[1], events[-2], events[-1]
        self.send_response_only(200, "OK")
        for key, value in _recorded("06a_")["headers"]:
            if key.lower() not in ("connection",):
                self.send_header(key, value)
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

        def send(template: dict[str, Any], **values: Any) -> None:
            chunk = copy.deepcopy(template)
            chunk.update(created=int(time.time()), id=ident, model=self.server.state.model_path)
            chunk.update(values)
            data = f"data: {json.dumps(chunk, separators=(',', ':'))}\n\n".encode()
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        send(first)
        pieces = ([("reasoning_content", p) for p in _pieces(answer.reasoning)]
                  + [("content", p) for p in _pieces(answer.content)])
        for index, (where, text) in enumerate(pieces):
            if index == 1 and self.server.state.hold_for_overlap and not full:
                self._hold_for_overlap()
            if full and index == min(2, len(pieces) - 1):  # the cache filled (recorded 14a)
                error = _recorded("14a_")["stream_summary"]["error_events"][0]["data"]
                data = f"data: {error}\n\n".encode()
                self.answered()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n0\r\n\r\n")
                self.wfile.flush()
                return
            send(piece, choices=[{"finish_reason": None, "index": 0, "delta": {where: text}}])
        ending = [{"finish_reason": answer.finish_reason, "index": 0, "delta": {}}]
        if usage is None:  # the timings ride on the finish chunk (recorded 06b)
            send(finish, choices=ending, timings=timings)
        else:
            send(finish, choices=ending)
            send(last, usage=usage, timings=timings)
        done = b"data: [DONE]\n\n"
        self.answered()
        self.wfile.write(f"{len(done):x}\r\n".encode() + done + b"\r\n0\r\n\r\n")
        self.wfile.flush()

    def _hold_for_overlap(self) -> None:
        """Keep this stream's share of the cache until the cache has filled once (5 s at
        most)."""
        state = self.server.state
        with state.filled:
            state.filled.wait_for(lambda: state.cache_full > 0, timeout=5.0)

    def _recorded_body(self, prefix: str) -> None:
        response = _recorded(prefix)
        self._send(int(response["status"]), response["body"]["text"].encode())

    def _send_json(self, status: int, payload: Any) -> None:
        self._send(status, json.dumps(payload, separators=(",", ":"),
                                      ensure_ascii=False).encode())

    def _send(self, status: int, data: bytes) -> None:
        self.send_response_only(status, "OK" if status == 200 else None)
        for key, value in _recorded("07_")["headers"]:  # Server, CORS, Content-Type
            if key.lower() not in ("content-length", "connection"):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.answered()
        self.wfile.write(data)


def _invalid_schema(response_format: Any) -> dict[str, Any] | None:
    """The first sub-schema whose `type` llama.cpp's schema converter does not know."""
    if not isinstance(response_format, dict) or response_format.get("type") != "json_schema":
        return None
    pending = [response_format.get("json_schema", {}).get("schema")]
    while pending:
        schema = pending.pop()
        if isinstance(schema, dict):
            kind = schema.get("type")
            kinds = kind if isinstance(kind, list) else [kind] if kind is not None else []
            if any(k not in SCHEMA_TYPES for k in kinds):
                return schema
            pending += list(schema.values())
        elif isinstance(schema, list):
            pending += schema
    return None


def _timings(cached: int, prompt_n: int, predicted_n: int) -> dict[str, Any]:
    """The recorded `timings` object, with this answer's counts (at the recorded speeds)."""
    timings = dict(_recorded_json("07_")["timings"])
    prompt_ms = prompt_n * timings["prompt_per_token_ms"]
    predicted_ms = predicted_n * timings["predicted_per_token_ms"]
    timings.update(cache_n=cached, prompt_n=prompt_n, prompt_ms=prompt_ms,
                   predicted_n=predicted_n, predicted_ms=predicted_ms)
    return timings


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    state: LlamaState


class LlamaServer:
    """Start with `start()`; `base_url` goes into [llm] base_url."""

    def __init__(self, state: LlamaState | None = None) -> None:
        self.state = state or LlamaState()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.state = self.state
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> LlamaServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
