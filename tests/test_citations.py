"""Citations in model output: linked, checked against the bundle, figures looked up."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import markdown
from click.testing import CliRunner

from generator.cli import cli
from generator.edition.citations import CitationLinker, title_score
from generator.papers import FullText, NumberedPaper, Paper
from generator.text.safe_text import md_model
from tests.htmlcheck import elements, live_problems
from tests.servers.sglang import Answer, SglangServer, task_of

TITLES = ["FlashDecoding: Faster Long-Context Inference", "Speculative Decoding at Scale",
          "PagedAttention for KV Cache Memory", "Continuous Batching in Practice",
          "Quantized KV Caches", "Prefix Sharing with Radix Trees", "Chunked Prefill",
          "Disaggregated Serving", "Tail Latency under Load"]


def papers() -> list[NumberedPaper]:
    out = []
    for n, title in enumerate(TITLES, start=1):
        paper = Paper(f"2501.0{n:04d}v1", title, ("A. Author",), "2025-01-01", "2025-01-01",
                      f"We study {title.lower()}. It gives a 1.83× speedup." if n == 5 else
                      f"Abstract of {title}.", ("cs.LG",), "", None)
        text = FullText("ok", "Costs fell by 45.8% in production.", 1, 1) if n == 5 else FullText(
            "not_requested")
        out.append(NumberedPaper(n, paper, text, len(text.text)))
    return out


def link(text: str) -> tuple[str, CitationLinker]:
    linker = CitationLinker("research-map", papers())
    return md_model(text, 1, linker), linker


def test_every_citation_form_links_to_the_paper_page() -> None:
    md, linker = link("Paper 5 is key. Papers 1, 8, 9 agree. Papers 3–5 differ (Paper 2). "
                      "See paper 7 and Papers 1 and 6.")
    html = markdown.markdown(md)
    hrefs = [attrs["href"] for tag, attrs in elements(html) if tag == "a"]
    assert hrefs == [f"papers/2501.0{n:04d}v1.md" for n in [5, 1, 8, 9, 3, 5, 2, 7, 1, 6]]
    assert 'title="Quantized KV Caches"' in html
    assert sorted(linker.result.cited) == [1, 2, 3, 4, 5, 6, 7, 8, 9]
    assert linker.result.problems == []


def test_a_paper_outside_the_bundle_is_flagged_where_it_stands() -> None:
    md, linker = link("Paper 12 claims much, as do Papers 2, 15.")
    html = markdown.markdown(md)
    assert html.count("⚠ not in this edition") == 2
    assert "There is no Paper 12 in this edition: its bundle has papers 1–9." in html
    assert [(p.number, p.reason) for p in linker.result.problems] == [
        (12, "no Paper 12 in this edition's bundle"), (15, "no Paper 15 in this edition's bundle")]
    assert linker.result.cited == {2: 1}


def test_a_title_naming_another_paper_is_flagged() -> None:
    md, linker = link('Paper 3 ("Speculative Decoding at Scale") shows it. '
                      "Paper 1 (FlashDecoding) is right. Paper 2 (see Table 4) too. "
                      'Paper 4, "A Title Nobody Wrote", says so.')
    problems = [(p.number, p.reason) for p in linker.result.problems]
    assert problems == [
        (3, "the title given names Paper 2, not Paper 3"),
        (4, "Paper 4 is titled “Continuous Batching in Practice”"),
    ]
    assert md.count("⚠ title mismatch") == 2
    assert title_score("FlashDecoding", TITLES[0]) == 1.0


def test_a_citation_in_parentheses_is_not_read_as_a_title() -> None:
    """"Paper 2 (Paper 4)" names a second paper, not a title; a title with a number in it
    ("GPT-4") once matched it and flagged a mismatch naming a third paper."""
    numbered = papers()
    fifth = numbered[4]
    numbered[4] = NumberedPaper(5, Paper(fifth.paper.arxiv_id, "Serving 4 Models at Once",
                                         ("A. Author",), "2025-01-01", "2025-01-01", "Abstract.",
                                         ("cs.LG",), "", None), fifth.full_text, fifth.excerpt_chars)
    linker = CitationLinker("research-map", numbered)
    md = md_model("Paper 2 (Paper 4) agree on it. Paper 6 (2023) says so too. "
                  "Paper 1 (Papers 3–5) is older.", 1, linker)
    assert linker.result.problems == []
    assert "title mismatch" not in md
    assert sorted(linker.result.cited) == [1, 2, 3, 4, 5, 6]


def test_figures_are_looked_up_in_the_cited_papers_text() -> None:
    md, linker = link("Paper 5 reports a 45.8% cost reduction and a 1.83× speedup. "
                      "Paper 5 also claims 3.2x lower latency. Papers 1 and 2 report 10% gains.")
    checks = [(f.paper, f.figure, f.found) for f in linker.result.figures]
    assert checks == [(5, "45.8%", True), (5, "1.83×", True), (5, "3.2x", False)]
    assert md.count('class="digest-found"') == 2 and md.count('class="digest-flag"') == 1
    html = markdown.markdown(md)
    assert live_problems(html) == []


def test_code_is_left_alone() -> None:
    md, linker = link("Use `Paper 3` literally.\n\n```\nPaper 4 reports 50%\n```\n")
    assert "`Paper 3`" in md and "Paper 4 reports 50%" in md
    assert linker.result.cited == {}


def test_citations_end_to_end(workspace: Path, sglang_server: SglangServer) -> None:
    answer = (
        "## Findings\n\n"
        "Paper 5 reports 55.6% of answers correct, while Paper 5 also claims a 12.5% gain. "
        "Papers 1, 2 and 3 test software (Paper 4). Papers 3–4 agree; paper 6 does not.\n\n"
        'Paper 9 is out of scope. Paper 2 ("Active Fuzzing for Testing and Securing '
        'Cyber-Physical Systems") says so.\n'
    )
    sglang_server.state.responder = lambda body: Answer(
        answer if "Task:" in task_of(body) else "Paper 1 alone.")
    result = CliRunner().invoke(cli, ["build", "--config", str(workspace), "--edition", "2026-12-02"])
    assert result.exit_code == 0, result.output

    ws = workspace.parent
    edition = ws / "site_src" / "editions" / "2026-12-02"
    record = json.loads((edition / "edition.json").read_text())
    rm = record["citations"]["research-map"]
    assert [r["number"] for r in rm["resolved"]] == [1, 2, 3, 4, 5, 6]
    assert rm["resolved"][0]["arxiv_id"] == "2202.12139v1"
    assert {(u["number"], u["reason"]) for u in rm["unresolved"]} == {
        (9, "no Paper 9 in this edition's bundle"),
        (2, "the title given names Paper 3, not Paper 2")}
    assert [(f["paper"], f["figure"], f["found"]) for f in rm["figures"]] == [
        (5, "55.6%", True), (5, "12.5%", False)]
    # The deep dives answered "Paper 1 alone.": their own record.
    assert [r["number"] for r in record["citations"]["memory-management"]["resolved"]] == [1]

    html = (ws / "site" / "editions" / "2026-12-02" / "research-map.html").read_text()
    body = re.search(r"<article[^>]*>(.*)</article>", html, re.DOTALL)
    assert body
    content = body.group(1)
    assert live_problems(content) == []
    assert 'href="papers/2202.12139v1.html"' in content  # relative link to the paper page
    assert "⚠ not in this edition" in content and "⚠ title mismatch" in content
    assert "digest-found" in content and "digest-flag" in content

    report = (edition / "run-report.md").read_text()
    assert "## Citations" in report and "2 citation problem(s)" in report
    assert "| 12.5% | **not found** |" in report
    paper = (edition / "papers" / "2202.12139v1.md").read_text()
    assert "## Cited in" in paper and "[Research map](../research-map.md)" in paper
    # Read by name (archive/names.py), never "Papers 1, 2 and 3", in the paper's "Cited in".
    names = json.loads((edition / "edition.json").read_text())["names"]
    assert not any(name.endswith("…") for name in names.values())  # whole titles, never cut
    assert f"{names['1']}, {names['2']} and {names['3']} test software" in paper
    assert "Papers 1, 2 and 3" not in paper
    assert "No synthesis page of this edition cites" not in paper
    assert "digest.css" in (ws / "site" / "index.html").read_text()


def test_a_paper_is_named_as_a_reader_knows_it() -> None:
    """The name its own title gives, else the brief's name where the title carries it, else
    the whole title, never cut; two papers never share a name."""
    from generator.archive.names import name_citations, short_name

    assert short_name("Efficient Memory Management for LLM Serving with PagedAttention",
                      "PagedAttention") == "PagedAttention"
    # A name the title does not carry is not taken (an abstract that mentions it is not enough).
    assert short_name("Efficient Memory Management for LLM Serving", "PagedAttention") == \
        "Efficient Memory Management for LLM Serving"
    assert short_name("FlashDecoding: Faster Long-Context Inference", "TurboServe") == \
        "FlashDecoding"
    assert short_name("A Very Long Title Without Any Colon In It", "") == \
        "A Very Long Title Without Any Colon In It"
    # A colon that separates no name, a head that names no system, a piece of a word.
    assert short_name("Efficient 2:4 Sparse LLMs") == "Efficient 2:4 Sparse LLMs"
    assert short_name("Position: KV Caches Are Enough") == "Position: KV Caches Are Enough"
    assert short_name("Scaling Transformer Inference on GPUs", "GPU") == \
        "Scaling Transformer Inference on GPUs"
    names = {1: "FlashDecoding", 8: "Chunked Prefill", 9: "Tail Latency"}
    assert name_citations("Paper 1 shows it; Papers 9, 8 agree. Paper 12 does not exist.",
                          names) == ("FlashDecoding shows it; Tail Latency and Chunked Prefill "
                                     "agree. Paper 12 does not exist.")


def test_a_name_belongs_to_its_own_paper() -> None:
    """FastKV's brief names the system it beats (PagedAttention), which paper 2 is: FastKV is
    FastKV and PagedAttention is paper 2's. A title that reads as a citation, or a name two
    titles give, is never a name that could be taken for another paper."""
    from generator.archive.names import name_citations, paper_names

    def item(n: int, title: str) -> NumberedPaper:
        return NumberedPaper(n, Paper(f"2612.9000{n}v1", title, ("A. Author",), "2026-12-01",
                                      "2026-12-01", "An abstract.", ("cs.LG",), "", None),
                             FullText("not_requested"), 0)

    papers = [item(1, "Serving KV Caches Twice as Fast as PagedAttention"),
              item(2, "Efficient Memory Management for LLM Serving with PagedAttention"),
              item(3, "Paper 1"),
              item(4, "Speculative Decoding: A Survey"), item(5, "Speculative Decoding: Revisited")]
    names = paper_names(papers, {1: "PagedAttention", 2: "PagedAttention", 3: "Paper 1"})
    assert names == {1: "Serving KV Caches Twice as Fast as PagedAttention",
                     2: "Efficient Memory Management for LLM",  # over 50: its first words
                     3: "arXiv 2612.90003v1",
                     4: "Speculative Decoding: A Survey", 5: "Speculative Decoding: Revisited"}
    fastkv = [item(1, "FastKV: Serving KV Caches Twice as Fast"), papers[1]]
    names = paper_names(fastkv, {1: "PagedAttention", 2: "PagedAttention"})
    assert names == {1: "FastKV", 2: "PagedAttention"}
    assert name_citations("Paper 1 is twice as fast as the baseline.", names) == (
        "FastKV is twice as fast as the baseline.")
    assert name_citations("Paper 3 agrees.", {3: "arXiv 2612.90003v1"}) == \
        "arXiv 2612.90003v1 agrees."


def test_citations_link_the_papers_names() -> None:
    linker = CitationLinker("research-map", papers(), names={1: "FlashDecoding", 8: "Chunked Prefill",
                                                             9: "Tail [Latency]"})
    md = md_model("Papers 1, 8 and 9 agree. Paper 1 is key.", 1, linker)
    html = markdown.markdown(md)
    texts = [unescape(text) for text in re.findall(r"<a [^>]*>([^<]*)</a>", html)]
    assert texts == ["FlashDecoding", "Chunked Prefill", "Tail [Latency]", "FlashDecoding"]
    assert "Paper" not in re.sub(r"<[^>]+>", "", html)


def test_the_picks_are_what_the_synthesis_leans_on_with_figures_checked() -> None:
    """Without triage: the papers most pages cite, each with its brief's TL;DR, a figure the
    paper does not state flagged (a paper no page cites is never a pick)."""
    from generator.edition.model import Brief
    from generator.edition.picks import editors_picks

    numbered = papers()
    names = {p.number: p.paper.title.split(":")[0] for p in numbered}
    briefs = {5: Brief("Cuts costs by 45.8% and latency by 3.2x.", "", "", "", ""),
              2: Brief("Drafts tokens cheaply.", "", "", "", "")}
    picks = editors_picks(numbered, names, briefs, {2: 3, 5: 3, 7: 1}, None)
    assert [(p.number, p.pages) for p in picks] == [(2, 3), (5, 3), (7, 1)]
    assert picks[1].why_from == "brief" and picks[1].unfound == ("3.2x",)  # 45.8% is in it
    assert picks[2].why == "" and picks[2].score is None
    assert editors_picks(numbered, names, briefs, {}, None) == ()


def test_a_pick_says_why_with_a_sentence_a_quote_from_that_very_paper_backs() -> None:
    """The backing claim is one supported by a quote found in the picked paper itself (about
    it alone where there is one); a paper no such claim backs says so and ranks after."""
    from generator.edition.model import Brief, ClaimCheck
    from generator.edition.picks import backing_claims, editors_picks

    def claim(sentence: str, cites: tuple[int, ...], verdict: str, found: int | None
              ) -> ClaimCheck:
        return ClaimCheck(sentence, cites, verdict, "a quote of seven words from it",  # type: ignore[arg-type]
                          found, "", f"research-map#{len(sentence)}")

    claims = [claim("Paper 2 and Paper 5 share a cache.", (2, 5), "supported", 2),
              claim("Paper 5 drafts tokens for Paper 2.", (5, 2), "wrong_paper", 2),
              claim("Paper 2 halves the latency of decoding.", (2,), "supported", 2),
              claim("Paper 7 invents a benchmark.", (7,), "not_in_paper", None),
              claim("Paper 5 is cited for Paper 2's quote.", (5, 2), "supported", 2)]
    backing = backing_claims(claims)
    assert backing == {2: claims[2]}  # alone beats shared; a wrong paper or other's quote never
    numbered = papers()
    names = {p.number: p.paper.title.split(":")[0] for p in numbered}
    briefs = {7: Brief("Invents a benchmark.", "", "", "", "")}
    picks = editors_picks(numbered, names, briefs, {5: 4, 7: 2, 2: 1}, None, claims=claims)
    assert [p.number for p in picks] == [2, 5, 7]  # the backed pick first, then by pages
    assert picks[0].backed and picks[0].why == claims[2].sentence
    assert picks[0].why_from == "synthesis" and picks[0].claim == claims[2]
    assert not picks[2].backed and picks[2].why_from == "brief"


def test_picks_are_by_merit_new_before_revised_and_never_a_low_score_beside_a_better() -> None:
    """Every new paper before a revised one (the mail's subject names the top pick), by triage
    score among them; a paper scored under half the best pickable score is no pick, however
    many pages cite it; only news is pickable (paper 1 is seen before)."""
    from generator.edition.picks import editors_picks
    from generator.papers import Candidate, Triage

    numbered = papers()
    names = {p.number: p.paper.title.split(":")[0] for p in numbered}
    scored = {1: 9, 2: 7, 3: 7, 4: 1, 5: 3, 6: 4}
    triage = Triage("q", 10, tuple(Candidate(p.paper, "selected", scored[p.number], "fits")
                                   for p in numbered if p.number in scored))
    changes = {2: "2501.00002v1 replaces 2501.00002v0, covered in edition 2026-11-25", 3: "",
               4: "", 5: "", 6: ""}
    pages = {4: 6, 5: 6, 6: 1}
    picks = editors_picks(numbered, names, {}, pages, triage, changes=changes)
    assert [(p.number, p.score) for p in picks] == [(3, 7), (6, 4), (2, 7)]
    assert picks[0].change == "" and picks[2].change.startswith("2501.00002v1 replaces")
    # Without triage: by the pages citing each, news only.
    picks = editors_picks(numbered, names, {}, pages, None, changes=changes)
    assert [p.number for p in picks] == [4, 5, 6]


def test_a_quoted_sentence_keeps_its_comparison_signs() -> None:
    """Only a blockquote's leading marker goes: "latency > 10 ms" keeps its ">" ("Cited in")."""
    from generator.evidence.claims import plain_sentence

    assert plain_sentence("&gt; Paper 2 keeps latency &gt; 10 ms, *far* below `x`.") == (
        "Paper 2 keeps latency > 10 ms, far below x .")
