"""No answer breaks a week (issue 69), on fixed objects: a paper agreeing with itself ("Paper 1
and Learning to Evict agree on the mechanism." where Paper 1 is Learning to Evict) is dropped
for reading with its verdict, on the comparison's page, the home page and `digest ask`'s
terminal answer alike, and every helper that puts a mark after a sentence is total over text
a rule emptied."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.archive.history import History
from generator.archive.lead import comparison
from generator.archive.record import EditionRecord
from generator.ask.pages import terminal_answer
from generator.cli import cli
from generator.cli.common import read_config
from generator.edition.failed_pages import PagesFailed
from generator.edition.model import Edition
from generator.edition.render import cited, make_environment, render_edition, render_template
from generator.evidence.claims import before_stop
from generator.pipeline.render import render_stage
from generator.pipeline.services import workspace_cache
from generator.store.cache import Cache
from tests import scenario
from tests.conftest import ROOT
from tests.edition_fixture import EDITION, fixed_edition
from tests.scenario import FIRST, SECOND, TREE, edition_of

EVICT = "Learning to Evict"
SELF = f"Paper 1 and {EVICT} agree on the mechanism."
MARK_RE = re.compile(r'<span class="digest-ev digest-ev-\w+"')


def with_self_agreement(answer: str, before: str) -> str:
    return answer.replace(before, f"{SELF} {before}", 1)


@pytest.fixture(scope="module")
def editions() -> tuple[Edition, Edition]:
    """Two weekly editions; the second's Paper 1 is "Learning to Evict" (its title's own
    name) and its comparison says it agrees with itself (a quote found for it, judged to back
    it)."""
    names = dict(scenario.NAMES)
    names[TREE.base_id] = EVICT
    evict = replace(TREE, title=f"{EVICT}: Tree-Shaped Drafts for Speculative Decoding")
    answers = dict(scenario.SECOND_ANSWERS)
    answers["since-last-edition"] = with_self_agreement(
        answers["since-last-edition"], "Paper 3 (PagedAttention) is revised")
    quotes = dict(scenario.QUOTES)
    quotes[("agree on the mechanism", TREE.base_id)] = "cuts latency by 3.4x at batch size 1"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scenario, "NAMES", names)
        first = edition_of(FIRST, (scenario.PAGED, scenario.SPEC, scenario.QUANT),
                           scenario.FIRST_ANSWERS, [])
        second = edition_of(SECOND, (evict, scenario.CHUNK, scenario.PAGED_V2,
                                     scenario.QUANT_GONE), answers, [first.record],
                            quotes=quotes)
    assert second.record.names[1] == EVICT
    return first, second


@pytest.fixture(scope="module")
def week(editions: tuple[Edition, Edition]) -> tuple[EditionRecord, EditionRecord]:
    return editions[0].record, editions[1].record


def _checked_self_agreement(record: EditionRecord) -> EditionRecord:
    """`record` as a release before this one kept it: the dropped sentence with its verdict."""
    assert record.checks is not None
    kept = record.checks["since-last-edition"]
    backed = next(c for c in kept if c.standing == "backed")
    return replace(record, checks={**record.checks, "since-last-edition": (
        replace(backed, sentence=SELF, papers=(1,), id="since-last-edition#9"), *kept)})


def test_a_paper_agreeing_with_itself_is_dropped_with_its_mark_where_cited_restates_it(
        week: tuple[EditionRecord, EditionRecord]) -> None:
    """The crash of `render.cited` (`said[-1]` on a sentence papers_once emptied), on a record
    that still holds the sentence's verdict: the sentence and its mark go, the rest stays."""
    _, second = week
    old = _checked_self_agreement(second)
    text = f"{SELF} Paper 3 (PagedAttention) is revised with a higher throughput figure of 2.4×."
    out = cited(text, old, own=True, marked=True)
    assert "agree" not in out and out.startswith("[PagedAttention]")
    assert len(MARK_RE.findall(out)) == 1  # the kept sentence's mark only
    for alone in (SELF, f"  {SELF}  ", "", "   ", "\n\n"):
        assert not MARK_RE.search(cited(alone, old, own=True, marked=True)), alone


def test_the_home_pages_comparison_never_shows_a_mark_alone(
        week: tuple[EditionRecord, EditionRecord]) -> None:
    """`_comparison.md.j2`, as the next edition's home page renders it from the record."""
    first, second = week
    env = make_environment(ROOT)
    home = render_template(env, "home.md.j2", title="Digest",
                           records=[_checked_self_agreement(second), first])
    assert "agree on the mechanism" not in home
    assert not re.search(r"(^|[.:(]\s*)<span class=\"digest-ev", home, re.M)


def test_the_sentence_keeps_no_verdict_and_the_figures_count_what_is_shown(
        editions: tuple[Edition, Edition]) -> None:
    first, second = editions[0].record, editions[1].record
    assert second.checks is not None
    assert all("agree on the mechanism" not in c.sentence
               for checks in second.checks.values() for c in checks)
    compared = comparison(second)
    assert compared is not None and compared.figure is not None
    shown = len([s for s in re.split(r"(?<=\.) ", compared.text) if s])
    assert compared.figure.claims == shown == 3
    pages = render_edition(make_environment(ROOT), editions[1], [first]).pages
    for path, page in pages.items():  # the record keeps the answer as it came, unread
        assert path.endswith(".json") or "agree on the mechanism" not in page, path


def test_digest_asks_terminal_answer_drops_the_sentence_and_its_mark(
        week: tuple[EditionRecord, EditionRecord], monkeypatch: pytest.MonkeyPatch) -> None:
    """`evidence/claims.py: before_stop` (`sentence[-1]` on the emptied sentence)."""
    first, second = week
    monkeypatch.setattr(scenario, "ANSWER", scenario.ANSWER.replace(
        "Paper 2 (SpecDecode) cuts", f"Paper 1 and {EVICT} agree on the mechanism. "
        "Paper 2 (SpecDecode) cuts"))
    monkeypatch.setattr(scenario, "QUOTES", {
        **scenario.QUOTES, ("agree on the mechanism", TREE.base_id): "cuts latency by 3.4x"})
    renamed = replace(second, papers=second.papers, names={**second.names, 1: EVICT})
    question = scenario.ask({FIRST: first, SECOND: renamed})
    assert question.names[1] == EVICT
    assert all("agree on the mechanism" not in c.sentence for c in question.checks or ())
    text = terminal_answer(question)
    assert "agree on the mechanism" not in text
    assert not re.search(r"(^|[.:]\s*)\[[✓✗?⚠~]", text, re.M)
    # A record an earlier release wrote, the verdict still in it: the same, no traceback.
    check = next(iter(question.checks or ()))
    old = replace(question, checks=(replace(check, sentence=SELF, papers=(1,)),
                                    *(question.checks or ())))
    assert "agree on the mechanism" not in terminal_answer(old)


@pytest.mark.parametrize("text", ["", " ", "\n", "…", "—", "|", ".", "?!"])
def test_a_mark_never_follows_a_sentence_without_words(text: str) -> None:
    assert before_stop(text, "[✓ backed]") == text
    assert before_stop("It saves 4%.", "[✓]") == "It saves 4% [✓]."
    assert before_stop("| a | b |", "[✓]") == "| a | b [✓] |"


# One page's fault is not the edition's ------------------------------------------------------

@pytest.mark.parametrize(("template", "why"), [
    ("# ok\n\n{{ page.no_such_thing }}\n", "line 3 failed"),
    ('# ok\n\n{{ page.heading.index("\\x00") }}\n', "internal fault (ValueError"),
])
def test_a_page_that_raises_in_its_template_stands_as_a_failure_page(
        tmp_path: Path, template: str, why: str) -> None:
    """The page says it failed and why, in our words; every other page is made; the run
    report lists it."""
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "research_map.md.j2").write_text(template)
    rendered = render_edition(make_environment(tmp_path), fixed_edition(), [])
    path = f"editions/{EDITION}/research-map.md"
    assert [f.path for f in rendered.failed] == [path] and why in rendered.failed[0].why
    page = rendered.pages[path]
    assert "could not be made in this run" in page and why in page
    assert "Traceback" not in page and "\\x00" not in page
    assert "could not be made" in rendered.pages[f"editions/{EDITION}/run-report.md"]
    assert path in rendered.pages[f"editions/{EDITION}/run-report.md"]
    normal = render_edition(make_environment(ROOT), fixed_edition(), [])
    assert sorted(normal.pages) == sorted(rendered.pages) and not normal.failed
    for other, text in normal.pages.items():
        if other not in (path, f"editions/{EDITION}/run-report.md"):
            assert rendered.pages[other] == text, other


def test_a_build_with_a_failed_page_publishes_the_rest_exits_1_naming_it_and_retries_it(
        workspace: Path) -> None:
    ws = workspace.parent
    (ws / "templates").mkdir()
    (ws / "templates" / "research_map.md.j2").write_text(
        '# ok\n\n{{ page.heading.index("\\x00") }}\n')
    path = f"editions/{EDITION}/research-map.md"
    result = CliRunner().invoke(cli, ["build", "--config", str(workspace), "--edition", EDITION])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit)
    assert f"1 page(s) could not be made: {path}" in result.output
    docs = ws / "site_src"
    assert "could not be made in this run" in (docs / path).read_text()
    assert path in (docs / "editions" / EDITION / "run-report.md").read_text()
    assert (docs / "editions" / EDITION / "index.md").is_file()
    assert (ws / "site" / "editions" / EDITION / "research-map.html").is_file()
    # The next run makes it again: no fingerprint says the edition is rendered already.
    config = read_config(str(workspace))
    with pytest.raises(PagesFailed, match="research-map.md"):
        render_stage(config, workspace_cache(config), EDITION, only_if_changed=True,
                     history=History.load(config.docs_dir, remaking=(EDITION,)))


def test_no_command_ends_in_a_raw_traceback(monkeypatch: pytest.MonkeyPatch,
                                            workspace: Path) -> None:
    """A fault of ours anywhere (here: `digest render` on a fault past every page) is one
    line in our words and exit 1."""
    def broken(*args: object, **kwargs: object) -> None:
        raise IndexError("string index out of range")

    monkeypatch.setattr("generator.cli.edition_name", broken)
    result = CliRunner().invoke(cli, ["render", "--config", str(workspace)])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    assert "internal fault (IndexError: string index out of range)" in result.output
    assert "Traceback" not in result.output


def test_a_mail_that_cannot_be_made_is_said_in_our_words_and_the_chat_post_goes_on(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from generator.edition.failed_pages import SurfaceFailed
    from generator.pipeline import send as sending

    def broken(*args: object, **kwargs: object) -> None:
        raise IndexError("string index out of range")

    monkeypatch.setattr(sending, "newsletter", broken)
    monkeypatch.setattr(sending, "published_record", lambda config, edition: fixed_edition(
        ).record)
    config = read_config(str(ROOT / "config.toml"))
    with pytest.raises(SurfaceFailed, match="the mail of edition 2026-12-02 could not be made: "
                       r"an internal fault \(IndexError"):
        sending.send_stage(config, Cache(tmp_path), None, {}, dry_run=True)


@pytest.mark.parametrize(("name", "path"), [("atom_feed", "feed.xml"),
                                            ("edition_bibtex", f"editions/{EDITION}/papers.bib")])
def test_a_feed_or_bibtex_that_cannot_be_made_keeps_the_last_good_file(
        monkeypatch: pytest.MonkeyPatch, name: str, path: str) -> None:
    def broken(*args: object, **kwargs: object) -> str:
        raise IndexError("string index out of range")

    monkeypatch.setattr(f"generator.edition.render.{name}", broken)
    rendered = render_edition(make_environment(ROOT), fixed_edition(), [])
    assert [f.path for f in rendered.failed] == [path]
    assert path not in rendered.pages  # not written: the file published last time stays
    assert path in rendered.pages[f"editions/{EDITION}/run-report.md"]


def test_a_paper_agreeing_with_itself_by_the_answers_own_name_for_it_keeps_no_verdict() -> None:
    """The name the answer itself gave the paper ("Paper 1 (Evicto)") makes the sentence a
    paper agreeing with itself too: the page's linker drops it, and so do the record's checks
    and the figure (read_away reads the answer's names as the linker does)."""
    answers = dict(scenario.SECOND_ANSWERS)
    nicknamed = "Paper 1 (Evicto) drafts a tree of tokens. Paper 1 and Evicto agree on the mechanism."
    answers["since-last-edition"] = answers["since-last-edition"].replace(
        "Paper 3 (PagedAttention) is revised", f"{nicknamed} Paper 3 (PagedAttention) is revised",
        1)
    quotes = dict(scenario.QUOTES)
    quotes[("agree on the mechanism", TREE.base_id)] = "cuts latency by 3.4x at batch size 1"
    first = edition_of(FIRST, (scenario.PAGED, scenario.SPEC, scenario.QUANT),
                       scenario.FIRST_ANSWERS, [])
    second = edition_of(SECOND, (TREE, scenario.CHUNK, scenario.PAGED_V2, scenario.QUANT_GONE),
                        answers, [first.record], quotes=quotes)
    assert second.record.checks is not None
    sentences = [c.sentence for checks in second.record.checks.values() for c in checks]
    assert any("drafts a tree of tokens" in s for s in sentences)  # the answer was checked
    assert not any("agree on the mechanism" in s for s in sentences)
