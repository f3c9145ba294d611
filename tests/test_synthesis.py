"""The synthesis stage at the speed of the server: concurrency, prefix gating, fitting the
context, retries, progress and run figures, against the SGLang-shaped server."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from generator.archive.record import EditionRecord
from generator.cli import cli
from generator.cli.progress import Progress
from generator.completions import Completion, PromptRequest
from generator.synthesis.planning import Refusal, context_from_error, refusal_from_error
from tests.conftest import read_record, write_config
from tests.servers.arxiv import ArxivServer
from tests.servers.sglang import (
    Answer,
    SglangServer,
    default_responder,
    is_evidence,
    realistic_responder,
    task_of,
    thinking_of,
)

EDITION = "2026-12-02"


def build(config: Path) -> Result:
    return CliRunner().invoke(cli, ["build", "--config", str(config), "--edition", EDITION],
                              catch_exceptions=False)


def record(config: Path) -> EditionRecord:
    return read_record(config, EDITION)


def test_results_keep_their_order_whatever_order_they_finish_in(
    workspace: Path, sglang_server: SglangServer
) -> None:
    state = sglang_server.state

    def last_first(body: dict[str, object]) -> Answer:
        if "Task:" in task_of(body):  # the research map, first in order, finishes last
            with state.lock:
                state.lock.wait_for(lambda: len(state.finished) >= 5, timeout=10)
        return default_responder(body)

    state.responder = last_first
    state.hold_until_in_flight = 3  # concurrent requests overlap at the server
    assert build(workspace).exit_code == 0
    names = [p.name for p in record(workspace).prompts]
    assert names == ["research-map", "memory-management", "benchmarks-and-metrics",
                     "engineering-roadmap", "thinking-off", "thinking-on"]
    assert sglang_server.state.max_in_flight >= 3


def test_concurrency_is_bounded(workspace: Path, sglang_server: SglangServer) -> None:
    workspace.write_text(workspace.read_text() + "max_concurrency = 2\n")
    sglang_server.state.hold_until_in_flight = 2  # the two overlap, however slow the machine
    assert build(workspace).exit_code == 0
    assert sglang_server.state.max_in_flight == 2


@pytest.fixture
def big_workspace(tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer) -> Path:
    """A workspace whose bundle carries PDF excerpts of the default length (30,000 characters):
    what the prefix-cache and context tests measure."""
    return write_config(tmp_path / "ws", arxiv_server, sglang_server, max_pdf_chars=30_000)


def test_prompts_sharing_a_prefix_wait_for_the_first_prefill(
    big_workspace: Path, sglang_server: SglangServer
) -> None:
    workspace = big_workspace
    sglang_server.state.prefill_delay_s = 0.5
    assert build(workspace).exit_code == 0
    arrivals = sglang_server.state.arrivals
    # The thinking prompt (longest decode) leads: thinking and non-thinking prompts share the
    # bundle's prefix (DeepSeek V4), so one prefill serves all six.
    leader = arrivals[0][1]
    assert thinking_of(leader)
    # The followers are sent only after the leader's first token was sent: an order of
    # events, which the gate guarantees, not a duration.
    leader_first_token = next(t for t, body in sglang_server.state.first_tokens if body is leader)
    followers = [t for t, body in arrivals[1:]]
    assert len(followers) == 5
    assert all(t > leader_first_token for t in followers)
    prompts = record(workspace).prompts
    followers_cached = [p.completion.usage.cached_tokens for p in prompts if not p.thinking]
    assert all(cached is not None and cached > 20_000 for cached in followers_cached)
    assert all(p.completion.ttft_s is not None for p in prompts)


def test_concurrency_follows_the_server(workspace: Path, sglang_server: SglangServer) -> None:
    # No [llm] max_concurrency: as many at once as the server says it runs.
    sglang_server.state.max_running_requests = 3
    sglang_server.state.hold_until_in_flight = 3
    assert build(workspace).exit_code == 0
    assert sglang_server.state.max_in_flight == 3


def test_a_server_that_says_nothing_is_not_flooded(
    workspace: Path, sglang_server: SglangServer
) -> None:
    # No /server_info (vLLM, llama.cpp, hosted APIs): two at first, one more for each answer
    # that comes back whole. An order of events, not a duration: the third request goes out
    # only after an answer has come back.
    sglang_server.state.plain_openai = True
    workspace.write_text(workspace.read_text() + "prefill_gate = false\n")
    assert build(workspace).exit_code == 0
    state = sglang_server.state
    assert len(state.arrivals) == 6
    assert state.arrivals[2][0] >= min(state.finished)


def test_without_the_gate_all_prompts_go_at_once(workspace: Path, sglang_server: SglangServer) -> None:
    workspace.write_text(workspace.read_text() + "prefill_gate = false\n")
    # No first token is sent before all six prompts have arrived: a client that waited for one
    # would stall here (and fail after the server's bounded wait).
    sglang_server.state.hold_first_tokens_until = 6
    assert build(workspace).exit_code == 0
    first = min(t for t, _ in sglang_server.state.first_tokens)
    assert all(t < first for t, _ in sglang_server.state.arrivals)


def test_the_bundle_is_cut_to_fit_a_small_context(big_workspace: Path,
                                                   sglang_server: SglangServer) -> None:
    workspace = big_workspace
    sglang_server.state.max_model_len = 20_000
    sglang_server.state.enforce_context = True
    assert build(workspace).exit_code == 0
    data = record(workspace)
    assert "were shortened to at most" in data.bundle.note
    assert data.bundle.estimated_tokens < 20_000 * 0.9
    assert all(p.completion.ok for p in data.prompts)
    edition = workspace.parent / "site_src" / "editions" / EDITION
    assert "shortened to fit the model's context" in (edition / "index.md").read_text()
    assert "The bundle was cut to fit the model's context" in (
        edition / "run-report.md").read_text()
    # Fairly: every full-text paper keeps an excerpt of the same (capped) length.
    excerpts = [p.excerpt_chars for p in data.papers
                if p.full_text.status == "ok"]
    assert len(set(excerpts)) == 1 and excerpts[0] < 30_000
    # A rerun rebuilds the same bundle: nothing is sent, the server is not even asked.
    sent, models = len(sglang_server.state.chat_requests), sglang_server.state.model_requests
    assert build(workspace).exit_code == 0
    assert len(sglang_server.state.chat_requests) == sent
    assert sglang_server.state.model_requests == models


@pytest.mark.parametrize("in_stream", ["", "empty"], ids=["http-400", "empty-200"])
def test_a_context_refusal_is_retried_once_with_a_smaller_bundle(
    big_workspace: Path, sglang_server: SglangServer, in_stream: str
) -> None:
    # In-stream, as llama-cpp-python does (recorded): a 200 with no event at all, asked again
    # unstreamed, where the server says why. (LiteLLM's lone `stop` for the same, and an
    # error event inside the stream: tests/test_llm_client.py.)
    sglang_server.state.refuse_in_stream = in_stream
    workspace = big_workspace
    # The config claims a large context, so nothing is cut up front; the server refuses.
    workspace.write_text(workspace.read_text() + "context_tokens = 200000\n")
    sglang_server.state.max_model_len = 20_000
    sglang_server.state.enforce_context = True
    result = build(workspace)
    assert result.exit_code == 0, result.output
    # Each refused once, then answered (an empty 200 is asked again unstreamed to learn why).
    assert len(sglang_server.state.chat_requests) == (18 if in_stream else 12)
    data = record(workspace)
    assert "refused" in data.bundle.note
    sent = len(sglang_server.state.chat_requests)
    assert build(workspace).exit_code == 0
    assert len(sglang_server.state.chat_requests) == sent


def needed_tokens(tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer,
                  extra: str = "") -> int:
    """The longest prompt plus its answer as the server counts them, from a run elsewhere
    (fetch and synthesize: the requests are all it needs, not the pages or the site)."""
    probe = write_config(tmp_path / "probe", arxiv_server, sglang_server, extra,
                         max_pdf_chars=30_000)
    for stage in ("fetch", "synthesize"):
        assert CliRunner().invoke(cli, [stage, "--config", str(probe), "--edition", EDITION],
                                  catch_exceptions=False).exit_code == 0
    state = sglang_server.state
    needed = max(state.tokens("".join(str(m["content"]) for m in body["messages"]))
                 + int(body["max_tokens"]) for body in state.chat_requests)
    state.chat_requests.clear()
    state.seen_prompts.clear()
    return needed


@pytest.mark.parametrize("tokenizer", [True, False], ids=["tokenize", "refusal-counts"])
def test_a_context_ten_percent_too_small_for_a_dense_tokenizer(
    tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer, tokenizer: bool
) -> None:
    # The server's tokenizer counts 3 characters a token where our estimate assumes 4: by the
    # estimate everything fits, by the server's count the context is 10 % too small.
    state = sglang_server.state
    state.chars_per_token = 3.0
    state.tokenize_endpoint = tokenizer
    # Every answer allowed the same length, so that 10 % too little context is too little
    # for every prompt (the thinking answer's larger default would leave the others room).
    same = "[prompts.thinking]\nthinking_max_tokens = 3000"
    needed = needed_tokens(tmp_path, arxiv_server, sglang_server, same)
    state.max_model_len = int(needed * 0.9)
    state.enforce_context = True
    workspace = write_config(tmp_path / "ws", arxiv_server, sglang_server, same,
                             max_pdf_chars=30_000)
    result = build(workspace)
    assert result.exit_code == 0, result.output
    data = record(workspace)
    assert all(p.completion.ok for p in data.prompts)
    if tokenizer:  # counted up front: cut before sending, nothing refused
        assert len(state.chat_requests) == 6
        assert "counted by the server's tokenizer" in data.bundle.note
    else:  # each prompt refused once, then cut by the counts in the refusal, and answered
        assert len(state.chat_requests) == 12
        assert "refused 6 prompt(s) for their length" in data.bundle.note
    edition = workspace.parent / "site_src" / "editions" / EDITION
    assert "shortened to fit the model's context" in (edition / "index.md").read_text()
    assert "The bundle was cut to fit the model's context" in (
        edition / "run-report.md").read_text()
    sent = len(state.chat_requests)
    assert build(workspace).exit_code == 0  # a rerun sends the same cut prompts: all cached
    assert len(state.chat_requests) == sent


@pytest.mark.parametrize(("tokenizer", "claimed", "kind"), [
    (True, "", "sglang"), (False, "context_tokens = 200000\n", "sglang"),
    (True, "", "llama-cpp-python")], ids=["tokenize", "refused-then-cut", "llama-cpp-python"])
def test_a_context_ten_percent_below_the_longest_conversation(
    tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer, tokenizer: bool,
    claimed: str, kind: str
) -> None:
    """Evidence checks continue their answer's conversation (bundle, answer, claims, quotes):
    the longest request of the edition. With a context 10 % below it, the plan fits the
    conversations, not just the answers: every answer and every check comes back. On
    llama-cpp-python (recorded: it states no context, and refuses a streamed prompt over it
    with an empty 200), the refusal is learnt by asking again unstreamed."""
    state = sglang_server.state
    if kind != "sglang":
        state.like(kind)
    state.responder = realistic_responder
    state.tokenize_endpoint = tokenizer
    # The probe needs only the requests: fetch and synthesize, no pages or site.
    probe = write_config(tmp_path / "probe", arxiv_server, sglang_server, max_pdf_chars=12_000,
                         evidence=True)
    for stage in ("fetch", "synthesize"):
        assert CliRunner().invoke(cli, [stage, "--config", str(probe), "--edition", EDITION],
                                  catch_exceptions=False).exit_code == 0
    longest = max(state.tokens("".join(str(m["content"]) for m in body["messages"]))
                  + int(body["max_tokens"]) for body in state.chat_requests)
    assert any(is_evidence(body) for body in state.chat_requests)
    state.chat_requests.clear()
    state.seen_prompts.clear()
    state.max_model_len = int(longest * 0.9)
    state.enforce_context = True
    workspace = write_config(tmp_path / "ws", arxiv_server, sglang_server, max_pdf_chars=12_000,
                             evidence=True)
    # "refused-then-cut": the config claims more than the server has, so nothing is cut up
    # front; each answer is refused, cut, answered, and its checks continue the cut bundle.
    workspace.write_text(workspace.read_text() + claimed)
    result = build(workspace)
    assert result.exit_code == 0, result.output
    data = record(workspace)
    assert [p.name for p in data.prompts if not p.completion.ok] == []
    assert any(p.kind == "evidence" for p in data.prompts)
    sent = len(state.chat_requests)
    assert build(workspace).exit_code == 0  # the same cut prompts and checks: all cached
    assert len(state.chat_requests) == sent


def test_a_check_whose_conversation_cannot_fit_is_made_in_a_smaller_one(
    tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer
) -> None:
    """The config claims a large context, so nothing is cut up front; the server refuses each
    answer, which is cut to fit and answered, but its checks (with room for 12 long quotes)
    still do not fit their answer's conversation: each is made in a conversation of its own
    (the cited papers' text and the claims), every claim gets a verdict, and the page says so."""
    state = sglang_server.state
    state.responder = realistic_responder
    state.max_model_len = 12_000
    state.enforce_context = True
    workspace = write_config(tmp_path / "ws", arxiv_server, sglang_server, max_pdf_chars=30_000,
                             evidence=True, extra="context_tokens = 200000\n")
    workspace.write_text(workspace.read_text().replace(
        "[evidence]\n", "[evidence]\nclaims_per_request = 12\nmax_quote_words = 400\n")
        # The thinking answer's budget as the others': a larger one cuts its bundle so far
        # that its checks would fit their conversation.
        + "\n[prompts.thinking]\nthinking_max_tokens = 3000\n")
    result = build(workspace)
    assert result.exit_code == 0, result.output
    data = record(workspace)
    checks = [p for p in data.prompts if p.kind == "evidence"]
    assert checks and not [p.name for p in checks if not p.completion.ok]
    assert all("(checked in a smaller conversation)" in p.title for p in checks)
    assert [p.name for p in data.prompts if not p.completion.ok] == []
    alone = [body for body in state.chat_requests
             if is_evidence(body) and len(body["messages"]) == 4
             and body["messages"][1]["content"].startswith("# The cited papers")]
    assert alone and all(state.tokens("".join(str(m["content"]) for m in body["messages"]))
                         + int(body["max_tokens"]) <= state.max_model_len for body in alone)
    page = (workspace.parent / "site_src" / "editions" / EDITION / "research-map.md").read_text()
    assert "checked in a smaller conversation" in page
    assert "its check is too long for the model's context" not in page


def test_a_context_too_small_for_any_excerpt_cuts_the_answers_and_says_so(
    workspace: Path, sglang_server: SglangServer
) -> None:
    """With a 2,048-token context the excerpts go and the answers' budgets are cut, and the
    edition says so (not "excerpts cut to 0 characters so that the longest answer fit")."""
    workspace.write_text(workspace.read_text() + "context_tokens = 2048\n")
    sglang_server.state.responder = lambda body: Answer("Paper 1 shows that", finish_reason="length")
    assert build(workspace).exit_code == 0
    page = (workspace.parent / "site_src" / "editions" / EDITION / "research-map.md").read_text()
    # The cap came from the context: raising max_tokens would not help, a larger context would.
    assert "Truncated answer" in page and "give the\n    server a larger context" in page
    assert "Raise `max_tokens`" not in page
    note = record(workspace).bundle.note
    assert "were left out" in note and "every answer was limited to" in note
    assert "0 characters" not in note
    assert max(int(b["max_tokens"]) for b in sglang_server.state.chat_requests) < 1200
    # A larger context set afterwards (as doctor advises) makes a new plan: nothing cut.
    workspace.write_text(workspace.read_text().replace("context_tokens = 2048",
                                                       "context_tokens = 200000"))
    assert build(workspace).exit_code == 0
    assert "were left out" not in record(workspace).bundle.note


def test_refusals_give_the_context_and_the_prompts_size() -> None:
    sglang = ("Requested token count exceeds the model's maximum context length of 59392 tokens. "
              "You requested a total of 79862 tokens: 77814 tokens from the input messages and "
              "2048 tokens for the completion. Please reduce the number of tokens.")
    assert refusal_from_error(sglang) == Refusal(59392, 77814)
    assert refusal_from_error("The input (70000 tokens) is longer than the model's context "
                              "length (65536 tokens).") == Refusal(65536, 70000)
    assert refusal_from_error("This model's maximum context length is 32,768 tokens. However, "
                              "your prompt contains at least 40,000 input tokens") == Refusal(
                                  32768, 40000)
    assert refusal_from_error("maximum context length is 8192 tokens") == Refusal(8192, None)
    assert refusal_from_error("CUDA out of memory") is None


def test_context_errors_name_the_length() -> None:
    assert context_from_error("This model's maximum context length is 32,768 tokens.") == 32768
    assert context_from_error("Requested token count exceeds the model's maximum context "
                              "length of 131072 tokens.") == 131072
    assert context_from_error("CUDA out of memory") is None


def test_answers_without_streaming(workspace: Path, sglang_server: SglangServer) -> None:
    workspace.write_text(workspace.read_text() + "stream = false\n")
    assert build(workspace).exit_code == 0
    assert all(p.completion.ttft_s is None for p in record(workspace).prompts)
    assert not any(r.get("stream") for r in sglang_server.state.chat_requests)


def test_run_figures_show_tokens_and_timings(workspace: Path) -> None:
    assert build(workspace).exit_code == 0
    report = (workspace.parent / "site_src" / "editions" / EDITION / "run-report.md").read_text()
    assert "| Prompt | Tokens in (cached) → out | Seconds |" in report  # three columns: a phone
    assert "| Thinking comparison: with thinking | " in report
    assert "Synthesis wall time:" in report and "came from the server's prefix cache" in report


def request(name: str) -> PromptRequest:
    return PromptRequest(name=name, title=name, kind="deep_dive", question="", messages=(),
                         max_tokens=1, temperature=0)


def test_progress_off_a_terminal_is_one_line_per_stage_and_per_failure() -> None:
    out = io.StringIO()
    progress = Progress(out, live=False)
    progress.stage("synthesis")
    progress.planned(3, 1)
    progress.started(request("a"))
    progress.progress(request("a"), 5)
    progress.done(request("a"), Completion(name="a", model="m", content="x", latency_s=1.5,
                                           ttft_s=0.25))
    progress.done(request("b"), Completion(name="b", model="m", content="x", from_cache=True))
    progress.done(request("c"), Completion(name="c", model="m", error="boom"))
    assert out.getvalue() == ("synthesis…\n  1 of 3 prompt(s) answered from the cache\n"
                              "  failed  c: boom\n")


def test_progress_redraws_one_status_row_no_wider_than_the_terminal() -> None:
    out = io.StringIO()
    progress = Progress(out, live=True, width=60)
    progress.stage("synthesis")
    progress.planned(27, 0)
    progress.started(request("a-prompt-with-a-long-name"))
    progress.progress(request("a-prompt-with-a-long-name"), 7)
    status = out.getvalue().rsplit("\r\033[K", 1)[-1]
    assert "0/27 prompts" in status and len(status) <= 59
    progress.done(request("a-prompt-with-a-long-name"), Completion(name="a", model="m",
                                                                  error="boom"))
    progress.close()
    assert "  failed  a-prompt-with-a-long-name: boom\n" in out.getvalue()
    assert out.getvalue().count("boom") == 1
