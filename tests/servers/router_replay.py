"""SGLang's router as recorded (tests/fixtures/servers/sglang-router-0.3.2), for the tests that
need no real router: the recorded bodies of its informational endpoints, with the workers the
test gives (their URLs and health) put in. Chat is not served: the end-to-end test runs the
real router (tests/test_router_e2e.py).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.conftest import FIXTURES

RECORDINGS = FIXTURES / "servers" / "sglang-router-0.3.2"


def recorded(stem: str) -> tuple[int, bytes]:
    """(status, body) of the recording whose name starts with `stem`."""
    (path,) = sorted(RECORDINGS.glob(f"{stem}*.json"))
    response = json.loads(path.read_text(encoding="utf-8"))["response"]
    return int(response["status"]), str(response["body"]["text"]).encode()


def recorded_json(stem: str) -> Any:
    return json.loads(recorded(stem)[1])


@dataclass
class ReplayState:
    workers: list[tuple[str, bool]] = field(default_factory=list)  # (root URL, healthy)
    requests: list[str] = field(default_factory=list)  # paths asked for, in order


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        state = self.server.state
        state.requests.append(self.path)
        healthy = sum(ok for _, ok in state.workers)
        if self.path == "/get_server_info":
            summary = recorded_json("01a_")
            self._send(200, json.dumps({**summary, "workers_count": len(state.workers)}).encode())
        elif self.path == "/workers":
            listing = recorded_json("02a_")
            template = listing["workers"][0]
            listing["workers"] = [{**template, "url": url, "is_healthy": ok}
                                  for url, ok in state.workers]
            listing["total"] = len(state.workers)
            self._send(200, json.dumps(listing).encode())
        elif self.path == "/readiness" and healthy:
            self._send(200, json.dumps({"status": "ready", "healthy_workers": healthy,
                                        "total_workers": len(state.workers)}).encode())
        elif self.path == "/readiness":
            self._send(*recorded("03c_"))
        elif self.path == "/health":
            self._send(*recorded("03d_"), content_type="text/plain")
        elif self.path == "/v1/models":
            self._send(*recorded("04a_"))
        else:
            self._send(*recorded("01b_"))

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.server.state.requests.append(self.path)
        if self.path == "/v1/tokenize":
            self._send(*recorded("05_"))
        else:
            self._send(*recorded("01b_"))

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
    def __init__(self) -> None:
        self.state = ReplayState()
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

