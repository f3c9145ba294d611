"""The chat client against an SGLang-shaped server: answers, reasoning, usage and errors."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import pytest

from generator.completions import Message, PromptRequest, Usage
from generator.config import load_config
from generator.errors import LlmRequestError, ServerNotAnsweringError, ServerUnavailableError
from generator.pipeline.doctor import launch_advice
from generator.prompts.kinds import BUILTIN_KINDS
from generator.store.cache import Cache
from generator.synthesis.answer_parts import split_reasoning
from generator.synthesis.llm_client import ChatClient
from tests.servers.sglang import Answer, Fault, SglangServer

MODEL = "deepseek-ai/DeepSeek-V4-Flash"


def client(server: SglangServer, model: str = MODEL) -> ChatClient:
    return ChatClient(server.base_url, model, "test-key", timeout=10, max_retries=0)


def request(thinking: bool = False, max_tokens: int = 100, bundle: str = "bundle") -> PromptRequest:
    extra = {"chat_template_kwargs": {"thinking": True}} if thinking else {}
    return PromptRequest(
        name="q", title="Q", kind="thinking", question="Why?",
        messages=(Message("system", "sys"), Message("user", f"{bundle}\n\n---\n\nTask: why?")),
        max_tokens=max_tokens, temperature=0.2, thinking=thinking,
        extra_body_json=json.dumps(extra),
    )


def test_answer_usage_and_parameters_go_over_http(sglang_server: SglangServer) -> None:
    completion = client(sglang_server).complete(request())
    assert completion.ok and completion.content.startswith("# Answer")
    assert completion.finish_reason == "stop"
    assert (completion.usage.prompt_tokens or 0) > 0 and (completion.usage.completion_tokens or 0) > 0
    assert completion.usage.cached_tokens == 0
    (sent,) = sglang_server.state.chat_requests
    assert sent["model"] == MODEL and sent["max_tokens"] == 100 and sent["temperature"] == 0.2
    assert "chat_template_kwargs" not in sent
    assert [m["role"] for m in sent["messages"]] == ["system", "user"]


def test_thinking_sends_the_extra_body_and_keeps_reasoning(sglang_server: SglangServer) -> None:
    completion = client(sglang_server).complete(request(thinking=True))
    (sent,) = sglang_server.state.chat_requests
    assert sent["chat_template_kwargs"] == {"thinking": True}
    assert completion.reasoning.startswith("First, compare Paper 1")
    assert not completion.reasoning_leaked
    assert completion.usage.reasoning_tokens and completion.usage.reasoning_tokens > 0


def test_leaked_think_block_is_split_out(sglang_server: SglangServer) -> None:
    sglang_server.state.responder = lambda body: Answer("<think>hmm, Paper 2</think>\n\nThe answer.")
    completion = client(sglang_server).complete(request())
    assert completion.content == "The answer."
    assert completion.reasoning == "hmm, Paper 2"
    assert completion.reasoning_leaked
    assert split_reasoning("reasoning only\n</think>\nanswer", "") == ("answer", "reasoning only")


def test_cached_tokens_are_reported_for_a_shared_prefix(sglang_server: SglangServer) -> None:
    chat = client(sglang_server)
    bundle = "A long shared research bundle. " * 100
    first = chat.complete(request(bundle=bundle))
    second = chat.complete(request(bundle=bundle))
    assert first.usage.cached_tokens == 0
    assert second.usage.cached_tokens and second.usage.cached_tokens > 700


def test_truncated_answer_is_marked(sglang_server: SglangServer) -> None:
    sglang_server.state.responder = lambda body: Answer("Cut off mid", finish_reason="length")
    completion = client(sglang_server).complete(request())
    assert completion.truncated and completion.content == "Cut off mid"


@pytest.mark.parametrize("reported", [-7, float("nan"), 10**30, 12.5])
def test_an_impossible_token_count_is_unknown(sglang_server: SglangServer,
                                              reported: float) -> None:
    """A count that cannot be one is shown as unknown, never drawn as a bar."""
    sglang_server.state.responder = lambda body: Answer("An answer.", completion_tokens=reported)  # type: ignore[arg-type]
    for stream in (True, False):
        chat = ChatClient(sglang_server.base_url, MODEL, "k", timeout=10, max_retries=0,
                          stream=stream)
        usage = chat.complete(request()).usage
        assert usage.completion_tokens is None and usage.prompt_tokens is not None
    assert Usage(prompt_tokens=10, cached_tokens=11).cached_tokens is None  # a part > its whole


def test_empty_answer_is_an_error(sglang_server: SglangServer) -> None:
    sglang_server.state.responder = lambda body: Answer("")
    with pytest.raises(LlmRequestError, match="returned an empty answer"):
        client(sglang_server).complete(request())


def test_an_error_is_told_in_our_words_and_the_servers_go_to_the_log(
        sglang_server: SglangServer, caplog: pytest.LogCaptureFixture) -> None:
    sglang_server.state.faults.append(Fault(
        400, "This model's maximum context length is 32768 tokens. However, you requested 40000."))
    with pytest.raises(LlmRequestError) as info:
        client(sglang_server).complete(request())
    assert str(info.value) == (f"HTTP 400 from {sglang_server.base_url}: the prompt and its "
                               "answer are longer than the model's context of 32,768 tokens")
    assert info.value.status == 400 and "you requested 40000" in info.value.detail
    assert "you requested 40000" in caplog.text  # the local log has the server's words


@pytest.mark.parametrize("server", ["llama-cpp-python-0.3.36", "litellm-1.108.7-over-llama-cpp-python"])
def test_a_refused_response_format_is_recognised_in_the_real_bodies(fixtures: Path,
                                                                     server: str) -> None:
    """llama-cpp-python answers json_schema with a 500 whose message is a validation error, a
    traceback frame and `POST /v1/chat/completions` (LiteLLM wraps the same): the refusal is
    found in the body, not in its last line."""
    from generator.synthesis.server_errors import body_text, describe, detail, format_refusal

    folder = fixtures / "servers" / server
    recorded = json.loads(next(folder.glob("03a_*__500.json")).read_text())["response"]
    said = detail(body_text(json.loads(recorded["body"]["text"]), ""))
    assert "Input should be 'text' or 'json_object'" in said
    assert "/opt/llama" not in said and "POST /v1/chat/completions" not in said
    assert format_refusal(500, said)
    assert describe(500, said) == ("the server does not accept this way of asking for JSON "
                                   "(response_format)")
    context = json.loads(next(folder.glob("07a_*__400.json")).read_text())["response"]
    said = detail(body_text(json.loads(context["body"]["text"]), ""))
    assert not format_refusal(400, said)
    assert describe(400, said).endswith("the model's context of 8,192 tokens")
    assert describe(500, "the GPU caught fire") == "internal server error"


def test_unserved_model_lists_the_served_ones(sglang_server: SglangServer) -> None:
    with pytest.raises(ServerUnavailableError, match=r"does not serve the model 'other/model'; "
                       r"it serves: deepseek-ai/DeepSeek-V4-Flash"):
        client(sglang_server, "other/model").check_ready()
    client(sglang_server).check_ready()


def test_unreachable_server_names_the_url_and_how_to_start_sglang(tmp_path: Path) -> None:
    with pytest.raises(ServerNotAnsweringError) as info:
        ChatClient("http://127.0.0.1:9/v1", MODEL, "k", max_retries=0).check_ready()
    assert "http://127.0.0.1:9/v1 did not answer" in str(info.value)
    # The pipeline adds the launch command that fits the workspace (context length included).
    (tmp_path / "config.toml").write_text('[llm]\nbase_url = "http://127.0.0.1:9/v1"\n')
    config = load_config(tmp_path / "config.toml", registry=BUILTIN_KINDS)
    advice = launch_advice(config, Cache(config.cache_dir), "http://127.0.0.1:9/v1")
    assert (f"python -m sglang.launch_server --model-path {MODEL} --port 9 "
            "--reasoning-parser deepseek-v4 --enable-cache-report") in advice
    assert "--schedule-policy lpm --context-length" in advice


def test_retries_ride_out_a_503(sglang_server: SglangServer) -> None:
    sglang_server.state.faults.append(Fault(503, "queue full", "ServiceUnavailableError"))
    chat = ChatClient(sglang_server.base_url, MODEL, "k", timeout=10, max_retries=2)
    assert chat.complete(request()).ok
    assert len(sglang_server.state.chat_requests) == 2


def test_retries_ride_out_a_429(sglang_server: SglangServer) -> None:
    sglang_server.state.faults.append(Fault(429, "too many requests", "RateLimitError"))
    chat = ChatClient(sglang_server.base_url, MODEL, "k", timeout=10, max_retries=2)
    assert chat.complete(request()).ok


def test_a_stalled_answer_times_out_and_is_retried(sglang_server: SglangServer) -> None:
    calls = []

    def stall_once(body: dict[str, object]) -> Answer:
        calls.append(1)
        if len(calls) == 1:
            time.sleep(3)
        return Answer("Fine now.")

    sglang_server.state.responder = stall_once
    stalled = ChatClient(sglang_server.base_url, MODEL, "k", timeout=0.5, max_retries=0)
    with pytest.raises(LlmRequestError, match="timed out"):
        stalled.complete(request())
    retried = ChatClient(sglang_server.base_url, MODEL, "k", timeout=1.0, max_retries=1)
    assert retried.complete(request()).content == "Fine now."


@pytest.mark.parametrize("endless, said", [
    ("trickle", "was not complete within [llm] timeout_seconds (2 s); it was cut after"),
    ("keepalive", "was not complete within [llm] timeout_seconds (2 s); it was cut after 0 "),
    ("stall", "stalled: no new token for 1 s ([llm] stall_seconds); it was cut after 7 ")])
def test_a_stream_that_never_ends_is_cut_at_its_deadline(sglang_server: SglangServer,
                                                         endless: str, said: str) -> None:
    """Tokens every half second, or only keep-alive comments: each read is quick, so only a
    deadline for the whole answer ends it; tokens that stop once begun are a stall."""
    sglang_server.state.endless = lambda body: endless
    chat = ChatClient(sglang_server.base_url, MODEL, "k", timeout=2, max_retries=0,
                      stall=1 if endless == "stall" else 120)
    with pytest.raises(LlmRequestError) as info:
        chat.complete(request())
    assert said in str(info.value)
    sglang_server.state.endless = lambda body: ""
    assert chat.complete(request()).ok  # the next answer on the same client is not cut


def test_a_context_refusal_inside_a_stream_is_read_as_one(sglang_server: SglangServer) -> None:
    """An error event inside a streamed 200: a refusal with its numbers, not a cut stream."""
    state = sglang_server.state
    state.enforce_context, state.refuse_in_stream, state.max_model_len = True, "event", 1000
    with pytest.raises(LlmRequestError) as info:
        client(sglang_server).complete(request(bundle="x " * 4000))
    assert info.value.status == 400 and not info.value.overload
    assert "exceed context window of 1000" in info.value.detail
    assert str(info.value).endswith("refused the request in its stream: the prompt and its "
                                    "answer are longer than the model's context of 1,000 tokens")


@pytest.mark.parametrize("shape", ["empty", "stop"])
def test_a_stream_that_begins_no_answer_is_asked_again_unstreamed(
        sglang_server: SglangServer, shape: str) -> None:
    """llama-cpp-python refuses a streamed prompt over its context with an empty 200 (no
    event), and LiteLLM passes that on as a lone `stop` (both recorded): asked again without
    streaming, the server gives its reason, with the numbers the plan cuts by."""
    state = sglang_server.state.like("llama-cpp-python" if shape == "empty" else "litellm")
    state.enforce_context, state.max_model_len = True, 1000
    with pytest.raises(LlmRequestError) as info:
        client(sglang_server).complete(request(bundle="x " * 4000))
    assert info.value.status == 400 and "maximum context length is 1000" in info.value.detail
    assert [bool(body.get("stream")) for body in state.chat_requests] == [True, False]


def test_connection_refused_during_a_restart_is_retried() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    servers: list[SglangServer] = []
    timer = threading.Timer(0.3, lambda: servers.append(SglangServer(port).start()))
    timer.start()
    try:
        chat = ChatClient(f"http://127.0.0.1:{port}/v1", MODEL, "k", timeout=5, max_retries=4)
        assert chat.complete(request()).ok
    finally:
        timer.join()
        for server in servers:
            server.stop()
