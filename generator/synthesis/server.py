"""What we can learn about the LLM server without running a prompt, and how to start one.

SGLang exposes its settings (`/server_info`, `/model_info`, `/health`); SGLang's router lists
the workers whose settings count (router.py); other OpenAI-compatible servers expose only
`/v1/models`. Everything here degrades to "unknown" rather than guessing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import requests

from ..ports import Fleet, RouterWorker, ServedModel
from .router import FLEET_SOURCE, fleet_limits, is_router, listed_workers, reachable_from_here

log = logging.getLogger(__name__)

# SGLang's reasoning parsers for the model families we know; others get none suggested.
_REASONING_PARSERS = (
    ("deepseek-v4", "deepseek-v4"),
    ("deepseek-r1", "deepseek-r1"),
    ("deepseek-v3", "deepseek-v3"),
    ("qwen3", "qwen3"),
    ("gpt-oss", "gpt-oss"),
    ("kimi", "kimi"),
    ("glm-4.5", "glm45"),
)


def reasoning_parser_for(model: str) -> str | None:
    name = model.lower()
    return next((parser for key, parser in _REASONING_PARSERS if key in name), None)


def is_local(base_url: str) -> bool:
    """Whether the server is on this machine (so it needs neither --host nor a key)."""
    return (urlparse(base_url).hostname or "localhost") in ("localhost", "127.0.0.1", "::1")


def sglang_command(model: str, base_url: str, context_length: int | None = None,
                   api_key_env: str = "SGLANG_API_KEY") -> str:
    """The SGLang launch command that serves `model` where `base_url` expects it.

    A server that other machines reach (a GitHub runner, say) listens on every interface and
    wants the API key that the digest sends from `api_key_env`.
    """
    url = urlparse(base_url)
    if "/" in model or model.startswith((".", "~")):
        parts = ["python -m sglang.launch_server", f"--model-path {model}"]
    else:  # an alias ("smollm2"): SGLang loads weights by path or Hugging Face id
        parts = ["python -m sglang.launch_server", "--model-path <hugging-face-id-or-path>",
                 f"--served-model-name {model}"]
    if not is_local(base_url):
        parts += ["--host 0.0.0.0", f'--api-key "${api_key_env}"']
    parts.append(f"--port {url.port or 30000}")
    parser = reasoning_parser_for(model)
    if parser:
        parts.append(f"--reasoning-parser {parser}")
    parts += ["--enable-cache-report", "--schedule-policy lpm"]
    if context_length:
        parts.append(f"--context-length {context_length}")
    return " ".join(parts)


# SGLang's router in front of several workers, as measured fastest for editions, one or four
# at once (bench/router.py, docs/benchmarks.md): cache-aware routing that rebalances at any gap
# in load, so that one edition's prompts, which share one bundle, spread evenly over the
# workers (the defaults rebalance only at a gap of 64: one edition, one worker).
ROUTER_POLICY = ("--policy cache_aware", "--balance-abs-threshold 0",
                 "--balance-rel-threshold 1.0")


def router_commands(model: str, base_url: str, workers: int, context_length: int | None = None,
                    api_key_env: str = "SGLANG_API_KEY") -> list[str]:
    """The launch lines of `workers` SGLang workers on one machine (one GPU each, on the ports
    after the router's) and of SGLang's router in front of them, where `base_url` expects a
    server. The workers listen on this machine only: the router reaches them there, and so
    does a digest run on the same machine, which reads each one's limits."""
    port = urlparse(base_url).port or 30000
    ports = [port + 1 + n for n in range(workers)]
    lines = [f"CUDA_VISIBLE_DEVICES={n} "
             + sglang_command(model, f"http://127.0.0.1:{p}/v1", context_length, api_key_env)
             for n, p in enumerate(ports)]
    router = ["python -m sglang_router.launch_router"]
    if not is_local(base_url):
        router += ["--host 0.0.0.0", f'--api-key "${api_key_env}"']
    else:
        router.append("--host 127.0.0.1")
    router += [f"--port {port}", "--worker-urls " + " ".join(f"http://127.0.0.1:{p}"
                                                             for p in ports), *ROUTER_POLICY]
    return [*lines, " ".join(router)]


@dataclass(frozen=True)
class Tokenizer:
    """One server family's tokenizer endpoint: where it is, what it takes, what it answers."""

    name: str
    path: str
    under_v1: bool  # beside /v1/chat/completions; else at the server's root
    field: str  # the text's field in the request body
    extra: tuple[tuple[str, Any], ...] = ()

    @property
    def shown_path(self) -> str:
        """The endpoint as a reader finds it in the server's docs (`/v1/tokenize`)."""
        return ("/v1" if self.under_v1 else "") + self.path

    def body(self, model: str, text: str) -> dict[str, Any]:
        return {"model": model, self.field: text, **dict(self.extra)}

    @staticmethod
    def count(data: Any, text: str) -> int | None:
        """The count in an answer: `count` (SGLang, vLLM, llama-cpp-python) or the length of
        `tokens` (llama.cpp); an empty count for a non-empty text is an endpoint that did not
        read the body (llama.cpp answers {"tokens": []} to a field it does not know)."""
        if not isinstance(data, dict):
            return None
        count = data.get("count")
        if isinstance(count, list) and len(count) == 1:
            count = count[0]
        if not isinstance(count, int) or isinstance(count, bool):
            tokens = data.get("tokens")
            count = len(tokens) if isinstance(tokens, list) else None
        if count is None or count < 0 or (count == 0 and text.strip()):
            return None
        return count


# Tried in this order; the first that counts is kept for the server.
TOKENIZERS = (
    Tokenizer("sglang", "/tokenize", True, "prompt", (("add_special_tokens", False),)),
    Tokenizer("vllm", "/tokenize", False, "prompt", (("add_special_tokens", False),)),
    Tokenizer("llama-cpp-python", "/extras/tokenize/count", False, "input"),
    Tokenizer("llama.cpp", "/tokenize", False, "content", (("add_special", False),)),
)


class ServerProbe:
    """Plain GETs against the server's informational endpoints."""

    def __init__(self, session: requests.Session, base_url: str, api_key: str) -> None:
        self._session = session
        self.base_url = base_url.rstrip("/")
        # SGLang's native endpoints live at the root, beside /v1.
        self.root_url = self.base_url[:-3] if self.base_url.endswith("/v1") else self.base_url
        self._api_key = api_key
        self._headers = {"Authorization": f"Bearer {api_key}"}
        self.tokenizer: str | None = None  # the TOKENIZERS shape that answered, once one has
        self._router: bool | None = None  # whether it is SGLang's router, once asked
        self._worker: ServerProbe | None = None  # behind the router: a worker that was read
        self._unreachable: set[str] = set()  # workers that did not answer from here

    def _get(self, url: str, timeout: float = 10.0) -> requests.Response:
        return self._session.get(url, headers=self._headers, timeout=timeout)

    def models(self) -> list[ServedModel]:
        """Raises requests.RequestException if unreachable, or HTTPError on an error status."""
        response = self._get(f"{self.base_url}/models")
        response.raise_for_status()
        data = response.json().get("data", [])
        return [ServedModel(str(m.get("id")), _int(m.get("max_model_len"))) for m in data]

    def json_or_none(self, *paths: str, timeout: float = 10.0) -> dict[str, Any] | None:
        """The first of `paths` (at the root URL) that answers 200 with a JSON object."""
        for path in paths:
            try:
                response = self._get(f"{self.root_url}{path}", timeout=timeout)
                if response.status_code == 200:
                    data = response.json()
                    if isinstance(data, dict):
                        return data
            except (requests.RequestException, ValueError):
                continue
        return None

    def server_info(self) -> dict[str, Any] | None:
        """SGLang's limits; behind its router, the workers' together (router.fleet_limits)."""
        info = self._own_info()
        self._router = is_router(info)
        return fleet_limits(self._read_fleet()) if self._router else info

    def _own_info(self, timeout: float = 10.0) -> dict[str, Any] | None:
        info = self.json_or_none("/server_info", "/get_server_info", timeout=timeout)
        if info and isinstance(info.get("server_args"), dict):
            info = {**info["server_args"], **info}  # some versions nest the arguments
        return info

    def fleet(self) -> Fleet | None:
        """The workers behind SGLang's router, each with its own settings where they can be
        read from here; None where the server is no router."""
        if self._router is None:  # the router answers /get_server_info only
            self._router = is_router(self.json_or_none("/get_server_info"))
        return self._read_fleet() if self._router else None

    def _read_fleet(self) -> Fleet:
        return Fleet(tuple(RouterWorker(url, healthy, self._worker_info(url) if healthy else None)
                           for url, healthy in listed_workers(self.json_or_none("/workers"))))

    def _worker_info(self, url: str) -> dict[str, Any] | None:
        """A worker's own /server_info, read directly; None where it does not answer from here
        (asked once a run: a worker behind a firewall costs one timeout, not one a call)."""
        if url in self._unreachable or not reachable_from_here(url, self.base_url):
            return None
        # The key goes where the router's URL sends it, never from https down to plain http.
        key = self._api_key if urlparse(url).scheme == "https" or not \
            self.base_url.startswith("https:") else ""
        worker = ServerProbe(self._session, f"{url}/v1", key)
        info = worker._own_info(timeout=5.0)
        if info is None:
            self._unreachable.add(url)
        elif self._worker is None:
            self._worker = worker  # every worker serves the model: one counts its tokens
        return info

    def tokenize(self, model: str, texts: list[str]) -> list[int] | None:
        """Exact token counts of raw `texts` (no chat template) from whichever tokenizer
        endpoint the server has (see TOKENIZERS); None where it has none. The endpoint that
        answered is kept (`tokenizer`), so later counts go straight to it. SGLang's router has
        no tokenizer of its own (its /v1/tokenize answers 400): a worker behind it counts."""
        if self._worker is not None:
            counts = self._worker.tokenize(model, texts)
            self.tokenizer = self._worker.tokenizer
            return counts
        counts = self._own_counts(model, texts)
        if counts is None and self._router is None:
            self.fleet()  # a router? then a worker it lists, read from here, counts
            if self._worker is not None:
                return self.tokenize(model, texts)
        return counts

    def _own_counts(self, model: str, texts: list[str]) -> list[int] | None:
        shapes = [t for t in TOKENIZERS if t.name == self.tokenizer] if self.tokenizer else []
        for shape in shapes or list(TOKENIZERS):
            counts = [self._count(shape, model, text) for text in texts[:1]]
            if counts[0] is None:
                continue
            counts += [self._count(shape, model, text) for text in texts[1:]]
            if any(c is None for c in counts):
                return None
            self.tokenizer = shape.name
            return [c for c in counts if c is not None]
        return None

    def _count(self, shape: Tokenizer, model: str, text: str) -> int | None:
        url = (self.base_url if shape.under_v1 else self.root_url) + shape.path
        try:
            response = self._session.post(url, json=shape.body(model, text),
                                          headers=self._headers, timeout=60.0)
            if response.status_code != 200:
                return None
            data = response.json()
        except (requests.RequestException, ValueError):
            return None
        return shape.count(data, text)

    def context_length(self, model: str, info: dict[str, Any] | None
                       ) -> tuple[int | None, str]:
        """The model's context length as the server states it, and where it said so:
        /v1/models (SGLang, vLLM), /server_info (SGLang: `info`, already fetched), /props
        (llama.cpp's llama-server)."""
        try:
            served = {m.id: m.max_model_len for m in self.models()}
        except (requests.RequestException, ValueError):
            served = {}
        if served.get(model):
            return served[model], "/v1/models"
        info = info or {}
        if _int(info.get("context_length")):
            return info["context_length"], FLEET_SOURCE if info.get("router") else "/server_info"
        props = self.json_or_none("/props") or {}
        settings = props.get("default_generation_settings")
        n_ctx = _int(settings.get("n_ctx")) if isinstance(settings, dict) else None
        if n_ctx:
            return n_ctx, "/props"
        return None, ""

    def slots(self) -> int | None:
        """How many requests the server serves at once, where it says so: llama-server's
        /props `total_slots` (its `-np`; more requests wait in its queue)."""
        return _positive((self.json_or_none("/props") or {}).get("total_slots"))

    def readiness(self) -> tuple[bool, str]:
        """(ready, what was seen): /readiness where the server has it (SGLang's router: ready
        once a worker is healthy; its /health answers 200 with none), else /health, else
        /v1/models."""
        try:
            response = self._get(f"{self.root_url}/readiness", timeout=5.0)
            said = _readiness_words(response)
            if said:
                return response.status_code == 200, said
            response = self._get(f"{self.root_url}/health", timeout=5.0)
            if response.status_code == 200:
                return True, "healthy"
            if response.status_code != 404:
                return False, f"/health answered {response.status_code} (still starting?)"
            response = self._get(f"{self.base_url}/models", timeout=5.0)
            return response.status_code == 200, f"/v1/models answered {response.status_code}"
        except requests.RequestException as err:
            return False, f"not answering ({type(err).__name__})"

    def wait_ready(self, timeout: float, on_progress: Callable[[float, str], None] | None = None,
                   interval: float = 2.0) -> bool:
        """Poll until the server is ready or `timeout` seconds pass; True when ready."""
        started = time.monotonic()
        while True:
            ready, seen = self.readiness()
            waited = time.monotonic() - started
            if ready:
                return True
            if waited >= timeout:
                return False
            if on_progress:
                on_progress(waited, seen)
            time.sleep(min(interval, max(0.05, timeout - waited)))


def _readiness_words(response: requests.Response) -> str:
    """What a /readiness answer says, in words ("" where it is not one: a 404, or a server
    still loading that answers 503 to every path, whose /health then says why)."""
    if response.status_code not in (200, 503):
        return ""
    try:
        data = response.json()
    except ValueError:
        data = None
    data = data if isinstance(data, dict) else {}
    healthy, total = _int(data.get("healthy_workers")), _int(data.get("total_workers"))
    if response.status_code == 200:
        return f"ready ({healthy} healthy worker(s))" if healthy is not None else "ready"
    if data.get("status") != "not ready":  # SGLang's router's own answer, recorded
        return ""
    counted = f" ({healthy or 0} of {total} healthy)" if total else ""
    return f"no healthy worker behind the router yet{counted}"


def _positive(value: Any) -> int | None:
    number = _int(value)
    return number if number is not None and number > 0 else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
