"""Continuity: each edition says what changed since the last one (follow-ups, revisions,
withdrawals, themes over time, the field compared), against a test arXiv whose window
changes between editions and that answers id_list lookups as arXiv does."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from generator.archive.lead import lead_parts
from generator.archive.names import WITHDRAWN_FLAG
from generator.archive.news import News
from generator.cli import cli
from generator.edition.render import cited
from generator.prompts.kinds import BUILTIN_KINDS
from tests.conftest import read_record, write_config
from tests.feeds import Entry, atom_feed
from tests.servers.arxiv import ArxivServer
from tests.servers.sglang import INVENTED, Answer, SglangServer, default_responder, task_of

FIRST, SECOND = "2026-11-25", "2026-12-02"
LONG = ("across twelve open benchmarks with careful ablations of every component and a public "
        "release of the code")
A1 = Entry("2611.10001v1", "FastKV: Compressing the Cache of Long Prompts",
           f"We compress the key-value cache of long prompts by forty percent {LONG}.")
A2 = Entry("2611.10002v1", "Paged Attention for Serving at Scale",
           f"We page the attention cache so that serving cuts memory by half {LONG}.")
A3 = Entry("2611.10003v1", "Speculative Decoding with Tiny Drafts",
           f"Tiny draft models make decoding twice as fast on every model we tried {LONG}.")
A4 = Entry("2611.10004v1", "Batching Requests Continuously",
           f"Continuous batching raises the throughput of a serving system {LONG}.")
B = Entry("2612.20001v1", "Longer Prompts, Smaller Caches",
          f"We extend arXiv:2611.10001 to prompts of a million tokens and save more memory {LONG}.",
          published="2026-12-01T10:00:00Z")
A2V2 = Entry("2611.10002v2", A2.title,
             f"We page the attention cache so that serving cuts memory by two thirds {LONG}.",
             published="2026-12-01T09:00:00Z")
A3V2 = Entry("2611.10003v2", A3.title,
             "This paper has been withdrawn by the author due to an error in the experiments.",
             published="2026-12-01T08:00:00Z")
C = Entry("2612.20002v1", "Quantum Error Correction with Surface Codes",
          f"Surface codes protect logical qubits against noise {LONG}.",
          published="2026-12-01T07:00:00Z")
COMPARISON = "Compare this edition's papers with the previous edition's research map"


def comparison_responder(body: dict[str, Any]) -> Answer:
    if COMPARISON in task_of(body):
        # The double quotes claim 1 from its paper, claim 2 from another, claim 3 invented.
        return Answer("Disagrees: Paper 2 with [research-map#1]\n\n"
                      "Paper 1 extends FastKV to prompts of a million tokens, saving memory. "
                      "Paper 2 now reports a larger memory saving.\n")
    return default_responder(body)


@pytest.fixture(scope="module")
def two_editions(tmp_path_factory: pytest.TempPathFactory, fixtures: Path
                 ) -> Iterator[tuple[Path, ArxivServer, SglangServer, dict[str, Any]]]:
    """Edition 1 with A1-A4; edition 2 with B (extends A1 by id), A2 v2 (a changed abstract),
    A3 v2 (withdrawn) and C (unrelated); arXiv's id lookup answers each paper's latest."""
    arxiv, sglang = ArxivServer(fixtures).start(), SglangServer().start()
    sglang.state.responder = comparison_responder
    try:
        config = write_config(tmp_path_factory.mktemp("continuity") / "ws", arxiv, sglang,
                              max_papers=4, full_text_papers=0, structured=True,
                              evidence=True, continuity=True)
        counts: dict[str, Any] = {}
        arxiv.state.feed_override = atom_feed([A1, A2, A3, A4])
        build(config, FIRST)
        counts["first"] = (len(arxiv.state.api_requests()), len(sglang.state.chat_requests))
        arxiv.state.feed_override = atom_feed([B, A2V2, A3V2, C])
        arxiv.state.id_feed = atom_feed([A1, A2V2, A3V2, A4])
        build(config, SECOND)
        counts["second"] = (len(arxiv.state.api_requests()), len(sglang.state.chat_requests))
        yield config, arxiv, sglang, counts
    finally:
        arxiv.stop()
        sglang.stop()


def build(config: Path, edition: str) -> None:
    result = CliRunner().invoke(cli, ["build", "--config", str(config), "--edition", edition],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output


def docs(config: Path, path: str) -> str:
    return (config.parent / "site_src" / path).read_text()


def test_continuity_costs_one_lookup_and_two_model_requests_and_a_rebuild_none(
        two_editions: tuple[Path, ArxivServer, SglangServer, dict[str, Any]]) -> None:
    config, arxiv, sglang, counts = two_editions
    api = arxiv.state.api_requests()
    first_api, first_model = counts["first"]
    second_api, second_model = counts["second"]
    # Edition 1: no history, so no lookup and no comparison.
    assert first_api == 1 and not any("id_list=2611" in r for r in api[:first_api])
    # Edition 2: its search and one id_list request for the four papers covered before.
    lookups = [r for r in api[first_api:second_api] if "id_list=2611" in r]
    assert second_api - first_api == 2 and len(lookups) == 1
    assert all(i in lookups[0] for i in ("2611.10001", "2611.10002", "2611.10003", "2611.10004"))
    asked = [json.dumps(b) for b in sglang.state.chat_requests[first_model:second_model]]
    comparison = [b for b in asked if COMPARISON in b and "Evidence check." not in b]
    checks = [b for b in asked if COMPARISON in b and "Evidence check." in b]
    assert len(comparison) == 1 and len(checks) == 1  # two model requests in all
    # The comparison shares the bundle's prefix and carries the previous map by name.
    body = sglang.state.chat_requests[first_model:second_model][asked.index(comparison[0])]
    assert "FastKV" in body["messages"][1]["content"].rsplit("\n---\n", 1)[-1]
    # A rebuild asks nothing more of either.
    build(config, SECOND)
    assert len(arxiv.state.api_requests()) == second_api
    assert len(sglang.state.chat_requests) == second_model


def test_a_follow_up_links_the_earlier_paper_and_its_page_says_so(
        two_editions: tuple[Path, ArxivServer, SglangServer, dict[str, Any]]) -> None:
    config = two_editions[0]
    record = read_record(config, SECOND)
    assert record.continuity and record.continuity.previous == FIRST
    (follow,) = record.continuity.followups
    assert (follow.earlier, follow.by, follow.edition) == ("2611.10001", "arXiv id", FIRST)
    assert follow.quote.startswith("We extend arXiv:2611.10001")  # the sentence, not the title
    overview = docs(config, f"editions/{SECOND}/index.md")
    assert "](../../papers/2611.10001.md)** (edition 2026-11-25), naming it by its arXiv id" \
        in overview
    home = docs(config, "papers/2611.10001.md")
    assert "## Followed up by" in home and f"in edition {SECOND}" in home
    assert "follows up [FastKV](papers/2611.10001.md)" in docs(config, "index.md")


def test_a_revised_paper_shows_its_abstract_word_diff(
        two_editions: tuple[Path, ArxivServer, SglangServer, dict[str, Any]]) -> None:
    config = two_editions[0]
    record = read_record(config, SECOND)
    assert record.continuity
    revised = {r.before: r for r in record.continuity.revised}
    assert set(revised) == {"2611.10002v1"}  # A3 v2 is said once, as withdrawn
    assert ("-", "half") in revised["2611.10002v1"].diff
    assert ("+", "two thirds") in revised["2611.10002v1"].diff
    overview = docs(config, f"editions/{SECOND}/index.md")
    assert "<del>half</del> <ins>two thirds</ins>" in overview


def test_a_withdrawn_paper_is_flagged_on_its_page_the_lead_the_feed_and_earlier_citations(
        two_editions: tuple[Path, ArxivServer, SglangServer, dict[str, Any]]) -> None:
    config = two_editions[0]
    record = read_record(config, SECOND)
    assert record.continuity
    (withdrawn,) = record.continuity.withdrawn
    assert (withdrawn.base_id, withdrawn.arxiv_id) == ("2611.10003", "2611.10003v2")
    assert "Withdrawn on arXiv" in docs(config, "papers/2611.10003.md")
    assert f"is withdrawn on arXiv: “{withdrawn.notice}”" in docs(config, "index.md")
    # Listed and counted as withdrawn, never as an update.
    overview = docs(config, f"editions/{SECOND}/index.md")
    listed = overview.split("### Withdrawn on arXiv (1) { data-search-exclude }", 1)[1]
    assert "2611.10003v2" in listed.split("\n### ", 1)[0]
    assert "2611.10003v2" not in overview.split("### Withdrawn on arXiv", 1)[0].split(
        "## Papers", 1)[1]
    lead = "".join(piece for piece, _ in lead_parts(record))  # the mail's first line
    assert lead.startswith("2 new (1 a follow-up) · 1 revised · 1 withdrawn, of 4 papers.")
    assert f"Withdrawn on arXiv: {A3.title}" in docs(config, "feed.xml")
    # Edition 1 was rendered again: where its pages cite A3, the flag stands beside it.
    earlier = docs(config, f"editions/{FIRST}/research-map.md")
    assert "Speculative Decoding with Tiny Drafts\") <span class=\"digest-flag\"" in earlier
    assert "⚠\u00a0withdrawn" in earlier
    site = (config.parent / "site" / "editions" / FIRST / "research-map.html").read_text()
    assert "⚠\u00a0withdrawn" in site or "⚠&nbsp;withdrawn" in site


def test_a_sentence_never_names_a_withdrawn_paper_without_its_flag(
        two_editions: tuple[Path, ArxivServer, SglangServer, dict[str, Any]]) -> None:
    """The field paragraph, a pick's why and the lead (home, overview, mail, feed) read a
    record's text through one path: a withdrawn paper's name is followed by its flag."""
    record = read_record(two_editions[0], SECOND)
    (gone,) = [p for p in record.papers if p.base_id == "2611.10003"]
    other = next(p for p in record.papers if p.number != gone.number)
    assert record.withdrawn_numbers == {gone.number}
    text = f"Paper {other.number} and Paper {gone.number} agree on the mechanism."
    parts = record.cited_parts(text)
    named = [i for i, (_, number) in enumerate(parts) if number == gone.number]
    assert named and parts[named[0] + 1] == (WITHDRAWN_FLAG, None)
    alone = record.cited_parts(f"Paper {other.number} stands.")
    assert WITHDRAWN_FLAG not in "".join(piece for piece, _ in alone)
    assert f"](papers/{gone.base_slug}.md) (⚠ withdrawn) agree" in cited(text, record, own=True)


def test_a_theme_named_in_both_editions_has_one_page_with_both(
        two_editions: tuple[Path, ArxivServer, SglangServer, dict[str, Any]]) -> None:
    config, _, sglang, counts = two_editions
    page = docs(config, "themes/testing.md")
    assert f"## Edition {SECOND}" in page and f"## Edition {FIRST}" in page
    record = read_record(config, SECOND)
    assert record.continuity and "Testing" in record.continuity.themes_continuing
    # The theme map of edition 2 was given edition 1's names to reuse.
    first_model = counts["first"][1]
    themes = [json.dumps(b) for b in sglang.state.chat_requests[first_model:counts["second"][1]]
              if '\\"themes\\"' in json.dumps(b) and "Evidence check." not in json.dumps(b)]
    assert themes and all("Earlier editions of this digest named these themes: Testing"
                          in body for body in themes)
    assert (config.parent / "site" / "themes" / "testing.html").is_file()


def test_the_comparison_is_checked_and_its_disagreement_shows_both_quotes(
        two_editions: tuple[Path, ArxivServer, SglangServer, dict[str, Any]]) -> None:
    config = two_editions[0]
    record = read_record(config, SECOND)
    assert record.checks is not None and record.checks["since-last-edition"]
    assert record.continuity
    (disagreement,) = record.continuity.disagreements
    assert disagreement.claim == "research-map#1" and disagreement.earlier_edition == FIRST
    page = docs(config, f"editions/{SECOND}/since-last-edition.md")
    assert "Where a paper of this edition disagrees" in page and f"edition {FIRST} said:" in page
    assert "FastKV and Paged Attention for Serving at Scale share an approach" in page
    assert "digest-ev" in page  # the comparison's claims carry their evidence marks


def test_a_first_edition_and_one_after_an_old_record_ask_for_no_comparison() -> None:
    """No comparison request without a previous edition, or when the previous record holds
    no answers (format 2); after a complete one, one request carrying its map by name."""
    from generator.archive.history import History
    from generator.archive.record import EditionRecord
    from generator.config import Config
    from generator.papers import Bundle, FullText, NumberedPaper
    from generator.prompts.builders import build_requests
    from tests.edition_fixture import PAPERS, fixed_edition

    config = Config(path=Path("config.toml"), registry=BUILTIN_KINDS)
    bundle = Bundle(tuple(NumberedPaper(i + 1, p, FullText("not_requested"), 0)
                          for i, p in enumerate(PAPERS)), "bundle text")

    def comparisons(history: History) -> list[Any]:
        return [r for r in build_requests(config, bundle, history) if r.kind == "changes"]

    assert comparisons(History(())) == []
    old = EditionRecord.from_json(json.loads((Path(__file__).parent / "records"
                                              / "format-2.json").read_text()), "format-2")
    assert comparisons(History((old,))) == []
    (request,) = comparisons(History((fixed_edition().record,)))
    task = request.messages[-1].content
    assert task.startswith("bundle text") and "Paged Attention Revisited" in task
    assert "Paper 1 and Paper 2 improve serving" not in task  # the old numbers are names now


def test_a_disagreement_is_published_only_with_both_quotes_found() -> None:
    """The new side's quote must be found in its paper, and the earlier claim's in its own:
    a disagreement resting on a fabricated quote is not shown as one."""
    from dataclasses import replace

    from generator.edition.continuity import disagreements
    from generator.evidence.checks import ClaimCheck
    from tests.edition_fixture import fixed_edition

    earlier = fixed_edition().record
    assert earlier.checks is not None
    supported = next(c for cs in earlier.checks.values() for c in cs if c.verdict == "supported")
    answer = f"Disagrees: Paper 2 with [{supported.id}]\n"
    found = ClaimCheck(f"Disagrees: Paper 2 with {supported.id}", (2,), "supported",
                       "a quote of the new paper", 2, "", "since-last-edition#1")
    (shown,) = disagreements(answer, [found], [earlier], [1, 2, 3])
    assert shown.earlier_quote == supported.quote and shown.quote == "a quote of the new paper"
    assert "Paged Attention Revisited" in shown.earlier_sentence  # named, not "Paper 1"
    fabricated = replace(found, verdict="not_in_paper", found_in=None)
    assert disagreements(answer, [fabricated], [earlier], [1, 2, 3]) == ()
    assert disagreements("Disagrees: Paper 9 with [nope#1]", [found], [earlier], [2]) == ()


def test_no_paper_name_is_cut_short_on_any_page_or_in_the_feed(
        two_editions: tuple[Path, ArxivServer, SglangServer, dict[str, Any]]) -> None:
    """A name is the paper's own short name or its whole title, linked: never one cut with
    "…" (a quote may be, and says so)."""
    import re

    site = two_editions[0].parent / "site"
    cut_links = re.compile(r"<a\b[^>]*>([^<]{0,300}…)</a>")
    for page in [*site.rglob("*.html"), site / "feed.xml"]:
        text = page.read_text(errors="replace").replace("&lt;", "<").replace("&gt;", ">")
        assert not cut_links.findall(text), page


def test_the_evidence_popups_stay_out_of_the_search_index(
        two_editions: tuple[Path, ArxivServer, SglangServer, dict[str, Any]]) -> None:
    """A mark's popup (its quote, a fabricated one included) is not a search snippet."""
    site = two_editions[0].parent / "site"
    page = (site / "editions" / SECOND / "research-map.html").read_text()
    assert 'class="digest-ev-box" data-search-exclude' in page
    index = (site / "search" / "search_index.json").read_text()
    assert "the quote is in the text of" in page  # a popup's own words, on the page...
    assert "the quote is in the text of" not in index  # ...never in a search snippet
    assert INVENTED in page and INVENTED not in index  # a fabricated quote above all


def test_on_a_phone_the_first_screen_names_the_best_new_paper_and_the_papers_list(
        two_editions: tuple[Path, ArxivServer, SglangServer, dict[str, Any]]) -> None:
    """At 390 × 844 px, before any scrolling, the week's news: the home page's line of
    counts, its first pick (a new paper) and the first line of what changed since the last
    edition; and the edition overview's list of papers."""
    from tests.browser import launch_chromium

    config = two_editions[0]
    site = config.parent / "site"
    top, paper = read_record(config, SECOND).picked[0]
    assert paper.status == "new"
    with launch_chromium() as browser:
        for scheme in ("light", "dark"):
            page = browser.new_page(viewport={"width": 390, "height": 844}, color_scheme=scheme)
            page.goto((site / "index.html").as_uri())
            name = page.locator("article ol li a").first
            box = name.bounding_box()
            assert name.inner_text() == top.title and box is not None
            assert box["y"] + box["height"] <= 844, f"the top pick is {box['y']:.0f} px down"
            counts = page.locator("article p").first
            assert counts.inner_text().startswith(News.of(read_record(config, SECOND)).line)
            since = page.locator("article h2#since-edition-" + FIRST + " + ul li").first
            line = since.bounding_box()
            assert line is not None and since.inner_text().strip()
            assert line["y"] + line["height"] <= 844, f"'since' is {line['y']:.0f} px down"
            page.goto((site / "editions" / SECOND / "index.html").as_uri())
            heading = page.locator("article h2#papers").bounding_box()
            first = page.locator("article h4.digest-entry").first.bounding_box()
            assert heading is not None and first is not None
            assert first["y"] + first["height"] <= 844, f"the papers list is {first['y']:.0f} px down"
            page.close()
