"""Continuations as a real model writes them when told to go on: starting the answer over
(joined once, not twice), or having nothing to add (an answer, not a failure asked again)."""

from __future__ import annotations

import json
from typing import Any

from generator.completions import Completion, Message, PromptRequest
from generator.synthesis.continuation import continuation_request, joined, joined_text
from generator.synthesis.llm_client import ChatClient
from tests.servers.sglang import Answer, SglangServer

FIRST = ("### Memory\n\nPaper 1 pages the cache and keeps fragmentation under four percent. "
         "Paper 2 drafts tokens with a small model and verifies them, finding up to 8.3× varia")


def test_a_continuation_that_starts_over_adds_only_what_comes_after_the_cut() -> None:
    again = FIRST + "tion across batch sizes.\n\nStart with Paper 1.\n"
    assert joined_text(FIRST, again) == again  # the answer once, then what is new
    assert joined_text(FIRST, "\n\n" + FIRST.replace("\n\n", "\n\n ", 1) + "tion.") \
        .count("Paper 1 pages") == 1
    cut = Completion("d", "m", FIRST, finish_reason="length")
    # A second try that stops before it reaches the cut adds nothing: still cut, said so.
    short = Completion("d-continued-1", "m", FIRST[:120] + " and so on.", finish_reason="stop")
    whole = joined(cut, [short])
    assert whole.content == FIRST and whole.truncated


def test_an_empty_continuation_is_an_answer_asked_once(sglang_server: SglangServer) -> None:
    def nothing_more(body: dict[str, Any]) -> Answer:
        return Answer("", finish_reason="stop")

    sglang_server.state.responder = nothing_more
    parent = PromptRequest("deep-dive-1", "Memory", "deep_dive", "q",
                           (Message("system", "S"), Message("user", "BUNDLE---Task")), 300, 0.2,
                           extra_body_json=json.dumps({}))
    chat = ChatClient(sglang_server.base_url, "deepseek-ai/DeepSeek-V4-Flash", "k", timeout=10,
                      max_retries=2)
    completion = chat.complete(continuation_request(parent, FIRST, 1))
    assert completion.ok and completion.content == "" and completion.finish_reason == "stop"
    assert len(sglang_server.state.chat_requests) == 1  # not asked again, nor unstreamed
    cut = Completion("deep-dive-1", "m", FIRST, finish_reason="length")
    assert joined(cut, [completion]) == cut  # nothing added: the answer as it was, cut
