"""What a reader sees first, on fixed objects: two editions with a follow-up, a revision and a
withdrawal. The home page and the mail lead with the best new papers, a withdrawn paper is
never named without its flag and is listed as withdrawn (not revised), and the paper's own page
carries its brief and the checks of every sentence about it (golden files).

Golden files: tests/golden-reader/; after an intended change,

    DIGEST_UPDATE_GOLDEN=1 python -m pytest -n0 tests/test_reader_first.py
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path

import pytest

from generator.config import EmailSettings
from generator.deliver.newsletter import Newsletter, newsletter
from generator.edition.model import Edition
from generator.edition.render import make_environment, render_edition
from tests.conftest import ROOT
from tests.edition_fixture import PAPERS, fixed_edition, paper

GOLDEN = Path(__file__).parent / "golden-reader"
SECOND = "2026-12-09"
GONE_TITLE = PAPERS[2].title  # "KV Cache Compression", withdrawn in the second edition
NOTICE = ("This paper has been withdrawn by the author due to an error in the throughput "
          "measurements.")


@pytest.fixture(scope="module")
def editions() -> tuple[Edition, dict[str, str], Newsletter]:
    """Edition 1: papers 1-3. Edition 2: paper 1 in v2 (a changed abstract), paper 3 in a v2
    that withdraws it, and a new paper that extends paper 2 by its arXiv id."""
    first = fixed_edition()
    v2 = replace(PAPERS[0], arxiv_id="2611.00001v2",
                 abstract="An abstract about paged attention revisited, with a 15% gain.",
                 abs_url="https://arxiv.org/abs/2611.00001v2",
                 pdf_url="https://arxiv.org/pdf/2611.00001v2")
    gone = replace(PAPERS[2], arxiv_id="2611.00003v2", abstract=NOTICE,
                   abs_url="https://arxiv.org/abs/2611.00003v2", pdf_url=None)
    follower = replace(paper(4, "Drafting Beyond Speculation"),
                       abstract="We extend Speculative Decoding at Scale (arXiv:2611.00002) "
                                "to tree-shaped drafts.")
    second = fixed_edition(published=[first.record], edition=SECOND,
                           papers=(v2, gone, follower))
    pages = render_edition(make_environment(ROOT), second, [first.record]).pages
    mail = newsletter("Test Digest", second.record, "https://digest.example.org/",
                      EmailSettings())
    return second, pages, mail


def golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("DIGEST_UPDATE_GOLDEN"):
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from {GOLDEN} (docstring)"


def test_the_home_page_mail_and_paper_pages_match_their_golden_files(
        editions: tuple[Edition, dict[str, str], Newsletter]) -> None:
    _, pages, mail = editions
    golden("index.md", pages["index.md"])
    golden("papers__2611.00001.md", pages["papers/2611.00001.md"])
    golden("papers__2611.00003.md", pages["papers/2611.00003.md"])
    golden("mail.txt", mail.text)
    golden("mail.html", mail.html)


def test_the_home_page_leads_with_the_new_picks_then_what_changed(
        editions: tuple[Edition, dict[str, str], Newsletter]) -> None:
    """The first section is the picks, a new paper before the revised one; then "since";
    a paper the picks name is not listed again under "also new"."""
    second, pages, _ = editions
    home = pages["index.md"]
    sections = re.findall(r"^## (.+?)(?: \{.*\})?$", home, re.M)
    assert sections[:2] == ["Editor's picks", "Since edition 2026-12-02"], sections
    picks = second.record.picked
    assert [paper.status for _, paper in picks] == ["new", "updated"]
    assert home.index(picks[0][0].name) < home.index("## Since edition")
    # Listed once (the pick; "since" says it follows up), never again under "also new".
    assert "Also new" not in home and home.count("**[Drafting Beyond Speculation]") == 2
    # One line of news, then the picks; the query and the field are the overview's.
    assert home.startswith(f"# Edition {SECOND}\n\n**1 new (a follow-up) · 1 revised · "
                           "1 withdrawn** · [all 3 papers]")
    assert "ti:inference" not in home and "## The field" not in home
    assert "ti:inference" in pages[f"editions/{SECOND}/index.md"]


def test_a_withdrawn_paper_is_listed_as_withdrawn_with_its_reason_and_always_flagged(
        editions: tuple[Edition, dict[str, str], Newsletter]) -> None:
    """The version that withdraws it came in this edition's own window (no lookup): it is a
    withdrawal, never a revision, and its authors' reason is quoted whole."""
    second, pages, mail = editions
    since = second.record.continuity
    assert since is not None
    assert [w.base_id for w in since.withdrawn] == ["2611.00003"]
    assert [r.number for r in since.revised] == [1]  # paper 1's v2 only
    home = pages["index.md"]
    assert f"is withdrawn on arXiv: “{NOTICE}”" in home
    assert f"{GONE_TITLE}](papers/2611.00003.md)** is revised" not in home
    for where, text in (("home", home), ("mail text", mail.text), ("mail html", mail.html)):
        for match in re.finditer(re.escape(GONE_TITLE), text):
            before = text[max(0, match.start() - 12):match.start()]
            after = text[match.end():match.end() + 60]
            assert "⚠" in before or "withdrawn" in after, f"{where}: …{before}{GONE_TITLE}{after}…"
    assert "1 withdrawn," in mail.text and "2 revised" not in mail.text


def test_the_mail_leads_with_the_picks_and_names_the_top_new_pick(
        editions: tuple[Edition, dict[str, str], Newsletter]) -> None:
    _, _, mail = editions
    assert mail.subject == f"Test Digest · {SECOND}: Drafting Beyond Speculation"
    text = mail.text
    assert text.index("EDITOR'S PICKS") < text.index("SINCE EDITION") < text.index("THE FIELD")
    assert "1. Drafting Beyond Speculation" in text
    assert "2. Paged Attention Revisited (revised: a new version)" in text
    assert "ALSO NEW" not in text and "Top pick:" not in text  # each paper said once


def test_the_papers_own_page_has_its_brief_its_checked_sentences_and_its_revision(
        editions: tuple[Edition, dict[str, str], Newsletter]) -> None:
    _, pages, _ = editions
    own = pages["papers/2611.00001.md"]
    for part in ("**Problem.** Fragmentation.", "**Method.** Paging.", "**Result.** A 12% gain.",
                 "## What the digest says of it", "Each sentence with what its check found",
                 "## Revisions",
                 "<del>12%</del>"):
        assert part in own, part
    gone = pages["papers/2611.00003.md"]
    assert f"its latest version reads “{NOTICE}”" in gone


def test_a_withdrawn_paper_named_in_plain_words_is_flagged_too() -> None:
    """A model may name a paper by its title rather than "Paper N": the flag follows the name
    either way, whole words only."""
    from generator.archive.names import WITHDRAWN_FLAG, flag_withdrawn

    names = {1: "FastKV", 2: "Tiny Drafts"}
    parts = flag_withdrawn([("FastKV", 1), (" beats Tiny Drafts, not Tiny Draftsmen.", None)],
                           {2}, names)
    assert parts == [("FastKV", 1), (" beats ", None), ("Tiny Drafts", 2),
                     (WITHDRAWN_FLAG, None), (", not Tiny Draftsmen.", None)]
    assert flag_withdrawn([("Tiny Drafts", None)], {2}) == [("Tiny Drafts", None)]  # no names
