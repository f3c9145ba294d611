"""What we can learn about the LLM server without running a prompt (how to start one:
launch.py).

SGLang exposes its settings (`/server_info`, `/model_info`, `/v1/loads`; the older `/get_*`
names are deprecated aliases, asked only after the canonical ones); a router (smg, or the older
sglang-router) lists the workers whose settings count (router.py); other OpenAI-compatible
servers expose only `/v1/models`. Everything here degrades to "unknown" rather than guessing.
Every exchange has a deadline for the whole of it (deadline.py): a server that trickles its
answer a byte at a time is cut there, not waited on for minutes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse, urlsplit

import requests

from ..deadline import DeadlineAdapter, Watchdog
from ..ports import Fleet, RouterWorker, ServedModel
from .router import (
    FLEET_SOURCE,
    fleet_limits,
    listed_workers,
    reachable_from_here,
    reported_load,
    router_kind,
    router_version,
    same_host,
)

log = logging.getLogger(__name__)


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


# Each exchange with the server's informational endpoints, whole (deadline.py); a worker behind
# a router gets less, and only the first few healthy workers are read directly.
PROBE_DEADLINE_S = 10.0
WORKER_DEADLINE_S = 5.0
READ_WORKERS = 16
TOKENIZE_DEADLINE_S = 60.0  # a whole bundle, counted
LARGE_FLEET = 64  # workers past which the router's listing (its load) is read once a second


class ServerProbe:
    """Plain GETs against the server's informational endpoints, each bounded as a whole."""

    def __init__(self, session: requests.Session, base_url: str, api_key: str,
                 watchdog: Watchdog | None = None) -> None:
        self._session = session
        self.base_url = base_url.rstrip("/")
        # SGLang's native endpoints live at the root, beside /v1.
        self.root_url = self.base_url[:-3] if self.base_url.endswith("/v1") else self.base_url
        self._api_key = api_key
        self._headers = {"Authorization": f"Bearer {api_key}"}
        self._watchdog = watchdog or Watchdog()  # cuts an exchange that outlasts its deadline
        parts = urlsplit(self.base_url)
        if parts.scheme in ("http", "https") and parts.netloc:
            session.mount(f"{parts.scheme}://{parts.netloc}/", DeadlineAdapter())
        self.tokenizer: str | None = None  # the TOKENIZERS shape that answered, once one has
        self._router: bool | None = None  # whether it is a router, once asked
        self._kind, self._version = "", ""  # which router, as it showed it
        self._fleet: Fleet | None = None  # its workers, as last read
        self._last_load: tuple[float, int | None] | None = None  # (when, load): large fleets
        self._worker: ServerProbe | None = None  # behind the router: a worker that was read
        self._unreachable: set[str] = set()  # workers that did not answer from here

    def _get(self, url: str, timeout: float = PROBE_DEADLINE_S) -> requests.Response:
        """GET `url`, its whole answer within `timeout` seconds (requests.Timeout if not)."""
        with self._watchdog.exchange(timeout) as watch:
            try:
                response = self._session.get(url, headers=self._headers, timeout=timeout)
                response.content  # noqa: B018 (read whole, under the deadline)
            except requests.RequestException as err:
                if watch.expired():
                    raise requests.Timeout(f"no whole answer from {url} within {timeout:g} s"
                                           ) from err
                raise
            return response

    def models(self) -> list[ServedModel]:
        """Raises requests.RequestException if unreachable, or HTTPError on an error status."""
        response = self._get(f"{self.base_url}/models")
        response.raise_for_status()
        data = response.json().get("data", [])
        return [ServedModel(str(m.get("id")), _int(m.get("max_model_len"))) for m in data]

    def json_or_none(self, *paths: str, timeout: float = PROBE_DEADLINE_S
                     ) -> dict[str, Any] | None:
        """The first of `paths` (at the root URL) that answers 200 with a JSON object, all of
        them within `timeout` seconds together."""
        ends = time.monotonic() + timeout
        for path in paths:
            left = ends - time.monotonic()
            if left <= 0.05:
                return None
            try:
                response = self._get(f"{self.root_url}{path}", timeout=left)
                if response.status_code == 200:
                    data = response.json()
                    if isinstance(data, dict):
                        return data
            except (requests.RequestException, ValueError):
                continue
        return None

    def server_info(self) -> dict[str, Any] | None:
        """SGLang's limits; behind a router, the workers' together (router.fleet_limits)."""
        info = self._own_info()
        fleet = self._read_fleet(own_info=info)
        return fleet_limits(fleet) if fleet is not None else info

    def _own_info(self, timeout: float = PROBE_DEADLINE_S) -> dict[str, Any] | None:
        info = self.json_or_none("/server_info", "/get_server_info", timeout=timeout)
        if info and isinstance(info.get("server_args"), dict):
            info = {**info["server_args"], **info}  # some versions nest the arguments
        return info

    def fleet(self) -> Fleet | None:
        """The workers behind a router (smg, or the older sglang-router), each with its limits
        (the router's labels, or its own settings where they can be read from here), as last
        read (by `server_info`) or read now; None where the server is no router (it lists no
        workers)."""
        return self._fleet if self._fleet is not None else self._read_fleet()

    def _read_fleet(self, own_info: dict[str, Any] | None = None) -> Fleet | None:
        if self._router is False:
            return None
        listing = self.json_or_none("/workers")
        workers = listed_workers(listing)
        if workers is None:
            if self._router is None:
                self._router = False  # asked once: no router lists no workers
                return None
            workers = []  # a router that did not list them this time
        if self._router is None:
            self._router = True
            own = own_info if own_info is not None else self.json_or_none("/get_server_info")
            loads = self.json_or_none("/v1/loads", "/get_loads")
            self._kind, self._version = router_kind(own, listing, loads), router_version(loads)
        read: list[RouterWorker] = []
        for worker in workers:
            info = None
            if worker.healthy and sum(w.info is not None for w in read) < READ_WORKERS:
                info = self._worker_info(worker.url)
            read.append(RouterWorker(worker.url, worker.healthy, info, worker.labels,
                                     worker.load))
        self._fleet = Fleet(tuple(read), self._kind, self._version)
        return self._fleet

    def load(self) -> int | None:
        """Requests in flight on the server, or behind a router on its whole fleet, where it
        reports them (router.reported_load); None where it does not."""
        if self._router is None:
            self.fleet()
        if self._last_load is not None and time.monotonic() - self._last_load[0] < 1.0:
            return self._last_load[1]  # a large fleet's listing, read at most once a second
        listing = self.json_or_none("/workers", timeout=WORKER_DEADLINE_S) \
            if self._router else None
        found = reported_load(listing=listing)
        workers = listing.get("workers") if isinstance(listing, dict) else None
        if isinstance(workers, list) and len(workers) > LARGE_FLEET:
            self._last_load = (time.monotonic(), found)
        if found is None:
            found = reported_load(loads=self.json_or_none(
                "/v1/loads", *(("/get_loads",) if self._router else ()),
                timeout=WORKER_DEADLINE_S))
        return found

    def _worker_info(self, url: str) -> dict[str, Any] | None:
        """A worker's own /server_info, read directly; None where it does not answer from here
        (asked once a run: a worker behind a firewall costs one deadline, not one a call)."""
        if url in self._unreachable or not reachable_from_here(url, self.base_url):
            return None
        # The key goes only to the host the user gave it for (the router's own, or its
        # machine's loopback), never from https down to plain http: a router can list any URL.
        key = self._api_key if same_host(url, self.base_url) and (
            urlparse(url).scheme == "https" or not self.base_url.startswith("https:")) else ""
        worker = ServerProbe(self._session, f"{url}/v1", key, self._watchdog)
        info = worker._own_info(timeout=WORKER_DEADLINE_S)
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
        with self._watchdog.exchange(TOKENIZE_DEADLINE_S):
            try:
                response = self._session.post(url, json=shape.body(model, text),
                                              headers=self._headers, timeout=TOKENIZE_DEADLINE_S)
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

    def readiness(self, deadline_s: float = WORKER_DEADLINE_S) -> tuple[bool, str]:
        """(ready, what was seen): /readiness where the server has it (a router: ready once a
        worker is healthy; its /health answers 200 with none), else /health, else /v1/models;
        all within `deadline_s` seconds."""
        ends = time.monotonic() + max(0.1, deadline_s)
        try:
            response = self._get(f"{self.root_url}/readiness", timeout=max(0.1, deadline_s))
            said = _readiness_words(response)
            if said:
                return response.status_code == 200 and not said.startswith("no "), said
            response = self._get(f"{self.root_url}/health", timeout=_left(ends))
            if response.status_code == 200:
                return True, "healthy"
            if response.status_code != 404:
                return False, f"/health answered {response.status_code} (still starting?)"
            response = self._get(f"{self.base_url}/models", timeout=_left(ends))
            return response.status_code == 200, f"/v1/models answered {response.status_code}"
        except requests.RequestException as err:
            if isinstance(err, requests.Timeout):
                return False, "no whole answer in time"
            return False, f"not answering ({type(err).__name__})"

    def wait_ready(self, timeout: float, on_progress: Callable[[float, str], None] | None = None,
                   interval: float = 2.0) -> bool:
        """Poll until the server is ready or `timeout` seconds pass; True when ready. No check
        outlasts what is left of `timeout` (each exchange is cut at its deadline)."""
        started = time.monotonic()
        while True:
            left = timeout - (time.monotonic() - started)
            ready, seen = self.readiness(min(WORKER_DEADLINE_S, max(0.1, left)))
            waited = time.monotonic() - started
            if ready:
                return True
            if waited >= timeout:
                return False
            if on_progress:
                on_progress(waited, seen)
            time.sleep(min(interval, max(0.05, timeout - waited)))


def _left(ends: float) -> float:
    return max(0.05, ends - time.monotonic())


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
    counted = f" ({healthy or 0} of {total} healthy)" if total else ""
    if response.status_code == 200 and healthy == 0:  # ready, it says, with none to serve
        return f"no healthy worker behind the router yet{counted}"
    if response.status_code == 200:
        return f"ready ({healthy} healthy worker(s))" if healthy is not None else "ready"
    if data.get("status") != "not ready":  # a router's own answer, recorded
        return ""
    return f"no healthy worker behind the router yet{counted}"


def _positive(value: Any) -> int | None:
    number = _int(value)
    return number if number is not None and number > 0 else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
