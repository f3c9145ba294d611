"""Triage: every paper of the window scored once, the best bundled, the rest listed with why.

The window is three recorded arXiv pages (30 papers) served as one result list; the test
server scores each paper by its id (`triage_score`), so the expected selection is known.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from generator.archive.record import EditionRecord
from generator.cli import cli
from generator.config import TriageSettings
from generator.papers import Candidate, Paper, Triage, paper_slug
from generator.synthesis.structured import validate
from generator.synthesis.triage import excluded_by, select, system_message, triage_request
from tests.conftest import read_record, write_config
from tests.servers.arxiv import ArxivServer
from tests.servers.sglang import (
    Answer,
    Fault,
    SglangServer,
    structured_answer,
    triage_score,
    triaged,
)

EDITION = "2026-12-02"
WINDOW = ["arxivpy2026_search_testing_start0_max10.xml",
          "arxivpy2026_search_testing_start10_max10.xml",
          "arxivpy2026_search_testing_start20_max10.xml"]
TRIAGE = """
[triage]
interests = \"\"\"
Software testing: fuzzing, test generation, flaky tests.
Not interested in medical trials.
\"\"\"
exclude = ["hypothesis testing", "Group  Testing"]
"""


def build(config: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["build", "--config", str(config), "--edition", EDITION,
                                    *args], catch_exceptions=False)


def record(config: Path) -> EditionRecord:
    return read_record(config, EDITION)


def triage_of(config: Path) -> Triage:
    triage = record(config).triage
    assert triage is not None
    return triage


@pytest.fixture
def triaged_ws(tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer) -> Path:
    arxiv_server.state.window = WINDOW
    return write_config(tmp_path / "ws", arxiv_server, sglang_server, TRIAGE, max_papers=5,
                        full_text_papers=2)


def triage_bodies(sglang_server: SglangServer) -> list[dict[str, Any]]:
    return [b for b in sglang_server.state.chat_requests if triaged(b)]


def test_every_candidate_is_scored_once_and_the_best_are_bundled(
        triaged_ws: Path, sglang_server: SglangServer, arxiv_server: ArxivServer) -> None:
    result = build(triaged_ws)
    assert result.exit_code == 0, result.output
    data = triage_of(triaged_ws)
    candidates = data.candidates
    assert data.total == 30 and len(candidates) == 30 and not data.capped
    excluded = [c for c in candidates if c.status == "excluded"]
    assert len(excluded) >= 2
    assert {c.reason for c in excluded} == {"hypothesis testing", "Group  Testing"}
    scored = [c for c in candidates if c.status != "excluded"]
    # One request a scored candidate, none for the excluded ones.
    judged = [triaged(b) for b in triage_bodies(sglang_server)]
    assert sorted(str(j) for j in judged) == sorted(c.paper.arxiv_id for c in scored)
    assert all(c.score == triage_score(c.paper.arxiv_id) for c in scored)
    # The five best (ties: the newer, listed first) are selected, in that order the bundle's.
    best = sorted(range(len(candidates)), key=lambda i: (-(candidates[i].score or -1), i))
    expected = [candidates[i].paper.arxiv_id for i in best
                if candidates[i].status != "excluded"][:5]
    selected = [c.paper.arxiv_id for c in candidates if c.status == "selected"]
    assert sorted(selected) == sorted(expected)
    bundled = [p.arxiv_id for p in record(triaged_ws).papers]
    assert bundled == expected
    assert {c.status for c in candidates} == {"selected", "below_cut", "excluded"}


def test_the_prompt_shares_the_instructions_and_interests_and_puts_the_paper_last(
        triaged_ws: Path, sglang_server: SglangServer) -> None:
    assert build(triaged_ws).exit_code == 0
    bodies = triage_bodies(sglang_server)
    assert len({json.dumps(b["messages"][0]) for b in bodies}) == 1  # one shared prefix
    system = bodies[0]["messages"][0]["content"]
    assert system.index("JSON Schema") < system.index("Software testing: fuzzing")
    assert all(b["messages"][1]["content"].startswith("Paper arXiv:") for b in bodies)
    assert all(b["response_format"]["json_schema"]["name"] == "paper_triage" for b in bodies)


def test_a_rebuild_sends_nothing_and_max_papers_rescores_nothing(
        triaged_ws: Path, sglang_server: SglangServer, arxiv_server: ArxivServer) -> None:
    assert build(triaged_ws).exit_code == 0
    sent = len(sglang_server.state.chat_requests)
    asked = len(arxiv_server.state.api_requests())
    assert build(triaged_ws).exit_code == 0
    assert len(sglang_server.state.chat_requests) == sent
    assert len(arxiv_server.state.api_requests()) == asked
    text = triaged_ws.read_text().replace("max_papers = 5", "max_papers = 3")
    triaged_ws.write_text(text)
    assert build(triaged_ws).exit_code == 0
    assert triage_bodies(sglang_server)[len(triage_bodies(sglang_server)):] == []
    new = sglang_server.state.chat_requests[sent:]
    assert not [b for b in new if triaged(b)]  # no paper judged again
    assert len(record(triaged_ws).papers) == 3


def test_changing_the_interests_rescores_every_candidate(
        triaged_ws: Path, sglang_server: SglangServer) -> None:
    assert build(triaged_ws).exit_code == 0
    first = len(triage_bodies(sglang_server))
    triaged_ws.write_text(triaged_ws.read_text().replace("flaky tests", "mutation testing"))
    assert build(triaged_ws).exit_code == 0
    assert len(triage_bodies(sglang_server)) == 2 * first


def test_the_window_is_read_in_pages_and_a_failed_page_keeps_what_came_before(
        tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer) -> None:
    arxiv_server.state.window = WINDOW
    arxiv_server.state.fail_from = 20
    config = write_config(tmp_path / "ws", arxiv_server, sglang_server, TRIAGE, max_papers=5)
    config.write_text(config.read_text().replace("delay_seconds = 0.0",
                                                 "delay_seconds = 0.0\npage_size = 10"))
    result = build(config)
    assert result.exit_code == 0, result.output
    data = triage_of(config)
    assert len(data.candidates) == 20
    assert "503" in data.incomplete
    starts = [p for p in arxiv_server.state.api_requests() if "start=" in p]
    assert any("start=10" in p for p in starts)  # the second page was a request of its own
    overview = (config.parent / "site_src" / "editions" / EDITION / "index.md").read_text()
    assert "incomplete" in overview


def test_the_cap_is_said_on_the_edition(tmp_path: Path, arxiv_server: ArxivServer,
                                        sglang_server: SglangServer) -> None:
    arxiv_server.state.window = WINDOW
    config = write_config(tmp_path / "ws", arxiv_server, sglang_server,
                          TRIAGE + "max_candidates = 12\n", max_papers=5)
    assert build(config).exit_code == 0
    data = triage_of(config)
    assert data.capped and len(data.candidates) == 12 and data.total == 30
    overview = (config.parent / "site_src" / "editions" / EDITION / "index.md").read_text()
    assert "max_candidates" in overview


def test_an_empty_window_says_so_and_asks_no_model(
        tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer) -> None:
    arxiv_server.state.default_feed = "arxivpy2026_idlist_0808.05394_nonexistent_empty.xml"
    config = write_config(tmp_path / "ws", arxiv_server, sglang_server, TRIAGE)
    result = build(config)
    assert result.exit_code == 0, result.output
    assert sglang_server.state.chat_requests == []
    overview = (config.parent / "site_src" / "editions" / EDITION / "index.md").read_text()
    assert "0 papers in the window" in overview


def test_an_answer_invalid_twice_leaves_the_paper_unscored_and_listed(
        triaged_ws: Path, sglang_server: SglangServer) -> None:
    victim: list[str] = []

    def responder(body: dict[str, Any]) -> Answer:
        paper = triaged(body)
        if paper is not None and (not victim or victim[0] == paper):
            victim[:1] = [paper]
            return Answer('{"score": "high"}')
        answer = structured_answer(body)
        assert answer is not None
        return answer

    sglang_server.state.structured_responder = responder
    assert build(triaged_ws).exit_code == 0
    candidates = triage_of(triaged_ws).candidates
    unscored = [c for c in candidates if c.status == "unscored"]
    assert [c.paper.arxiv_id for c in unscored] == victim
    assert unscored[0].score is None and "valid" in unscored[0].reason
    page = (triaged_ws.parent / "site_src" / "editions" / EDITION / "triage.md").read_text()
    assert victim[0] in page and "unscored" in page


def test_a_triage_that_scores_nothing_is_a_failed_stage_and_records_nothing(
        triaged_ws: Path, sglang_server: SglangServer) -> None:
    # Every call failed: never an edition of "no papers in the window" with exit 0.
    sglang_server.state.structured_responder = lambda body: Fault(
        500, 'Traceback (most recent call last):\n  File "/srv/app/llama_cpp/server.py", '
             'line 9, in score\nRuntimeError: the model is not loaded')
    result = build(triaged_ws)
    assert result.exit_code == 1
    assert "the triage scored none of the" in result.output
    assert "RuntimeError: the model is not loaded" in result.output  # summarised, one line
    assert "/srv/app" not in result.output and "Traceback" not in result.output
    assert not (triaged_ws.parent / "site_src" / "editions" / EDITION).exists()
    sglang_server.state.structured_responder = lambda body: structured_answer(body) or Fault(
        500, "no structured answer")
    assert build(triaged_ws).exit_code == 0  # the next run asks again, and gets the edition


def test_the_triage_page_lists_every_candidate_and_paper_pages_show_their_score(
        triaged_ws: Path) -> None:
    assert build(triaged_ws).exit_code == 0
    folder = triaged_ws.parent / "site_src" / "editions" / EDITION
    page = (folder / "triage.md").read_text()
    candidates = triage_of(triaged_ws).candidates
    for c in candidates:
        assert f"https://arxiv.org/abs/{c.paper.arxiv_id}" in page
    overview = (folder / "index.md").read_text()
    assert "30 papers in the window, 5 selected" in overview and "(triage.md)" in overview
    best = next(c for c in candidates if c.status == "selected")
    html = triaged_ws.parent / "site" / "editions" / EDITION / "papers" / (
        paper_slug(best.paper.arxiv_id) + ".html")
    assert f"{best.score}/10" in html.read_text()


def test_the_edition_and_home_lead_with_the_picks_and_the_interests(triaged_ws: Path) -> None:
    """With triage on, the lead is the best-scored papers, by name, each with the reason it
    scored (from the model's structured answer), and the interests they were scored against."""
    assert build(triaged_ws).exit_code == 0
    data = record(triaged_ws)
    scores = {c.paper.arxiv_id: c.score or 0 for c in triage_of(triaged_ws).candidates}
    picks = data.picks
    assert len(picks) == 3 and all(p.why_from == "triage" for p in picks)
    assert [p.score for p in picks] == sorted((scores[p.arxiv_id] for p in picks),
                                              reverse=True)
    assert picks[0].score == max(scores.values())
    text = (triaged_ws.parent / "site_src" / "index.md").read_text()
    lead = text.index("## Editor's picks")
    assert "Scored against your interests" in text[lead:]
    assert "Software testing: fuzzing, test generation" in text[lead:]
    shown = picks[0].name
    if picks[0].title.startswith(shown):
        shown = picks[0].title  # a name the title starts with: the whole title
    assert f"**[{shown}](papers/" in text[lead:]
    assert f"triage {picks[0].score}/10" in text[lead:]
    # The overview marks the picks in its list of papers, best first by score, and links
    # the triage page; why each was picked is on its paper page.
    overview = (triaged_ws.parent / "site_src" / "editions" / EDITION / "index.md").read_text()
    assert "best first by triage score" in overview and "(triage.md)" in overview
    top = overview.index("★ [Editor's pick 1]")
    assert overview.rindex(picks[0].title.replace("`", "'")[:30], 0, top) >= 0


def test_hostile_titles_and_reasons_stay_text(
        triaged_ws: Path, sglang_server: SglangServer) -> None:
    hostile = Answer(json.dumps({
        "score": 9, "reason": "<script>alert(1)</script> <img src=x onerror=alert(2)>",
        "interests": ["<b>x</b>"]}))
    sglang_server.state.structured_responder = lambda body: (
        hostile if triaged(body) else structured_answer(body) or Answer("{}"))
    assert build(triaged_ws).exit_code == 0
    html = (triaged_ws.parent / "site" / "editions" / EDITION / "triage.html").read_text()
    assert "<script>alert(1)" not in html and "<img src=x" not in html
    assert "&lt;script&gt;" in html or "alert(1)" in html


# Unit tests on fixed objects.

def paper(n: int, title: str = "A paper", abstract: str = "About things.") -> Paper:
    return Paper(f"2601.{n:05d}v1", title, ("A. Author",), "2026-01-02", "2026-01-02",
                 abstract, ("cs.SE",), f"https://arxiv.org/abs/2601.{n:05d}v1", None)


def test_exclusion_ignores_case_and_spacing() -> None:
    assert excluded_by(paper(1, "Quantum  Error Correction"), ["quantum error"]) == "quantum error"
    assert excluded_by(paper(2, abstract="a CLINICAL\ntrial"), ["clinical trial"]) == \
        "clinical trial"
    assert excluded_by(paper(3), ["quantum"]) is None


def test_selection_takes_the_best_newer_first_on_ties_and_drops_below_min_score() -> None:
    cands = [Candidate(paper(i), "unscored", s) for i, s in enumerate([5, 9, 5, 2, None])]
    statuses = [c.status for c in select(cands, 2, 0)]
    assert statuses == ["selected", "selected", "below_cut", "below_cut", "unscored"]
    statuses = [c.status for c in select(cands, 10, 5)]
    assert statuses == ["selected", "selected", "selected", "below_cut", "unscored"]


def test_requests_for_two_papers_differ_only_in_the_last_message() -> None:
    settings = TriageSettings(interests="fuzzing")
    a, b = (triage_request(i, paper(i), settings, "English") for i in (1, 2))
    assert a.messages[0] == b.messages[0] and a.messages[1] != b.messages[1]
    assert "fuzzing" in system_message(settings, "English")
    assert "2601.00001v1" in a.messages[1].content  # the version keys the cached answer


def test_a_score_out_of_range_is_invalid_whichever_bound_it_breaks() -> None:
    assert validate(11, {"type": "integer", "minimum": 0, "maximum": 10}) == [
        "$ should be at most 10"]
    assert validate(-1, {"type": "integer", "minimum": 0}) == ["$ should be at least 0"]
    assert validate(5, {"type": "integer", "minimum": 0, "maximum": 10}) == []
