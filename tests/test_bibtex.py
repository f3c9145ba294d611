"""Citations out: each edition's papers.bib, and a question's, read back by a BibTeX parser that
is not ours (bibtexparser): one entry per paper, the fields arXiv's own export gives, keys the
same in every edition, and hostile titles and names intact, never breaking an entry."""

from __future__ import annotations

import re
from pathlib import Path

from bibtexparser.entrypoint import parse_string
from bibtexparser.library import Library

from generator.archive.bibtex import Citable, bibliography, edition_bibtex
from generator.ask.pages import Site, question_bibtex, question_pages
from generator.edition.render import make_environment, render_edition
from generator.prompts.kinds import BUILTIN_KINDS
from generator.text.safe_text import text_of
from tests.edition_fixture import EDITION, fixed_edition
from tests.scenario import fortnight

ROOT = Path(__file__).resolve().parents[1]
# How LaTeX prints each command the writer may use: the test's own table, not the product's.
PRINTS = {r"\textbackslash{}": "\\", r"\textbraceleft{}": "{", r"\textbraceright{}": "}",
          r"\textasciitilde{}": "~", r"\textasciicircum{}": "^", r"\textless{}": "<",
          r"\textgreater{}": ">", "{@}": "@", r"\%": "%", r"\&": "&", r"\#": "#", r"\$": "$",
          r"\_": "_"}
HOSTILE = (r"}, author = {Evil}, note = {x} @misc{pwn, title = {Owned",
           r"\input{/etc/passwd} 100% of $\alpha$ & #1_a ~^ <b>x</b>",
           "@comment{ unclosed {{{ and \\",
           "Ada and Bo, Jr.")


def parsed(text: str) -> Library:
    library = parse_string(text)
    assert not library.failed_blocks, [b.error for b in library.failed_blocks]
    return library


def printed(value: str) -> str:
    """A field's value as LaTeX prints it: the commands read, the grouping braces dropped."""
    pattern = re.compile("|".join(re.escape(k) for k in sorted(PRINTS, key=len, reverse=True))
                         + r"|[{}]")
    return pattern.sub(lambda m: PRINTS.get(m.group(0), ""), value)


def top_level_names(value: str) -> list[str]:
    """An author field's names, split as BibTeX splits them: at " and " outside braces."""
    names, depth, start = [], 0, 0
    for index, char in enumerate(value):
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth == 0 and value.startswith(" and ", index):
            names.append(value[start:index])
            start = index + 5
    return [*names, value[start:]]


def test_an_editions_bibtex_has_one_entry_per_paper_with_arxivs_fields() -> None:
    edition = fixed_edition()
    pages = render_edition(make_environment(ROOT), edition, []).pages
    library = parsed(pages[f"editions/{EDITION}/papers.bib"])
    assert [e.key for e in library.entries] == [f"arXiv:{p.paper.base_id}" for p in edition.papers]
    first = {k: f.value for k, f in library.entries[0].fields_dict.items()}
    assert first == {"title": "{Paged Attention Revisited}", "author": "Ada Author1 and Bo Writer",
                     "year": "2026", "eprint": "2611.00001", "archivePrefix": "arXiv",
                     "primaryClass": "cs.LG", "version": "1",
                     "url": "https://arxiv.org/abs/2611.00001v1"}
    # Linked from the overview and from each paper's page.
    assert "](papers.bib)" in pages[f"editions/{EDITION}/index.md"]
    for item in edition.papers:
        page = pages[f"editions/{EDITION}/papers/{item.paper.slug}.md"]
        assert "[BibTeX](../papers.bib)" in page and f"`arXiv:{item.paper.base_id}`" in page


def test_hostile_titles_and_names_stay_whole_inside_their_own_entry() -> None:
    papers = [Citable(f"2611.0000{i}v2", title, (title, "Normal Name", "X and Y"), "2026-11-02",
                      ("cs.LG",)) for i, title in enumerate(HOSTILE, start=1)]
    library = parsed(bibliography(papers, "Edition 2026-12-02 @ the lab"))
    assert len(library.entries) == len(HOSTILE) and not library.strings
    for paper, entry in zip(papers, library.entries, strict=True):
        fields = entry.fields_dict
        assert entry.key == f"arXiv:{paper.arxiv_id[:-2]}"
        assert set(fields) == {"title", "author", "year", "eprint", "archivePrefix",
                               "primaryClass", "version", "url"}
        assert printed(fields["title"].value) == " ".join(text_of(paper.title).split())
        value = fields["author"].value
        assert "\\input" not in value.replace("\\textbackslash{}input", "")
        # Three authors, whatever the first one's name says ("and", a comma).
        names = top_level_names(value)
        assert [printed(n) for n in names] == [" ".join(text_of(paper.title).split()),
                                               "Normal Name", "X and Y"]


def test_a_paper_keeps_its_key_across_editions_and_questions() -> None:
    days = fortnight()
    first = {e.key: e for e in parsed(edition_bibtex(days.first.record)).entries}
    second = {e.key: e for e in parsed(edition_bibtex(days.second.record)).entries}
    shared = set(first) & set(second)
    assert shared  # PagedAttention, revised: the same key, its new version
    for key in shared:
        assert first[key]["eprint"] == second[key]["eprint"]
    assert any(first[k]["version"] != second[k]["version"] for k in shared)
    records = [days.second.record, days.first.record]
    question = days.question
    text = question_bibtex(question, Site.of(records))
    keys = [e.key for e in parsed(text).entries]
    assert keys == [f"arXiv:{p.base_id}" for p in question.papers]
    assert set(keys) <= set(first) | set(second)
    # Each as its newest edition has it, authors and all; the page links the file.
    cited = {e.key: e for e in parsed(text).entries}
    assert all(cited[k]["author"] for k in keys)
    pages = question_pages(make_environment(ROOT), [question], BUILTIN_KINDS, Site.of(records))
    assert pages[f"questions/{question.slug}.bib"] == text
    assert f"]({question.slug}.bib)" in pages[question.page]
