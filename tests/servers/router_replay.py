"""A router as recorded (tests/fixtures/servers/smg-1.13.0, tests/fixtures/servers/
sglang-router-0.3.2), for the tests that need no real router: the recorded bodies of its
informational endpoints, with the workers the test gives (their URLs, health, labels and load)
put in. Chat is not served: the end-to-end tests run the real routers
(tests/test_router_e2e.py).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.conftest import FIXTURES

RECORDINGS = {"smg": FIXTURES / "servers" / "smg-1.13.0",
              "sglang-router": FIXTURES / "servers" / "sglang-router-0.3.2"}


def recorded(stem: str, kind: str = "sglang-router") -> tuple[int, bytes]:
    """(status, body) of `kind`'s recording whose name starts with `stem`."""
    (path,) = sorted(RECORDINGS[kind].glob(f"{stem}*.json"))
    response = json.loads(path.read_text(encoding="utf-8"))["response"]
    return int(response["status"]), str(response["body"]["text"]).encode()


def recorded_json(stem: str, kind: str = "sglang-router") -> Any:
    return json.loads(recorded(stem, kind)[1])


@dataclass
class ReplayState:
    kind: str = "sglang-router"  # whose recordings: RECORDINGS
    workers: list[tuple[str, bool]] = field(default_factory=list)  # (root URL, healthy)
    # smg: the labels it lists for a worker (by URL; the recorded ones where not given), as it
    # lists them (strings); "" drops a label.
    labels: dict[str, dict[str, str]] = field(default_factory=dict)
    loads: dict[str, int] = field(default_factory=dict)  # requests in flight, by worker URL
    requests: list[str] = field(default_factory=list)  # paths asked for, in order


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        state = self.server.state
        state.requests.append(self.path)
        kind = state.kind
        healthy = sum(ok for _, ok in state.workers)
        if self.path == "/get_server_info" and kind == "sglang-router":
            summary = recorded_json("01a_", kind)
            self._send(200, json.dumps({**summary, "workers_count": len(state.workers)}).encode())
        elif self.path == "/get_server_info":  # smg: one worker's own settings, passed on
            self._send(*(recorded("01a_", kind) if healthy else recorded("01c_", kind)))
        elif self.path == "/workers":
            listing = recorded_json("02a_", kind)
            template = listing["workers"][0]
            listing["workers"] = [{**template, "url": url, "is_healthy": ok,
                                   "load": state.loads.get(url, 0),
                                   **({"labels": self._labels(template, url)}
                                      if "labels" in template else {})}
                                  for url, ok in state.workers]
            listing["total"] = len(state.workers)
            self._send(200, json.dumps(listing).encode())
        elif self.path == "/readiness" and healthy:
            self._send(200, json.dumps({"status": "ready", "healthy_workers": healthy,
                                        "total_workers": len(state.workers)}).encode())
        elif self.path == "/readiness":
            self._send(*recorded("03c_", kind))
        elif self.path == "/health":
            self._send(*recorded("03d_", kind), content_type="text/plain")
        elif self.path == "/v1/models":
            self._send(*recorded("04a_", kind))
        elif self.path == "/get_loads" and kind == "smg":
            self._send(*recorded("07a_", kind))
        else:
            self._send(*recorded("01b_", kind))

    def _labels(self, template: dict[str, Any], url: str) -> dict[str, str]:
        given = self.server.state.labels.get(url, {})
        labels = {**template["labels"], **given}
        return {k: v for k, v in labels.items() if v != ""}

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.server.state.requests.append(self.path)
        kind = self.server.state.kind
        if self.path == "/v1/tokenize":
            self._send(*recorded("05_", kind))
        else:
            self._send(*recorded("01b_", kind))

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: ReplayState


class RouterReplay:
    def __init__(self, kind: str = "sglang-router") -> None:
        self.state = ReplayState(kind=kind)
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.state = self.state
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> RouterReplay:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

