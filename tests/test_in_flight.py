"""The test servers count a request in flight from its arrival until its answer is complete
from their side: a client that has the whole answer never finds it still counted, so the
bound `max_in_flight <= slots` that builds assert holds whatever the scheduling."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from tests.servers.llama_server import LlamaServer, LlamaState
from tests.servers.sglang import SglangServer

MODEL = "deepseek-ai/DeepSeek-V4-Flash"


@pytest.fixture(params=["sglang", "litellm", "llama-server"])
def server(request: pytest.FixtureRequest) -> Iterator[SglangServer | LlamaServer]:
    started: SglangServer | LlamaServer
    if request.param == "llama-server":
        started = LlamaServer(LlamaState(model_path=MODEL)).start()
    else:
        started = SglangServer().start()
        started.state.like(request.param).hold_first_for_waiter = False  # no one waits
    yield started
    started.stop()


def answer(server: SglangServer | LlamaServer, stream: bool) -> bytes:
    """One chat request on a new connection; what came back, up to the end of the answer as
    a client reads it (`[DONE]` in a stream, the body's length otherwise)."""
    url = urlsplit(server.base_url)
    connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=10)
    try:
        body = {"model": MODEL, "stream": stream, "max_tokens": 50,
                "messages": [{"role": "system", "content": "Be brief."},
                             {"role": "user", "content": "Say something."}]}
        connection.request("POST", "/v1/chat/completions", json.dumps(body),
                           {"Content-Type": "application/json"})
        response = connection.getresponse()
        if not stream:
            return response.read()
        lines = []
        while (line := response.readline()) and not line.startswith(b"data: [DONE]"):
            lines.append(line)
        return b"".join(lines) + line
    finally:
        connection.close()


@pytest.mark.parametrize("stream", [False, True])
def test_an_answer_is_complete_only_once_its_request_is_counted_out(
        server: SglangServer | LlamaServer, stream: bool) -> None:
    for _ in range(20):  # one at a time, each sent as soon as the last one is whole
        got = answer(server, stream)
        assert b"Say something" in got or b"This answer addresses" in got, got[:300]
        assert server.state.in_flight == 0
    assert server.state.max_in_flight == 1
