"""Every request says whether it thinks, on or off, in the form the model's chat template reads
(`[llm] thinking_extra_body`, `no_thinking_extra_body`), so no server or gateway default
decides it; a server that refuses the off switch gets requests without it."""

from __future__ import annotations

import json
from dataclasses import replace

from generator.completions import Message, PromptRequest
from generator.config.schema import LlmSettings
from generator.synthesis.llm_client import ChatClient
from tests.servers.sglang import Fault, SglangServer, thinking_of

MODEL = "deepseek-ai/DeepSeek-V4-Flash"


def test_the_switch_is_in_the_form_the_chat_template_reads() -> None:
    deepseek = LlmSettings()
    assert deepseek.thinking_switch(True) == {"chat_template_kwargs": {"thinking": True}}
    assert deepseek.thinking_switch(False) == {"chat_template_kwargs": {"thinking": False}}
    qwen = replace(deepseek, model="Qwen/Qwen3-32B")
    assert qwen.thinking_switch(True) == {"chat_template_kwargs": {"enable_thinking": True}}
    assert qwen.thinking_switch(False) == {"chat_template_kwargs": {"enable_thinking": False}}
    # Configured: the server's own switch, turned off by making each true false ...
    own = replace(deepseek, thinking_extra_body={"thinking": True, "reasoning_effort": "high"})
    assert own.thinking_switch(False) == {"thinking": False, "reasoning_effort": "high"}
    # ... or as configured; a switch with no true in it has no off to derive.
    told = replace(own, no_thinking_extra_body={"reasoning_effort": "none"})
    assert told.thinking_switch(False) == {"reasoning_effort": "none"}
    assert replace(deepseek, thinking_extra_body={"reasoning_effort": "high"}
                   ).thinking_switch(False) == {}


def request(thinking: bool) -> PromptRequest:
    body = {"chat_template_kwargs": {"thinking": True}} if thinking else {}
    return PromptRequest(name="q", title="Q", kind="probe", question="",
                         messages=(Message("user", "Why?"),), max_tokens=50, temperature=0.0,
                         thinking=thinking, extra_body_json=json.dumps(body))


def test_a_request_that_does_not_think_says_so(sglang_server: SglangServer) -> None:
    chat = ChatClient(sglang_server.base_url, MODEL, "k", max_retries=0,
                      thinking_off=LlmSettings().thinking_switch(False))
    assert chat.complete(request(False)).ok and chat.complete(request(True)).ok
    off, on = sglang_server.state.chat_requests
    assert off["chat_template_kwargs"] == {"thinking": False} and not thinking_of(off)
    assert on["chat_template_kwargs"] == {"thinking": True}


def test_a_server_that_refuses_the_off_switch_gets_requests_without_it(
        sglang_server: SglangServer) -> None:
    sglang_server.state.faults.append(Fault(400, "Unrecognized request argument supplied: "
                                                 "chat_template_kwargs"))
    chat = ChatClient(sglang_server.base_url, MODEL, "k", max_retries=0,
                      thinking_off={"chat_template_kwargs": {"thinking": False}})
    assert chat.complete(request(False)).ok
    assert chat.complete(request(False)).ok
    refused, *later = sglang_server.state.chat_requests
    assert "chat_template_kwargs" in refused
    assert len(later) == 2 and all("chat_template_kwargs" not in b for b in later)


def test_a_request_that_does_not_think_says_so_over_a_body_it_inherited(
        sglang_server: SglangServer) -> None:
    """A continuation of a thinking answer keeps its parent's body; with a server's own
    top-level switch (`[llm] thinking_extra_body`), the off switch still has the last word."""
    own = replace(LlmSettings(), thinking_extra_body={"enable_thinking": True})
    chat = ChatClient(sglang_server.base_url, MODEL, "k", max_retries=0,
                      thinking_off=own.thinking_switch(False))
    inherited = replace(request(False), extra_body_json=json.dumps(own.thinking_switch(True)))
    assert chat.complete(inherited).ok
    (sent,) = sglang_server.state.chat_requests
    assert sent["enable_thinking"] is False
