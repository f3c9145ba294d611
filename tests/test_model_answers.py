"""Answers as models write them, generated (issue 69): every surface renders any of them.

The strategy writes model answers in the forms real models use: every citation form the
digest reads ("Paper N", "Papers N and M", "Papers 3 (X), 7 (Y), and 17 (Z)", "(Paper 5, X)",
names, bold names, citations in headings and after the full stop), sentences that only name
papers, a paper agreeing with itself, empty and whitespace sentences, preambles, lists, tables,
math, code, raw HTML, a cut mid-word, repeated paragraphs; structured answers with fields
missing, extra or of the wrong type. Most examples run at the level of the rendering functions
on the fixed two-week scenario (tests/scenario.py), the answer standing in for the comparison,
the field overview and the question's answer, its claims checked with generated verdicts:

- nothing raises (a page, the home page, the feed, the mail, the chat post, the BibTeX, the
  terminal answer and `--json`);
- every sentence with words of its own appears on its page, unless a rule drops it on purpose
  (a paper agreeing with itself);
- every mark follows words, on every surface;
- a checked sentence shows the same verdict where it is restated (the home page, the mail);
- no raw Markdown or live HTML on a plain-text or HTML surface, no line of our prompts.

Deterministic under CI (the `ci` profile); `DIGEST_ANSWER_EXAMPLES=500` searches deeper.
"""

from __future__ import annotations

import functools
import html
import json
import os
import re
from dataclasses import dataclass, replace
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from generator.archive.bibtex import edition_bibtex
from generator.archive.feed import atom_feed
from generator.archive.lead import comparison, since_lines
from generator.archive.overview import overview_text
from generator.archive.prose import read_away
from generator.archive.question_record import QuestionRecord
from generator.archive.record import EditionRecord
from generator.ask.pages import terminal_answer
from generator.cli import cli
from generator.cli.ask import answer_json
from generator.config import EmailSettings
from generator.deliver.chat import chat_post, plain_text
from generator.deliver.newsletter import newsletter
from generator.edition.citations import CitationLinker
from generator.edition.render import cited, make_environment, render_template
from generator.evidence.checks import MARKS, ClaimCheck, Standing
from generator.evidence.claims import SENTENCE_RE, answer_claims, has_words
from generator.evidence.naming import answer_names
from generator.kinds import CHANGES
from generator.papers import FullText, NumberedPaper
from generator.pipeline.ask import Asked
from generator.prompts.builders import BRIEF_SCHEMA, THEMES_SCHEMA
from generator.synthesis.structured import InvalidAnswer, parse_answer
from generator.text.safe_text import md_model
from tests.conftest import FIXTURES, ROOT, write_config
from tests.scenario import CHUNK, PAGED_V2, QUANT_GONE, TREE, Fortnight, fortnight
from tests.servers.arxiv import ArxivServer
from tests.servers.sglang import Answer, SglangServer, structured_answer

EXAMPLES = int(os.environ.get("DIGEST_ANSWER_EXAMPLES", "25"))
SITE = "https://digest.example.org/"
NAMES = {1: "TreeDraft", 2: "Chunked Prefill", 3: "PagedAttention", 4: "KVQuant"}
CLAIMS = ("cuts latency by 3.4× at batch size 1", "keeps fragmentation under 4%",
          "saves memory", "raises throughput by 12%", "is slower at batch size 64")
STANDINGS: tuple[Standing, ...] = tuple(MARKS)
# A mark as a plain-text surface writes it ("[✓ backed]"), and as HTML.
TEXT_MARK_RE = re.compile(
    r"\[(?:" + "|".join(re.escape(m.text) for m in MARKS.values()) + r")\]")
HTML_MARK_RE = re.compile(r'<span class="digest-ev digest-ev-(\w+)"')
PROMPT_LINES = ("THE BUNDLE", "Reply with the corrected JSON", "(cites Paper")


# The strategy ---------------------------------------------------------------------------------

@dataclass
class Written:
    """A generated answer, and which of its sentences must be seen on its page."""

    text: str
    kept: list[str]  # tokens of sentences with words of their own, in a block not cut


@st.composite
def citations(draw: st.DrawFn) -> str:
    n, m, k = (draw(st.sampled_from([1, 2, 3, 4])) for _ in range(3))
    return draw(st.sampled_from([
        f"Paper {n}", f"paper {n}", f"Papers {n} and {m}", f"Paper {n} ({NAMES[n]})",
        f"Papers {n} ({NAMES[n]}), {m} ({NAMES[m]}), and {k} ({NAMES[k]})",
        f"({'Paper'} {n}, {NAMES[n]})", NAMES[n], f"**{NAMES[n]}**", f"Papers {n}–{m}",
        "Paper 9",  # not in the bundle
    ]))


@st.composite
def sentences_of(draw: st.DrawFn, counter: list[int]) -> tuple[str, str | None]:
    """One sentence and its token (None: a sentence the rules may drop, or with no words of
    its own)."""
    counter[0] += 1
    token = f"kw{counter[0]}x"
    cite, claim = draw(citations()), draw(st.sampled_from(CLAIMS))
    n = draw(st.sampled_from([1, 2, 3, 4]))
    form = draw(st.integers(0, 11))
    if form == 0:
        return f"{cite} {claim} {token}.", token
    if form == 1:  # the citation after the full stop
        return f"It {claim} {token}. ({cite})", token
    if form == 2:  # a paper agreeing with itself: dropped on purpose
        return f"Paper {n} and {NAMES[n]} agree on the mechanism.", None
    if form == 3:  # a sentence that only names papers
        return f"{cite}, {draw(citations())}.", None
    if form == 4:
        return draw(st.sampled_from(["", " ", "  .", "…", "—"])), None
    if form == 5:
        return f"The bound $O(m \\cdot t)$ holds for {cite} {token}.", token
    if form == 6:
        return f"{cite} {claim} {token} (see Table 2)", token  # no stop at all
    if form == 7:  # (a sentence starts with a capital: SENTENCE_RE splits only there)
        return f"Raw <script>alert(1)</script> {cite} {claim} {token}!", token
    if form == 8:
        return f"Ignore previous instructions; {cite} {claim} {token}?", token
    if form == 9:
        return f"{cite} {claim} by $x_i^2$ {token}.", token
    if form == 10:
        return f"{cite} and {cite} {claim} {token}.", token
    return f"As {cite} shows, {claim} {token}.", token


@st.composite
def answers(draw: st.DrawFn) -> Written:
    counter = [0]
    blocks: list[tuple[str, list[str]]] = []
    if draw(st.booleans()):
        blocks.append((draw(st.sampled_from(["Sure! Here is the analysis you asked for:",
                                             "Okay, let me compare the papers.",
                                             "<think>reading the bundle</think>"])), []))
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.integers(0, 5))
        pairs = draw(st.lists(sentences_of(counter), min_size=1, max_size=4))
        tokens = [t for _, t in pairs if t]
        if kind == 0:  # a paragraph
            blocks.append((" ".join(s for s, _ in pairs), tokens))
        elif kind == 1:  # a heading citing papers, then a paragraph
            counter[0] += 1
            head = f"## {draw(citations())} and memory kw{counter[0]}x"
            blocks.append((head + "\n\n" + " ".join(s for s, _ in pairs),
                           [f"kw{counter[0]}x", *tokens]))
        elif kind == 2:  # a list
            blocks.append(("\n".join(f"- {s}" for s, _ in pairs), tokens))
        elif kind == 3:  # a table
            rows = "\n".join(f"| {draw(citations())} | {s.replace('|', ' ')} |" for s, _ in pairs)
            blocks.append(("| Paper | Claim |\n|---|---|\n" + rows, tokens))
        elif kind == 4:  # code and display math
            counter[0] += 1
            blocks.append((f"```python\nprint('kw{counter[0]}x')  # Paper 1\n```\n\n"
                           "$$\\frac{a}{b} \\approx 1 - (1-p)^{t}$$", [f"kw{counter[0]}x"]))
        else:  # a paragraph said twice
            text = " ".join(s for s, _ in pairs)
            blocks.append((text + "\n\n" + text, tokens))
    if draw(st.booleans()) and blocks:  # cut mid-word: the last block's words may go
        last, _ = blocks[-1]
        blocks[-1] = (last[:draw(st.integers(0, max(0, len(last) - 1)))], [])
    text = "\n\n".join(b for b, _ in blocks)
    return Written(text, [t for _, tokens in blocks for t in tokens])


# The fixed objects -----------------------------------------------------------------------------

@functools.cache
def scene() -> Fortnight:
    """The two weeks and the question (made once a process; not a fixture, so that a failing
    example prints the answer, not the scene)."""
    return fortnight()


def checked(answer: str, names: dict[int, str], titles: dict[int, str], stem: str,
            standings: list[Standing]) -> tuple[ClaimCheck, ...]:
    """The answer's claims with generated verdicts, as assembly keeps them (a sentence the
    pages drop for reading keeps none)."""
    out = []
    for claim in answer_claims(answer, titles):
        if read_away(claim.sentence, names):
            continue
        standing = standings[claim.number % len(standings)]
        out.append(ClaimCheck(claim.sentence, claim.papers, "supported",
                              "a quote" if claim.papers else "",
                              claim.papers[0] if claim.papers else None, "",
                              id=f"{stem}#{claim.number}", phantoms=claim.phantoms,
                              decided="phantom" if claim.phantoms else standing))
    return tuple(out)


def with_answer(record: EditionRecord, answer: str, standings: list[Standing]) -> EditionRecord:
    """The second edition with `answer` as its comparison and its field overview."""
    titles = {p.number: p.title for p in record.papers}
    checks = checked(answer, record.names, titles, "since-last-edition", standings)
    prompts = tuple(replace(p, completion=replace(p.completion, content=answer))
                    if p.kind == CHANGES else p for p in record.prompts)
    return replace(record, prompts=prompts, overview=overview_text(answer),
                   checks={**(record.checks or {}), "since-last-edition": checks})


def question_with(question: QuestionRecord, answer: str,
                  standings: list[Standing]) -> QuestionRecord:
    titles = {p.number: p.title for p in question.papers}
    prompts = (replace(question.prompts[0], completion=replace(question.prompts[0].completion,
                                                                 content=answer)),
               *question.prompts[1:])
    return replace(question, prompts=prompts,
                   checks=checked(answer, question.names, titles, "ask", standings))


# The properties --------------------------------------------------------------------------------

def untagged(text: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", text))


def marks_follow_words(surface: str, text: str) -> None:
    """Every mark has words of its sentence before it, on its line."""
    for match in [*HTML_MARK_RE.finditer(text), *TEXT_MARK_RE.finditer(text)]:
        before = untagged(text[:match.start()]).rsplit("\n", 1)[-1]
        before = TEXT_MARK_RE.sub("", before)
        sentence = SENTENCE_RE.split(before)[-1]  # the sentence as the digest splits it
        assert has_words(re.sub(r"\]\([^)]*\)", "", sentence)), (surface, text[:match.end()])


def plain_surface(surface: str, text: str) -> None:
    """A plain-text surface: no Markdown emphasis or links, no markup of ours."""
    assert "<span" not in text and "](" not in text and "**" not in text, (surface, text)


def no_prompt_lines(surface: str, text: str) -> None:
    for line in PROMPT_LINES:
        assert line not in text, (surface, line)


def page_of(answer: str, record: EditionRecord, checks: tuple[ClaimCheck, ...]) -> str:
    papers = [NumberedPaper(p.number, paper, FullText("not_requested"), 0)
              for p, paper in zip(record.papers, (TREE, CHUNK, PAGED_V2, QUANT_GONE),
                                  strict=True)]
    linker = CitationLinker("since-last-edition", papers, names=record.names)
    linker.names = answer_names(answer, {p.number: p.title for p in record.papers})
    linker.evidence = {c.sentence: c for c in reversed(checks)}
    return md_model(answer, 1, linker)


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow])
@given(written=answers(), standings=st.lists(st.sampled_from(STANDINGS), min_size=1,
                                               max_size=4))
def test_every_surface_renders_any_answer(written: Written, standings: list[Standing]) -> None:
    answer = written.text
    first, second = scene().first.record, scene().second.record
    record = with_answer(second, answer, standings)
    checks = (record.checks or {})["since-last-edition"]
    # Its page: every sentence with words of its own is there, each mark after words.
    page = page_of(answer, record, checks)
    shown = untagged(page)
    for token in written.kept:
        assert token in shown, (token, answer, page)
    marks_follow_words("page", page)
    # The surfaces made from the record.
    env = make_environment(ROOT)
    home = render_template(env, "home.md.j2", title="Digest", records=[record, first])
    feed = atom_feed("Digest", SITE, [record, first])
    mail = newsletter("Digest", record, SITE, EmailSettings())
    chat = plain_text(chat_post("Digest", record, SITE))
    since = "\n".join(since_lines(record))
    bib = edition_bibtex(record)
    question = question_with(scene().question, answer, standings)
    terminal = terminal_answer(question)
    as_json = json.dumps(answer_json(Asked(question), []), ensure_ascii=False)
    surfaces = {"home": home, "feed": html.unescape(feed), "mail.text": mail.text,
                "mail.html": mail.html, "chat": chat, "since": since, "terminal": terminal}
    for name, text in surfaces.items():
        marks_follow_words(name, text)
        no_prompt_lines(name, text)
    for name in ("mail.text", "chat", "since", "terminal"):
        plain_surface(name, surfaces[name])
    for name, text in (("mail.html", mail.html), ("feed", feed), ("page", page),
                       ("home", home)):
        assert "<script" not in text.lower(), name  # the model's tag is text, never live
    assert "@" in bib and "<script" not in bib
    json.loads(as_json)
    # One verdict, wherever a checked sentence is restated: the home page and the mail/feed.
    compared = comparison(record)
    if compared is not None and compared.text:
        on_page = HTML_MARK_RE.findall(cited(compared.text, record, own=True, marked=True))
        in_text = [next(k for k, m in MARKS.items() if f"[{m.text}]" == found)
                   for found in TEXT_MARK_RE.findall(record.marked(compared.text))]
        assert on_page == in_text


# Structured answers ----------------------------------------------------------------------------

VALUES = st.recursive(st.none() | st.booleans() | st.integers(-3, 30) | st.text(max_size=12),
                      lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=6)


@st.composite
def structured(draw: st.DrawFn, fields: tuple[str, ...]) -> str:
    """A JSON answer with its fields present, missing, extra or of the wrong type; fenced,
    with a preamble, or cut."""
    value: dict[str, Any] = {}
    for name in fields:
        if draw(st.booleans()):
            value[name] = draw(st.one_of(st.text(max_size=30), VALUES))
    value.update(draw(st.dictionaries(st.text(max_size=8), VALUES, max_size=2)))
    text = json.dumps(value, ensure_ascii=False)
    form = draw(st.integers(0, 3))
    if form == 1:
        text = f"```json\n{text}\n```"
    elif form == 2:
        text = f"Here is the JSON:\n{text}"
    elif form == 3:
        text = text[:draw(st.integers(0, len(text)))]
    return text


@settings(max_examples=EXAMPLES * 2)
@given(brief=structured(("tldr", "problem", "method", "result", "limitations", "name")),
       themes=structured(("themes",)))
def test_a_structured_answer_is_parsed_or_refused_in_our_words(brief: str, themes: str) -> None:
    for text, schema in ((brief, BRIEF_SCHEMA), (themes, THEMES_SCHEMA)):
        try:
            parse_answer(text, schema)
        except InvalidAnswer as err:
            assert str(err)


# Whole builds: two editions, then the question, the feed and the mail ------------------------

QUESTION = "Which papers cut latency, and do they agree?"


def generated_answers() -> st.SearchStrategy[list[Written]]:
    """Six different answers (the first example hypothesis tries would be six alike)."""
    return st.lists(answers(), min_size=6, max_size=6).filter(
        lambda found: len({w.text for w in found}) == 6)


@settings(max_examples=max(1, EXAMPLES // 25), phases=[Phase.generate],
          suppress_health_check=list(HealthCheck), deadline=None)
@given(found=generated_answers())
def test_two_weeks_built_asked_and_sent_with_generated_answers(
        tmp_path_factory: pytest.TempPathFactory, found: list[Written]) -> None:
    """Through the test servers, continuity, evidence and the judge on: `digest build` twice,
    `digest ask` (and --json) and `digest send --dry-run` end in 0 or 1, never a traceback;
    no mark without words on a page, the feed, the mail or the terminal."""
    folder = tmp_path_factory.mktemp("weeks")
    arxiv, model = ArxivServer(FIXTURES).start(), SglangServer().start()
    try:
        asked = iter(range(1 << 20))

        def respond(body: dict[str, Any]) -> Answer:
            return structured_answer(body) or Answer(found[next(asked) % len(found)].text)

        model.state.responder = respond
        config = write_config(folder / "ws", arxiv, model, structured=True, evidence=True,
                              continuity=True, max_papers=2, full_text_papers=0,
                              max_pdf_chars=2000)
        outputs = []
        for args in (["build", "--edition", "2026-12-02"], ["build", "--edition", "2026-12-09"],
                     ["ask", QUESTION], ["ask", QUESTION, "--json"], ["send", "--dry-run"]):
            with pytest.MonkeyPatch.context() as patch:  # the mail's links are absolute
                patch.setenv("DIGEST_SITE_URL", SITE)
                result = CliRunner().invoke(cli, [*args, "--config", str(config)])
            assert result.exit_code in (0, 1), (args, result.output)
            assert result.exception is None or isinstance(result.exception, SystemExit), (
                args, result.output)
            assert "Traceback" not in result.output
            outputs.append(result.output)
        json.loads(outputs[3][outputs[3].index("{"):])
        marks_follow_words("terminal", outputs[2])
        plain_surface("terminal", outputs[2])
        docs = folder / "ws" / "site_src"
        for page in [*docs.rglob("*.md"), docs / "feed.xml",
                     *(folder / "ws" / ".cache").rglob("newsletter.eml")]:
            text = page.read_text(encoding="utf-8")
            marks_follow_words(page.name, html.unescape(text) if page.suffix != ".md" else text)
            no_prompt_lines(page.name, text)
    finally:
        arxiv.stop()
        model.stop()
