"""SGLang's router (sglang-router) in front of several workers, read as the fleet it is.

The router's own `/get_server_info` is a summary (`{"router_manager": true, "workers_count":
N}`), not a server's limits, and its `/v1/models` states no context length. What sizes a run is
each worker's own `/server_info`, which the router's `/workers` lets us find: the fleet runs the
sum of their `max_running_requests` at once, and every prompt must fit the smallest context.
Where a healthy worker cannot be read from here, the fleet states no limits, and the width is
found as for any server that states none: gradually, never a flood.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

from ..ports import Fleet
from .dispatch import stated_running

# Where the fleet's limits come from, for doctor and the workspace's memory of the server.
FLEET_SOURCE = "each worker's /server_info, behind the router"


def is_router(info: Any) -> bool:
    """Whether a `/get_server_info` answer is SGLang's router's summary."""
    return isinstance(info, dict) and info.get("router_manager") is True


def listed_workers(listing: Any) -> list[tuple[str, bool]]:
    """(url, healthy) of each worker in the router's `/workers` answer."""
    workers = listing.get("workers") if isinstance(listing, dict) else None
    found = []
    for worker in workers if isinstance(workers, list) else ():
        url = worker.get("url") if isinstance(worker, dict) else None
        if isinstance(url, str) and url.startswith(("http://", "https://")):
            found.append((url.rstrip("/"), worker.get("is_healthy") is True))
    return found


def reachable_from_here(worker_url: str, router_url: str) -> bool:
    """Whether a worker's URL, as the router lists it, means the same machine from here: a
    loopback address is the router's own machine, the same as ours only where the router is."""
    loopback = ("localhost", "127.0.0.1", "::1")
    worker = urlparse(worker_url).hostname or ""
    return worker not in loopback or (urlparse(router_url).hostname or "") in loopback


def fleet_limits(fleet: Fleet) -> dict[str, Any] | None:
    """The fleet as one server's `/server_info`: the sum of its healthy workers' running
    requests, the smallest context, the cache report only where every worker reports, and each
    worker's own settings (`workers`, for the KV-cache budget of each: see
    dispatch.concurrency). None where that cannot be known: no healthy worker, or one whose
    limits were not read."""
    healthy = fleet.healthy
    if not healthy or fleet.unseen:
        return None
    infos = [dict(w.info or {}) for w in healthy]
    running = [stated_running(info) for info in infos]
    if any(r is None for r in running):
        return None
    contexts = [c for c in (_positive(i.get("context_length")) for i in infos) if c]
    return {
        "router": True,
        "workers": infos,
        "max_running_requests": sum(r or 0 for r in running),
        "context_length": min(contexts) if len(contexts) == len(infos) else None,
        "enable_cache_report": all(bool(i.get("enable_cache_report")) for i in infos),
        "disable_radix_cache": any(bool(i.get("disable_radix_cache")) for i in infos),
    }


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
