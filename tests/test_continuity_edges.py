"""Continuity at its edges, on fixed objects: withdrawals that are not, papers restored by a new
version, follow-ups of a paper seen again, common phrases that name no paper, one page per
theme, and the paper's own page with its follow-ups and revisions (golden files).

Golden files: tests/golden-continuity/ holds the two paper pages; after an intended change,

    DIGEST_UPDATE_GOLDEN=1 python -m pytest tests/test_continuity_edges.py
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from generator.archive.record import RecordPaper
from generator.archive.theme_pages import merge_themes, theme_slug
from generator.archive.values import Continuity, Theme
from generator.archive.withdrawn import Sighting, current, withdrawn_now
from generator.edition.continuity import find_follow_ups
from generator.edition.render import make_environment, render_edition
from generator.fetch.withdrawals import notice_in
from generator.papers import FullText, NumberedPaper, Paper, Withdrawal
from tests.conftest import ROOT
from tests.edition_fixture import PAPERS, fixed_edition, paper

GOLDEN = Path(__file__).parent / "golden-continuity"


# Withdrawals: a property of a version ---------------------------------------------------------

def test_only_a_notice_is_a_withdrawal_not_an_abstract_about_withdrawals() -> None:
    for notice in ("Withdrawn.", "withdrawn", "Withdrawn by the authors: a flaw in Lemma 2",
                   "This paper has been withdrawn by the author due to an error in Eq. 3",
                   "Paper withdrawn by arXiv admin: duplicate submission",
                   "arXiv admin note: this submission has been withdrawn by arXiv "
                   "administrators due to inappropriate text reuse",
                   "The authors have withdrawn this paper."):
        assert notice_in(notice), notice
    for abstract in ("Withdrawn preprints in the LLM literature are rarely noticed; we count "
                     "them.", "Withdrawal of consent in data sets", "Withdrawn papers cited"):
        assert notice_in(abstract) == "", abstract


def test_a_withdrawal_keeps_the_authors_reason_whole() -> None:
    """arXiv's bare notice in the comment, the authors' reason in the abstract: the reason is
    quoted whole (its full stop too), never the bare notice alone; two notices saying different
    things are both kept."""
    reason = ("This paper has been withdrawn by the author due to an error in the throughput "
              "measurements.")
    assert notice_in("This paper has been withdrawn", reason) == reason
    assert notice_in(reason, "This paper has been withdrawn.") == reason
    assert notice_in("Withdrawn.", "Withdrawn.") == "Withdrawn."
    assert notice_in("Withdrawn by arXiv admin", "This paper has been withdrawn: a dispute.") == (
        "Withdrawn by arXiv admin — This paper has been withdrawn: a dispute.")
    assert notice_in("12 pages, 3 figures", reason) == reason


def _sighting(edition: str, *versions: tuple[str, str]) -> Sighting:
    return Sighting(edition, versions=tuple((arxiv_id, "FastKV", notice_in(abstract))
                                            for arxiv_id, abstract in versions))


GONE = Withdrawal("2611.90001", "2611.90001v2", "FastKV", "Withdrawn.")


def test_a_later_normal_version_restores_a_withdrawn_paper() -> None:
    carried = _sighting("2026-11-25", ("2611.90001v1", "A fast KV cache."))
    found = Sighting("2026-12-02", ("2611.90001",), True, (GONE,))
    assert current([carried, found]) == {"2611.90001": GONE}
    restored = _sighting("2026-12-09", ("2611.90001v3", "A fast KV cache, corrected."))
    assert current([restored, carried, found]) == {}  # in edition order, whatever the order
    # An old version carried later (an edition rendered again) restores nothing.
    assert current([carried, found, _sighting("2026-12-09", ("2611.90001v1", "A fast KV"))]
                   ) == {"2611.90001": GONE}


def test_a_lookup_that_answered_clears_a_withdrawal_and_a_failed_one_does_not() -> None:
    found = Sighting("2026-12-02", ("2611.90001",), True, (GONE,))
    failed = Sighting("2026-12-09", ("2611.90001",), False)
    answered = Sighting("2026-12-16", ("2611.90001",), True)
    assert current([found, failed]) == {"2611.90001": GONE}
    assert current([found, failed, answered]) == {}


def test_a_carried_version_whose_abstract_is_the_notice_is_withdrawn() -> None:
    state = current([_sighting("2026-12-02", ("2611.90001v2", "This paper has been withdrawn "
                                              "by the authors."))])
    assert state["2611.90001"].arxiv_id == "2611.90001v2"


def test_a_carried_version_whose_comment_alone_is_the_notice_is_withdrawn() -> None:
    """arXiv often states a withdrawal only in the comment, the abstract left as it was: the
    edition that carries that version flags it, and so does its record, read by later
    editions."""
    notice = "This paper has been withdrawn by the author"
    gone = replace(PAPERS[1], arxiv_id="2611.00002v2", comment=notice)
    assert notice_in(gone.abstract) == ""  # a normal abstract
    edition = fixed_edition(papers=(PAPERS[0], gone, PAPERS[2]))
    assert edition.papers[1].withdrawn == notice
    assert edition.record.withdrawn_numbers == {2}
    assert withdrawn_now([edition.record])["2611.00002"].notice == notice


def test_the_flags_of_an_edition_follow_the_current_state() -> None:
    first = fixed_edition()
    gone = Withdrawal("2611.00002", "2611.00002v2", PAPERS[1].title, "Withdrawn.")
    found = replace(first.record, edition="2026-12-09", continuity=Continuity(
        previous=first.record.edition, withdrawn=(gone,), looked_up=("2611.00002",)))
    assert withdrawn_now([first.record, found]) == {"2611.00002": gone}
    flagged = fixed_edition(published=[first.record, found], edition="2026-12-16")
    assert flagged.papers[1].withdrawn == "Withdrawn."
    v3 = replace(PAPERS[1], arxiv_id="2611.00002v3", abs_url="https://arxiv.org/abs/2611.00002v3",
                 pdf_url="https://arxiv.org/pdf/2611.00002v3")
    restored = fixed_edition(published=[first.record, found], edition="2026-12-16",
                             papers=(PAPERS[0], v3, PAPERS[2]))
    assert restored.papers[1].withdrawn == ""
    # The earlier edition rendered again after the restoration flags nothing either.
    again = fixed_edition(published=[found, restored.record])
    assert all(p.withdrawn == "" for p in again.papers)
    pages = render_edition(make_environment(ROOT), restored, [first.record, found]).pages
    assert "Withdrawn on arXiv" not in pages["papers/2611.00002.md"]


# Follow-ups ------------------------------------------------------------------------------------

def _record_paper(number: int, arxiv_id: str, title: str, name: str) -> RecordPaper:
    base = arxiv_id.rsplit("v", 1)[0]
    return RecordPaper(number, arxiv_id, base, arxiv_id, title, "new", name=name)


def _numbered(number: int, arxiv_id: str, title: str, abstract: str) -> NumberedPaper:
    one = Paper(arxiv_id, title, ("A. Author",), "2026-12-01", "2026-12-01", abstract,
                ("cs.LG",), f"https://arxiv.org/abs/{arxiv_id}", None)
    return NumberedPaper(number, one, FullText("not_requested"), 0)


def test_a_follow_up_of_a_paper_seen_again_is_found_and_a_common_phrase_is_no_name() -> None:
    fastkv = _record_paper(1, "2611.90001v1", "FastKV: Fast Key-Value Caching", "FastKV")
    survey = _record_paper(2, "2611.90002v1", "Large Language Models: A Survey",
                           "Large Language Models")
    generic = _record_paper(3, "2611.90003v1", "A Survey of Large Language Models", "")
    abstracts = {
        1: "FastKV caches keys and values.",  # FastKV itself, in this window again
        2: "We extend FastKV (arXiv:2611.90001) to Large Language Models; a survey of large "
           "language models shows why.",
        3: "Large Language Models are everywhere; a survey of large language models helps.",
        4: "Building on FastKV, we prune caches.",
    }
    papers = [_numbered(1, "2611.90001v1", "FastKV: Fast Key-Value Caching", abstracts[1]),
              *(_numbered(n, f"2612.0000{n}v1", f"Paper {n}", abstracts[n]) for n in (2, 3, 4))]
    found = find_follow_ups(papers, {1: "seen", 2: "new", 3: "new", 4: "new"},
                            abstracts.__getitem__,
                            [(p, "2026-11-25") for p in (fastkv, survey, generic)])
    assert [(f.number, f.earlier, f.by) for f in found] == [
        (2, "2611.90001", "arXiv id"), (4, "2611.90001", "name")]


def test_a_new_paper_never_follows_itself_up() -> None:
    itself = _record_paper(1, "2611.90001v1", "FastKV: Fast Key-Value Caching", "FastKV")
    again = _numbered(1, "2611.90001v2", "FastKV: Fast Key-Value Caching",
                      "FastKV (arXiv:2611.90001) caches keys.")
    assert find_follow_ups([again], {1: "new"}, lambda n: again.paper.abstract,
                           [(itself, "2026-11-25")]) == ()


# One page per theme -----------------------------------------------------------------------------

def test_themes_sharing_a_page_are_one_theme_keeping_both_and_reserved_names_are_not_files(
        ) -> None:
    merged = merge_themes([Theme("Con", "Cons one.", (1,)), Theme("CON", "Cons two.", (2, 3)),
                           Theme("KV cache", "Caches.", (2,))])
    assert merged == (Theme("Con", "Cons one. CON: Cons two.", (1, 2, 3)),
                      Theme("KV cache", "Caches.", (2,)))
    assert [theme_slug(n) for n in ("CON", "aux", "Nul", "COM1", "lpt9", "Console")] == [
        "con-theme", "aux-theme", "nul-theme", "com1-theme", "lpt9-theme", "console"]


# The paper's own page: its follow-ups and its revisions (golden) ---------------------------------

def test_a_papers_own_page_shows_who_followed_it_up_and_what_its_new_version_changed() -> None:
    first = fixed_edition()
    v2 = replace(PAPERS[0], arxiv_id="2611.00001v2",
                 abstract="An abstract about paged attention revisited, with a 15% gain.",
                 abs_url="https://arxiv.org/abs/2611.00001v2",
                 pdf_url="https://arxiv.org/pdf/2611.00001v2")
    follower = replace(paper(4, "Drafting Beyond Speculation"),
                       abstract="We extend Speculative Decoding at Scale (arXiv:2611.00002) "
                                "to tree-shaped drafts.")
    second = fixed_edition(published=[first.record], edition="2026-12-09",
                           papers=(v2, PAPERS[1], follower))
    assert [p.status for p in second.papers] == ["updated", "seen", "new"]
    pages = render_edition(make_environment(ROOT), second, [first.record]).pages
    homes = {path: pages[path] for path in ("papers/2611.00001.md", "papers/2611.00002.md")}
    assert "## Revisions" in homes["papers/2611.00001.md"]
    assert "<del>12%</del>" in homes["papers/2611.00001.md"]
    assert "## Followed up by" in homes["papers/2611.00002.md"]
    if os.environ.get("DIGEST_UPDATE_GOLDEN"):
        GOLDEN.mkdir(exist_ok=True)
        for path, text in homes.items():
            (GOLDEN / path.replace("/", "__")).write_text(text, encoding="utf-8")
    for path, text in homes.items():
        expected = (GOLDEN / path.replace("/", "__")).read_text(encoding="utf-8")
        assert text == expected, f"{path} differs from tests/golden-continuity (see docstring)"
