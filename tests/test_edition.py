"""The edition model on fixed objects: what it knows, what it renders, what it records.

Golden files: tests/golden/ holds the Markdown (and edition.json) that the default templates
render from tests/edition_fixture.py. After an intended change to a template or to the model,
regenerate them and review the diff:

    DIGEST_UPDATE_GOLDEN=1 python -m pytest tests/test_edition.py
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.archive.record import EditionRecord, RecordFormatError
from generator.cli import cli
from generator.config import Config
from generator.config.prompts import ThinkingPrompt
from generator.edition.assemble import assemble
from generator.edition.inputs import EditionInputs
from generator.edition.render import TemplateError, make_environment, render_edition
from generator.prompts.kinds import BUILTIN_KINDS
from tests.conftest import ROOT
from tests.edition_fixture import BUILT_AT, EDITION, PAPERS, fixed_edition

GOLDEN = Path(__file__).parent / "golden"


def rendered_pages(workspace: Path = ROOT, config: Config | None = None) -> dict[str, str]:
    edition = fixed_edition(config)
    pages = render_edition(make_environment(workspace), edition, []).pages
    return {path: text for path, text in pages.items() if not path.startswith("assets/")}


def test_the_rendered_edition_matches_the_golden_files() -> None:
    pages = rendered_pages()
    if os.environ.get("DIGEST_UPDATE_GOLDEN"):
        for path, text in pages.items():
            target = GOLDEN / path.replace("/", "__")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    expected = {p.name.replace("__", "/"): p.read_text(encoding="utf-8")
                for p in GOLDEN.iterdir()}
    assert sorted(pages) == sorted(expected)
    for path, text in pages.items():
        assert text == expected[path], f"{path} differs from tests/golden (see the docstring)"


def test_a_paper_page_keeps_each_fact_on_its_own_line_with_marks_and_code() -> None:
    """The glitch "PDF on arXiv- Your mark…": a block's end swallowed the line break."""
    from dataclasses import replace

    from generator.marks import MarkLinks

    env = make_environment(ROOT)
    env.globals["marks"] = MarkLinks(repo="owner/digest")
    edition = fixed_edition()
    first = edition.papers[0]
    coded = replace(first, paper=replace(first.paper, code=("https://github.com/o/r",)))
    edition = replace(edition, papers=(coded, *edition.papers[1:]))
    page = render_edition(env, edition, []).pages[f"editions/{EDITION}/papers/"
                                                  f"{coded.paper.slug}.md"]
    lines = page.splitlines()
    facts = [line for line in lines if line.startswith("- **")]
    assert [f.split(":")[0] for f in facts[:5]] == [
        "- **arXiv", "- **Your mark for next week's triage", "- **Code and data** (as the paper "
        "gives them)", "- **Authors", "- **Submitted"]
    arxiv = lines.index(facts[0])
    assert lines[arxiv + 1] == facts[1] and lines[arxiv + 3] == facts[3]  # one tight list


def test_the_edition_knows_statuses_briefs_themes_and_citations() -> None:
    edition = fixed_edition()
    assert [p.status for p in edition.papers] == ["new", "new", "new"]
    assert edition.papers[0].brief is not None and edition.papers[0].brief.tldr.startswith("Pages")
    assert [t.papers for t in edition.themes] == [(1, 3)]  # Paper 9 is not in the bundle
    assert edition.papers[2].themes == ("Memory",)
    research_map = edition.pages[0]
    assert research_map.citations.cited == {1: 2, 2: 2, 3: 2}
    assert [p.number for p in research_map.citations.problems] == [7]
    # A figure is checked only in a sentence that cites exactly one paper.
    assert [(f.paper, f.figure, f.found) for _, f in edition.figure_checks] == [(3, "40%", False)]
    assert [a.request.name for a in edition.failed] == ["benchmarks-and-metrics",
                                                        "evidence-thinking-off-1-1"]
    assert [c.stem for c in edition.papers[1].cited_in] == ["research-map", "memory-management",
                                                          "thinking"]
    # Evidence: a verdict for every citing sentence of the answers it was asked for.
    # (A sentence citing a paper the bundle lacks is a claim too, a phantom citation.)
    assert [(page.stem, c.standing, c.found_in) for page, c in edition.evidence] == [
        ("research-map", "backed", 1), ("research-map", "phantom", None),
        ("research-map", "not_in_paper", None),
        ("memory-management", "wrong_paper", 1), ("memory-management", "no_quote", None),
        ("thinking", "not_checked", None), ("thinking", "not_checked", None)]
    figure = edition.record.evidence_figure
    assert figure is not None and (figure.claims, figure.backed, figure.problems) == (7, 1, 4)


def test_a_seen_paper_is_seen_against_the_earlier_editions() -> None:
    earlier = replace(fixed_edition().record, edition="2026-11-25")
    edition = fixed_edition(published=[earlier])
    assert [p.status for p in edition.papers] == ["seen", "seen", "seen"]
    assert [a.edition for a in edition.papers[0].appearances] == [EDITION, "2026-11-25"]


def test_picks_are_news_a_paper_seen_before_is_not_picked_again() -> None:
    """Every paper was picked last week; this week paper 2 is out in a new version and the
    rest are the same: only paper 2 may be picked, and its pick says which version is new."""
    first = fixed_edition()
    assert len(first.record.picks) > 1  # all three are new: more than one is picked
    earlier = replace(first.record, edition="2026-11-25")
    v2 = tuple(replace(p, arxiv_id=p.arxiv_id.replace("v1", "v2")) if i == 1 else p
               for i, p in enumerate(PAPERS))
    edition = fixed_edition(published=[earlier], papers=v2)
    assert [p.status for p in edition.papers] == ["seen", "updated", "seen"]
    (pick,) = edition.record.picks
    assert (pick.number, pick.arxiv_id) == (2, v2[1].arxiv_id)
    assert pick.change == (f"{v2[1].arxiv_id} replaces {PAPERS[1].arxiv_id}, covered in "
                           "edition 2026-11-25")
    # Nothing new and nothing updated: no picks at all, and the home page says why.
    again = fixed_edition(published=[earlier])
    assert again.record.picks == ()
    pages = render_edition(make_environment(ROOT), again, [again.record]).pages
    text = pages["index.md"]
    assert "no picks in this edition" in text and "covered in an earlier one" in text


def test_the_record_reads_back_and_checks_its_format() -> None:
    record = fixed_edition().record
    again = EditionRecord.from_json(json.loads(json.dumps(record.to_json())), "edition.json")
    assert again == record
    assert [p.title for p in again.pages] == ["Research map", "Memory management",
                                              "Benchmarks and metrics", "Thinking comparison"]
    for version, advice in [(99, "upgrade research-digest"), (0, "digest render --all")]:
        with pytest.raises(RecordFormatError, match=advice):
            EditionRecord.from_json(record.to_json() | {"format": version}, "x/edition.json")
    with pytest.raises(RecordFormatError, match="x/edition.json is missing or mangles"):
        EditionRecord.from_json({"format": 2, "edition": "e"}, "x/edition.json")


def test_the_record_alone_makes_the_same_pages_without_the_papers_text() -> None:
    """Evidence verdicts and figure checks are facts of the text: the record replays them."""
    edition = fixed_edition()
    record = EditionRecord.from_json(json.loads(json.dumps(edition.record.to_json())), "x")
    assert record.checks and record.figures  # the fixture checks quotes and a figure
    again = assemble(EDITION, "Test Digest", *EditionInputs.of_record(record), [],
                     built_at=BUILT_AT, kinds=BUILTIN_KINDS)
    env = make_environment(ROOT)
    assert render_edition(env, again, []).pages == render_edition(env, edition, []).pages
    assert again.record == edition.record
    # Each verdict carries its claim's id: the answer and the claim's number.
    assert [c.id for c in record.checks["research-map"]] == ["research-map#1", "research-map#2",
                                                             "research-map#3"]


def test_a_record_of_format_2_is_read_and_upgraded_as_far_as_it_goes() -> None:
    """The format research-digest 0.3 wrote (tests/records/format-2.json, the golden record
    of that release): history, navigation, picks and the feed read it; no answers."""
    old = json.loads((Path(__file__).parent / "records" / "format-2.json").read_text())
    record = EditionRecord.from_json(old, "format-2.json")
    now = fixed_edition().record
    assert not record.complete and now.complete
    assert record.pages == now.pages and record.papers[0].title == now.papers[0].title
    assert [p.excerpt_chars for p in record.papers] == [p.excerpt_chars for p in now.papers]
    # Format 2's picks were unchecked; they read back as they were written.
    assert {p.number for p in record.picks} == {p.number for p in now.picks}
    assert not any(p.backed for p in record.picks) and record.briefs == now.briefs
    assert record.themes == now.themes and record.names == now.names
    assert record.citations == now.citations
    # The feed now shows more of an edition (its picks, pages and evidence figure), so an old
    # record's feed digest differs: its entry's `updated` moves once when it is rendered again.
    assert record.feed and now.feed and record.feed.published == now.feed.published
    assert record.failed_prompts == now.failed_prompts == 2
    old_figure, figure = record.evidence_figure, now.evidence_figure
    assert old_figure is not None and figure is not None
    assert (old_figure.claims, old_figure.found) == (6, 1)  # format 2 judged nothing
    assert figure.claims == 7  # today's checks count its phantom citation too
    assert record.prompts[0].completion.content == ""  # format 2 never held the answers
    assert record.triage is None and record.interests == ""


def test_a_mangled_record_is_named_by_the_field_it_mangles() -> None:
    data = fixed_edition().record.to_json()
    data["papers"][1]["title"] = 7
    with pytest.raises(RecordFormatError, match=r"x/edition.json is missing or mangles "
                       r"papers\[1\].title: expected str, found 7"):
        EditionRecord.from_json(data, "x/edition.json")
    data = fixed_edition().record.to_json()
    data["prompts"][0]["completion"]["usage"]["prompt_tokens"] = "900"
    with pytest.raises(RecordFormatError, match=r"prompts\[0\].completion.usage.prompt_tokens"):
        EditionRecord.from_json(data, "x/edition.json")


def test_a_configured_thinking_title_reaches_every_place() -> None:
    config = Config(path=Path("config.toml"), registry=BUILTIN_KINDS)
    config = replace(config, prompts=replace(config.prompts, thinking=ThinkingPrompt(
        title="Think harder")))
    pages = rendered_pages(config=config)
    everything = "\n".join(pages.values())
    assert "Thinking comparison" not in everything
    assert pages[f"editions/{EDITION}/thinking.md"].startswith(
        f'---\ntitle: "Think harder · {EDITION}"\n---\n\n# Think harder\n')
    assert "[Think harder](thinking.md)" in pages[f"editions/{EDITION}/index.md"]
    assert "[Think harder](editions/2026-12-02/thinking.md)" in pages["index.md"]
    record = json.loads(pages[f"editions/{EDITION}/edition.json"])
    assert EditionRecord.from_json(record, "r").pages[-1].title == "Think harder"


def test_a_template_without_any_filter_still_gets_full_citation_records(tmp_path: Path) -> None:
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "research_map.md.j2").write_text(
        "# {{ page.heading }}\n\n{{ page.answers[0].completion.content }}\n")
    with_plain = json.loads(rendered_pages(tmp_path)[f"editions/{EDITION}/edition.json"])
    default = json.loads(rendered_pages()[f"editions/{EDITION}/edition.json"])
    assert with_plain["citations"] == default["citations"]
    assert with_plain["citations"]["research-map"]["resolved"]


@pytest.mark.parametrize(("template", "message"), [
    ("# {{ page.heading }\n", "research_map.md.j2, line 1 has a syntax error"),
    ("# ok\n\n{{ page.no_such_thing }}\n", "research_map.md.j2, line 3 failed"),
])
def test_a_broken_workspace_template_is_one_line_and_exit_2(
        tmp_path: Path, workspace: Path, template: str, message: str) -> None:
    ws = workspace.parent
    (ws / "templates").mkdir()
    (ws / "templates" / "research_map.md.j2").write_text(template)
    with pytest.raises(TemplateError, match=message):
        rendered_pages(ws)
    result = CliRunner().invoke(cli, ["build", "--config", str(workspace), "--edition", EDITION])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    error = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(error) == 1 and message in error[0]


# Context fitting, on the synthesis side -----------------------------------------------------------

def test_a_refused_prompt_is_cut_fairly_and_the_cut_is_recorded() -> None:
    from generator.completions import PromptRequest
    from generator.papers import FullText, Source
    from generator.prompts.builders import build_requests
    from generator.synthesis.bundle import build_bundle
    from generator.synthesis.planning import BundlePlan, ContextFitter, Refusal
    from tests.edition_fixture import PAPERS, with_thinking_body

    config = Config(path=Path("config.toml"), registry=BUILTIN_KINDS)
    sources = [Source(p, FullText("ok", "word " * 20_000, 5, 5)) for p in PAPERS]
    saved: list[BundlePlan] = []

    def rebuild(plan: BundlePlan) -> list[PromptRequest]:
        cap = plan.overrides.get("research-map", plan.excerpt_cap)
        return build_requests(with_thinking_body(config, {}, briefs=False),
                              build_bundle(sources, excerpt_cap=cap))

    full = build_bundle(sources)
    fitter = ContextFitter(sources, BundlePlan(full.estimated_tokens), rebuild, saved.append)
    request = rebuild(fitter.plan)[0]
    smaller = fitter.shrink(request, Refusal(16_384))
    assert smaller is not None and smaller.name == "research-map"
    assert len(smaller.messages[1].content) < len(request.messages[1].content) // 3
    cap = fitter.plan.overrides["research-map"]
    assert "16,384-token context" in fitter.plan.summary() and saved[-1] == fitter.plan
    # Refused again at the same context: the estimate says it fits, so cutting cannot help.
    assert fitter.shrink(smaller, Refusal(16_384)) is None
    assert fitter.plan.overrides["research-map"] == cap
    # Unless the refusal counts the prompt: three characters a token, not four, so cut more.
    tokens = sum(len(m.content) for m in smaller.messages) // 3
    smallest = fitter.shrink(smaller, Refusal(16_384, tokens))
    assert smallest is not None and fitter.plan.overrides["research-map"] < cap
    assert fitter.plan.chars_per_token == pytest.approx(3.0, rel=0.01)


def test_the_thinking_answers_headings_say_whose_they_are() -> None:
    from generator.edition.render import suffix_headings

    text = "## Analysis\n\nText.\n\n```\n## not a heading\n```\n### Verdict { #v }\n"
    assert suffix_headings(text, " (with thinking)") == (
        "## Analysis (with thinking)\n\nText.\n\n```\n## not a heading\n```\n"
        "### Verdict (with thinking) { #v }\n")


def test_the_thinking_comparison_reads_each_answers_conclusion_and_citations() -> None:
    """The concluding section where a model heads one, else the last paragraph of prose (not
    a table); the papers both or only one answer cites; each answer's backed claims."""
    from generator.edition.compare import compare, conclusion
    from generator.evidence.checks import ClaimCheck

    headed = ("## Analysis\n\nPaper 1 is fast.\n\n## Bottom line\n\nUse Paper 2 for latency. "
              "Use Paper 3 for throughput. Never both.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
    assert conclusion(headed) == "Use Paper 2 for latency. Use Paper 3 for throughput."
    plain = "It depends on **load** (Paper 4).\n\nIn the end, batch (Paper 5).\n\n| x |\n|---|\n"
    assert conclusion(plain) == "In the end, batch (Paper 5)."
    assert conclusion("") == ""
    checks = (ClaimCheck("Paper 1 is fast.", (1,), "supported", "q", 1, "", "thinking-off#1"),
              ClaimCheck("Paper 4 is slow.", (4,), "not_in_paper", "q", None, "", "thinking-on#1"))
    compared = compare(("thinking-off", headed), ("thinking-on", plain + " Paper 1 too."),
                       {1, 2, 3, 4, 5}, checks)
    assert (compared.both, compared.only_off, compared.only_on) == ((1,), (2, 3), (4, 5))
    assert compared.off.figure is not None and compared.on.figure is not None
    assert (compared.off.figure.found, compared.off.figure.claims) == (1, 1)
    assert (compared.on.figure.found, compared.on.figure.claims) == (0, 1)
    assert compare(("a", "Paper 9."), ("b", ""), {1}, None).off.figure is None
