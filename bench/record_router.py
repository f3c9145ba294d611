"""Record a router, byte-exact: the scripted exchanges of tests/fixtures/servers/smg-1.13.0/
and tests/fixtures/servers/sglang-router-0.3.2/ (their READMEs), in the format of
bench/recording.py.

    pip install -c constraints.txt '.[router]'
    python bench/record_router.py --router smg --out tests/fixtures/servers/smg-1.13.0
    python bench/record_router.py --router sglang-router \
        --out tests/fixtures/servers/sglang-router-0.3.2

The router is the real one, started here over two of the project's SGLang-shaped test servers
(tests/servers/sglang.py: what the router reads of a worker is `/health`, `/server_info` and
`/model_info`, `/v1/loads`); what is recorded is what the router answers, with both workers
healthy, with three requests in flight (smg), with both stopped, and before its only worker
has started.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.record_server import Recorder  # noqa: E402
from tests.servers.router import Router, free_port, missing  # noqa: E402
from tests.servers.sglang import SglangServer  # noqa: E402

# The router notices a stopped worker after one failed health check a second.
HEALTH = ("--health-check-interval-secs", "1", "--health-failure-threshold", "1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--router", choices=("smg", "sglang-router"), default="smg")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if missing(args.router):
        sys.exit(missing(args.router))
    name = {"smg": "smg 1.13.0", "sglang-router": "sglang-router 0.3.2"}[args.router]
    out = args.out or ROOT / "tests/fixtures/servers" / name.replace(" ", "-")
    workers = [SglangServer().start(), SglangServer().start()]
    for worker, running, context in zip(workers, (3, 5), (65536, 131072), strict=True):
        worker.state.max_running_requests = running
        worker.state.max_model_len = context
    roots = [w.base_url.removesuffix("/v1") for w in workers]
    router = Router(roots, options=HEALTH, kind=args.router).start(healthy=2)
    record = Recorder(out, name, f"http://127.0.0.1:{router.port}")
    model = workers[0].state.models[0]
    try:
        record.one("01a_get_get_server_info_two_workers", "GET", "/get_server_info")
        record.one("01b_get_server_info", "GET", "/server_info")
        record.one("02a_get_workers_two_healthy", "GET", "/workers")
        record.one("03a_get_readiness_two_healthy", "GET", "/readiness")
        record.one("03b_get_health_two_healthy", "GET", "/health")
        record.one("04a_get_v1_models_two_healthy", "GET", "/v1/models")
        record.one("05_post_v1_tokenize_prompt_sglang", "POST", "/v1/tokenize",
                   {"model": model, "prompt": "Hello, world.", "add_special_tokens": False})
        record.one("06_chat_stream_include_usage", "POST", "/v1/chat/completions",
                   {"model": model, "messages": [{"role": "user", "content": "Hello"}],
                    "max_tokens": 32, "stream": True,
                    "stream_options": {"include_usage": True}}, accept="text/event-stream")
        if args.router == "smg":
            record.one("07a_get_get_loads_two_healthy", "GET", "/get_loads")
            record.one("07b_get_v1_loads", "GET", "/v1/loads")
            busy(workers, model, router.port, lambda: (
                record.one("02d_get_workers_three_in_flight", "GET", "/workers"),
                record.one("07c_get_get_loads_three_in_flight", "GET", "/get_loads")))
        for worker in workers:
            worker.stop()
        deadline = time.monotonic() + 30
        while router.healthy_workers() != 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        record.one("02b_get_workers_none_healthy", "GET", "/workers")
        record.one("03c_get_readiness_none_healthy", "GET", "/readiness")
        record.one("03d_get_health_none_healthy", "GET", "/health")
        record.one("04b_get_v1_models_none_healthy", "GET", "/v1/models")
    finally:
        router.stop()
    late = Router([f"http://127.0.0.1:{free_port()}"], options=HEALTH,
                  kind=args.router).start(healthy=0)
    try:
        record = Recorder(out, name, f"http://127.0.0.1:{late.port}")
        record.one("01c_get_get_server_info_worker_not_started", "GET", "/get_server_info")
        record.one("02c_get_workers_worker_not_started", "GET", "/workers")
        record.one("03e_get_readiness_worker_not_started", "GET", "/readiness")
    finally:
        late.stop()


def busy(workers: list[SglangServer], model: str, port: int, then: object) -> None:
    """Call `then` while three chats are in flight on the workers (each held until then)."""
    for worker in workers:
        worker.state.hold_until_in_flight = 99  # none finishes before it is let go (10 s)
    chats = [threading.Thread(target=requests.post, kwargs={
        "url": f"http://127.0.0.1:{port}/v1/chat/completions", "timeout": 30,
        "json": {"model": model, "messages": [{"role": "user", "content": f"Hello {n}"}],
                 "max_tokens": 8, "chat_template_kwargs": {"thinking": False}}})
        for n in range(3)]
    for chat in chats:
        chat.start()
    deadline = time.monotonic() + 10
    while sum(w.state.in_flight for w in workers) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert callable(then)
    then()
    for worker in workers:
        with worker.state.lock:
            worker.state.hold_until_in_flight = 0
            worker.state.lock.notify_all()
    for chat in chats:
        chat.join()


if __name__ == "__main__":
    main()
