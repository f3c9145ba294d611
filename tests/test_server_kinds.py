"""Any OpenAI-compatible server: the test server made to behave as each family does.

SGLang (every extra), vLLM (`/tokenize` at the root, no `/server_info`, no cache report),
llama.cpp's llama-server (`/props`, `/tokenize` taking `content`), and llama-cpp-python (one
slot that cuts a stream when another request waits, HTTP 500 on `json_schema`, a context
refusal inside the stream, no usage in streams, no context length stated). For each, `digest
doctor` names what it found and a build with every structured prompt and evidence check on
answers every prompt. llama-server's own recorded bytes are replayed by a double of its own
(tests/servers/llama_server.py, tests/test_llama_server.py); the llama.cpp kind here checks
the same client paths alongside the other families.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from generator.cli import cli
from tests.conftest import write_config
from tests.servers.arxiv import ArxivServer
from tests.servers.sglang import SglangServer, realistic_responder

EDITION = "2026-12-02"
FOUND = {  # kind -> what doctor reports for it
    "sglang": ("tokenizer: /v1/tokenize (sglang)", "json_schema (constrained decoding)",
               "usage: reported with each answer", "131,072 tokens (from /v1/models)"),
    "vllm": ("tokenizer: /tokenize (vllm)", "json_schema (constrained decoding)",
             "usage: reported with each answer", "131,072 tokens (from /v1/models)"),
    "llama.cpp": ("tokenizer: /tokenize (llama.cpp)", "json_schema (constrained decoding)",
                  "usage: reported with each answer", "131,072 tokens (from /props)"),
    "llama-cpp-python": ("tokenizer: /extras/tokenize/count (llama-cpp-python)",
                         "json_object with the schema", "usage: not reported",
                         "the server does not report its context length"),
    # LiteLLM 1.108.7 in front of llama-cpp-python (recorded): its own refusal words, a cut
    # passed on as `stop`, usage it makes up, no tokenizer.
    "litellm": ("tokenizer: none", "json_object with the schema",
                "usage: reported with each answer",
                "the server does not report its context length"),
}


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.mark.parametrize("kind", list(FOUND))
def test_doctor_names_what_each_server_kind_does(tmp_path: Path, arxiv_server: ArxivServer,
                                                 sglang_server: SglangServer, kind: str) -> None:
    sglang_server.state.like(kind)
    config = write_config(tmp_path / "ws", arxiv_server, sglang_server)
    result = run("doctor", "--config", str(config))
    for words in FOUND[kind]:
        assert words in result.output, result.output
    assert ("limits: /server_info" in result.output) == (kind == "sglang")
    remembered = json.loads((tmp_path / "ws" / ".cache" / "servers.json").read_text())
    (entry,) = remembered.values()
    assert entry["found"]["structured"] == ("json_object" if kind in ("llama-cpp-python",
                                                                      "litellm")
                                            else "json_schema")


def build_answering_every_prompt(tmp_path: Path, arxiv_server: ArxivServer,
                                 sglang_server: SglangServer) -> tuple[dict[str, Any], Any]:
    """A build with briefs, themes and evidence checks on, each prompt answered: the edition's
    record, and what the workspace remembers of the server."""
    sglang_server.state.responder = realistic_responder  # answers that cite: checks follow
    config = write_config(tmp_path / "ws", arxiv_server, sglang_server, structured=True,
                          evidence=True)
    result = run("build", "--config", str(config), "--edition", EDITION)
    assert result.exit_code == 0, result.output
    edition = json.loads((tmp_path / "ws" / "site_src" / "editions" / EDITION
                          / "edition.json").read_text())
    assert [c["name"] for c in edition["prompts"] if c["completion"].get("error")] == []
    assert any(c["kind"] == "evidence" for c in edition["prompts"])
    remembered = json.loads((tmp_path / "ws" / ".cache" / "servers.json").read_text())
    (entry,) = remembered.values()
    return edition, entry


@pytest.mark.parametrize("kind", list(FOUND))
def test_a_build_answers_every_prompt_on_each_server_kind(
        tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer, kind: str) -> None:
    state = sglang_server.state.like(kind)
    edition, entry = build_answering_every_prompt(tmp_path, arxiv_server, sglang_server)
    # No answer is kept cut, whatever the proxy called its end.
    assert not [c["name"] for c in edition["prompts"]
                if c["completion"].get("finish_reason") == "cut"]
    if kind in ("llama-cpp-python", "litellm"):
        # The one slot cut the first stream while a second request waited (behind LiteLLM,
        # passed on as `stop`): the run backed off to one at a time, never went wider again,
        # and remembers it.
        assert state.cut_count >= 1
        assert entry["found"]["concurrency"] == 1
        assert state.max_in_flight <= 2
        assert entry["found"]["stream_usage"] is (kind == "litellm")
    if kind == "llama-cpp-python":
        report = (tmp_path / "ws" / "site_src" / "editions" / EDITION / "run-report.md")
        assert "Token counts: unknown" in report.read_text()
        assert not re.search(r"\b0 \(0%\) came from", report.read_text())
    if kind == "sglang":
        assert "concurrency" not in entry["found"] or entry["found"]["concurrency_source"] in (
            "", "/server_info")


def test_a_server_that_drops_connections_past_its_capacity_settles_at_what_it_holds(
        tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer) -> None:
    """No /server_info, two at once, and a third connection closed with no response at all:
    every prompt is answered, and the width remembered is never above the two it holds."""
    state = sglang_server.state.like("vllm")
    state.plain_openai = True
    state.drop_beyond = 2
    _, entry = build_answering_every_prompt(tmp_path, arxiv_server, sglang_server)
    assert state.dropped >= 1 and state.max_in_flight <= 2
    # The width is remembered as settled by this run's answers. Its figure is not asserted: the
    # client counts a request in flight from its send to the end of its post-processing (the
    # cache write), longer than the server holds it, so what it was seen to hold depends on
    # scheduling (AdaptiveWidth's own tests pin the arithmetic on fixed sequences).
    assert entry["found"]["concurrency_source"] == "settled at by the last run's answers"
    assert entry["found"]["concurrency"] >= 1
