"""`digest doctor`'s thinking checks: does reasoning come back separately with thinking on, and
does none come back with it off (every request says which, so no server default decides)."""

from __future__ import annotations

import json

from ..completions import Message, PromptRequest
from ..config import Config
from ..errors import LlmRequestError
from ..kinds import THINKING
from ..ports import ChatModel
from ..synthesis.launch import reasoning_parser_for
from .check import Check


def check_thinking(config: Config, chat: ChatModel) -> Check:
    """One tiny request with thinking on: does the reasoning come back separately?"""
    import openai  # the client's own import; about a second, so only where a check needs it

    request = PromptRequest(
        name="doctor", title="doctor", kind=THINKING, question="",
        messages=(Message("user", "What is 17 + 25? Answer with the number only."),),
        max_tokens=256, temperature=0.0, thinking=True,
        extra_body_json=json.dumps(config.llm.thinking_switch(True), sort_keys=True),
    )
    try:
        completion = chat.complete(request)
    except LlmRequestError as err:
        # Doctor speaks to the operator on their terminal: the server's own words help here.
        said = f" (it said: {err.detail[:300]})" if err.detail else ""
        if err.status == 400:
            return Check("thinking", "warning",
                         f"the server refused the thinking request: {err}{said}",
                         "set [llm] thinking_extra_body to how this server turns thinking on")
        return Check("thinking", "problem", f"a one-line request failed: {err}{said}")
    except openai.OpenAIError as err:
        return Check("thinking", "problem", f"a one-line request failed: {err}")
    if completion.reasoning and not completion.reasoning_leaked:
        return Check("thinking", "ok", f"reasoning comes back separately "
                     f"({len(completion.reasoning.split())} words for a one-line question)")
    if completion.reasoning_leaked:
        return Check("thinking", "warning", "reasoning leaks into the answer as <think> text",
                     "start the server with a reasoning parser (SGLang: --reasoning-parser)")
    if reasoning_parser_for(config.llm.model) is None:
        return Check("thinking", "info", "no reasoning came back with thinking on: this model "
                     "may have no thinking mode, and the thinking page will compare two answers "
                     "without reasoning", "to compare thinking, serve a model that has one")
    return Check("thinking", "warning", "no reasoning came back with thinking on",
                 "check [llm] thinking_extra_body and the server's reasoning parser")


def check_thinking_off(config: Config, chat: ChatModel) -> Check:
    """One tiny request with thinking off, as every non-thinking request is sent (with
    [llm]'s switch for off): does reasoning come back all the same? A gateway (smg) or a
    server default that thinks where the request says not to would make every evidence check,
    brief and theme request reason before its JSON."""
    import openai

    switch = config.llm.thinking_switch(False)
    request = PromptRequest(
        name="doctor-off", title="doctor", kind="probe", question="",
        messages=(Message("user", "What is 17 + 25? Answer with the number only."),),
        max_tokens=256, temperature=0.0, thinking=False)
    sent = json.dumps(switch, sort_keys=True) if switch else "nothing"
    try:
        completion = chat.complete(request)
    except (LlmRequestError, openai.OpenAIError) as err:
        return Check("thinking off", "problem", f"a one-line request failed: {err}")
    if not (completion.reasoning or completion.reasoning_leaked):
        return Check("thinking off", "ok", f"no reasoning comes back with thinking off "
                     f"(each such request sends {sent})")
    return Check("thinking off", "warning",
                 f"reasoning came back with thinking off ({len(completion.reasoning.split())} "
                 f"words for a one-line question; sent: {sent}): the server or a gateway in "
                 "front of it thinks where the request says not to, and every evidence check, "
                 "brief and theme request would reason before its answer",
                 "set [llm] no_thinking_extra_body in config.toml to how this server turns "
                 "thinking off (e.g. {chat_template_kwargs = {thinking = false}}, or "
                 "enable_thinking = false for a Qwen model)")
