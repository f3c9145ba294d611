"""What a reader sees (issue 50), on fixed objects: a sentence said once, no paper agreeing with
itself, counts that tell papers apart, the "since" page's facts before the model's prose and a
key only for the marks it shows, a concluding list kept a list, the header's date whole, and
long answers folded by section."""

from __future__ import annotations

from dataclasses import replace

from generator.archive.lead import comparison, since_lines
from generator.archive.names import cited_parts, name_citations
from generator.archive.overview import overview_text
from generator.archive.prose import one_paper_once, said_once, unique_sentences
from generator.archive.record import RecordPrompt
from generator.completions import Completion
from generator.edition.citations import CitationLinker
from generator.edition.compare import compare, concluding
from generator.edition.fold import fold_sections
from generator.edition.model import Edition
from generator.edition.render import make_environment, render_edition, render_template
from generator.evidence.checks import KEY, ClaimCheck
from generator.papers import FullText, NumberedPaper
from generator.publish.reading import whole_dates
from tests.conftest import ROOT
from tests.edition_fixture import PAPERS, fixed_edition, one_paper_edition, paper

EVICT = "Learning to Evict KV Cache Entries"
NAMES = {1: "FastKV", 4: EVICT}


# 1. Repetition -----------------------------------------------------------------------------

def test_a_sentence_is_said_once_whatever_its_spacing_and_case() -> None:
    assert unique_sentences(["FastKV saves memory.", "fastkv  saves\nmemory", "Other.", ""]) == [
        "FastKV saves memory.", "Other."]
    assert said_once("It saves memory. It  saves memory. It saves MEMORY! Then more.") == (
        "It saves memory. Then more.")
    overview = ("## Field overview\n\nPaper 1 saves memory. Paper 1 saves memory. "
                "Paper 1 saves  memory.\n")
    assert overview_text(overview) == "Paper 1 saves memory."


def test_a_paper_named_twice_in_a_row_is_named_once_and_never_agrees_with_itself() -> None:
    aliases = {n: (name,) for n, name in NAMES.items()}
    for doubled in (f"Paper 4 and {EVICT} agree on the mechanism.",
                    f"{EVICT} and Paper 4 agree on the mechanism.",
                    "Paper 4 and Paper 4 agree on the mechanism.",
                    "Papers 4 and 4 share an approach."):
        assert one_paper_once(doubled, aliases) is None, doubled
    assert one_paper_once(f"Paper 4 and {EVICT.lower()} cut memory.", aliases) == (
        "Paper 4 cut memory.")
    assert one_paper_once(f"Paper 4 ({EVICT}), and {EVICT} cut memory.", aliases) == (
        f"Paper 4 ({EVICT}) cut memory.")
    for two in ("Paper 4 and Paper 1 agree on the mechanism.", "Paper 4 and Paper 40 agree."):
        assert one_paper_once(two, aliases) == two
    # Where the names are made: the lead, the mail, the feed and every page's prose.
    assert name_citations(f"First. Paper 4 and {EVICT} agree on the mechanism. Last.",
                          NAMES) == "First. Last."
    assert cited_parts("Papers 4 and 4 cut memory.", NAMES) == [
        (EVICT, 4), (" cut memory.", None)]
    item = NumberedPaper(4, paper(4, EVICT), FullText("not_requested"), 0)
    linker = CitationLinker("changes", [item], names={4: EVICT})
    linked = linker(f"Paper 4 and {EVICT} agree on the mechanism. Paper 4 cuts memory.")
    assert linked.startswith(f"[{EVICT}](papers/") and linked.endswith(") cuts memory.")
    assert "agree" not in linked


def _with_comparison(edition: Edition, sentences: list[str]) -> Edition:
    """`edition`'s record with a comparison answer whose claims are `sentences`, each backed."""
    record = edition.record
    answer = RecordPrompt("changes", "What changed", "changes",
                          Completion("changes", "m", " ".join(sentences), "", "stop"),
                          page="since-last-edition")
    checks = tuple(ClaimCheck(s, (1,), "supported", "q", 1, "", f"changes#{i}")
                   for i, s in enumerate(sentences))
    return replace(edition, record=replace(record, prompts=(*record.prompts, answer),
                                           checks={**(record.checks or {}), "changes": checks}))


def test_the_since_paragraph_says_each_backed_sentence_once() -> None:
    """A sentence citing three papers is three checked claims: counted three times, shown once
    (the edition's page, the home page, the mail and the feed)."""
    first = fixed_edition()
    second = _with_comparison(fixed_edition(published=[first.record], edition="2026-12-09"),
                              ["Paper 1 saves memory."] * 3 + ["Paper 2 drafts."])
    compared = comparison(second.record)
    assert compared is not None and compared.figure is not None
    assert compared.figure.found == 4  # counted four times, by the one count
    assert compared.text == "Paper 1 saves memory. Paper 2 drafts."
    lines = since_lines(second.record)
    assert sum(line.count("saves memory") for line in lines) == 1


def test_counts_tell_the_papers_apart_and_links_never_read_abstract_twice() -> None:
    edition = fixed_edition()
    pages = render_edition(make_environment(ROOT), edition, []).pages
    overview = pages["editions/2026-12-02/index.md"]
    assert "abstract only" not in overview and "full text not read" in overview
    assert "[cited on 3 synthesis pages]" in overview  # 2, 3, 2: the pages differ
    # Every paper cited on as many pages: the sentences citing each, or no count at all.
    same = replace(edition, papers=tuple(replace(p, cited_in=edition.papers[0].cited_in)
                                         for p in edition.papers))
    labels = {same.citing_label(p) for p in same.papers}
    assert not any("synthesis page" in label for label in labels)
    assert labels <= {"where it is cited"} or all("sentence" in label for label in labels)


# 2. The "since" page: the facts first --------------------------------------------------------

def test_the_since_page_puts_the_facts_before_the_models_prose_and_keys_only_its_marks() -> None:
    first = fixed_edition()
    v2 = replace(PAPERS[0], arxiv_id="2611.00001v2",
                 abstract="An abstract about paged attention revisited, with a 15% gain.")
    second = fixed_edition(published=[first.record], edition="2026-12-09",
                           papers=(v2, PAPERS[1], paper(4, "Drafting Beyond Speculation")))
    research_map = second.pages[0]
    prose = "MODEL PROSE with a mark ⚠ quote not in paper."
    wrong = ClaimCheck("Paper 1 saves memory.", (1,), "not_in_paper", "q", None, "", "changes#1")
    page = replace(research_map, stem="since-last-edition", kind="changes",
                   template="changes.md.j2", heading="What changed since 2026-12-02",
                   answers=(replace(research_map.answers[0], linked=prose),), evidence=(wrong,))
    text = render_template(make_environment(ROOT), "changes.md.j2", edition=second, page=page)
    facts, model = text.index("**Revised**"), text.index("## The model's comparison")
    assert text.index("<del>12%</del>") < model < text.index("MODEL PROSE")
    assert text.index("**Themes.**") < model and facts < model
    key = text[text.index("!!! abstract"):]
    assert KEY in key and "Not backed: 1 quote not in the paper" in key
    ticked = replace(page, evidence=(replace(wrong, verdict="supported"),))
    key = render_template(make_environment(ROOT), "changes.md.j2", edition=second, page=ticked)
    assert KEY in key and "Not backed" not in key


# 3. Glitches ---------------------------------------------------------------------------------

def test_a_concluding_list_stays_a_list_at_a_glance() -> None:
    answer = ("## Analysis\n\nPaper 1 is fast.\n\n## Conclusion\n\nIn short:\n"
              "- **First** point of the list (Paper 2).\n- Second point\n  goes on.\n")
    lead, points = concluding(answer)
    assert lead == "In short:"
    assert points == ("First point of the list (Paper 2).", "Second point goes on.")
    # No heading: the closing list with the line leading into it.
    assert concluding("It depends (Paper 1).\n\nTo sum up:\n1. one\n2. two\n") == (
        "To sum up:", ("one", "two"))
    edition = fixed_edition()
    thinking = next(p for p in edition.pages if p.kind == "thinking")
    summary = thinking.thinking
    assert summary is not None and summary.compared is not None
    listed = compare(("thinking-off", answer), ("thinking-on", "Use Paper 1."), {1, 2, 3}, None)
    page = replace(thinking, thinking=replace(summary, compared=listed))
    text = render_template(make_environment(ROOT), "thinking.md.j2", edition=edition, page=page)
    glance = text[text.index("## At a glance"):text.index("The full answers follow")]
    assert "**Without thinking, it concludes:** In short:\n\n- First point of the list (" in glance
    assert "\n- Second point goes on.\n" in glance and " - Second" not in glance


def test_the_headers_date_never_breaks() -> None:
    header = ('<div class="md-header__topic" data-md-component="header-topic">\n'
              '<span class="md-ellipsis">\nWhat changed since 2026-11-25 · 2026-12-02\n</span>')
    out = whole_dates(header + "<p>2026-12-02 in the body</p>")
    assert out.count('<span class="digest-date">') == 2
    assert '<span class="digest-date">2026-12-02</span>\n</span>' in out
    assert out.endswith("<p>2026-12-02 in the body</p>")
    css = (ROOT / "templates" / "assets" / "digest.css").read_text()
    assert ".md-header__topic .digest-date { white-space: nowrap; }" in css


LONG = " ".join(["word"] * 120)


def test_a_long_sections_body_folds_under_its_heading_and_a_short_one_stays() -> None:
    answer = (f"Intro.\n\n## First\n\n{LONG}\n\n## Long one\n\n{LONG}\n\n```\n"
              "## not a heading\n```\n\n## Short one\n\nA few words.\n")
    folded = fold_sections(answer)
    # The first section is the page's opening, read first: it stays open on a phone.
    assert folded.startswith(f"Intro.\n\n## First\n\n{LONG}\n\n## Long one\n\n"
                             "??? digest-fold \"Read this section (")
    assert f"\n    {LONG}\n\n    ```\n    ## not a heading\n    ```\n" in folded
    assert folded.endswith("## Short one\n\nA few words.\n")
    assert fold_sections(f"## Only one\n\n{LONG}\n") == f"## Only one\n\n{LONG}\n"
    # Links, their tooltips and evidence boxes are no words a reader reads.
    linked = " ".join(['[A](papers/a.md "A title of many words here")'] * 40)
    assert fold_sections(f"## A\n\n{linked}\n\n## B\n\nb\n") == f"## A\n\n{linked}\n\n## B\n\nb\n"


def test_the_research_map_and_thinking_answers_fold_and_hostile_text_stays_inert() -> None:
    answer = (f"## Field overview\n\n<script>alert(1)</script> Paper 1 leads. {LONG}\n\n"
              f"## Open problems\n\n{LONG}\n\n## Methods\n\n{LONG}\n")
    edition = one_paper_edition("FastKV: A Cache", ("Ada",), "An abstract.", answer)
    pages = render_edition(make_environment(ROOT), edition, []).pages
    for stem in ("research-map", "thinking"):
        page = pages[f"editions/{edition.name}/{stem}.md"]
        assert page.count('digest-fold "Read this section (') >= 2, stem
        # The opening section is read as it is: its words are not behind a tap on a phone.
        opening = page.split("Field overview", 1)[1].split("Open problems", 1)[0]
        assert "digest-fold" not in opening and "leads" in opening, stem
        assert "<script" not in page and "&lt;script>" in page, stem
    deep = pages[f"editions/{edition.name}/deep-dive-1.md"]
    assert "digest-fold" not in deep  # only the long pages a reader named fold
