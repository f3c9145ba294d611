"""Per-paper briefs and the theme map: structured answers, validated, with every fallback."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from generator.cli import cli
from generator.config import Config
from generator.papers import Bundle, FullText, NumberedPaper, Paper
from generator.prompts.builders import BRIEF_SCHEMA, build_requests
from generator.prompts.kinds import BUILTIN_KINDS
from generator.synthesis.dispatch import dispatch_plan
from generator.synthesis.structured import InvalidAnswer, parse_answer, validate
from tests.conftest import write_config
from tests.edition_fixture import with_thinking_body
from tests.servers.arxiv import ArxivServer
from tests.servers.sglang import Answer, SglangServer, structured_answer, task_of

EDITION = "2026-12-02"
GOOD = {"tldr": "It works.", "problem": "P.", "method": "M.", "result": "R 12%.",
        "limitations": "L."}


@pytest.fixture
def workspace(tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer) -> Path:
    return write_config(tmp_path / "ws", arxiv_server, sglang_server, structured=True)


def build(config: Path) -> Result:
    return CliRunner().invoke(cli, ["build", "--config", str(config), "--edition", EDITION],
                              catch_exceptions=False)


def edition(config: Path) -> Path:
    return config.parent / "site_src" / "editions" / EDITION


def briefs_sent(server: SglangServer) -> list[dict[str, object]]:
    return [b for b in server.state.chat_requests
            if "TL;DR" in str(b["messages"][1]["content"])]


def test_briefs_and_themes_end_to_end(workspace: Path, sglang_server: SglangServer) -> None:
    result = build(workspace)
    assert result.exit_code == 0, result.output
    sent = briefs_sent(sglang_server)
    assert len(sent) == 6
    assert all(b["response_format"]["type"] == "json_schema" for b in sent)  # type: ignore[index]
    record = json.loads((edition(workspace) / "edition.json").read_text())
    assert set(record["briefs"]) == {"1", "2", "3", "4", "5", "6"}
    assert record["briefs"]["1"]["tldr"].startswith("A study of Testing Deep Learning")
    # Paper numbers outside the bundle are dropped from the theme map.
    assert record["themes"][1] == {"name": "Security", "description": "Attacks and defences.",
                                   "papers": [3]}
    paper = (edition(workspace) / "papers" / "2202.12139v1.md").read_text()
    assert '!!! abstract "TL;DR: A study of Testing Deep Learning' in paper
    assert "**Themes:** [Testing](../../../themes/testing.md)" in paper
    overview = (edition(workspace) / "index.md").read_text()
    assert "A study of Active Fuzzing" in overview  # the TL;DR, under its entry
    research_map = (edition(workspace) / "research-map.md").read_text()
    assert "## Theme map" in research_map
    assert "- **[Testing](../../themes/testing.md)**: How systems are tested." in research_map
    site = workspace.parent / "site" / "editions" / EDITION
    assert "Problem." in (site / "papers" / "2202.12139v1.html").read_text()
    # Briefs are cached like every completion: a rebuild sends nothing.
    count = len(sglang_server.state.chat_requests)
    assert build(workspace).exit_code == 0
    assert len(sglang_server.state.chat_requests) == count


def test_a_brief_is_made_from_the_abstract_when_there_is_no_full_text(
    workspace: Path, sglang_server: SglangServer
) -> None:
    assert build(workspace).exit_code == 0
    sections = [str(b["messages"][-1]["content"]) for b in briefs_sent(sglang_server)]  # type: ignore[index]
    with_text = [s for s in sections if "### Full-text excerpt" in s]
    assert len(with_text) == 3 and all("### Abstract" in s for s in sections)
    assert all(s.count("## Paper ") == 1 for s in sections)  # its own paper only
    page = (edition(workspace) / "papers" / "2204.08348v3.md").read_text()
    assert "from the paper's abstract; check it" in page


def test_schema_invalid_answer_is_retried_once(workspace: Path, sglang_server: SglangServer) -> None:
    calls: dict[str, int] = {}

    def first_wrong(body: dict[str, object]) -> Answer:
        key = str(body["messages"][1]["content"])[:200]  # type: ignore[index]
        calls[key] = calls.get(key, 0) + 1
        if calls[key] == 1 and "TL;DR" in task_of(body):
            return Answer(json.dumps({"tldr": "only this"}))  # missing keys
        answer = structured_answer(body)
        assert answer
        return answer

    sglang_server.state.structured_responder = first_wrong
    assert build(workspace).exit_code == 0
    retries = [b for b in briefs_sent(sglang_server) if len(b["messages"]) == 4]  # type: ignore[arg-type]
    assert len(retries) == 6
    assert "That answer was invalid: the JSON does not match the schema" in str(
        retries[0]["messages"][-1]["content"])  # type: ignore[index]


def test_non_json_twice_is_a_reported_failure(workspace: Path, sglang_server: SglangServer) -> None:
    def prose(body: dict[str, object]) -> Answer:
        if "Paper 2:" in str(body["messages"][1]["content"])[:40]:  # type: ignore[index]
            return Answer("Sure! Here is a summary in prose, not JSON.")
        answer = structured_answer(body)
        assert answer
        return answer

    sglang_server.state.structured_responder = prose
    result = build(workspace)
    assert result.exit_code == 1 and "brief-2" in result.output
    overview = (edition(workspace) / "index.md").read_text()
    assert "Brief of Paper 2" in overview and "no valid structured answer after a retry" in overview
    record = json.loads((edition(workspace) / "edition.json").read_text())
    assert "2" not in record["briefs"] and "1" in record["briefs"]


def test_a_server_that_takes_only_json_object_gets_it_with_the_schema(
        tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer) -> None:
    # llama-cpp-python: HTTP 500 for json_schema, json_object with a schema accepted.
    sglang_server.state.accepted_formats = ("json_object",)
    config = write_config(tmp_path / "ws", arxiv_server, sglang_server, structured=True)
    result = build(config)
    assert result.exit_code == 0, result.output
    formats = [(b.get("response_format") or {}) for b in sglang_server.state.chat_requests
               if "response_format" in b]
    objects = [f for f in formats if f["type"] == "json_object"]
    assert objects and all(f["schema"]["type"] == "object" for f in objects)
    # Learnt from the first refusals and remembered for the server: the next edition's
    # structured requests never try json_schema (within a run, those already in flight when
    # the first refusal came back did: how many depends on scheduling, so it is not counted).
    sglang_server.state.chat_requests.clear()
    # New budgets: new requests (not cache hits), as the next edition's would be.
    config.write_text(config.read_text().replace("[briefs]\n", "[briefs]\nmax_tokens = 700\n"))
    result = build(config)
    assert result.exit_code == 0, result.output
    again = [(b.get("response_format") or {}).get("type") for b in
             sglang_server.state.chat_requests if "response_format" in b]
    assert again and set(again) == {"json_object"}


def test_a_server_without_response_format_gets_the_schema_in_words(
    workspace: Path, sglang_server: SglangServer
) -> None:
    sglang_server.state.reject_response_format = True
    fenced = sglang_server.state.structured_responder

    def in_a_fence(body: dict[str, object]) -> Answer:
        answer = fenced(body)
        assert isinstance(answer, Answer)
        return Answer(f"Here you go:\n```json\n{answer.content}\n```")

    sglang_server.state.structured_responder = in_a_fence
    result = build(workspace)
    assert result.exit_code == 0, result.output
    plain = [b for b in briefs_sent(sglang_server) if "response_format" not in b]
    assert len(plain) == 6
    assert "JSON Schema" in task_of(plain[0])
    record = json.loads((edition(workspace) / "edition.json").read_text())
    assert len(record["briefs"]) == 6 and record["themes"]


def test_briefs_can_be_turned_off(workspace: Path, sglang_server: SglangServer) -> None:
    workspace.write_text(workspace.read_text().replace(
        "[briefs]\nenabled = true", "[briefs]\nenabled = false"))
    assert build(workspace).exit_code == 0
    assert briefs_sent(sglang_server) == []


def test_the_language_reaches_every_prompt(workspace: Path, sglang_server: SglangServer) -> None:
    workspace.write_text(workspace.read_text().replace(
        'title = "Test Digest"', 'title = "Test Digest"\nlanguage = "German"'))
    assert build(workspace).exit_code == 0
    systems = {str(b["messages"][0]["content"]) for b in sglang_server.state.chat_requests}
    assert len(systems) == 1 and systems.pop().endswith("Write every answer in German, "
                                                        "whatever the papers' language.")


def test_parse_answer_accepts_fences_and_rejects_shapes() -> None:
    assert parse_answer("```json\n" + json.dumps(GOOD) + "\n```", BRIEF_SCHEMA) == GOOD
    assert parse_answer("Sure: " + json.dumps(GOOD) + " Hope it helps.", BRIEF_SCHEMA) == GOOD
    with pytest.raises(InvalidAnswer, match="no JSON object|not valid JSON"):
        parse_answer("no json here", BRIEF_SCHEMA)
    with pytest.raises(InvalidAnswer, match=r"\$.method is missing"):
        parse_answer(json.dumps({k: v for k, v in GOOD.items() if k != "method"}), BRIEF_SCHEMA)
    assert validate(GOOD | {"extra": 1}, BRIEF_SCHEMA) == ["$.extra is not allowed"]
    assert validate(GOOD | {"tldr": 5}, BRIEF_SCHEMA) == ["$.tldr should be a string"]


def test_bundle_prompts_lead_and_briefs_fill_in() -> None:
    # The order is computed, not observed: which of two threads reaches a server first is
    # up to the scheduler, so a test of arrivals would be flaky.
    config = Config(path=Path("config.toml"), registry=BUILTIN_KINDS)
    paper = Paper("2401.00001v1", "T", ("A",), "2024-01-01", "2024-01-01", "abs", ("cs.LG",),
                  "https://arxiv.org/abs/2401.00001v1", None)
    item = NumberedPaper(1, paper, FullText("not_requested"), 0)
    bundle = Bundle((item, replace(item, number=2)), "bundle text")
    requests = build_requests(with_thinking_body(config, {"thinking": True}), bundle)
    plan = dispatch_plan(requests, range(len(requests)), kinds=BUILTIN_KINDS)
    names = [requests[i].name for i in plan.order]
    assert names[0] == "thinking-on"  # the longest decode leads, and puts the bundle in cache
    assert names[1] == "research-map"  # then the longest answers among the followers
    assert [requests[i].name for i in plan.free] == ["brief-1", "brief-2"]  # each alone
    assert sorted(plan.order) == list(range(len(requests)))
    followers = [requests[i].max_tokens for i in plan.followers]
    assert followers == sorted(followers, reverse=True)




def test_raw_newlines_inside_json_strings_are_read() -> None:
    # Grammar-constrained decoding often writes a newline inside a string as the character.
    answer = ('{"tldr": "One.\nTwo.", "problem": "p", "method": "m", "result": "r",'
              ' "limitations": "l"}')
    assert parse_answer(answer, BRIEF_SCHEMA)["tldr"] == "One.\nTwo."
