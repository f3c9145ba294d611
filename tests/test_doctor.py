"""`digest doctor`, `--wait-for-server` and `digest server-command` against local servers."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from generator.cli import cli
from tests.conftest import write_config
from tests.servers.arxiv import ArxivServer
from tests.servers.sglang import Answer, SglangServer


def doctor(config: Path) -> Result:
    return CliRunner().invoke(cli, ["doctor", "--config", str(config)], catch_exceptions=False)


def lines(result: Result) -> dict[str, str]:
    """check name -> verdict, from the report."""
    found = re.findall(r"^\s*(ok|warning|problem|info)  ([a-z ]+):", result.output, re.MULTILINE)
    return {name: verdict for verdict, name in found}


def test_a_well_set_up_sglang_server_is_all_ok(workspace: Path) -> None:
    result = doctor(workspace)
    assert result.exit_code == 0, result.output
    assert lines(result) == {
        "server": "ok", "model": "ok", "limits": "info", "tokenizer": "info",
        "structured output": "info", "usage": "info", "concurrency": "info",
        "context": "ok", "prefix cache": "ok",
        "cache report": "ok", "schedule policy": "ok", "reasoning parser": "ok",
        "thinking": "ok", "thinking off": "ok", "arxiv": "ok"}


@pytest.mark.parametrize(
    ("setting", "value", "check", "verdict", "advice"),
    [
        ("models", ["Qwen/Qwen3-8B"], "model", "problem", "set [llm] model"),
        ("radix_cache_off", True, "prefix cache", "problem", "without --disable-radix-cache"),
        ("cache_report", False, "cache report", "warning", "--enable-cache-report"),
        ("schedule_policy", "fcfs", "schedule policy", "warning", "--schedule-policy lpm"),
        ("reasoning_parser", None, "reasoning parser", "warning", "--reasoning-parser deepseek-v4"),
        ("max_model_len", 8192, "context", "problem", "--context-length"),
    ],
)
def test_each_condition_has_its_line(workspace: Path, sglang_server: SglangServer, setting: str,
                                     value: object, check: str, verdict: str, advice: str) -> None:
    setattr(sglang_server.state, setting, value)
    result = doctor(workspace)
    assert lines(result)[check] == verdict, result.output
    assert advice in result.output
    assert result.exit_code == (1 if verdict == "problem" else 0)


def test_leaked_reasoning_is_a_warning(workspace: Path, sglang_server: SglangServer) -> None:
    sglang_server.state.reasoning_parser = None
    result = doctor(workspace)
    assert lines(result)["thinking"] == "warning"
    assert "reasoning leaks into the answer as <think> text" in result.output


def test_every_request_says_whether_it_thinks(workspace: Path,
                                               sglang_server: SglangServer) -> None:
    """Thinking off is said, not left to the server (a gateway turns it on where a request is
    silent), in the form the chat template reads."""
    assert doctor(workspace).exit_code == 0
    said = [b.get("chat_template_kwargs") for b in sglang_server.state.chat_requests]
    assert said and all(s in ({"thinking": True}, {"thinking": False}) for s in said)
    assert said.count({"thinking": True}) == 1  # doctor's thinking check alone


def test_a_server_that_thinks_when_told_not_to_is_named_with_the_setting(
        workspace: Path, sglang_server: SglangServer) -> None:
    sglang_server.state.responder = lambda body: Answer(content="42", reasoning="17 + 25 ...")
    result = doctor(workspace)
    assert lines(result)["thinking off"] == "warning"
    assert 'sent: {"chat_template_kwargs": {"thinking": false}}' in result.output
    assert "set [llm] no_thinking_extra_body in config.toml" in result.output


def test_unreachable_server_is_a_problem_with_the_launch_command(
    tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer
) -> None:
    config = write_config(tmp_path / "ws", arxiv_server, sglang_server)
    config.write_text(config.read_text().replace(sglang_server.base_url, "http://127.0.0.1:9/v1"))
    result = doctor(config)
    assert result.exit_code == 1
    assert lines(result) == {"server": "problem", "arxiv": "ok"}
    assert "python -m sglang.launch_server" in result.output
    # Why, in our words: not the exception's class name.
    assert "could not connect: is the server running" in result.output
    assert "ConnectionError" not in result.output


def test_a_plain_openai_server_gets_no_false_alarms(workspace: Path, sglang_server: SglangServer) -> None:
    sglang_server.state.plain_openai = True
    result = doctor(workspace)
    assert result.exit_code == 0, result.output
    found = lines(result)
    assert found["context"] == "info" and found["sglang"] == "info"
    assert "set [llm] context_tokens" in result.output
    assert "prefix cache" not in found and "problem" not in found.values()


def test_context_tokens_from_config_is_used(workspace: Path, sglang_server: SglangServer) -> None:
    sglang_server.state.plain_openai = True
    workspace.write_text(workspace.read_text() + "context_tokens = 4096\n")
    result = doctor(workspace)
    assert lines(result)["context"] == "problem" and result.exit_code == 1


def test_arxiv_down_is_a_problem(workspace: Path, arxiv_server: ArxivServer) -> None:
    arxiv_server.state.feed_status = 500
    result = doctor(workspace)
    assert lines(result)["arxiv"] == "problem" and result.exit_code == 1


def test_wait_for_server_rides_out_a_slow_start(workspace: Path, sglang_server: SglangServer) -> None:
    sglang_server.state.starting_health_checks = 1  # ready at the second look, however late
    result = CliRunner().invoke(cli, ["build", "--config", str(workspace), "--edition", "2026-12-02",
                                      "--wait-for-server", "30"])
    assert result.exit_code == 0, result.output
    assert "waiting for" in result.output and "/health answered 503" in result.output


def test_wait_for_server_gives_up_with_a_clear_error(workspace: Path,
                                                      sglang_server: SglangServer) -> None:
    sglang_server.state.starting_until = time.monotonic() + 60
    result = CliRunner().invoke(cli, ["synthesize", "--config", str(workspace),
                                      "--wait-for-server", "1"])
    assert result.exit_code == 1 and "was not ready after 1 s" in result.output


def test_without_wait_a_starting_server_fails_fast(workspace: Path, sglang_server: SglangServer) -> None:
    sglang_server.state.starting_until = time.monotonic() + 60
    result = CliRunner().invoke(cli, ["build", "--config", str(workspace)])
    assert result.exit_code == 1 and "HTTP 503" in result.output


def test_server_command_fits_the_config(workspace: Path) -> None:
    result = CliRunner().invoke(cli, ["server-command", "--config", str(workspace)])
    assert result.exit_code == 0, result.output
    command = result.output.strip().splitlines()[-1]
    port = re.search(r":(\d+)/v1", workspace.read_text())
    assert port
    assert command.startswith("python -m sglang.launch_server --model-path "
                              f"deepseek-ai/DeepSeek-V4-Flash --port {port.group(1)} "
                              "--reasoning-parser deepseek-v4 --enable-cache-report "
                              "--schedule-policy lpm --context-length ")
    assert int(command.rsplit(" ", 1)[1]) % 1024 == 0


def test_no_more_full_texts_are_counted_than_an_edition_has_papers(workspace: Path) -> None:
    """full_text_papers above max_papers asked for a context of 900k tokens."""
    def context(full_texts: int) -> int:
        text = re.sub(r"full_text_papers = \d+", f"full_text_papers = {full_texts}",
                      workspace.read_text())
        workspace.write_text(text if "full_text_papers" in text else text.replace(
            "[arxiv]\n", f"[arxiv]\nfull_text_papers = {full_texts}\n"))
        result = CliRunner().invoke(cli, ["server-command", "--config", str(workspace)])
        assert result.exit_code == 0, result.output
        return int(result.output.strip().rsplit(" ", 1)[1])

    text = workspace.read_text()
    papers = re.search(r"max_papers = (\d+)", text)
    assert papers
    assert context(99) == context(int(papers.group(1)))


def test_doctor_and_server_command_count_as_the_build_does(
    workspace: Path, sglang_server: SglangServer
) -> None:
    # A tokenizer that counts more tokens than our estimate (3 characters a token, not 4).
    sglang_server.state.chars_per_token = 3.0
    fetched = CliRunner().invoke(cli, ["fetch", "--config", str(workspace)])
    assert fetched.exit_code == 0, fetched.output
    result = doctor(workspace)
    assert "counted by the server" in result.output
    counted = int(re.search(r"needs about ([0-9,]+)", result.output)
                  .group(1).replace(",", ""))  # type: ignore[union-attr]
    sglang_server.state.tokenize_endpoint = False  # now only the estimate is left
    estimated = int(re.search(r"needs about ([0-9,]+)", doctor(workspace).output)
                    .group(1).replace(",", ""))  # type: ignore[union-attr]
    assert counted > estimated
    # Once a build has measured the rate, server-command sizes the context by it too.
    sglang_server.state.tokenize_endpoint = True
    assert CliRunner().invoke(cli, ["build", "--config", str(workspace)]).exit_code == 0
    command = CliRunner().invoke(cli, ["server-command", "--config", str(workspace)])
    assert "at its measured token rate" in command.output
    assert int(command.output.strip().rsplit(" ", 1)[1]) >= counted


def test_the_context_advice_fits_the_server_kind_found() -> None:
    """SGLang's --context-length is no use to a llama-cpp-python user."""
    from generator.pipeline.doctor import context_flag
    from generator.synthesis.capabilities import Capabilities

    assert context_flag(Capabilities(limits=True, tokenizer="sglang"), 65536) == (
        "--context-length 65536 (SGLang)")
    assert context_flag(Capabilities(limits=False, tokenizer="vllm"), 65536) == (
        "--max-model-len 65536 (vLLM)")
    assert context_flag(Capabilities(limits=False, tokenizer="llama.cpp"), 8192) == (
        "-c 8192 (llama-server)")
    assert context_flag(Capabilities(limits=False, tokenizer="llama-cpp-python"), 8192) == (
        "--n_ctx 8192 (llama-cpp-python)")
    assert "[llm] context_tokens = 8192" in context_flag(Capabilities(tokenizer=""), 8192)
