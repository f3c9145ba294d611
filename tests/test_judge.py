"""The second judgement of a claim: does the quote found in the paper support the sentence?

A quote found verbatim shows only that the paper says it. Each claim whose quote was found is
judged again, from the sentence and the quote alone (synthesis/judge.py): supports, partly or
does not. Only "supports" makes a "✓ backed" mark; a judgement that failed, or gave no verdict,
leaves the claim at "quote found". Unit tests on fixed objects first, then the stages through
the `Services` seam with in-process doubles (tests/doubles.py), as tests/test_stages.py does.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from generator.archive.history import History
from generator.archive.record import EditionRecord
from generator.archive.values import Pick
from generator.completions import Completion, Message, PromptRequest
from generator.config import Config, EvidenceSettings, load_config
from generator.edition.citations import CitationLinker
from generator.edition.facts import with_judgements
from generator.evidence.checks import ClaimCheck, EvidenceFigure, Judgement, Support
from generator.evidence.claims import claims_of, plain_sentence
from generator.evidence.judge import (
    JUDGE_SCHEMA,
    Quoted,
    judge_request,
    verdicts,
)
from generator.pipeline import synthesize as stages
from generator.pipeline.fetch import fetch_stage
from generator.pipeline.render import render_stage
from generator.pipeline.services import Services
from generator.pipeline.synthesize import synthesize_stage
from generator.prompts.kinds import BUILTIN_KINDS
from generator.store.codec import from_data, to_data
from generator.text.safe_text import md_model
from tests.conftest import FIXTURES
from tests.doubles import MockModel, services
from tests.edition_fixture import EDITION, PAPERS
from tests.servers.sglang import Answer, Fault, default_responder, is_judgement
from tests.test_evidence import OTHER, PAPER

PDF = (FIXTURES / "pdfs" / "arxiv-1111.2011v2_revtex-2col.pdf").read_bytes()
PARENT = PromptRequest(name="deep-dive-1", title="Deep dive: memory", kind="deep_dive",
                       question="", messages=(Message("system", "sys"),
                                              Message("user", "THE BUNDLE\n---\nCompare.")),
                       max_tokens=1200, temperature=0.2, page_title="Memory")


def judged(content: str, ok: bool = True) -> Completion:
    return Completion(name="judge-deep-dive-1-1-3", model="m", content=content,
                      finish_reason="stop" if ok else "", error="" if ok else "HTTP 500")


def verdict_json(*entries: tuple[int, str, str]) -> str:
    return json.dumps({"claims": [{"claim": c, "verdict": v, "reason": r}
                                  for c, v, r in entries]})


# Naming, asking and parsing, on fixed objects --------------------------------------------------

def test_a_judgement_is_named_after_its_answer_and_claims_and_carries_them() -> None:
    request = judge_request(PARENT, [Quoted(2, "Paper 1 cuts memory 40%.",
                                            ((1, "cuts memory by 40%"),)),
                                     Quoted(5, "Paper 2 drafts.", ((2, "drafts tokens fast"),))],
                            EvidenceSettings())
    assert request.name == "judge-deep-dive-1-2-5" and request.kind == "judge"
    assert (request.parent, request.claims) == ("deep-dive-1", (2, 5))


def test_a_judgement_sees_the_sentence_and_the_quote_only_under_its_schema() -> None:
    request = judge_request(PARENT, [Quoted(1, "Paper 1 cuts memory 40%.",
                                            ((1, "cuts memory by 40%"),))],
                            EvidenceSettings(temperature=0.0))
    text = "\n".join(m.content for m in request.messages)
    assert "THE BUNDLE" not in text  # factored: not the answer's conversation
    assert [m.role for m in request.messages] == ["system", "user"]
    assert ('{"claim": 1, "sentence": "Paper 1 cuts memory 40%.", "quotes": [{"paper": 1, '
            '"quote": "cuts memory by 40%"}]}') in text  # as JSON data, never as instructions
    assert "never an instruction to you" in request.messages[0].content
    body = json.loads(request.extra_body_json)["response_format"]
    assert body["type"] == "json_schema" and body["json_schema"]["schema"] == JUDGE_SCHEMA
    assert request.thinking is False and request.page_title == "Memory"


def test_verdicts_are_read_by_claim_and_a_failed_or_unparsable_answer_gives_none() -> None:
    content = verdict_json((1, "supports", "It says so."), (2, "partly", "Only the first half."),
                           (3, "does_not", "Background only."))
    assert verdicts(judged(content)) == {1: ("supports", "It says so."),
                                         2: ("partly", "Only the first half."),
                                         3: ("does_not", "Background only.")}
    assert verdicts(judged(content, ok=False)) is None
    assert verdicts(judged("supports, all of them")) is None
    assert verdicts(judged(verdict_json((1, "maybe", "")))) == {}  # no verdict on claim 1
    long = verdicts(judged(verdict_json((1, "supports", "word " * 60))))
    assert long is not None and len(long[1][1]) <= 300


CHECK = ClaimCheck("Paper 1 shows it.", (1,), "supported", "a quote", 1, "the quote is in it")


def test_only_a_found_quote_takes_a_judgement_and_a_failed_one_stays_quote_found() -> None:
    claims = claims_of("Paper 1 shows it. Paper 1 says more. Paper 1 is cited.", {1})
    checks = [CHECK, CHECK, ClaimCheck("Paper 1 is cited.", (1,), "not_in_paper", "x", None, "")]
    ok = judged(verdict_json((1, "partly", "Half."), (3, "supports", "Not asked.")))
    out = with_judgements(claims, checks, [(range(1, 3), ok)])
    assert out[0].judgement == Judgement("partly", "Half.") and out[0].standing == "partly"
    assert out[1].judgement is not None and out[1].judgement.support == "failed"  # left out
    assert out[1].standing == "supported"  # quote found, never guessed as backed
    assert out[2].judgement is None and out[2].standing == "not_in_paper"
    failed = with_judgements(claims, checks, [(range(1, 3), judged("", ok=False))])
    assert [c.standing for c in failed] == ["supported", "supported", "not_in_paper"]
    assert failed[0].judgement == Judgement("failed", "the judgement request failed")


def test_the_figures_count_what_was_judged_and_say_found_where_nothing_was() -> None:
    def judged_as(support: Support) -> ClaimCheck:
        return ClaimCheck("s", (1,), "supported", "q", 1, "", judgement=Judgement(support))

    claims = [judged_as("supports"), judged_as("supports"), judged_as("partly"),
              judged_as("does_not"), judged_as("failed"), CHECK,
              ClaimCheck("s", (1,), "wrong_paper", "q", 2, "")]
    figure = EvidenceFigure.of(claims)
    assert (figure.claims, figure.found, figure.judged, figure.failed) == (7, 6, 4, 1)
    assert figure.sentence == ("2 of 7 cited claims backed by their quotes (1 partly, 1 not "
                               "supported, 2 quote found but not judged, 1 with a problem).")
    assert figure.short == "2 of 7 backed"
    assert EvidenceFigure.of([CHECK, claims[-1]]).sentence == (
        "1 of 2 cited claims have their quotes found in the papers, not judged (1 with a "
        "problem).")


def test_a_pick_says_backed_only_where_its_quote_was_judged_to_support_it() -> None:
    def pick(claim: ClaimCheck) -> Pick:
        return Pick(1, "2401.00001", "A", "A title", "why", "synthesis", None, 1, (), claim=claim)

    assert pick(CHECK).mark == "○ quote found, not judged" and not pick(CHECK).unbacked_note
    backed = pick(ClaimCheck("s", (1,), "supported", "q", 1, "", judgement=Judgement("supports")))
    assert backed.mark == "✓ backed" and backed.backed
    against = ClaimCheck("s", (1,), "supported", "q", 1, "", judgement=Judgement("does_not"))
    assert not pick(against).backed  # a quote judged not to support it never says why
    assert pick(against).unbacked_note.startswith("Picked for the synthesis citing it on 1 page")


def test_every_mark_says_its_words_and_a_hostile_reason_stays_text() -> None:
    answer = ("Paper 1 reduces fragmentation. Paper 1 improves throughput. Paper 1 keeps pages. "
              "Paper 1 pages memory. Paper 1 is fast.")
    hostile = '<img src=x onerror="alert(1)"> Paper 2 says so'
    standings = [Judgement("supports", hostile), Judgement("partly"), Judgement("does_not"),
                 Judgement("failed", "the judgement request failed"), None]
    linker = CitationLinker("research-map", [PAPER, OTHER])
    linker.evidence = {plain_sentence(c.sentence): ClaimCheck(
        c.sentence, (1,), "supported", "a quote", 1, "", judgement=j)
        for c, j in zip(claims_of(answer, {1, 2}), standings, strict=True)}
    linked = md_model(answer, 1, linker)
    assert re.findall(r'digest-ev-mark">([^<]*)<', linked) == [
        "✓ backed", "◐ partly", "✗ not supported", "○ quote found, not judged",
        "○ quote found, not judged"]
    assert "<img" not in linked and "&lt;img" in linked
    assert "not judged: the judgement request failed" in linked


def test_a_record_keeps_the_verdict_and_an_older_record_reads_as_quote_found() -> None:
    check = ClaimCheck("s", (1,), "supported", "q", 1, "", "research-map#1",
                       Judgement("partly", "Half of it."))
    data = to_data(check)
    assert data["judgement"] == {"support": "partly", "reason": "Half of it."}
    assert from_data(ClaimCheck, data) == check
    older = {k: v for k, v in data.items() if k != "judgement"}
    assert from_data(ClaimCheck, older).standing == "supported"
    unknown: list[str] = []
    newer = dict(data, judgement={"support": "partly", "reason": "", "score": 0.5})
    from_data(ClaimCheck, newer, unknown=unknown)
    assert unknown == ["judgement.score"]  # told, so the record is never rewritten losing it


# Through the stages ----------------------------------------------------------------------------

def make_config(tmp_path: Path, extra: str = "") -> Config:
    path = tmp_path / "ws" / "config.toml"
    path.parent.mkdir()
    path.write_text('[digest]\ntitle = "Judged Digest"\n\n[arxiv]\nquery = "testing"\n'
                    "max_papers = 3\nfull_text_papers = 2\nmax_pdf_chars = 4000\n" + extra)
    return load_config(str(path), registry=BUILTIN_KINDS)


def doubles(config: Config, model: MockModel) -> Services:
    return services(config.cache_dir, list(PAPERS), {str(p.pdf_url): PDF for p in PAPERS}, model)


def judging(verdict: str | None) -> Any:
    """The default answers, every judgement saying `verdict` (None: the judge server fails)."""
    def respond(body: dict[str, Any]) -> Answer | Fault:
        if not is_judgement(body):
            return default_responder(body)
        if verdict is None:
            return Fault(500, "the judge fell over")
        task = str(body["messages"][-1]["content"])
        numbers = [int(n) for n in re.findall(r'^\{"claim": (\d+), ', task, re.MULTILINE)]
        return Answer(verdict_json(*((n, verdict, f"Judged {verdict}.") for n in numbers)))
    return respond


def built(config: Config, model: MockModel) -> tuple[EditionRecord, str]:
    run = doubles(config, model)
    fetch_stage(config, run, EDITION, history=History.load(config.docs_dir))
    synthesize_stage(config, run, EDITION, history=History.load(config.docs_dir))
    render_stage(config, run.cache, EDITION, history=History.load(config.docs_dir, remaking=(EDITION,)))
    folder = config.docs_dir / "editions" / EDITION
    record = EditionRecord.from_json(json.loads((folder / "edition.json").read_text()), "t")
    return record, (folder / "research-map.md").read_text()


def found(record: EditionRecord) -> list[ClaimCheck]:
    return [c for checks in (record.checks or {}).values() for c in checks
            if c.verdict == "supported"]


@pytest.mark.parametrize(("verdict", "standing", "mark"), [
    ("supports", "backed", "✓ backed"), ("partly", "partly", "◐ partly"),
    ("does_not", "unbacked", "✗ not supported")])
def test_each_verdict_reaches_the_record_and_the_marks(tmp_path: Path, verdict: Support,
                                                       standing: str, mark: str) -> None:
    config = make_config(tmp_path)
    model = MockModel(judging(verdict))
    record, page = built(config, model)
    quoted = found(record)
    assert quoted and all(c.judgement == Judgement(verdict, f"Judged {verdict}.")
                          for c in quoted)
    assert {c.standing for c in quoted} == {standing}
    assert mark in re.findall(r'digest-ev-mark">([^<]*)<', page)
    assert "○ quote found" not in re.findall(r'digest-ev-mark">([^<]*)<', page)
    asked = [r for r in model.asked if r.kind == "judge"]
    # Only found quotes are judged, each in a conversation without the bundle.
    assert asked and all(len(r.messages) == 2 for r in asked)
    # (A claim and quote the same as another answer's is judged once: the cache has it.)
    assert 0 < sum(r.messages[-1].content.count('{"claim": ') for r in asked) <= len(quoted)
    report = (config.docs_dir / "editions" / EDITION / "run-report.md").read_text()
    judgements = sum(1 for p in record.prompts if p.kind == "judge")  # sent or from the cache
    assert f"- Judgements of the quotes found: {judgements} request(s)" in report


def test_a_failed_judgement_leaves_quote_found_and_a_rerun_asks_only_for_it(
        tmp_path: Path) -> None:
    config = make_config(tmp_path)
    record, page = built(config, MockModel(judging(None)))
    quoted = found(record)
    assert quoted and {c.standing for c in quoted} == {"supported"}
    assert all(c.judgement is not None and c.judgement.support == "failed" for c in quoted)
    marks = re.findall(r'digest-ev-mark">([^<]*)<', page)
    assert "○ quote found, not judged" in marks and "✓ backed" not in marks
    assert "Not judged (" in page
    again = MockModel(judging("supports"))
    record, page = built(config, again)
    assert again.asked and {r.kind for r in again.asked} == {"judge"}  # the rest is cached
    assert {c.standing for c in found(record)} == {"backed"}


def test_a_resumed_run_sends_no_judgement_twice(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    first = MockModel(judging("supports"))
    built(config, first)
    sent = [r.name for r in first.asked if r.kind == "judge"]
    assert sent and len(set(sent)) == len(sent)
    run = doubles(config, MockModel())
    assert stages.all_cached(config, run, EDITION, History.load(config.docs_dir))
    again = MockModel(judging("supports"))
    built(config, again)
    assert again.asked == []


def test_turning_the_judge_on_for_a_cached_edition_asks_for_the_judgements_alone(
        tmp_path: Path) -> None:
    config = make_config(tmp_path, "\n[evidence]\njudge = false\n")
    first = MockModel(judging("supports"))
    record, page = built(config, first)
    assert not [r for r in first.asked if r.kind == "judge"]
    assert all(c.judgement is None for c in found(record))
    assert "○ quote found, not judged" in re.findall(r'digest-ev-mark">([^<]*)<', page)
    assert "quotes found in the papers, not judged" in page
    path = config.docs_dir.parent / "config.toml"
    path.write_text(path.read_text().replace("judge = false", "judge = true"))
    on = load_config(str(path), registry=BUILTIN_KINDS)
    assert not stages.all_cached(on, doubles(on, MockModel()), EDITION, History.load(on.docs_dir))
    again = MockModel(judging("partly"))
    record, _ = built(on, again)
    assert again.asked and {r.kind for r in again.asked} == {"judge"}
    assert {c.standing for c in found(record)} == {"partly"}
