"""An incoming-webhook server on 127.0.0.1, shaped like Slack's (and Discord's): a secret path
takes a JSON POST and answers 200 "ok" (Discord: 204); any other path is 404 "no_service".

What a broken server does is planned per request on `WebhookState.plan`: a status to answer
with (500 "rollup_error", say), or DROP, which reads the whole post and closes the connection
without a word (the post may have arrived). A refusal's body quotes the path it was posted to,
as careless servers do, so that a test sees the secret is not repeated."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DROP = -1
TOKEN = "T0SECRET/B0SECRET/xoxSecretWebhookToken42"


@dataclass
class WebhookState:
    path: str = f"/services/{TOKEN}"
    plan: list[int] = field(default_factory=list)  # one answer per request, then 200
    ok_status: int = 200
    posts: list[Any] = field(default_factory=list)  # the bodies of the posts accepted
    requests: int = 0  # every request that reached it
    lock: threading.Lock = field(default_factory=threading.Lock)


class WebhookServer:
    def __init__(self) -> None:
        self.state = WebhookState()
        state = self.state

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 (the http.server API)
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with state.lock:
                    state.requests += 1
                    planned = state.plan.pop(0) if state.plan else state.ok_status
                if planned == DROP:
                    self.close_connection = True
                    self.connection.close()
                    return
                if self.path != state.path:
                    planned = 404
                if planned < 300:
                    with state.lock:
                        state.posts.append(json.loads(body))
                    text = b"" if planned == 204 else b"ok"
                else:
                    text = (b"no_service" if planned == 404 else
                            f"rollup_error for POST {self.path}".encode())
                self.send_response(planned)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(text)))
                self.end_headers()
                self.wfile.write(text)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{state.path}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> WebhookServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
