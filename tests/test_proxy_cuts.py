"""Cuts behind a proxy (issue 69): one-slot llama-cpp-python behind LiteLLM 1.108.7, which
passes a stream its slot interrupted for a second request on as an ordinary `stop` with no
usage (recorded: tests/fixtures/servers/litellm-1.108.7-over-llama-cpp-python, replayed by the
test server's "litellm" kind). The second request arrives late in long answers, so a cut stops
far into its budget: still recognised as cut (another request was in flight), sent again and
the width narrowed to the one slot; every prompt answered whole."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from generator.cli import cli
from generator.completions import Completion, PromptRequest, Usage
from generator.store.cache import Cache
from generator.synthesis.cuts import json_cut, looks_cut
from generator.synthesis.dispatch import AdaptiveWidth
from generator.synthesis.record import load_synthesis
from tests.conftest import write_config
from tests.servers.arxiv import ArxivServer
from tests.servers.sglang import Answer, SglangServer, realistic_responder

EDITION = "2026-12-02"
LAST = "measures flakiness."


def long_answer(body: dict[str, Any]) -> Answer:
    """The realistic answer, six times over (a long synthesis): 5 KB a prose answer."""
    answer = realistic_responder(body)
    if answer.content.lstrip().startswith(("{", "[")):
        return answer
    return Answer(content="\n".join([answer.content] * 6), reasoning=answer.reasoning)


def test_one_slot_behind_a_proxy_that_calls_cuts_stop_answers_every_prompt_whole(
        tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer) -> None:
    state = sglang_server.state.like("litellm")
    state.responder = long_answer
    state.slot_patience = 90  # 3,600 characters out before the waiter cuts: past a quarter
    config = write_config(tmp_path / "ws", arxiv_server, sglang_server, structured=True,
                          max_papers=3, full_text_papers=1, max_pdf_chars=2000)
    for stage in ("fetch", "synthesize"):  # the render and the site add nothing here
        result = CliRunner().invoke(cli, [stage, "--config", str(config), "--edition", EDITION])
        assert result.exit_code == 0, result.output
    assert state.cut_count >= 1  # the slot did cut, late in an answer
    answered = load_synthesis(Cache(tmp_path / "ws" / ".cache"), EDITION)
    assert answered is not None
    failed = [c.name for c in answered.completions if not c.ok]
    cut = [c.name for c in answered.completions if c.cut]
    assert failed == [] and cut == []
    prose = [c for c in answered.completions if not c.content.lstrip().startswith(("{", "["))]
    assert prose and all(c.content.rstrip().endswith(LAST) for c in prose), [
        c.name for c in prose if not c.content.rstrip().endswith(LAST)]
    (entry,) = json.loads((tmp_path / "ws" / ".cache" / "servers.json").read_text()).values()
    assert entry["found"]["concurrency"] == 1  # narrowed to what the server really runs


def _request(max_tokens: int = 3000) -> PromptRequest:
    return PromptRequest(name="research-map", title="Map", kind="research-map", question="",
                         messages=(), max_tokens=max_tokens, temperature=0.3)


def _stop(text: str, used: int | None = None) -> Completion:
    return Completion("research-map", "m", text, "", "stop", Usage(completion_tokens=used))


def test_a_cut_far_into_its_budget_is_a_cut_only_where_another_request_was_in_flight() -> None:
    long_cut = "Work on testing splits into search and learning. " * 80 + "Paper 2 adds"
    assert not looks_cut(_request(), _stop(long_cut))  # alone: a long answer, as it came
    assert looks_cut(_request(), _stop(long_cut), crowded=True)
    assert not looks_cut(_request(), _stop(long_cut + " more."), crowded=True)
    row = long_cut + " more.\n\n| Paper | Cost |\n|---|---|\n| Paper 1 | high"
    assert not looks_cut(_request(), _stop(row))
    assert looks_cut(_request(), _stop(row), crowded=True)  # a row cut before it closed
    assert not looks_cut(_request(), _stop(row + " |"), crowded=True)
    json_long = '{"themes": [' + '{"name": "A", "papers": [1]}, ' * 300 + '{"name": "B'
    assert not json_cut(_stop(json_long, 2400), 1000)  # usage a proxy counted: far into it
    assert json_cut(_stop(json_long, 2400), 1000, crowded=True)
    assert json_cut(_stop("Here are the themes: {\"themes\": [{\"na"), 1000, crowded=True)
    assert json_cut(_stop("Here are the themes"), 1000, crowded=True)  # cut before its JSON
    assert not json_cut(_stop('{"themes": []}'), 1000, crowded=True)
    assert not json_cut(_stop('Sure: {"themes": []} done'), 1000, crowded=True)


def test_a_request_is_crowded_when_another_is_in_flight_at_any_moment_of_its_own() -> None:
    width = AdaptiveWidth(3)
    first = width.sent()
    assert not width.crowded(first)
    second = width.sent()  # arrives while the first streams
    assert width.crowded(first) and width.crowded(second)
    width.answered(True, False, first)
    width.answered(True, False, second)
    alone = width.sent()
    assert not width.crowded(alone)
