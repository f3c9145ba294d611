"""Whole answers: an answer that stops at its budget is continued and joined before it is
published (synthesis/continuation.py); only one still cut after two continuations carries the
"truncated" box. Through the stages, against the in-process doubles."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from generator.archive.history import History
from generator.completions import Completion, Message, PromptRequest
from generator.config import Config, load_config
from generator.kinds import CONTINUE, EVIDENCE
from generator.pipeline.fetch import fetch_stage
from generator.pipeline.render import render_stage
from generator.pipeline.synthesize import all_cached, synthesize_stage
from generator.prompts.kinds import BUILTIN_KINDS
from generator.synthesis.continuation import (
    TASK,
    continuation_request,
    joined,
    joined_text,
)
from tests.doubles import MockModel, services
from tests.edition_fixture import EDITION, PAPERS
from tests.servers.sglang import Answer, default_responder

DIVE = "memory-management"
FIRST = ("### Memory\n\nPaper 1 pages the cache. Paper 2 drafts tokens with a small model and "
         "verifies them, finding up to 8.3× variation. This is a")
SECOND = ("n open question.\n\n### Throughput\n\nPaper 3 compresses the cache and keeps "
          "accuracy. Paper 1 raises throughput")
THIRD = " by 2.2×.\n\n### Verdict\n\nStart with Paper 1.\n"


def test_the_parts_join_without_what_a_continuation_repeats() -> None:
    assert joined_text("…variation. This is a", "n open question.") == (
        "…variation. This is an open question.")
    assert joined_text("cuts latency by 3.4× at batch", "cuts latency by 3.4× at batch size 1.") \
        == "cuts latency by 3.4× at batch size 1."
    assert joined_text("one\n", "\ntwo") == "one\ntwo"
    cut = Completion("d", "m", "Answer so", finish_reason="length")
    parts = [Completion("d-continued-1", "m", " far and", finish_reason="length"),
             Completion("d-continued-2", "m", " the rest.", finish_reason="stop")]
    whole = joined(cut, parts)
    assert whole.content == "Answer so far and the rest." and whole.finish_reason == "stop"
    failed = joined(cut, [Completion("d-continued-1", "m", error="HTTP 503")])
    assert failed.content == "Answer so" and failed.truncated  # still cut: the box says so


def test_a_continuation_goes_on_from_the_conversation_so_far() -> None:
    parent = PromptRequest("deep-dive-1", "Memory", "deep_dive", "q",
                           (Message("system", "S"), Message("user", "BUNDLE---Task")), 1200, 0.2,
                           thinking=True, extra_body_json=json.dumps(
                               {"chat_template_kwargs": {"thinking": True}}))
    request = continuation_request(parent, "The answer so far", 1)
    assert request.kind == CONTINUE and request.parent == "deep-dive-1"
    assert [m.role for m in request.messages] == ["system", "user", "assistant", "user"]
    assert request.messages[2].content == "The answer so far" and request.messages[3].content == TASK
    assert request.messages[:2] == parent.messages  # the bundle's cached prefix, shared
    assert not request.thinking and "chat_template_kwargs" not in request.extra_body_json


def cutting(parts: tuple[str, ...]) -> Any:
    """The default answers, but the deep dive stops at its budget and each continuation gives
    the next part (the last part ends the answer; a continuation past the parts is cut too)."""
    def respond(body: dict[str, Any]) -> Answer:
        messages = body["messages"]
        task = str(messages[-1]["content"])
        if task == TASK:
            so_far = str(messages[-2]["content"])
            index = next((i for i in range(len(parts)) if so_far.endswith(parts[i].rstrip())), 0)
            more = parts[index + 1] if index + 1 < len(parts) else " and so"
            return Answer(more, finish_reason="stop" if index + 2 == len(parts) else "length")
        if "Deep-dive question (Memory management)" in task and len(messages) == 2:
            return Answer(parts[0], finish_reason="length")
        return default_responder(body)
    return respond


@pytest.fixture
def config(tmp_path: Path) -> Config:
    path = tmp_path / "ws" / "config.toml"
    path.parent.mkdir()
    path.write_text('[digest]\ntitle = "Whole Digest"\n\n[arxiv]\nquery = "testing"\n'
                    "max_papers = 3\nfull_text_papers = 0\n")
    return load_config(str(path), registry=BUILTIN_KINDS)


def build(config: Config, model: MockModel) -> str:
    run = services(config.cache_dir, list(PAPERS), {}, model)
    fetch_stage(config, run, EDITION, history=History.load(config.docs_dir))
    synthesize_stage(config, run, EDITION, history=History.load(config.docs_dir))
    render_stage(config, run.cache, EDITION, history=History.load(config.docs_dir, remaking=(EDITION,)))
    return (config.docs_dir / "editions" / EDITION / f"{DIVE}.md").read_text()


def test_an_answer_cut_at_its_budget_is_continued_joined_and_checked_whole(
        config: Config) -> None:
    model = MockModel(cutting((FIRST, SECOND, THIRD)))
    page = build(config, model)
    continued = [r for r in model.asked if r.kind == CONTINUE]
    assert [r.name for r in continued] == [f"{DIVE}-continued-1", f"{DIVE}-continued-2"]
    assert "Truncated answer" not in page and "This is an open question." in page
    assert "raises throughput by" in page and "Start with" in page  # the whole answer
    # Its claims were checked once, on the whole answer (the last part's Paper 1 included).
    checks = [r for r in model.asked if r.kind == EVIDENCE and r.parent == DIVE]
    assert checks and all(r.messages[-2].content.endswith("Start with Paper 1.\n")
                          for r in checks)
    report = (config.docs_dir / "editions" / EDITION / "run-report.md").read_text()
    assert "- Continuations of answers that stopped at their budget: 2 request(s)" in report
    # A rerun asks nothing: the continuations are cached like any answer.
    again = MockModel(cutting((FIRST, SECOND, THIRD)))
    assert all_cached(config, services(config.cache_dir, list(PAPERS), {}, again), EDITION,
                      History.load(config.docs_dir))


def test_an_answer_still_cut_after_two_continuations_says_so(config: Config) -> None:
    model = MockModel(cutting((FIRST, SECOND, " and more", " and more still")))
    page = build(config, model)
    assert len([r for r in model.asked if r.kind == CONTINUE]) == 2
    assert "Truncated answer" in page and "This is an open question." in page


def test_the_record_holds_the_whole_answer_and_a_render_from_it_joins_nothing_again(
        config: Config) -> None:
    build(config, MockModel(cutting((FIRST, SECOND, THIRD))))
    folder = config.docs_dir / "editions" / EDITION
    record = json.loads((folder / "edition.json").read_text())
    dive = next(p for p in record["prompts"] if p["name"] == DIVE)
    assert dive["completion"]["content"].endswith("Start with Paper 1.\n")
    # The cache gone, the page is made from the record alone: the same whole answer, once.
    cache = services(config.cache_dir, list(PAPERS), {}, MockModel()).cache
    cache.synthesis_path(EDITION).unlink()
    render_stage(config, cache, EDITION, history=History.load(config.docs_dir, remaking=(EDITION,)))
    page = (folder / f"{DIVE}.md").read_text()
    assert page.count("Start with") == 1 and "This is an open question." in page
