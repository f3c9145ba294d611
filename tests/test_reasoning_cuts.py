"""A thinking answer cut before its answer: reasoning and no text is never an answer.

Behind a proxy that passes an interrupted stream on as an ordinary `stop` (LiteLLM 1.108.7 over
one-slot llama-cpp-python, recorded in tests/fixtures/servers/), the thinking prompt once
came back as a few words of reasoning and no content, and the thinking page compared that
"answer" with a real one. On every server kind such an answer is sent again (fewer at a time
where the digest finds the width); one that stays empty fails in our words; the thinking page
never compares it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from generator.cli import cli
from generator.completions import Message, PromptRequest
from generator.errors import LlmRequestError
from generator.synthesis.answer_parts import split_reasoning
from generator.synthesis.batch import OVERLOAD_RETRIES
from generator.synthesis.llm_client import ChatClient, IncompleteAnswerError
from tests.conftest import write_config
from tests.servers.arxiv import ArxivServer
from tests.servers.sglang import Answer, SglangServer, realistic_responder, thinking_of

EDITION = "2026-12-02"
KINDS = ("sglang", "vllm", "llama.cpp", "llama-cpp-python", "litellm")
THOUGHT = "Let me weigh"  # what the recorded cut thinking answer held: 12 characters


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def request(max_tokens: int = 900) -> PromptRequest:
    return PromptRequest(name="thinking-on", title="Thinking", kind="thinking", question="q",
                         messages=(Message("user", "Weigh the papers."),),
                         max_tokens=max_tokens, temperature=0.0, thinking=True)


def edition_of(workspace: Path) -> dict[str, Any]:
    return dict(json.loads((workspace / "site_src" / "editions" / EDITION
                            / "edition.json").read_text()))


def completion_of(edition: dict[str, Any], name: str) -> dict[str, Any]:
    (prompt,) = [p for p in edition["prompts"] if p["name"] == name]
    return dict(prompt["completion"])


def test_an_unclosed_think_block_is_reasoning_and_no_answer() -> None:
    assert split_reasoning(f"<think>{THOUGHT}", "") == ("", THOUGHT)
    assert split_reasoning("<think>a</think>The answer.", "") == ("The answer.", "a")


@pytest.mark.parametrize("kind", KINDS)
def test_reasoning_and_a_stop_is_a_cut_on_every_server_kind(sglang_server: SglangServer,
                                                           kind: str) -> None:
    """Sent again by the client where it retries itself, and a sign of overload otherwise."""
    state = sglang_server.state.like(kind)
    state.slots = 0
    state.responder = lambda body: Answer(content="", reasoning=THOUGHT)
    chat = ChatClient(sglang_server.base_url, state.models[0], "k", timeout=10, max_retries=1)
    with pytest.raises(IncompleteAnswerError) as caught:
        chat.complete(request())
    assert caught.value.overload
    assert str(caught.value) == (
        f"the server at {sglang_server.base_url} returned an empty answer (12 characters of "
        "reasoning, then 'stop'), as a stream cut before its answer does behind a proxy that "
        "hides the cut")
    assert THOUGHT not in str(caught.value)
    assert len(state.chat_requests) == 2  # asked again once (max_retries=1)


def test_a_budget_spent_thinking_fails_and_is_not_sent_again(sglang_server: SglangServer) -> None:
    state = sglang_server.state
    state.responder = lambda body: Answer(content="", reasoning=THOUGHT * 40,
                                          finish_reason="length")
    chat = ChatClient(sglang_server.base_url, state.models[0], "k", timeout=10, max_retries=2)
    with pytest.raises(LlmRequestError) as caught:
        chat.complete(request(max_tokens=64))
    assert not isinstance(caught.value, IncompleteAnswerError) and not caught.value.overload
    assert "spent its whole 64-token budget thinking before it wrote one" in str(caught.value)
    assert len(state.chat_requests) == 1


def test_behind_litellm_a_thinking_answer_cut_mid_thought_is_sent_again(
        tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer) -> None:
    """The one slot interrupts the thinking leader for a waiter while it is still thinking;
    LiteLLM ends that stream with its recorded made-up `stop`. The answer is sent again one at
    a time and comes back whole: the page compares two real answers."""
    state = sglang_server.state.like("litellm")
    assert any('"finish_reason":"stop"' in event.replace(" ", "") for event in state.cut_ending
               or ())
    state.responder = realistic_responder
    workspace = write_config(tmp_path / "ws", arxiv_server, sglang_server).parent
    result = run("build", "--config", str(workspace / "config.toml"), "--edition", EDITION)
    assert result.exit_code == 0, result.output
    assert state.cuts[0] == "reasoning_content"  # the thinking leader, cut mid-thought
    edition = edition_of(workspace)
    on = completion_of(edition, "thinking-on")
    assert on.get("error", "") == "" and on["content"].startswith("## Field overview")
    thinking = (workspace / "site_src" / "editions" / EDITION / "thinking.md").read_text()
    assert "*no answer*" not in thinking and "fewer completion tokens" not in thinking


@pytest.mark.parametrize("kind", KINDS)
def test_a_thinking_answer_that_stays_empty_fails_in_our_words(
        tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer,
        kind: str) -> None:
    """Every try of the thinking prompt is a few words of reasoning and `stop`: it is sent
    again, then failed with our message; its reasoning is published nowhere, no cached empty
    answer is left, and the page compares nothing."""
    state = sglang_server.state.like(kind)
    state.slots = 0  # no slot cuts here: the responder gives the cut shape every time

    def responder(body: dict[str, Any]) -> Answer:
        if thinking_of(body):
            return Answer(content="", reasoning=THOUGHT)
        return realistic_responder(body)

    state.responder = responder
    workspace = write_config(tmp_path / "ws", arxiv_server, sglang_server).parent
    result = run("build", "--config", str(workspace / "config.toml"), "--edition", EDITION)
    assert result.exit_code == 1, result.output
    tries = [b for b in state.chat_requests if thinking_of(b)]
    # Sent again fewer at a time where the digest finds the width (OVERLOAD_RETRIES); on
    # SGLang by the client's own retries, which the tests' config turns off.
    assert len(tries) == (1 if kind == "sglang" else 1 + OVERLOAD_RETRIES)
    on = completion_of(edition_of(workspace), "thinking-on")
    assert "returned an empty answer (12 characters of reasoning, then 'stop')" in on["error"]
    assert on.get("content", "") == "" and THOUGHT not in json.dumps(on)
    site_src = workspace / "site_src"
    for page in site_src.rglob("*.md"):
        assert THOUGHT not in page.read_text(), page
    thinking = (site_src / "editions" / EDITION / "thinking.md").read_text()
    assert "fewer completion tokens" not in thinking and "extra completion tokens" not in thinking
    assert "returned an empty answer" in thinking
    # A rebuild asks for it again (nothing empty was cached), and sends nothing else.
    before = len(state.chat_requests)
    run("build", "--config", str(workspace / "config.toml"), "--edition", EDITION)
    assert {thinking_of(b) for b in state.chat_requests[before:]} == {True}
