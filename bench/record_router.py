"""Record SGLang's router (sglang-router), byte-exact: the scripted exchanges of
tests/fixtures/servers/sglang-router-0.3.2/ (its README), in the format of bench/recording.py.

    pip install -c constraints.txt '.[router]'
    python bench/record_router.py --out tests/fixtures/servers/sglang-router-0.3.2

The router is the real one, started here over two of the project's SGLang-shaped test servers
(tests/servers/sglang.py: what the router reads of a worker is `/health`, `/server_info` and
`/model_info`); what is recorded is what the router answers, with both workers healthy, with
one of them stopped, and before its only worker has started.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.record_server import Recorder  # noqa: E402
from tests.servers.router import Router, free_port, missing  # noqa: E402
from tests.servers.sglang import SglangServer  # noqa: E402

# The router notices a stopped worker after one failed health check a second.
HEALTH = ("--health-check-interval-secs", "1", "--health-failure-threshold", "1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path,
                        default=ROOT / "tests/fixtures/servers/sglang-router-0.3.2")
    args = parser.parse_args()
    if missing():
        sys.exit(missing())
    workers = [SglangServer().start(), SglangServer().start()]
    for worker, running, context in zip(workers, (3, 5), (65536, 131072), strict=True):
        worker.state.max_running_requests = running
        worker.state.max_model_len = context
    roots = [w.base_url.removesuffix("/v1") for w in workers]
    router = Router(roots, options=HEALTH).start(healthy=2)
    record = Recorder(args.out, "sglang-router 0.3.2", f"http://127.0.0.1:{router.port}")
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
    late = Router([f"http://127.0.0.1:{free_port()}"], options=HEALTH).start(healthy=0)
    try:
        record = Recorder(args.out, "sglang-router 0.3.2", f"http://127.0.0.1:{late.port}")
        record.one("01c_get_get_server_info_worker_not_started", "GET", "/get_server_info")
        record.one("02c_get_workers_worker_not_started", "GET", "/workers")
        record.one("03e_get_readiness_worker_not_started", "GET", "/readiness")
    finally:
        late.stop()


if __name__ == "__main__":
    main()
