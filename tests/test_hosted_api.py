"""A lab without a server of its own: a hosted OpenAI-compatible API, configured as the docs say
(`[llm] model` and `api_key_env` in config.toml, the URL and the key as repository secrets),
answered with the bytes OpenAI's API really streamed (recorded by pydantic-ai's test suite:
tests/fixtures/servers/openai-api-via-pydantic-ai/README.md)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from generator.completions import Message, PromptRequest
from generator.config import load_config
from generator.pipeline.services import make_services
from generator.prompts.kinds import BUILTIN_KINDS
from generator.store.cache import Cache
from tests.conftest import FIXTURES

CASSETTE = (FIXTURES / "servers" / "openai-api-via-pydantic-ai"
            / "test_run_stream_sync_streams_real_model.yaml")
KEY = "sk-proj-test0123456789abcdefXYZ"


def recorded() -> tuple[dict[str, Any], bytes, str]:
    """The text answer's exchange: the request as sent, the body and content type as received."""
    exchange = yaml.safe_load(CASSETTE.read_text(encoding="utf-8"))["interactions"][1]
    response = exchange["response"]
    return (exchange["request"]["parsed_body"], response["body"]["string"].encode("utf-8"),
            response["headers"]["content-type"][0])


@pytest.fixture
def hosted() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """OpenAI's API as far as the digest asks it: the recorded stream, for the right key only."""
    _, body, content_type = recorded()
    asked: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802 (the http.server API)
            sent = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            asked.append({"path": self.path, "auth": self.headers.get("Authorization"),
                          "body": sent})
            ok = self.path == "/v1/chat/completions" and \
                self.headers.get("Authorization") == f"Bearer {KEY}"
            out = body if ok else b'{"error":{"message":"Incorrect API key provided"}}'
            self.send_response(200 if ok else 401)
            self.send_header("Content-Type", content_type if ok else "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", asked
    finally:
        server.shutdown()
        server.server_close()


def test_a_hosted_apis_real_stream_is_read_with_its_key_from_the_secret(
        tmp_path: Path, hosted: tuple[str, list[dict[str, Any]]]) -> None:
    url, asked = hosted
    sent_then, _, _ = recorded()
    (tmp_path / "config.toml").write_text('[llm]\nmodel = "gpt-4o-mini"\n'
                                          'api_key_env = "OPENAI_API_KEY"\nmax_retries = 0\n')
    config = load_config(tmp_path / "config.toml", registry=BUILTIN_KINDS)
    # The workflow's environment: the two repository secrets.
    services = make_services(config, {"DIGEST_LLM_BASE_URL": url, "OPENAI_API_KEY": KEY},
                             Cache(tmp_path / ".cache"))
    request = PromptRequest(name="q", title="Q", kind="thinking", question="Capital?",
                            messages=(Message("user", sent_then["messages"][0]["content"]),),
                            max_tokens=64, temperature=0.2)
    completion = services.chat.complete(request)
    assert completion.ok, completion.error
    assert completion.content == "The capital of the UK is London."
    assert completion.finish_reason == "stop"
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (78, 9)
    assert completion.usage.cached_tokens == 0
    assert completion.model == "gpt-4o-mini-2024-07-18"  # the model that answered, as it said
    (call,) = asked
    assert call["auth"] == f"Bearer {KEY}" and call["body"]["model"] == "gpt-4o-mini"
    assert call["body"]["stream"] is True
    assert KEY not in json.dumps(completion.__dict__, default=str)
