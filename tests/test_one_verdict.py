"""One verdict per claim, the same on every surface (tests/scenario.py: two editions with a
follow-up, a revision and a withdrawal, a published question, the mail).

Each surface that shows a checked sentence shows the verdict its record keeps, in the same
words; each that counts claims shows the record's one count (`EvidenceFigure`); no line the
model writes for the digest alone is published; a phantom citation is never backed.

Golden files: tests/golden-verdicts/; after an intended change,

    DIGEST_UPDATE_GOLDEN=1 python -m pytest -n0 tests/test_one_verdict.py
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import markdown
import pytest

from generator.archive.news import News
from generator.ask.pages import Site, question_pages, terminal_answer
from generator.cli.ask import answer_json
from generator.config import EmailSettings
from generator.deliver.newsletter import newsletter
from generator.edition.render import make_environment, render_edition
from generator.evidence.checks import KEY, MARKS, EvidenceFigure
from generator.pipeline.ask import Asked
from generator.prompts.kinds import BUILTIN_KINDS
from tests.conftest import ROOT
from tests.scenario import SECOND, Fortnight, fortnight

GOLDEN = Path(__file__).parent / "golden-verdicts"
QUESTION_PAGE = "2026-12-08-which-papers-speed-up-decoding-at-small-batch-sizes-and-do-t.md"
MARK_RE = re.compile(r'digest-ev-mark">([^<]*)<')


def surfaces(f: Fortnight) -> dict[str, str]:
    """Every surface a reader meets, by a name of its own."""
    env = make_environment(ROOT)
    pages = render_edition(env, f.second, [f.first.record], "https://digest.example.org/",
                           [f.question]).pages
    site = Site.of([f.second.record, f.first.record])
    pages.update(question_pages(env, [f.question], BUILTIN_KINDS, site))
    mail = newsletter("Efficient LLM Inference", f.second.record, "https://digest.example.org/",
                      EmailSettings())
    pages["mail.txt"], pages["mail.html"] = mail.text, mail.html
    pages["terminal.txt"] = terminal_answer(f.question)
    pages["ask.json"] = json.dumps(answer_json(Asked(f.question), []), indent=2,
                                   ensure_ascii=False) + "\n"
    return pages


@pytest.fixture(scope="module")
def scene() -> tuple[Fortnight, dict[str, str]]:
    f = fortnight()
    return f, surfaces(f)


GOLDEN_PAGES = ("index.md", f"editions/{SECOND}/index.md", f"editions/{SECOND}/research-map.md",
                f"editions/{SECOND}/serving-at-scale.md", f"editions/{SECOND}/thinking.md",
                f"editions/{SECOND}/since-last-edition.md", f"editions/{SECOND}/run-report.md",
                f"editions/{SECOND}/papers/2612.00202v1.md", "papers/2612.00201.md",
                "questions/index.md", f"questions/{QUESTION_PAGE}", "feed.xml", "marks.md",
                "mail.txt", "mail.html", "terminal.txt", "ask.json")


@pytest.mark.parametrize("name", GOLDEN_PAGES)
def test_every_surface_matches_its_golden_file(scene: tuple[Fortnight, dict[str, str]],
                                               name: str) -> None:
    text = scene[1][name]
    path = GOLDEN / name.replace("/", "__")
    if os.environ.get("DIGEST_UPDATE_GOLDEN"):
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from {path} (docstring)"


def test_each_synthesis_page_marks_its_sentences_with_the_records_verdicts(
        scene: tuple[Fortnight, dict[str, str]]) -> None:
    f, pages = scene
    record = f.second.record
    for page in record.pages:
        checks = record.page_checks(page.stem) or ()
        text = pages[f"editions/{SECOND}/{page.stem}.md"]
        shown = MARK_RE.findall(text.split("## Papers cited on this page")[0])
        # The body's marks, in order (At a glance restates some first on the thinking page).
        body = shown[-len(checks):] if checks else shown
        assert body == [c.mark.text for c in checks], page.stem


def test_every_count_is_the_records_one_count(scene: tuple[Fortnight, dict[str, str]]
                                              ) -> None:
    f, pages = scene
    figure = f.second.record.evidence_figure
    assert figure is not None and figure.claims == 17
    sentence = figure.sentence
    for name in (f"editions/{SECOND}/run-report.md", "mail.txt", "feed.xml"):
        assert sentence[:-1] in pages[name].replace("\n    ", " "), name
    for name in ("index.md", f"editions/{SECOND}/index.md"):  # the front line's few words
        assert f"[evidence]({'' if '/' in name else f'editions/{SECOND}/'}run-report.md): " \
            f"{figure.short}" in pages[name], name
    question = f.question.evidence_figure
    assert question is not None
    for name in ("questions/index.md", "terminal.txt"):
        assert question.sentence[1:-1] in pages[name], name
    data = json.loads(pages["ask.json"])
    assert data["evidence"]["sentence"] == question.sentence
    assert [c["verdict"] for c in data["claims"]] == [c.mark.code for c in f.question.checks or ()]
    terminal = re.findall(r"\[([^\]]+)\]", pages["terminal.txt"].split("Papers read:")[0])
    assert terminal == [c.mark.text for c in f.question.checks or ()]


def test_every_surface_says_the_editions_news_in_the_records_one_line(
        scene: tuple[Fortnight, dict[str, str]]) -> None:
    """New, follow-ups, revised, withdrawn: counted once (`News`), said in the same words on
    the home page, the overview, the mail, the feed; the withdrawn paper (new in the first
    edition, withdrawn since) counts as withdrawn only, never also as revised."""
    f, pages = scene
    news = News.of(f.second.record)
    assert (news.new, news.followups, news.revised, news.withdrawn) == (2, 1, 1, 1)
    assert news.line == "2 new (1 a follow-up) · 1 revised · 1 withdrawn"
    for name in ("index.md", f"editions/{SECOND}/index.md"):
        assert f"**{news.line}**" in pages[name], name
    for name in ("mail.txt", "feed.xml"):
        assert news.sentence in pages[name], name
    for name, text in pages.items():
        assert "updated (a new version)" not in text and "2 updated" not in text, name


def test_no_surface_counts_claims_its_own_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every count a reader sees comes from EvidenceFigure.of: told to count 41 of 97, every
    surface says 41 of 97, and none says what it would have counted itself."""
    f = fortnight()
    real = EvidenceFigure.of(c for checks in (f.second.record.checks or {}).values()
                             for c in checks)
    fake = EvidenceFigure(97, 41, 7, 5, 3, 37, 4, 1, (("backed", 41),), (("it failed", 4),))
    monkeypatch.setattr(EvidenceFigure, "of", classmethod(lambda cls, claims: fake))
    pages = surfaces(f)
    for name in ("index.md", f"editions/{SECOND}/index.md", f"editions/{SECOND}/run-report.md",
                 f"editions/{SECOND}/research-map.md", "mail.txt", "feed.xml",
                 "questions/index.md", "terminal.txt"):
        text = pages[name]
        assert "41 of 97" in text, name
        assert f"{real.backed} of {real.claims}" not in text, name


def test_the_run_reports_evidence_table_is_a_table(scene: tuple[Fortnight, dict[str, str]]
                                                  ) -> None:
    f, pages = scene
    html = markdown.markdown(pages[f"editions/{SECOND}/run-report.md"], extensions=["tables"])
    table = html.split("<h2>Evidence</h2>", 1)[1].split("<h2>", 1)[0]
    assert "<table>" in table and "|---" not in table
    rows = re.findall(r"<tr>(.*?)</tr>", table, re.S)
    checked = [p for p in f.second.pages if p.evidence is not None]
    assert len(rows) == 1 + len(checked) + 1  # the heading, a row per page, all pages
    for page, row in zip(checked, rows[1:], strict=False):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        assert [int(c) for c in cells[1:5]] == [page.figure.claims, page.figure.backed,
                                                 page.figure.partly, page.figure.unjudged]


def test_a_sentence_is_never_restated_without_its_mark(scene: tuple[Fortnight, dict[str, str]]
                                                       ) -> None:
    f, pages = scene
    wrong = MARKS["wrong_paper"].text
    thinking = pages[f"editions/{SECOND}/thinking.md"]
    glance = thinking.split("## At a glance", 1)[1].split("The full answers follow", 1)[0]
    assert "accepts 3.1 tokens per step" in glance and wrong in glance
    # The paper's page in the edition: each sentence that cites it, with its mark.
    chunk = pages[f"editions/{SECOND}/papers/2612.00202v1.md"]
    cited = chunk.split("## Cited in", 1)[1].split("## Editions", 1)[0]
    quoted = re.findall(r"^    - “.*$", cited, re.M)
    assert quoted and all(MARK_RE.search(line) for line in quoted)
    assert wrong in cited
    # A pick no sentence backs says why it is a pick anyway.
    home = pages["index.md"]
    for pick, _ in f.second.record.picked:
        if not pick.backed:
            assert pick.unbacked_note.split(";")[0] in home


def test_the_comparisons_internal_line_is_read_never_published(
        scene: tuple[Fortnight, dict[str, str]]) -> None:
    f, pages = scene
    record = f.second.record
    for name, text in pages.items():  # (the record keeps the answer as the model wrote it)
        if not name.endswith("edition.json"):
            assert "Disagrees: " not in text and "[research-map#2]" not in text, name
    assert all("Disagrees" not in c.sentence for checks in (record.checks or {}).values()
               for c in checks)
    since = record.continuity
    assert since is not None and [d.claim for d in since.disagreements] == ["research-map#2"]
    page = pages[f"editions/{SECOND}/since-last-edition.md"]
    assert "**[TreeDraft](papers/2612.00201v1.md)** (new in this edition) says" in page


def test_a_phantom_citation_is_never_backed(scene: tuple[Fortnight, dict[str, str]]) -> None:
    f, pages = scene
    phantom = next(c for checks in (f.second.record.checks or {}).values() for c in checks
                   if c.phantoms)
    assert phantom.phantoms == (9,) and phantom.standing == "phantom" and not phantom.backed
    assert MARKS["phantom"].text in pages[f"editions/{SECOND}/research-map.md"]
    # A sentence citing two papers with a quote from one is not backed either.
    both = next(c for c in (f.second.record.checks or {})["research-map"] if len(c.papers) == 2)
    assert both.verdict == "no_quote" and [q.verdict for q in both.quotes] == ["supported",
                                                                                "no_quote"]


def test_the_withdrawn_paper_is_its_own_state_and_flagged_on_every_link(
        scene: tuple[Fortnight, dict[str, str]]) -> None:
    f, pages = scene
    overview = pages[f"editions/{SECOND}/index.md"]
    assert "digest-dot-withdrawn" in overview and "withdrawn on arXiv" in overview
    for name in ("index.md", f"editions/{SECOND}/index.md"):
        text = pages[name]
        # Every link that names it (its name, its title), wherever it stands.
        for link in re.finditer(r"\[[^\]]*KVQuant[^\]]*\]\([^)]*\)", text):
            after = text[link.end():link.end() + 80]
            before = text[max(0, link.start() - 8):link.start()]
            assert "withdrawn" in after or "⚠" in before, f"{name}: {link.group(0)}{after}"


def test_the_key_to_the_marks_is_beside_the_first_mark(scene: tuple[Fortnight, dict[str, str]]
                                                       ) -> None:
    """Just above the first mark (the picks' key line), or in its box: never a screen away."""
    _, pages = scene
    signs = [m.text for m in MARKS.values()]
    for name, page in ((f"editions/{SECOND}/research-map.md", "../../marks.md"),
                       (f"questions/{QUESTION_PAGE}", "../marks.md"), ("index.md", "marks.md")):
        text = pages[name].replace(KEY, "KEY")  # a mark's words inside the key are no mark
        first = min(i for sign in signs if (i := text.find(sign, text.find("# "))) > 0)
        second = min((i for sign in signs if (i := text.find(sign, first + 1)) > 0),
                     default=len(text))
        key = text.find("KEY", max(0, first - 600))
        assert -1 < key < second, name
        assert f"({page})" in text[key:key + 400], name
    assert "| ⚠ cites a paper not in the bundle |" in pages["marks.md"]


def test_every_claim_is_in_the_record_with_its_decided_verdict(
        scene: tuple[Fortnight, dict[str, str]]) -> None:
    f, pages = scene
    record = json.loads(pages[f"editions/{SECOND}/edition.json"])
    decided = [c["decided"] for checks in record["checks"].values() for c in checks]
    assert decided == [c.standing for checks in (f.second.record.checks or {}).values()
                       for c in checks]
