"""Evidence for every claim: a quote per citing sentence, asked for, checked and shown.

The SGLang-shaped server answers each evidence request with quotes by claim number: copied from
the cited paper's abstract in the prompt, copied from another paper, invented, or missing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from generator.cli import cli
from generator.completions import Completion
from generator.edition.citations import CitationLinker
from generator.evidence.checks import ClaimCheck
from generator.evidence.claims import claims_of
from generator.evidence.quotes import PaperText, check_claims, quote_parts, words
from generator.papers import FullText, NumberedPaper
from generator.prompts.kinds import BUILTIN_KINDS
from generator.text.safe_text import md_model
from tests.browser import launch_chromium
from tests.conftest import read_record, write_config
from tests.edition_fixture import PAPERS
from tests.servers.arxiv import ArxivServer
from tests.servers.sglang import Answer, Fault, SglangServer, is_evidence

EDITION = "2026-12-02"
ANSWER = """## Findings

Paper 1 shows the method works. Paper 2 reports results on a benchmark. \
Paper 3 departs from both, and Paper 1 agrees. Paper 2 measures something else.

- Paper 3 is cited in a list item.
- Paper 3 measures latency too.
"""


def build(config: Path) -> Result:
    return CliRunner().invoke(cli, ["build", "--config", str(config), "--edition", EDITION],
                              catch_exceptions=False)


def research_map_checks(config: Path) -> tuple[ClaimCheck, ...]:
    checks = read_record(config, EDITION).page_checks("research-map")
    assert checks is not None
    return checks


@pytest.fixture
def checked(tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer) -> Path:
    sglang_server.state.responder = lambda body: Answer(ANSWER)
    return write_config(tmp_path / "ws", arxiv_server, sglang_server, evidence=True)


def test_each_claim_gets_the_verdict_its_quote_earns(checked: Path,
                                                     sglang_server: SglangServer) -> None:
    result = build(checked)
    assert result.exit_code == 0, result.output
    page = research_map_checks(checked)
    verdicts = [c.verdict for c in page]
    # Claims 1, 5: the cited paper; 2, 6: another paper; 3: invented; 4: no quote.
    assert verdicts == ["supported", "wrong_paper", "not_in_paper", "no_quote", "supported",
                        "wrong_paper"]
    assert len(page) == 6 and page[0].id == "research-map#1"
    wrong = page[1]
    assert wrong.found_in != 2 and "the quote given for Paper 2 is from Paper" in wrong.note
    # Six answers with evidence (research map, three deep dives, both thinking answers), each
    # with six claims in two batches of three (claims_per_request).
    figure = read_record(checked, EDITION).evidence_figure
    assert figure is not None and (figure.claims, figure.found) == (36, 12)
    asked = [b for b in sglang_server.state.chat_requests if is_evidence(b)]
    # Both thinking answers are the same text, so their checks are the same two requests: sent
    # twice or answered from the cache the second time, as the threads happen to run.
    assert len({json.dumps(b["messages"]) for b in asked}) == 10 and 10 <= len(asked) <= 12
    # Each evidence request continues its answer's conversation: same prompt, then the answer.
    assert all(b["messages"][2] == {"role": "assistant", "content": ANSWER.strip()}
               for b in asked)
    assert all(not (b.get("chat_template_kwargs") or {}).get("thinking") for b in asked)


def test_the_page_shows_each_verdict_and_quote(checked: Path) -> None:
    assert build(checked).exit_code == 0
    html = (checked.parent / "site" / "editions" / EDITION / "research-map.html").read_text()
    # Claims 1 and 5 have their quote found; the judge (the double) says 1 supports its
    # sentence and 5 only part of it.
    assert "1 of 6 cited claims backed by their quotes (1 partly, 4 with a problem)" in html
    marks = re.findall(r'class="digest-ev digest-ev-(\w+)" tabindex="0"', html)
    # Every claim has its mark, "no quote" too: no sentence that failed goes unmarked.
    assert marks == ["backed", "wrong_paper", "not_in_paper", "no_quote", "partly",
                     "wrong_paper"]
    assert ("Not backed: 2 quote found in another paper (wrong citation), 1 quote not in "
            "the paper (fabricated), 1 no passage of the cited paper was given for it.") in html
    box = html.split('class="digest-ev digest-ev-backed"', 1)[1].split("</span></span>", 1)[0]
    assert "“" in box and 'href="papers/' in box  # the quote, and its paper's page
    assert "the judge: The quote states it." in box
    report = (checked.parent / "site_src" / "editions" / EDITION / "run-report.md").read_text()
    assert ("**6 of 36 cited claims backed by their quotes (6 partly, 24 with a problem).**"
            in report)
    assert "- Judgements of the quotes found: 12 request(s)," in report


def test_a_reader_opens_a_mark_in_the_browser_without_leaving_the_page(checked: Path) -> None:
    assert build(checked).exit_code == 0
    page_path = checked.parent / "site" / "editions" / EDITION / "research-map.html"
    with launch_chromium() as browser:
        page = browser.new_page(viewport={"width": 390, "height": 844})  # a phone
        page.goto(page_path.as_uri())
        mark = page.locator(".digest-ev-wrong_paper").first
        box = mark.locator(".digest-ev-box")
        assert not box.is_visible()  # unobtrusive until asked for
        mark.focus()  # a tap or the Tab key
        assert box.is_visible()
        assert "Quote found in another paper" in box.inner_text()
        assert box.locator("a[href*='papers/']").count() == 1
        # Open, it stays on the screen: the page never scrolls sideways on a phone.
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        assert page.url == page_path.as_uri()


def test_a_rebuild_sends_nothing(checked: Path, sglang_server: SglangServer) -> None:
    assert build(checked).exit_code == 0
    sent = len(sglang_server.state.chat_requests)
    assert build(checked).exit_code == 0
    assert len(sglang_server.state.chat_requests) == sent


def test_failed_evidence_leaves_claims_not_checked_and_the_page_published(
    checked: Path, sglang_server: SglangServer
) -> None:
    sglang_server.state.structured_responder = lambda body: (
        Answer("not json at all") if is_evidence(body) else Fault(500, "unused"))
    result = build(checked)
    assert result.exit_code == 1  # failed prompts are reported; the pages are built
    assert {c.verdict for c in research_map_checks(checked)} == {"not_checked"}
    assert (checked.parent / "site" / "editions" / EDITION / "research-map.html").is_file()
    # Asked once more with the error named, then given up on: twice per batch.
    assert sum(1 for b in sglang_server.state.chat_requests if is_evidence(b)) == 24


def test_with_evidence_off_nothing_is_asked(tmp_path: Path, arxiv_server: ArxivServer,
                                            sglang_server: SglangServer) -> None:
    config = write_config(tmp_path / "ws", arxiv_server, sglang_server, evidence=False)
    sglang_server.state.responder = lambda body: Answer(ANSWER)
    assert build(config).exit_code == 0
    assert not any(is_evidence(b) for b in sglang_server.state.chat_requests)
    assert read_record(config, EDITION).checks is None


def test_hostile_quotes_stay_text(checked: Path, sglang_server: SglangServer) -> None:
    hostile = '<img src=x onerror="window.__pwned=1"> </span><script>alert(1)</script>'
    sglang_server.state.structured_responder = lambda body: Answer(json.dumps({"claims": [
        {"claim": 1, "paper": 1, "quote": hostile}]})) if is_evidence(body) else Fault(500, "x")
    assert build(checked).exit_code == 0
    html = (checked.parent / "site" / "editions" / EDITION / "research-map.html").read_text()
    assert "<script>alert" not in html and "<img" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


# The check itself, on fixed text ---------------------------------------------------------------

PAPER = NumberedPaper(1, PAPERS[0], FullText("ok", (
    "We introduce a paged KV-cache manage-\nment scheme that reduces memory\nfragmentation by "
    "42.5% and improves through­put 2.1× on long contexts. The ﬁrst design keeps “hot” pages "
    "resident."), 1, 1), 200)
OTHER = NumberedPaper(2, PAPERS[1], FullText("ok", "Speculative decoding drafts tokens with "
                                            "a small model and verifies them in one pass."), 120)
TEXTS = {p.number: PaperText.of(p) for p in (PAPER, OTHER)}


def verdict(sentence: str, paper: int, quote: str) -> str:
    (claim,) = claims_of(sentence, {1, 2})
    batch = Completion(name="e", model="m", content=json.dumps(
        {"claims": [{"claim": 1, "paper": paper, "quote": quote}]}), finish_reason="stop")
    return check_claims([claim], [(range(1, 2), batch)], TEXTS)[0].verdict


@pytest.mark.parametrize(("quote", "expected"), [
    # Normalised: case, hyphenation at a line end, ligatures, soft hyphens, quote marks.
    ("a paged KV-cache management scheme that reduces memory fragmentation", "supported"),
    ("The first design keeps \"hot\" pages resident", "supported"),
    ("improves throughput 2.1x on long contexts", "supported"),
    # Near-exact: a word of the paper left out, or a small word swapped, passes; a changed word
    # that carries the claim does not, nor does a paraphrase.
    ("a paged KV-cache management scheme that reduces memory fragmentation 42.5%", "supported"),
    ("a paged KV-cache management scheme which reduces memory fragmentation by 42.5%",
     "supported"),
    ("a paged KV-cache management scheme that cuts memory fragmentation by 42.5%",
     "not_in_paper"),
    ("we made memory less fragmented with pages", "not_in_paper"),
    # An ellipsis joins two stretches of the paper.
    ("We introduce a paged KV-cache … improves throughput 2.1×", "supported"),
    ("drafts tokens with a small model and verifies them", "wrong_paper"),
    ("paged KV-cache", "no_quote"),  # too short to show anything
    ("", "no_quote"),
])
def test_quotes_are_matched_after_normalising(quote: str, expected: str) -> None:
    assert verdict("Paper 1 introduces paged memory.", 1, quote) == expected


def test_a_figure_in_the_sentence_must_be_in_the_passage_the_quote_matched() -> None:
    quote = "a paged KV-cache management scheme that reduces memory fragmentation by 42.5%"
    assert verdict("Paper 1 cuts fragmentation by 42.5%.", 1, quote) == "supported"
    assert verdict("Paper 1 cuts fragmentation by 57%.", 1, quote) == "figure_missing"
    # In the paper, but not in what the quote showed: the quote does not support it.
    short = "a paged KV-cache management scheme that reduces memory fragmentation"
    assert verdict("Paper 1 cuts fragmentation by 42.5%.", 1, short) == "figure_missing"


# Evidence that cannot be gamed (issue 24, case 4) ----------------------------------------------

LONG_PASSAGE = ("We introduce a paged KV-cache management scheme that reduces memory "
                "fragmentation by 42.5% and improves throughput 2.1x on long contexts")


def test_a_word_swapped_for_the_claimed_figure_is_not_supported() -> None:
    # The figure the sentence claims was put into the quote in place of a word of the paper.
    forged = LONG_PASSAGE.replace("throughput", "73%")
    assert verdict("Paper 1 improves by 73%.", 1, forged) == "not_in_paper"


def test_every_part_of_a_quote_is_checked() -> None:
    # The parts after the ellipses are one or two words: they prove nothing, so the quote is
    # not checked (before, they were dropped and the first part alone made it "supported").
    quote = "We introduce a paged KV-cache management scheme … 73% … nine times"
    assert verdict("Paper 1 gains 73%.", 1, quote) == "not_checked"


@pytest.mark.parametrize("quote", [
    "We introduce a paged KV-cache management scheme … trained on quantum annealing hardware",
    "We introduce a paged KV-cache management scheme ... which doubles the battery life",
    "a paged KV-cache management scheme [...] on quantum hardware [...] on long contexts",
])
def test_an_invented_part_after_a_real_one_is_not_in_the_paper(quote: str) -> None:
    # Every part is long enough to be checked: the real first part must not carry the
    # invented part after it (a check of the first part alone called these "supported").
    assert all(len(part) >= 3 for part in quote_parts(quote))
    assert verdict("Paper 1 introduces paged memory.", 1, quote) == "not_in_paper"


def test_a_junk_word_is_neither_forgiven_nor_published() -> None:
    junk = "x" * 100_000 + " " + " ".join(LONG_PASSAGE.split()[:10])
    (claim,) = claims_of("Paper 1 introduces paged memory.", {1, 2})
    batch = Completion(name="e", model="m", content=json.dumps(
        {"claims": [{"claim": 1, "paper": 1, "quote": junk}]}), finish_reason="stop")
    (check,) = check_claims([claim], [(range(1, 2), batch)], TEXTS)
    assert check.verdict == "not_checked"
    assert len(check.quote) <= 600
    shorter = "x" * 60 + " " + " ".join(LONG_PASSAGE.split()[:10])
    assert verdict("Paper 1 introduces paged memory.", 1, shorter) == "not_in_paper"


def test_matching_a_long_repetitive_quote_is_cheap() -> None:
    # "the " × 10,000 once took a minute per render (the matching was quadratic): now it is
    # refused by its length, and a capped repetitive quote walks the index once per place.
    assert verdict("Paper 1 introduces paged memory.", 1, "the " * 10_000) == "not_checked"
    repetitive = NumberedPaper(1, PAPERS[0], FullText("ok", "the " * 20_000, 1, 1), 100_000)
    text = PaperText.of(repetitive)
    assert text.find(["the"] * 150) is None  # small words alone never make a quote


def test_words_undo_what_pdfs_and_typography_do() -> None:
    assert words("The ﬁrst “hot” manage-\nment — 42.5%") == [
        "the", "first", "hot", "management", "42.5"]


def test_claims_are_the_citing_sentences_outside_code() -> None:
    text = ("Paper 1 shows it. No citation here.\n\n```\nPaper 2 in code\n```\n\n"
            "- Papers 1 and 2 agree.\n- Paper 9 is not in the bundle.")
    claims = claims_of(text, {1, 2})
    assert [(c.number, c.sentence, c.papers, c.phantoms) for c in claims] == [
        (1, "Paper 1 shows it.", (1,), ()), (2, "Papers 1 and 2 agree.", (1, 2), ()),
        (3, "Paper 9 is not in the bundle.", (), (9,))]  # a phantom citation is a claim too


def test_without_evidence_an_answer_is_linked_and_carries_no_marks() -> None:
    # [evidence] off (or an answer no evidence was asked for): the linker gets no verdicts.
    linker = CitationLinker("research-map", [PAPER, OTHER])
    linked = md_model(ANSWER, 1, linker)
    assert "digest-ev" not in linked
    assert linked.count("](papers/") >= 4  # Papers 1 and 2, each cited twice, are links
    assert dict(linker.result.cited) == {1: 2, 2: 2}
    assert {p.number for p in linker.result.problems} == {3}  # no Paper 3 in this bundle


def test_a_check_made_alone_carries_only_the_cited_papers_and_says_so() -> None:
    """Where an answer's conversation does not fit, its check is asked with the cited papers'
    sections of the bundle (cut alike), a stand-in for the answer and the same claims."""
    from generator.completions import Message, PromptRequest
    from generator.config import EvidenceSettings
    from generator.evidence.requests import ALONE_TITLE, evidence_requests, standalone_check
    from generator.papers import Source
    from generator.synthesis.bundle import build_bundle

    long_text = FullText("ok", "word " * 20_000, 9, 9)
    bundle = build_bundle([Source(p, long_text) for p in PAPERS])
    parent = PromptRequest(name="research-map", title="Research map", kind="research_map",
                           question="", messages=(Message("system", "sys"), Message(
                               "user", f"{bundle.text}\n---\nWrite a research map.")),
                           max_tokens=3000, temperature=0.3)
    answer = Completion(name="research-map", model="m", finish_reason="stop",
                        content="Paper 2 drafts tokens with a small model. Paper 3 saves memory.")
    (check,) = evidence_requests(parent, answer, EvidenceSettings(),
                                 {p.number: p.paper.title for p in bundle.papers},
                                 kinds=BUILTIN_KINDS)
    alone = standalone_check(check, 8_000)
    assert alone is not None and alone.title == check.title + ALONE_TITLE
    papers = alone.messages[1].content
    assert "## Paper 2:" in papers and "## Paper 3:" in papers and "## Paper 1:" not in papers
    assert alone.messages[-1] == check.messages[-1] and alone.name == check.name
    assert (sum(len(m.content) for m in alone.messages) / 3 + alone.max_tokens) < 8_000
    assert standalone_check(alone, 8_000) is None  # never a smaller one of the smaller one
    assert standalone_check(check, 1_000) is None  # not even the claims fit
    # The verdicts of such claims say how they were checked.
    (claim,) = claims_of("Paper 2 drafts tokens with a small model.", {1, 2})
    batch = Completion(name="e", model="m", finish_reason="stop", content=json.dumps(
        {"claims": [{"claim": 1, "paper": 2, "quote": "drafts tokens with a small model and "
                     "verifies them in one pass"}]}))
    (checked,) = check_claims([claim], [(range(1, 2), batch)], TEXTS, alone={1})
    assert checked.verdict == "supported" and "checked in a smaller conversation" in checked.note
