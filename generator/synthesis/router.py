"""A router in front of several SGLang workers, read as the fleet it is.

Two routers are in use, told apart by what they answer (measured: docs/servers.md):
- the Shepherd Model Gateway, `smg` 1.x (today's; SGLang's router renamed and moved out): its
  `/get_server_info` passes one worker's own settings on (not the fleet's), its `/workers`
  lists each worker with its limits in `labels` and the requests it has in flight on it
  (`load`), and its `/get_loads` names its version ("smg-1.13.0");
- the older sglang-router 0.3.x: its `/get_server_info` is a summary (`{"router_manager": true,
  "workers_count": N}`), its `/workers` lists workers without their limits.

What sizes a run is the workers' own limits: the router's labels where it lists them, else each
worker's `/server_info`, read directly. The fleet runs the sum of their `max_running_requests` at
once, and every prompt must fit the smallest context. Where a healthy worker's limits cannot be
known, the fleet states none, and the width is found as for any server that states none:
gradually, never a flood.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlparse

from ..ports import Fleet, RouterWorker
from .dispatch import stated_running

# Where the fleet's limits come from, for doctor and the workspace's memory of the server.
FLEET_SOURCE = "the workers' limits, behind the router"
SMG, SGLANG_ROUTER = "smg", "sglang-router"
# Each router as messages name it, first in a line; "" is one that did not show which it is.
ROUTER_NAMES = {SMG: "The Shepherd Model Gateway (smg)",
                SGLANG_ROUTER: "sglang-router (SGLang's older router)", "": "A router"}
# A worker's settings that the router's labels (strings there) carry as numbers.
_NUMBERS = ("max_running_requests", "context_length", "max_model_len", "max_total_num_tokens",
            "tp_size", "dp_size")


def is_router(info: Any) -> bool:
    """Whether a `/get_server_info` answer is sglang-router's summary."""
    return isinstance(info, dict) and info.get("router_manager") is True


def listed_workers(listing: Any) -> list[RouterWorker] | None:
    """Each worker in a router's `/workers` answer (url, health, the limits it lists for it,
    the requests it has in flight on it); None where the answer is no such listing (a server
    that is no router answers 404)."""
    workers = listing.get("workers") if isinstance(listing, dict) else None
    if not isinstance(workers, list):
        return None
    found = []
    for worker in workers:
        url = worker.get("url") if isinstance(worker, dict) else None
        if isinstance(url, str) and url.startswith(("http://", "https://")):
            labels = worker.get("labels")
            found.append(RouterWorker(
                url.rstrip("/"), worker.get("is_healthy") is True,
                labels=_labels(labels) if isinstance(labels, dict) else None,
                load=_count(worker.get("load"))))
    return found


def router_kind(own_info: Any, listing: Any, loads: Any) -> str:
    """Which router answered: sglang-router by its summary, smg by its version or the shape
    of its listing (labels, engine loads); "" where it showed neither."""
    if is_router(own_info):
        return SGLANG_ROUTER
    if router_version(loads).startswith("smg"):
        return SMG
    workers = listing.get("workers") if isinstance(listing, dict) else None
    if isinstance(workers, list) and any(isinstance(w, dict) and (
            "labels" in w or "engine_load" in w) for w in workers):
        return SMG
    return ""


def router_version(loads: Any) -> str:
    """The router's version where its load report says it (smg: "smg-1.13.0")."""
    version = loads.get("version") if isinstance(loads, dict) else None
    return version if isinstance(version, str) and version.startswith("smg") else ""


def reachable_from_here(worker_url: str, router_url: str) -> bool:
    """Whether a worker's URL, as the router lists it, means the same machine from here: a
    loopback address is the router's own machine, the same as ours only where the router is."""
    loopback = ("localhost", "127.0.0.1", "::1")
    worker = urlparse(worker_url).hostname or ""
    return worker not in loopback or (urlparse(router_url).hostname or "") in loopback


def same_host(worker_url: str, router_url: str) -> bool:
    """Whether a worker the router lists lies on the router's own host (by name, or both on
    loopback): where the API key the user gave for the router may go too."""
    loopback = ("localhost", "127.0.0.1", "::1")
    worker = (urlparse(worker_url).hostname or "").lower()
    router = (urlparse(router_url).hostname or "").lower()
    return bool(worker) and (worker == router or (worker in loopback and router in loopback))


def fleet_limits(fleet: Fleet) -> dict[str, Any] | None:
    """The fleet as one server's `/server_info`: the sum of its healthy workers' running
    requests, the smallest context, the cache report only where every worker read reports,
    and each worker's own settings (`workers`, for the KV-cache budget of each: see
    dispatch.concurrency). None where that cannot be known: no healthy worker, or one whose
    limits are known neither from the router nor from here."""
    healthy = fleet.healthy
    if not healthy or fleet.unseen:
        return None
    settings = [dict(w.settings or {}) for w in healthy]
    running = [stated_running(s) for s in settings]
    if any(r is None for r in running):
        return None
    contexts = [c for c in (_count(s.get("context_length")) for s in settings) if c]
    read = [dict(w.info) for w in healthy if w.info is not None]
    return {
        "router": True,
        "workers": settings,
        "max_running_requests": sum(r or 0 for r in running),
        "context_length": min(contexts) if len(contexts) == len(settings) else None,
        "enable_cache_report": bool(read) and all(bool(i.get("enable_cache_report"))
                                                  for i in read),
        "disable_radix_cache": any(bool(i.get("disable_radix_cache")) for i in read),
    }


def reported_load(listing: Any = None, loads: Any = None) -> int | None:
    """Requests in flight, as a router or server reports them: the sum of the router's own
    count per worker at `/workers` (both routers: it counts a request the moment it routes
    it), else a load report (`/v1/loads`: SGLang's and smg's `loads`, running and waiting;
    sglang-router's `/get_loads`: `workers` with a `load` each, -1 for one it could not ask).
    None where neither says."""
    workers = listing.get("workers") if isinstance(listing, dict) else None
    counts = [_count(w.get("load")) for w in workers or () if isinstance(w, dict)]
    if counts and all(c is not None for c in counts):
        return sum(c or 0 for c in counts)
    if not isinstance(loads, dict):
        return None
    ranks = loads.get("loads")
    if isinstance(ranks, list) and ranks:
        total = [(_count(r.get("num_running_reqs")), _count(r.get("num_waiting_reqs")))
                 for r in ranks if isinstance(r, dict)]
        if total and all(run is not None for run, _ in total):
            return sum((run or 0) + (wait or 0) for run, wait in total)
    listed = loads.get("workers")
    counts = [_count(w.get("load")) for w in listed or () if isinstance(w, dict)]
    if counts and all(c is not None for c in counts):
        return sum(c or 0 for c in counts)
    return None


def _labels(labels: Mapping[str, Any]) -> dict[str, Any]:
    """A worker's labels with its numeric settings as numbers (the router lists strings)."""
    found = dict(labels)
    for key in _NUMBERS:
        value = found.get(key)
        if isinstance(value, str) and value.strip().isdigit():
            found[key] = int(value.strip())
        elif value is not None and _count(value) is None:
            found.pop(key)  # not a count: not a limit
    return found


def _count(value: Any) -> int | None:
    """A non-negative whole number, or None."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None
