"""A latency-modelled SGLang-shaped server for benchmarks, on 127.0.0.1.

The model: one prefill queue served first come, first served at `prefill_tps`; a radix prefix
cache in pages of `page_tokens` over completed prefills and, as SGLang inserts a finished
request's output too, over each finished prompt with its answer (a conversation that continues
an answer finds it cached; a thinking answer's history drops its reasoning, so there the match
ends at the answer); the first token streamed right after
a request's prefill; then decode at `decode_tps` per request, all requests decoding in parallel
(continuous batching). Time runs `scale` times faster than the model's seconds so that a
benchmark takes seconds. A prose answer is `answer_tokens` long, a structured one (a brief, the
theme map) `structured_tokens`, each at most the request's max_tokens; a thinking request first
decodes `reasoning_tokens`. As with DeepSeek V4's encoder, a thinking prompt differs from its
non-thinking twin only at the end, so the modes share the bundle's cached prefix.

With `cache_blind` (the default) a request looks up the cache when it arrives, as a scheduler
that does not re-match waiting requests would: requests that arrive together all miss. Without
it (cache-aware, as SGLang schedules), the lookup happens when the request's prefill starts.

As SGLang, it runs at most `max_running_requests` requests at once (prefill and decode); more
wait their turn in its queue. It answers what SGLang's router reads of a worker
(`/server_info` with `served_model_name`, `/model_info`, `/health`), so that several of them
can stand behind the real router (bench/router.py).
"""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import queue
import re
import threading
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import requests

CHARS_PER_TOKEN = 4


@dataclass
class Model:
    prefill_tps: float = 12_000.0
    decode_tps: float = 80.0
    answer_tokens: int = 1_200
    reasoning_tokens: int = 2_000
    structured_tokens: int = 250
    quote_tokens: int = 60  # an evidence entry: about 40 words of quote and its numbers
    page_tokens: int = 256
    scale: float = 0.05  # real seconds per model second
    cache_blind: bool = True
    max_running_requests: int = 64  # reported at /server_info, as SGLang does

    def decode(self, body: dict[str, Any]) -> tuple[int, int]:
        """(reasoning, answer) tokens the model decodes for a request body."""
        limit = int(body.get("max_tokens") or 1 << 30)
        reasoning, answer = self._wanted(body)
        return min(reasoning, limit // 2), min(answer, limit - min(reasoning, limit // 2))

    def cut(self, body: dict[str, Any]) -> bool:
        """Whether the answer stops at max_tokens ("length") before the model was done."""
        return self._wanted(body)[1] > self.decode(body)[1]

    def _wanted(self, body: dict[str, Any]) -> tuple[int, int]:
        answer = self.structured_tokens if "response_format" in body else self.answer_tokens
        if claims(body):  # an evidence check: a quote and two numbers per claim
            answer = len(claims(body)) * self.quote_tokens
        if judged(body):  # a judgement: a verdict and a short reason per claim
            answer = len(judged(body)) * JUDGE_TOKENS
        if continuing(body):  # the rest of an answer cut at its budget
            answer = max(1, self.answer_tokens - written(body))
        return (self.reasoning_tokens if thinking(body) else 0), answer


def continuing(body: dict[str, Any]) -> bool:
    """A request to go on with an answer cut at its budget (synthesis/continuation.py)."""
    messages = body.get("messages") or []
    return (len(messages) > 2 and messages[-2].get("role") == "assistant"
            and str(messages[-1].get("content", "")).startswith("Your answer above stopped"))


def written(body: dict[str, Any]) -> int:
    """Tokens of the answer so far, in a continuation's conversation (a word a token, as
    `_answer` writes prose)."""
    return len(str(body["messages"][-2].get("content", "")).split())


def thinking(body: dict[str, Any]) -> bool:
    return bool((body.get("chat_template_kwargs") or {}).get("thinking"))


def prompt_text(body: dict[str, Any]) -> str:
    """The prompt as the server caches it: the messages (an earlier answer after the
    non-thinking marker, as DeepSeek V4's encoder writes history), then the mode's marker."""
    text = "".join(("</think>" if m.get("role") == "assistant" else "") + str(m["content"])
                   for m in body["messages"])
    return text + ("<think>" if thinking(body) else "</think>")


class PrefixCache:
    """A radix cache in pages, as SGLang's: a prompt's cached tokens are its leading whole pages
    that some inserted text began with. Pages are chained by hash, so a lookup costs one pass
    over the prompt however many texts are cached."""

    def __init__(self, page_tokens: int) -> None:
        self._page = page_tokens * CHARS_PER_TOKEN
        self._pages: set[int] = set()

    def _chain(self, text: str) -> Iterator[int]:
        key = 0
        for start in range(0, len(text) - self._page + 1, self._page):
            key = hash((key, text[start:start + self._page]))
            yield key

    def insert(self, text: str) -> None:
        self._pages.update(self._chain(text))

    def cached_tokens(self, text: str) -> int:
        pages = 0
        for key in self._chain(text):
            if key not in self._pages:
                break
            pages += 1
        return pages * self._page // CHARS_PER_TOKEN

    def clear(self) -> None:
        self._pages.clear()


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
    peak_in_flight: int = 0  # chat requests it held at once, waiting ones included
    waited: int = 0  # requests that arrived with every running slot taken, and waited
    thinking: int = 0  # requests that asked to think (chat_template_kwargs thinking true)
    unsaid: int = 0  # requests that did not say whether to think (a gateway's default decides)


class LatencyServer:
    def __init__(self, model: Model, served_model: str) -> None:
        self.model = model
        self.served_model = served_model
        self.stats = Stats()
        self._cache = PrefixCache(model.page_tokens)
        self._lock = threading.Lock()
        self._running = threading.BoundedSemaphore(model.max_running_requests)
        self._in_flight = 0
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
            self._cache.clear()
            self.stats = Stats()

    def arrived(self, body: dict[str, Any]) -> None:
        with self._lock:
            self.stats.thinking += thinking(body)
            self.stats.unsaid += "thinking" not in (body.get("chat_template_kwargs") or {})
            self._in_flight += 1
            self.stats.peak_in_flight = max(self.stats.peak_in_flight, self._in_flight)

    def left(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def cached(self, prompt: str) -> int:
        """Tokens of `prompt` already in the prefix cache, in whole pages."""
        with self._lock:
            return self._cache.cached_tokens(prompt)

    def finished(self, prompt: str, answer: str, body: dict[str, Any]) -> None:
        """Cache a finished request's prompt with its answer (see the module's docstring)."""
        if not thinking(body):
            with self._lock:
                self._cache.insert(prompt + answer)

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
                self._cache.insert(job.prompt)
            job.done.set()


class ServerProcess:
    """A LatencyServer in a process of its own, as SGLang is: the benchmark's client threads
    and the server's then do not share one interpreter lock, which would slow the model's
    clock as more requests stream at once."""

    def __init__(self, model: Model, served_model: str) -> None:
        self._model, self._served = model, served_model
        self._session = requests.Session()
        self.base_url = ""
        self._process: multiprocessing.process.BaseProcess | None = None

    def start(self) -> ServerProcess:
        context = multiprocessing.get_context("spawn")
        ours, theirs = context.Pipe()
        self._process = context.Process(target=_serve, args=(self._model, self._served, theirs),
                                        daemon=True)
        self._process.start()
        self.base_url = ours.recv()
        return self

    @property
    def stats(self) -> Stats:
        root = self.base_url.removesuffix("/v1")
        return Stats(**self._session.get(f"{root}/bench/stats", timeout=10).json())

    def reset(self) -> None:
        self._session.post(f"{self.base_url.removesuffix('/v1')}/bench/reset", json={},
                           timeout=10).raise_for_status()

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.join()


def _serve(model: Model, served_model: str, conn: Any) -> None:
    server = LatencyServer(model, served_model).start()
    conn.send(server.base_url)
    threading.Event().wait()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # a whole edition connects at once, as to SGLang
    owner: LatencyServer


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        owner = self.server.owner
        if self.path == "/bench/stats":
            self._json(dataclasses.asdict(owner.stats))
        elif self.path in ("/v1/models", "/health"):
            self._json({"object": "list", "data": [
                {"id": owner.served_model, "object": "model", "max_model_len": 131072}]})
        elif self.path in ("/server_info", "/get_server_info"):
            self._json({"max_running_requests": owner.model.max_running_requests,
                        "context_length": 131072, "served_model_name": owner.served_model,
                        "model_path": owner.served_model, "enable_cache_report": True,
                        "schedule_policy": "lpm"})
        elif self.path in ("/model_info", "/get_model_info"):
            self._json({"model_path": owner.served_model, "is_generation": True})
        else:
            self.send_error(404)

    def do_POST(self) -> None:
        owner = self.server.owner
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path == "/bench/reset":
            owner.reset()
            self._json({})
            return
        if not self.path.endswith("/chat/completions"):  # SGLang's /tokenize and the like:
            self.send_error(404)  # not modelled (the client falls back to its estimate)
            return
        owner.arrived(body)
        try:
            if not owner._running.acquire(blocking=False):
                with owner._lock:
                    owner.stats.waited += 1
                owner._running.acquire()  # beyond max_running_requests, it waits its turn
            try:
                self._chat(body)
            finally:
                owner._running.release()
        finally:
            owner.left()

    def _chat(self, body: dict[str, Any]) -> None:
        owner = self.server.owner
        model = owner.model
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
            owner.finished(prompt, answer, body)
            self._json({"id": "x", "object": "chat.completion", "model": owner.served_model,
                        "choices": [{"index": 0, "finish_reason":
                                     "length" if model.cut(body) else "stop", "message": {
                            "role": "assistant", "content": answer,
                            "reasoning_content": "Hmm. " * (reasoning // 2) or None}}],
                        "usage": usage})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        began = time.perf_counter()  # decode runs at the server's pace, whatever the reader's:
        for sent in range(0, total, step):  # each chunk is due at its own time, not its gap
            n = min(step, total - sent)
            if sent < reasoning:
                delta = {"reasoning_content": "word " * n}
            else:
                done, whole = sent - reasoning, max(answer_tokens, 1)
                # Integer cuts: a float share can end the last chunk a character short (a
                # JSON answer without its closing brace).
                delta = {"content": answer[done * len(answer) // whole:
                                           (done + n) * len(answer) // whole]}
            self._event({"choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
            due = began + (sent + n) / model.decode_tps * model.scale
            time.sleep(max(0.0, due - time.perf_counter()))
        owner.finished(prompt, answer, body)
        ended = "length" if model.cut(body) else "stop"
        self._event({"choices": [{"index": 0, "delta": {}, "finish_reason": ended}]})
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


_CLAIM_RE = re.compile(r"^\[(\d+)\] \(cites Paper (\d+)", re.MULTILINE)  # the first paper
SENTENCE_TOKENS = 25  # a prose answer is sentences of about this many tokens, each citing a paper


def claims(body: dict[str, Any]) -> list[tuple[int, int]]:
    """(claim, paper) of an evidence request; [] for any other request."""
    task = str(body["messages"][-1]["content"])
    return [(int(c), int(p)) for c, p in _CLAIM_RE.findall(task)] if "Evidence check." in task \
        else []


_JUDGED_RE = re.compile(r'^\{"claim": (\d+), "sentence": ', re.MULTILINE)
_ABSTRACT_RE = re.compile(r"^## Paper (\d+): .*?^### Abstract\n\n(.*?)(?=\n\n#{2,3} |\Z)",
                          re.MULTILINE | re.DOTALL)
JUDGE_TOKENS = 20  # a verdict and a short reason


def judged(body: dict[str, Any]) -> list[int]:
    """The claims a judgement of found quotes asks about; [] for any other request."""
    task = str(body["messages"][-1]["content"])
    return [int(n) for n in _JUDGED_RE.findall(task)] if "Support check." in task else []


def _quote(body: dict[str, Any], paper: int) -> str:
    """12 words of the cited paper's abstract in the prompt's bundle, as a model copies them
    (so the quote is found and judged, as most are), else filler."""
    bundle = str(body["messages"][1]["content"]) if len(body["messages"]) > 1 else ""
    found = {int(n): text for n, text in _ABSTRACT_RE.findall(bundle)}
    copied = re.findall(r"[A-Za-z0-9]+", found.get(paper, ""))[2:14]  # words, as matched
    return " ".join(copied) if len(copied) >= 10 else " ".join(["word"] * 30)


def _answer(body: dict[str, Any], tokens: int) -> str:
    """Text of about `tokens` tokens; schema-valid JSON for a structured request."""
    words = "word " * max(tokens - 20, 1)
    schema = json.dumps(body.get("response_format") or {})
    if claims(body):
        return json.dumps({"claims": [{"claim": c, "paper": p, "quote": _quote(body, p)}
                                      for c, p in claims(body)]})
    if judged(body):
        return json.dumps({"claims": [{"claim": c, "verdict": "supports", "reason": "It says so."}
                                      for c in judged(body)]})
    if "response_format" not in body:  # prose: every sentence cites a paper, as answers do;
        count = max(1, tokens // SENTENCE_TOKENS)  # each prompt's answer its own
        first = zlib.crc32(prompt_text(body).encode())
        return " ".join(f"Paper {(first + i) % 20 + 1} shows " + "word " * (SENTENCE_TOKENS - 4)
                        + "." for i in range(count))
    if '"score"' in schema:  # a triage answer: a score, a reason, the interests touched
        reason = " ".join(["word"] * max(1, min(30, tokens - 25)))
        return json.dumps({"score": zlib.crc32(prompt_text(body).encode()) % 11,
                           "reason": reason, "interests": ["testing"]})
    if '"themes"' in schema:
        return json.dumps({"themes": [{"name": "Theme", "papers": [1, 2], "description": words}]})
    return json.dumps({"tldr": words, "problem": "A problem.", "method": "A method.",  # a brief
                       "result": "A result.", "limitations": "Some."})


def common_prefix(a: str, b: str) -> int:
    """The length of the common prefix of two strings, by bisection on slices compared in C
    (os.path.commonprefix walks them a character at a time in Python: far too slow here)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low

