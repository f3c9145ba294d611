"""What the digest decides from untrusted text, tried as an attacker would write it: a word
cites a paper only where the answer tied it to one; a withdrawn paper's notice backs no claim;
letters compare as they read (NFKC, invisible characters, look-alike letters, character
references) in long copies, quotes and names."""

from __future__ import annotations

import json

import pytest

from generator.completions import Completion
from generator.edition.citations import CitationLinker
from generator.evidence.checks import ClaimCheck
from generator.evidence.claims import claims_of
from generator.evidence.naming import answer_names, named_in
from generator.evidence.quotes import PaperText, check_claims
from generator.papers import FullText, NumberedPaper, Paper
from generator.text.fold import fold
from generator.text.safe_text import md_model
from tests.test_verbatim import CUT, body, texts

SERVING = "Serving: Batch Scheduling for LLM Inference"
NOTICE = "This paper has been withdrawn by the author"


def test_an_ordinary_title_name_cites_nothing_the_answer_did_not_tie() -> None:
    titles = {1: SERVING, 2: "MOCAP: Moving the KV Cache Across Pipeline Stages",
              3: "FastKV: Compressing the Cache"}
    answer = ("Every Serving stack here improves. MOCAP (Paper 2) moves the cache. "
              "FastKV is fast.")
    names = answer_names(answer, titles)
    assert names == {2: ("MOCAP",)}  # "Serving" and "FastKV" were never tied to a number
    assert named_in("Every Serving stack here improves.", names) == []
    tied = answer_names("Paper 1 (Serving) batches. Every Serving stack improves.", titles)
    assert named_in("Every Serving stack improves.", tied) == [1]


def test_a_names_look_alike_letters_and_invisible_characters_still_name_it() -> None:
    names = {2: ("MOCAP",)}
    assert named_in("M\u041eCAP keeps the cache.", names) == [2]  # a Cyrillic О
    assert named_in("MO\u200bCAP keeps the cache.", names) == [2]


def _withdrawn() -> NumberedPaper:
    paper = Paper("2611.00001v2", SERVING, ("A. Author",), "2026-11-20", "2026-11-21",
                  NOTICE, ("cs.LG",), "https://arxiv.org/abs/2611.00001v2", None)
    return NumberedPaper(1, paper, FullText("ok", "We schedule batches of requests so that "
                                                  "every serving stack improves its latency."), 200)


def _verdict(sentence: str, quote: str, paper: NumberedPaper) -> tuple[str, str]:
    (claim,) = claims_of(sentence, {1})
    batch = Completion(name="e", model="m", content=json.dumps(
        {"claims": [{"claim": 1, "paper": 1, "quote": quote}]}), finish_reason="stop")
    (check,) = check_claims([claim], [(range(1, 2), batch)], {1: PaperText.of(paper)})
    return check.verdict, check.note


def test_a_withdrawal_notice_backs_no_claim() -> None:
    verdict, note = _verdict("Paper 1 shows that every stack improves.", NOTICE, _withdrawn())
    assert verdict == "no_quote" and note == ("the quote is Paper 1's withdrawal notice, which "
                                              "backs no claim")
    # The paper's own text, where the bundle has it, still backs what it says.
    assert _verdict("Paper 1 shows that every stack improves.",
                    "every serving stack improves its latency", _withdrawn())[0] == "supported"


@pytest.mark.parametrize("disguise", [
    lambda w: w[0] + "\u200b" + w[1:],  # a zero-width space inside each word
    lambda w: w.replace("w", "\u051d"),  # the Cyrillic we, drawn as a Latin w
    lambda w: w.replace("w", "&#119;", 1),  # a character reference, shown as w
    lambda w: w.replace("w", "\uff57"),  # the full-width w (NFKC)
])
def test_a_disguised_copy_of_the_full_text_is_still_cut(disguise: object) -> None:
    assert callable(disguise)
    copy = " ".join(disguise(word) for word in body(500, 725))  # 225 words
    out = texts().cut("Paper 1 matters. " + copy + " That is all.")
    assert CUT in out and out.startswith("Paper 1 matters. [… ") and out.endswith("That is all.")


def test_a_disguised_quote_is_matched_as_it_reads() -> None:
    quote = "we schedule b\u0430tches of requests so th&#97;t every serving st\u200back"
    assert fold(quote) == "we schedule batches of requests so that every serving stack"
    assert _verdict("Paper 1 batches requests.", quote, _withdrawn())[0] == "supported"


def test_brackets_in_an_evidence_box_stay_brackets_not_display_math() -> None:
    sentence = "Paper 1 reduces fragmentation by 42.5%."
    linker = CitationLinker("research-map", [_withdrawn()])
    linker.evidence = {sentence: ClaimCheck(
        sentence, (1,), "not_in_paper", "As [12] and [15] show, memory is paged", None,
        "the quote is not in the text of Paper 1 [see 3]")}
    linked = md_model(sentence, 1, linker)
    assert "digest-ev-box" in linked and "digest-math" not in linked
    assert "As &#91;12&#93; and &#91;15&#93; show" in linked
