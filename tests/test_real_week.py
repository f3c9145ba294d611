"""A real model's week, read well (issue 74): the forms DeepSeek-V4-Flash and other real
models write in cross-paper syntheses, each read the way a reader means it. Unit tests on fixed
text: cheap, no build."""

from __future__ import annotations

import re

import markdown

from generator.edition.citations import CitationLinker
from generator.edition.model import ClaimCheck
from generator.edition.picks import backing_claims, says_what
from generator.evidence.checks import Verdict
from generator.evidence.claims import claims_of, sentences
from generator.text.safe_text import md_model
from tests.htmlcheck import elements
from tests.test_citations import papers


def linked(text: str, shift: int = 1,
           evidence: dict[str, ClaimCheck] | None = None) -> tuple[str, CitationLinker]:
    linker = CitationLinker("research-map", papers(),
                            names={p.number: p.paper.title.split(":")[0] for p in papers()})
    linker.evidence = evidence
    return md_model(text, shift, linker), linker


def test_a_citation_after_the_full_stop_belongs_to_the_sentence_before_it() -> None:
    answer = ("Sharding the cache scales serving beyond a single node. (Paper 5) Chunked prefill "
              "keeps decoding steady (Paper 7).\nBatching matters. (Papers 1, 4)\n")
    assert [s for s, _ in sentences(answer.split("\n")[0])] == [
        "Sharding the cache scales serving beyond a single node. (Paper 5)",
        "Chunked prefill keeps decoding steady (Paper 7)."]
    claims = claims_of(answer, range(1, 10))
    assert [(c.sentence, c.papers) for c in claims] == [
        ("Sharding the cache scales serving beyond a single node. (Paper 5)", (5,)),
        ("Chunked prefill keeps decoding steady (Paper 7).", (7,)),
        ("Batching matters. (Papers 1, 4)", (1, 4))]
    # A parenthesis that says something is a sentence of its own, as before.
    assert sentences("It works. (Paper 2 shows that it does not scale.)")[0] == ("It works.", " ")


def test_a_line_that_only_names_or_lists_papers_is_no_claim() -> None:
    answer = ("**Papers:** 1 (FlashDecoding), 4 (Continuous Batching)\n"
              "Papers: FlashDecoding, Quantized KV Caches\n"
              "(Paper 5)\n"
              "FlashDecoding splits the keys across blocks.\n")
    names = {1: ("FlashDecoding",), 5: ("Quantized KV Caches",)}
    claims = claims_of(answer, range(1, 10), names=names)
    assert [(c.sentence, c.papers) for c in claims] == [
        ("FlashDecoding splits the keys across blocks.", (1,))]


def test_a_picks_why_is_a_sentence_that_says_what_the_paper_does() -> None:
    def check(sentence: str, verdict: Verdict = "supported") -> ClaimCheck:
        return ClaimCheck(sentence, (2,), verdict, "a quote of seven words from it", 2, "",
                          f"research-map#{len(sentence)}", decided="backed")

    bare = check("SAC (Paper 2)")
    row = check("Paper 2: EgoSchema - Appears in it for long-form video understanding")
    cell = check("Paper 2 | paged KV cache | 2.4× |")
    names = check("Papers: Paper 2, Paper 5.")
    prose = check("Paper 2 halves the latency of decoding at batch size one. (Paper 2)")
    assert [says_what(c.sentence) for c in (bare, row, cell, names, prose)] == [
        False, False, False, False, True]
    assert backing_claims([bare, row, cell, names]) == {}
    assert backing_claims([bare, row, prose]) == {2: prose}


def test_headings_carry_links_never_marks_and_their_claims_are_made_in_the_body() -> None:
    answer = ("## Cluster 1: caches (Papers 1, 5)\n\nPaper 5 cuts memory by 1.83×.\n\n"
              "### Quantized KV Caches (Paper 5) gains 1.83×\n\nMore text here.")
    claims = claims_of(answer, range(1, 10), 1)
    assert [c.sentence for c in claims] == ["Paper 5 cuts memory by 1.83×."]
    heading = "Cluster 1: caches (Papers 1, 5)"
    evidence = {heading: ClaimCheck(heading, (1, 5), "no_quote", "", None, ""),
                claims[0].sentence: ClaimCheck(claims[0].sentence, (5,), "supported", "q", 5, "")}
    md, linker = linked(answer, 1, evidence)
    heads = [line for line in md.split("\n") if line.startswith("#")]
    assert len(heads) == 2
    for line in heads:
        assert "digest-ev" not in line and "digest-found" not in line and "⚠" not in line
        assert "](papers/" in line  # the papers it names are linked
    body = md.split("\n")[2]
    assert "digest-ev-supported" in body and "digest-found" in body
    html = markdown.markdown(md, extensions=["toc"])
    ids = [attrs.get("id", "") for tag, attrs in elements(html) if tag in ("h2", "h3")]
    assert all(len(i) < 80 for i in ids), ids


def test_heading_levels_follow_the_answers_own_top_level() -> None:
    answer = "### Priorities\n\ntext\n\n#### First\n\nmore\n\n```\n# a comment\n```"
    md = md_model(answer, 2)
    assert re.findall(r"^#+ \w+", md, re.MULTILINE) == ["### Priorities", "#### First",
                                                         "# a"]
    assert md_model("# Top\n\n## Sub", 1).split("\n\n")[:2] == ["## Top", "### Sub"]


def test_every_paper_of_a_named_multi_paper_citation_is_linked_and_checked() -> None:
    answer = ("Papers 3 (PagedAttention), 7 (Chunked Prefill), and 9 (Tail Latency) measure "
              "energy per token.")
    (claim,) = claims_of(answer, range(1, 10))
    assert claim.papers == (3, 7, 9)
    md, linker = linked(answer)
    html = markdown.markdown(md)
    hrefs = [attrs["href"] for tag, attrs in elements(html) if tag == "a"]
    assert hrefs == [f"papers/2501.0{n:04d}v1.md" for n in (3, 7, 9)]
    assert sorted(linker.result.cited) == [3, 7, 9]
    text = re.sub(r"<[^>]+>", "", html)
    assert not re.search(r"(?<![\w.])(?:3|7|9)(?![\w.])", text), text  # no bare bundle number
    # A name given to some of the numbers only: every one still read.
    (claim,) = claims_of("Papers 3, 7 (Chunked Prefill), and 9 measure energy.", range(1, 10))
    assert claim.papers == (3, 7, 9)


def test_a_figure_check_says_where_it_looked_and_warns_only_for_one_not_in_the_paper() -> None:
    import json

    from generator.completions import Completion
    from generator.evidence.quotes import PaperText, check_claims
    from generator.papers import FullText, NumberedPaper, Paper

    paper = NumberedPaper(1, Paper("2606.00001v1", "EnerInfer: Energy of Inference", ("A",),
                                   "2026-06-01", "2026-06-01",
                                   "EnerInfer cuts energy per token by 45.8% on long prompts.",
                                   ("cs.LG",), "", None),
                          FullText("ok", "We measure the energy of each decoding step on GPUs.",
                                   1, 1), 100)
    texts = {1: PaperText.of(paper)}
    quote = "We measure the energy of each decoding step on GPUs"

    def check(sentence: str) -> tuple[str, str]:
        (claim,) = claims_of(sentence, {1})
        batch = Completion(name="e", model="m", content=json.dumps(
            {"claims": [{"claim": 1, "paper": 1, "quote": quote}]}), finish_reason="stop")
        (checked,) = check_claims([claim], [(range(1, 2), batch)], texts)
        return checked.verdict, checked.note

    verdict, note = check("Paper 1 cuts energy per token by 45.8%.")  # in the abstract
    assert verdict == "supported" and "45.8% is in the paper, but not in the quote" in note
    verdict, note = check("Paper 1 cuts energy per token by 61%.")
    assert verdict == "figure_missing"
    assert "61% is not in the paper (not in the quote, nor in the abstract" in note


def test_a_sentence_citing_several_papers_shows_what_was_found_per_paper() -> None:
    from generator.evidence.checks import PaperQuote

    def part(paper: int, verdict: Verdict) -> PaperQuote:
        found = paper if verdict == "supported" else None
        return PaperQuote(paper, verdict, "a quote of seven words from it" if found else "",
                          found)

    verdicts: list[Verdict] = ["supported", "no_quote", "no_quote", "supported", "no_quote"]
    parts = tuple(part(n, v) for n, v in zip((1, 3, 5, 7, 9), verdicts, strict=True))
    sentence = "Papers 1, 3, 5, 7 and 9 all page the cache."
    check = ClaimCheck(sentence, (1, 3, 5, 7, 9), "no_quote", parts[0].quote, 1, "",
                       parts=parts)
    assert check.standing == "no_quote" and check.mark_text == "⚠ quoted for 2 of 5"
    wrong = ClaimCheck(sentence, (1, 3), "wrong_paper", "q", 1, "",
                       parts=(parts[0], PaperQuote(3, "wrong_paper", "q", 5)))
    assert wrong.mark_text == "⚠ wrong paper · quoted for 1 of 2"
    # A paper's own page shows its part: found for 1, none for 3.
    assert check.standing_for(1) == "supported" and check.standing_for(3) == "no_quote"
    assert check.for_paper(7).mark.text == "○ quote found, not judged"
    md, linker = linked(sentence, 1, {sentence: check})
    assert 'digest-ev-mark">⚠ quoted for 2 of 5<' in md
    assert [s for _, s in linker.result.contexts[1]] == ["supported"]
    assert [s for _, s in linker.result.contexts[3]] == ["no_quote"]
    # One paper's sentence is unchanged.
    one = ClaimCheck("Paper 1 pages it.", (1,), "no_quote", "", None, "")
    assert one.mark_text == "⚠ no quote found" and one.standing_for(1) == "no_quote"


def test_no_name_is_said_twice_in_a_reference_list_or_a_sentence(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from types import SimpleNamespace

    from generator.archive.names import name_citations, opens_with
    from generator.edition.render import make_environment

    assert opens_with("SAC: Soft Actor-Critic Serving", "SAC")
    assert opens_with("Flash-Decoding for Long Context", "FlashDecoding")
    assert not opens_with("Soft Actor-Critic", "SAC") and not opens_with("A title", "")
    paper = SimpleNamespace(title="Kamera: Unified Long-Video Memory", slug="2606.00001v1",
                            published="2026-06-01", abs_url="https://arxiv.org/abs/2606.00001",
                            short_authors=lambda n: "A. Author")
    other = SimpleNamespace(title="Soft Actor-Critic Serving", slug="2606.00002v1",
                            published="2026-06-01", abs_url="", short_authors=lambda n: "B")
    items = {1: SimpleNamespace(name="Kamera", paper=paper),
             2: SimpleNamespace(name="SAC", paper=other)}
    page = SimpleNamespace(citations=SimpleNamespace(cited={1: 1, 2: 1}))
    edition = SimpleNamespace(paper=items.__getitem__)
    listed = make_environment(tmp_path).get_template("_key.md.j2").render(
        page=page, edition=edition)
    assert "**[Kamera: Unified Long-Video Memory](papers/2606.00001v1.md)**." in listed
    assert "**[SAC](papers/2606.00002v1.md)**: Soft Actor-Critic Serving." in listed
    assert "Kamera · Kamera" not in listed and "Kamera**: Kamera" not in listed
    # "JetFlow (Paper 7)": the name, then its own citation, reads once.
    assert name_citations("JetFlow (Paper 7) streams the cache.", {7: "JetFlow"}) == (
        "JetFlow streams the cache.")
    md, _ = linked("Chunked Prefill (Paper 7) keeps decoding steady.")
    assert md.count("Chunked Prefill") == 2  # the link's words and its tooltip, once in prose
    assert "Chunked Prefill ([" not in md


def test_the_models_preamble_about_the_bundle_is_not_published() -> None:
    from generator.archive.overview import overview_text, without_preamble

    body = "## Field overview\n\nServing is memory-bound (Paper 1). Caches are paged.\n"
    for opening in ("Here is the research map based on the provided bundle of twenty papers.",
                    "Okay, based on the provided bundle, here is a structured map:",
                    "**Here's a research map of the supplied papers:**"):
        assert without_preamble(f"{opening}\n\n{body}") == body
        assert overview_text(f"{opening}\n\nServing is memory-bound (Paper 1).") == (
            "Serving is memory-bound (Paper 1).")
    # An opening that is the answer's own prose, or cites, or is all there is, stays.
    for kept in ("Here is why caches matter: they grow with context.\n\n" + body,
                 "Based on the provided papers, Paper 3 leads.\n\n" + body,
                 "Here is the research map based on the provided bundle."):
        assert without_preamble(kept) == kept


def test_a_cut_field_paragraph_ends_at_a_sentence() -> None:
    from generator.archive.overview import at_a_sentence, overview_text

    paragraph = ("Serving long contexts is now memory-bound rather than compute-bound. "
                 "Every paper of the week pages, compresses or moves the cache. The search for "
                 "larger batches has been exhausted, and the next gains come from placement.")
    cut = overview_text(f"## Field overview\n\n{paragraph}", limit=150)
    assert cut == ("Serving long contexts is now memory-bound rather than compute-bound. Every "
                   "paper of the week pages, compresses or moves the cache.")
    assert at_a_sentence("one two three four five six", 12) == "one two…"


def test_the_research_map_shows_its_marks_on_a_phone_as_the_deep_dives_do(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from types import SimpleNamespace

    from generator.edition.render import make_environment

    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "_page_notes.md.j2").write_text("", encoding="utf-8")
    mark = '<span class="digest-ev digest-ev-backed">✓ backed</span>'
    sections = "\n\n".join(f"## Section {n}\n\n" + " ".join(["Caches grow with context."] * 30)
                           + f" {mark}." for n in range(1, 5))
    completion = SimpleNamespace(ok=True, cut=False, truncated=False)
    answer = SimpleNamespace(completion=completion, linked=sections)
    page = SimpleNamespace(heading="Research map", answers=[answer])
    edition = SimpleNamespace(themes=())
    env = make_environment(tmp_path)
    shown = env.get_template("research_map.md.j2").render(page=page, edition=edition)
    assert "digest-fold" not in shown and shown.count("✓ backed") == 4
    # The thinking page's long answers still fold, as before.
    assert "digest-fold" in env.from_string("{{ text | fold_sections }}").render(text=sections)


def test_the_feed_renders_a_questions_answer_as_html_and_words_picks_as_the_site() -> None:
    from generator.archive.feed import answer_html

    answer = ("## Which papers page the cache?\n\n**PagedAttention** and *KVQuant* do; "
              "<img src=x onerror=alert(1)> stays text.\n\n- one\n- two\n\n"
              "| Paper | Gain |\n|---|---|\n| KVQuant | 2.4× |")
    shown = answer_html(answer)
    assert "##" not in shown and "**" not in shown
    assert "<strong>PagedAttention</strong>" in shown and "<li>one</li>" in shown
    assert "<table>" in shown and "&lt;img" in shown and "<img" not in shown
    long = "\n\n".join(f"Paragraph {n} says a thing about caches." for n in range(200))
    cut = answer_html(long, limit=200)
    assert cut.endswith("<p>…</p>") and "Paragraph 3 says" in cut and "Paragraph 150" not in cut


def test_only_an_answers_top_headings_say_whose_answer_they_are() -> None:
    from generator.edition.render import suffix_headings

    body = "### Analysis\n\ntext\n\n#### Memory\n\n```\n### not a heading\n```\n\n### Verdict"
    assert suffix_headings(body, " (with thinking)") == (
        "### Analysis (with thinking)\n\ntext\n\n#### Memory\n\n```\n### not a heading\n```\n\n"
        "### Verdict (with thinking)")


def test_a_quoted_phrase_after_a_colon_is_not_read_as_a_wrong_title() -> None:
    md, linker = linked('Paper 5: "memory use falls when keys are stored in four bits".')
    assert "title mismatch" not in md and linker.result.problems == []
    # Right after the number, a quoted title that is not the paper's is still flagged.
    md, linker = linked('Paper 5 "Tree Attention for Everyone" halves the cost.')
    assert "title mismatch" in md
    # After a colon, one that names another paper of the bundle is flagged too.
    md, linker = linked('Paper 5: "Chunked Prefill" halves the cost.')
    assert "title mismatch" in md


def test_the_mail_gives_a_picks_whole_title_where_its_name_does_not_say_it() -> None:
    from dataclasses import replace

    from generator.config import EmailSettings
    from generator.deliver.newsletter import newsletter
    from tests.edition_fixture import fixed_edition

    record = fixed_edition().record
    assert record.picks
    first = record.picks[0]
    nicknamed = replace(record, picks=(replace(first, name="PAR"), *record.picks[1:]))
    mail = newsletter("Test Digest", nicknamed, "https://digest.example.org/", EmailSettings())
    assert "1. PAR" in mail.text and f"   {first.title} · " in mail.text
    same = newsletter("Test Digest", record, "https://digest.example.org/", EmailSettings())
    assert f"   {first.title} · " not in same.text  # its name opens the title: said once


def test_a_sentence_shown_on_a_paper_page_has_no_space_before_its_stop() -> None:
    from generator.evidence.claims import as_read, plain_sentence

    sentence = "Paper 5 stores the cache in *four bits*."
    assert plain_sentence(sentence) == "Paper 5 stores the cache in four bits ."  # the key
    assert as_read(plain_sentence(sentence)) == "Paper 5 stores the cache in four bits."
    assert as_read("Costs fall , or “so” .") == "Costs fall, or “so”."
    check = ClaimCheck(plain_sentence(sentence), (5,), "supported", "q", 5, "")
    _, linker = linked(sentence, 1, {check.sentence: check})
    assert [s for s, _ in linker.result.contexts[5]] == [
        "Quantized KV Caches stores the cache in four bits."]


def test_a_heading_holds_no_flag_either() -> None:
    linker = CitationLinker("research-map", papers(), withdrawn={5: "Withdrawn: an error."})
    md = md_model('## Caches (Paper 5, Paper 12) and Paper 3 "Tree Attention"\n\n'
                  "Paper 5 halves memory.", 1, linker)
    heading, body = md.split("\n\n", 1)
    assert "](papers/" in heading and "digest-flag" not in heading and "⚠" not in heading
    assert "⚠\u00a0withdrawn" in body
    assert [p.number for p in linker.result.problems] == [12, 3]  # recorded all the same


def test_the_models_own_nickname_for_a_paper_stays_beside_its_link() -> None:
    md, _ = linked("Paper 7 (JetFlow) streams the prompt in chunks. JetFlow wins.")
    assert md.startswith('[Chunked Prefill](papers/2501.00007v1.md "Chunked Prefill") (JetFlow)'
                         " streams")
    md, _ = linked("Paper 7 (Chunked Prefill for Long Prompts) streams the prompt in chunks.")
    assert "(Chunked Prefill for Long Prompts)" not in md  # the link says that name already


def test_a_sentence_in_a_script_without_case_is_still_a_claim() -> None:
    (claim,) = claims_of("Paper 3 将键值缓存分页存放，内存占用降低一半。", range(1, 10))
    assert claim.papers == (3,)
