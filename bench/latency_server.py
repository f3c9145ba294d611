"""A latency-modelled SGLang-shaped server for benchmarks, on 127.0.0.1.

The model: one prefill queue served first come, first served at `prefill_tps`; a radix prefix
cache over completed prefills, in pages of `page_tokens`; the first token streamed right after
a request's prefill; then decode at `decode_tps` per request, all requests decoding in parallel
(continuous batching). Time runs `scale` times faster than the model's seconds so that a
benchmark takes seconds. A prose answer is `answer_tokens` long, a structured one (a brief, the
theme map) `structured_tokens`, each at most the request's max_tokens; a thinking request first
decodes `reasoning_tokens`. As with DeepSeek V4's encoder, a thinking prompt differs from its
non-thinking twin only at the end, so the modes share the bundle's cached prefix.

With `cache_blind` (the default) a request looks up the cache when it arrives, as a scheduler
that does not re-match waiting requests would: requests that arrive together all miss. Without
it (cache-aware, as SGLang schedules), the lookup happens when the request's prefill starts.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHARS_PER_TOKEN = 4


@dataclass
class Model:
    prefill_tps: float = 12_000.0
    decode_tps: float = 80.0
    answer_tokens: int = 1_200
    reasoning_tokens: int = 2_000
    structured_tokens: int = 250
    page_tokens: int = 256
    scale: float = 0.05  # real seconds per model second
    cache_blind: bool = True
    max_running_requests: int = 64  # reported at /server_info, as SGLang does

    def decode(self, body: dict[str, Any]) -> tuple[int, int]:
        """(reasoning, answer) tokens the model decodes for a request body."""
        limit = int(body.get("max_tokens") or 1 << 30)
        answer = self.structured_tokens if "response_format" in body else self.answer_tokens
        reasoning = self.reasoning_tokens if thinking(body) else 0
        return min(reasoning, limit // 2), min(answer, limit - min(reasoning, limit // 2))


def thinking(body: dict[str, Any]) -> bool:
    return bool((body.get("chat_template_kwargs") or {}).get("thinking"))


def prompt_text(body: dict[str, Any]) -> str:
    """The prompt as the server caches it: the messages, then the mode's marker."""
    text = "".join(str(m["content"]) for m in body["messages"])
    return text + ("<think>" if thinking(body) else "</think>")


@dataclass
class _Job:
    prompt: str
    cached_tokens: int | None
    done: threading.Event = field(default_factory=threading.Event)


@dataclass
class Stats:
    prompt_tokens: int = 0
    cached_tokens: int = 0
    requests: int = 0


class LatencyServer:
    def __init__(self, model: Model, served_model: str) -> None:
        self.model = model
        self.served_model = served_model
        self.stats = Stats()
        self._completed: list[str] = []
        self._lock = threading.Lock()
        self._queue: queue.Queue[_Job | None] = queue.Queue()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._threads = [threading.Thread(target=self._server.serve_forever, daemon=True),
                         threading.Thread(target=self._prefill_worker, daemon=True)]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> LatencyServer:
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        self._queue.put(None)
        self._server.shutdown()
        self._server.server_close()

    def reset(self) -> None:
        """Empty the prefix cache and the counters (a fresh server)."""
        with self._lock:
            self._completed.clear()
            self.stats = Stats()

    def cached(self, prompt: str) -> int:
        """Tokens of `prompt` already in the prefix cache, in whole pages."""
        with self._lock:
            best = max((_common(prompt, done) for done in self._completed), default=0)
        tokens = best // CHARS_PER_TOKEN
        return tokens // self.model.page_tokens * self.model.page_tokens

    def prefill(self, prompt: str) -> int:
        """Queue the prompt's prefill and wait for it; the tokens served from the cache."""
        job = _Job(prompt, self.cached(prompt) if self.model.cache_blind else None)
        self._queue.put(job)
        job.done.wait()
        assert job.cached_tokens is not None
        return job.cached_tokens

    def _prefill_worker(self) -> None:
        while (job := self._queue.get()) is not None:
            if job.cached_tokens is None:
                job.cached_tokens = self.cached(job.prompt)
            uncached = len(job.prompt) // CHARS_PER_TOKEN - job.cached_tokens
            time.sleep(max(uncached, 0) / self.model.prefill_tps * self.model.scale)
            with self._lock:
                self._completed.append(job.prompt)
            job.done.set()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: LatencyServer


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        owner = self.server.owner
        if self.path in ("/v1/models", "/health"):
            self._json({"object": "list", "data": [
                {"id": owner.served_model, "object": "model", "max_model_len": 131072}]})
        elif self.path in ("/server_info", "/get_server_info"):
            self._json({"max_running_requests": owner.model.max_running_requests,
                        "context_length": 131072})
        else:
            self.send_error(404)

    def do_POST(self) -> None:
        owner = self.server.owner
        model = owner.model
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = prompt_text(body)
        prompt_tokens = len(prompt) // CHARS_PER_TOKEN
        cached = owner.prefill(prompt)
        with owner._lock:
            owner.stats.requests += 1
            owner.stats.prompt_tokens += prompt_tokens
            owner.stats.cached_tokens += cached
        reasoning, answer_tokens = model.decode(body)
        total = reasoning + answer_tokens
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": total,
                 "total_tokens": prompt_tokens + total, "reasoning_tokens": reasoning,
                 "prompt_tokens_details": {"cached_tokens": cached}}
        step = 50  # tokens a chunk
        answer = _answer(body, answer_tokens)
        if not body.get("stream"):
            time.sleep(total / model.decode_tps * model.scale)
            self._json({"id": "x", "object": "chat.completion", "model": owner.served_model,
                        "choices": [{"index": 0, "finish_reason": "stop", "message": {
                            "role": "assistant", "content": answer,
                            "reasoning_content": "Hmm. " * (reasoning // 2) or None}}],
                        "usage": usage})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for sent in range(0, total, step):
            n = min(step, total - sent)
            if sent < reasoning:
                delta = {"reasoning_content": "word " * n}
            else:
                done = sent - reasoning
                share = len(answer) / max(answer_tokens, 1)
                delta = {"content": answer[int(done * share):int((done + n) * share)]}
            self._event({"choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
            time.sleep(n / model.decode_tps * model.scale)
        self._event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        self._event({"choices": [], "usage": usage})
        self.wfile.write(b"data: [DONE]\n\n")

    def _event(self, payload: dict[str, Any]) -> None:
        payload = {"id": "x", "object": "chat.completion.chunk", "created": 0,
                   "model": self.server.owner.served_model, **payload}
        self.wfile.write(b"data: " + json.dumps(payload).encode() + b"\n\n")
        self.wfile.flush()

    def _json(self, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _answer(body: dict[str, Any], tokens: int) -> str:
    """Text of about `tokens` tokens; schema-valid JSON for a structured request."""
    words = "word " * max(tokens - 20, 1)
    schema = json.dumps(body.get("response_format") or {})
    if '"themes"' in schema:
        return json.dumps({"themes": [{"name": "Theme", "papers": [1, 2], "description": words}]})
    if "response_format" in body:
        return json.dumps({"tldr": words, "problem": "A problem.", "method": "A method.",
                           "result": "A result.", "limitations": "Some."})
    return words


def _common(a: str, b: str) -> int:
    # os.path.commonprefix compares in C; fast enough for 200k-character prompts.
    import os.path

    return len(os.path.commonprefix([a, b]))
