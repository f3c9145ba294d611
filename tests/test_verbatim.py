"""Full text is never published: copies of a paper's text, however edited, are cut from answers;
quotes, the abstract and an answer's own words are not."""

from __future__ import annotations

import json
import random

from generator.completions import Completion, PromptRequest
from generator.edition.facts import TextFacts
from generator.evidence.verbatim import _WORK_PER_WORD, FullTexts, json_like
from generator.papers import FullText, NumberedPaper, Paper
from generator.prompts.kinds import BUILTIN_KINDS

_RANDOM = random.Random(7)
WORDS = [f"w{n}" for n in range(3000)]
ABSTRACT = " ".join(_RANDOM.choice(WORDS) for _ in range(220))
BODY = [_RANDOM.choice(WORDS) for _ in range(3000)]
# As a PDF reads: title, "Abstract", the abstract, "1 Introduction", lines of 12 words.
FULL = ("Sparse Widgets for Efficient Gadgets\nAlice Bob\nAbstract\n" + ABSTRACT
        + "\n1 Introduction\n" + "\n".join(" ".join(BODY[n:n + 12]) for n in range(0, 3000, 12)))
OWN = " ".join(_RANDOM.choice(WORDS) for _ in range(600))  # the answer's own words
CUT = "copied word for word from the full text of arXiv 2401.01234v1"


def numbered(full: str = FULL, abstract: str = ABSTRACT) -> NumberedPaper:
    paper = Paper("2401.01234v1", "Sparse Widgets for Efficient Gadgets", ("Alice", "Bob"),
                  "2024-01-01", "2024-01-01", abstract, ("cs.LG",), "", None)
    return NumberedPaper(1, paper, FullText("ok", full), len(full))


def texts(full: str = FULL, abstract: str = ABSTRACT) -> FullTexts:
    return FullTexts([numbered(full, abstract)])


def body(start: int, end: int) -> list[str]:
    return list(BODY[start:end])


# Copies, edited or not ---------------------------------------------------------------------------

def test_a_copy_word_for_word_is_cut_and_the_answers_own_words_stay() -> None:
    out = texts().cut("Paper 1 matters. " + " ".join(body(500, 900)) + " That is all.")
    assert out.startswith("Paper 1 matters. [… ") and CUT in out and out.endswith(" That is all.")


def test_a_copy_with_a_word_changed_every_hundred_words_is_cut() -> None:
    copy = body(500, 900)
    for at in (100, 200, 300):
        copy[at] = "changed"
    assert CUT in texts().cut(" ".join(copy))


def test_a_copy_citing_the_paper_every_hundred_words_is_cut() -> None:
    copy = body(500, 900)
    for at in (300, 200, 100):
        copy.insert(at, "(Paper 1)")
    assert CUT in texts().cut(" ".join(copy))


def test_a_copy_leaving_out_a_word_every_140_words_is_cut() -> None:
    copy = body(500, 900)
    del copy[280], copy[140]
    assert CUT in texts().cut(" ".join(copy))


def test_a_copy_as_a_numbered_list_is_cut() -> None:
    answer = "\n".join(f"{n + 1}. " + " ".join(body(500 + at, 520 + at))
                       for n, at in enumerate(range(0, 400, 20)))
    assert CUT in texts().cut(answer)


def test_a_copy_leaving_out_the_papers_citation_markers_is_cut() -> None:
    cited = []
    for n, word in enumerate(BODY):
        cited += [word, f"[{n // 40 + 1}]"] if n % 40 == 39 else [word]
    full = "\n".join(" ".join(cited[n:n + 12]) for n in range(0, len(cited), 12))
    assert CUT in texts(full).cut(" ".join(body(400, 800)))


# JSON answers ----------------------------------------------------------------------------------

def test_a_copy_in_a_json_string_keeping_the_line_breaks_is_cut_and_still_parses() -> None:
    lines = FULL.split("\n")[30:65]  # about 420 words, as json.dumps writes them: "\n" escapes
    answer = json.dumps({"tldr": "Own words.", "method": "\n".join(lines), "n": 1})
    out = texts().cut(answer, in_strings=True)
    assert CUT in out and json.loads(out)["tldr"] == "Own words." and json.loads(out)["n"] == 1


def test_a_copy_in_a_json_string_with_escaped_quotes_is_cut_and_still_parses() -> None:
    copy = body(500, 900)
    for at in (100, 200, 300):
        copy[at] = f'"{copy[at]}"'
    out = texts().cut(json.dumps({"method": " ".join(copy)}), in_strings=True)
    assert CUT in json.loads(out)["method"]


def test_a_copy_over_consecutive_json_strings_is_cut_in_each_and_still_parses() -> None:
    quotes = [" ".join(body(500 + at, 600 + at)) for at in range(0, 400, 100)]
    out = json.loads(texts().cut(json.dumps({"quotes": quotes}), in_strings=True))["quotes"]
    assert len(out) == 4 and all(CUT in quote for quote in out)


def test_markdown_that_opens_with_a_bracket_or_a_fence_is_prose() -> None:
    assert not json_like("[Paper 1] is the one to read first.")
    assert not json_like("```python\nprint(1)\n```\nThen prose.")
    assert json_like('```json\n{"tldr": "x"}\n```') and json_like(' [{"a": 1}]\n')


def test_a_prose_answer_opening_with_a_bracket_is_cut_as_prose() -> None:
    copy = body(500, 900)
    for at in (100, 200, 300):
        copy[at] = f'"{copy[at]}"'  # a quoted term, as prose has them
    answer = "[Paper 1] is the one to read first. As it puts it: " + " ".join(copy)
    request = PromptRequest("ask", "Ask", "ask", "", (), 100, 0.0)
    (_, published), = TextFacts([numbered()], BUILTIN_KINDS).uncopied(
        [(request, Completion("ask", "m", content=answer))], None)[0]
    assert published.content.count("[… ") == 1 and " ".join(body(520, 560)) not in \
        published.content


# The abstract ----------------------------------------------------------------------------------

def test_the_abstract_is_never_cut_whatever_surrounds_it() -> None:
    for answer in (f"The paper reports: {ABSTRACT} That is all.", f"Abstract: {ABSTRACT}",
                   f"**Abstract.** {ABSTRACT}", f"# Sparse Widgets for Efficient Gadgets\n"
                   f"Alice Bob\nAbstract\n{ABSTRACT}",
                   f"{ABSTRACT}\n\n1. Introduction: my own words follow."):
        assert texts().cut(answer) == answer


def test_a_copy_running_on_from_the_abstract_is_cut_after_it() -> None:
    answer = f"Abstract: {ABSTRACT}\n1 Introduction\n" + " ".join(body(0, 300))
    out = texts().cut(answer)
    assert out.startswith(f"Abstract: {ABSTRACT}\n") and CUT in out
    assert " ".join(body(0, 20)) not in out


# What stays ------------------------------------------------------------------------------------

def test_quotes_under_the_limit_between_the_answers_own_words_stay() -> None:
    answer = (f"As Paper 1 puts it, \"{' '.join(body(500, 640))}\", and later, in its own "
              f"words, \"{' '.join(body(644, 780))}\". {OWN}")
    assert texts().cut(answer) == answer
    in_json = json.dumps({"quotes": [" ".join(body(500, 640)), " ".join(body(900, 1040))]})
    assert texts().cut(in_json, in_strings=True) == in_json


def test_an_answer_in_its_own_words_stays() -> None:
    answer = OWN + "\n\n" + OWN[::-1]
    assert texts().cut(answer) == answer
    assert texts().cut(json.dumps({"a": OWN}), in_strings=True) == json.dumps({"a": OWN})


# Cost ------------------------------------------------------------------------------------------

def test_text_that_repeats_costs_little_to_search() -> None:
    """Table rows repeated in the paper and the answer: every stretch matched at 64 places,
    each extended over a 136-word run, cost 18 s for 9,590 words; the work is bounded by a
    constant a word of answer (counted in words compared, not timed)."""
    row = "0.1 0.2 0.3 0.4 0.5 0.6 0.7 0.8 0.9 1.0 1.1 1.2 1.3 1.4 1.5 1.6 1.7"
    answer = "\n".join(([row] * 8 + ["own"]) * 70)  # 9,590 words, 136-word runs
    paper = texts("\n".join([row] * 3000))
    paper.cut(answer)
    assert paper.work <= 2 * _WORK_PER_WORD * len(answer.split())
