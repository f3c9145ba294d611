"""`digest ask`: the archive's index, what it gathers of a paper, the answer and its page.

Stage tests run on fixed records written to a docs folder and the in-process doubles of the
`Services` seam; one end-to-end test builds an edition against the local servers, asks with
`--publish`, builds the site and renders everything again without the cache. The golden page
is in tests/golden-questions/ (`DIGEST_UPDATE_GOLDEN=1 python -m pytest tests/test_ask.py`).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import sqlite3
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from generator.archive.history import History, read_record
from generator.archive.question_record import QuestionRecord, load_questions
from generator.archive.record import EditionRecord, RecordPaper
from generator.archive.values import Brief, Continuity
from generator.ask.archive import ask_bundle
from generator.ask.index import ArchiveIndex, IndexLockedError, question_terms
from generator.ask.pages import publish_question, question_page, terminal_answer
from generator.cli import cli
from generator.config import load_config
from generator.edition.render import make_environment
from generator.errors import LockedError, UsageError
from generator.evidence.checks import ClaimCheck
from generator.papers import Withdrawal, base_of, paper_slug
from generator.pipeline.ask import INDEX_FILE, archive_index, ask_stage
from generator.prompts.kinds import BUILTIN_KINDS
from generator.publish.site import edition_nav
from generator.store.cache import Cache
from tests.conftest import ROOT, write_config
from tests.doubles import MockModel, services
from tests.servers.arxiv import ArxivServer
from tests.servers.sglang import Fault, SglangServer

GOLDEN = Path(__file__).parent / "golden-questions"
ASKED = datetime(2026, 12, 6, 9, 0, tzinfo=UTC)

TITLES = {
    "2611.00001": ("Speculative Decoding with Tiny Drafts",
                   "We draft tokens with a tiny model and verify them in one pass of the large "
                   "model, a 2.1x speedup on chat traffic."),
    "2611.00002": ("Paged Attention Revisited",
                   "Paging the KV cache in blocks removes fragmentation and raises batch sizes "
                   "for LLM inference."),
    "2611.00003": ("Learning to Evict KV Cache Entries",
                   "A learned policy evicts KV cache entries under memory pressure with little "
                   "loss in quality for LLM inference."),
    "2611.00004": ("Energy of LLM Serving on Edge Devices",
                   "We measure the energy of LLM inference on phones; speculative decoding "
                   "saves energy when acceptance is high."),
    "2611.00005": ("Continuous Batching Under Bursty Load",
                   "Continuous batching keeps GPUs busy under bursty load for LLM inference."),
}


def _paper(number: int, arxiv_id: str, status: str = "new", abstract: str = "") -> RecordPaper:
    base = base_of(arxiv_id)
    title, text = TITLES[base]
    return RecordPaper(number, arxiv_id, base, paper_slug(arxiv_id), title, status,  # type: ignore[arg-type]
                       ("Ada Author", "Bo Writer"), "2026-11-20", ("cs.LG",), abstract or text,
                       f"https://arxiv.org/abs/{arxiv_id}", name=title.split(" with ")[0])


def _record(edition: str, papers: list[RecordPaper], *, checks: bool = True,
            withdrawn: tuple[Withdrawal, ...] = ()) -> EditionRecord:
    briefs = {p.number: Brief(f"It studies {p.title.lower()}.", "A problem.", "A method.",
                              "A result.", "Few datasets.") for p in papers}
    found = {"research-map": tuple(
        ClaimCheck(f"Paper {p.number} reports its result.", (p.number,), "supported",
                   " ".join(p.abstract.split()[:8]), p.number, "", f"research-map#{p.number}")
        for p in papers)} if checks else None
    return EditionRecord(
        edition=edition, title="Test Digest", built_at=f"{edition[:10]}T06:00:00+00:00",
        papers=tuple(papers), prompts=(), names={p.number: p.name for p in papers},
        briefs=briefs, checks=found,
        continuity=Continuity(previous="x", withdrawn=withdrawn,
                              looked_up=tuple(w.base_id for w in withdrawn) + ("2611.00002",))
        if withdrawn else None)


def _write(docs: Path, record: EditionRecord) -> Path:
    path = docs / "editions" / record.edition / "edition.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record.to_json()), encoding="utf-8")
    return path


def _archive(docs: Path) -> None:
    """Three editions: the speculative-decoding paper in all three (v1, v1 again, then v2),
    found withdrawn (as v3) by the third's lookup; the others once each."""
    _write(docs, _record("2026-11-18", [_paper(1, "2611.00001v1"), _paper(2, "2611.00002v1")]))
    _write(docs, _record("2026-11-25", [_paper(1, "2611.00001v1", "seen"),
                                        _paper(2, "2611.00003v1"), _paper(3, "2611.00005v1")]))
    notice = "This paper has been withdrawn due to an error in the throughput measurements."
    _write(docs, _record("2026-12-02", [_paper(1, "2611.00001v2", "updated"),
                                        _paper(2, "2611.00004v1")],
                         withdrawn=(Withdrawal("2611.00001", "2611.00001v3",
                                               TITLES["2611.00001"][0], notice),)))


def _index(tmp_path: Path) -> ArchiveIndex:
    docs = tmp_path / "site_src"
    _archive(docs)
    index = ArchiveIndex(tmp_path / "index.sqlite")
    index.update(sorted((p.parent.name, p) for p in docs.glob("editions/*/edition.json")),
                 read_record)
    return index


def _workspace(tmp_path: Path) -> Path:
    config = tmp_path / "config.toml"
    config.write_text('[digest]\ntitle = "Test Digest"\n[arxiv]\nquery = "llm"\n',
                      encoding="utf-8")
    _archive(tmp_path / "site_src")
    return config


# The index -----------------------------------------------------------------------------------

def test_a_question_finds_its_papers_best_first_and_a_paper_of_three_editions_once(
        tmp_path: Path) -> None:
    hits = _index(tmp_path).search("what have we seen on speculative decoding?", 10)
    assert [h.base_id for h in hits] == ["2611.00001", "2611.00004"]  # title, then abstract
    assert hits[0].editions == ("2026-12-02", "2026-11-25", "2026-11-18")


def test_nothing_relevant_is_nothing_and_common_words_alone_find_nothing(tmp_path: Path) -> None:
    index = _index(tmp_path)
    assert index.search("protein folding with diffusion", 10) == []
    # "inference" is in most papers: with "protein" it tells nothing apart...
    assert index.search("protein inference", 10) == []
    # ...but a question made only of the archive's subject is answered from it.
    assert {h.base_id for h in index.search("LLM inference", 10)} >= {"2611.00002", "2611.00003"}
    assert question_terms('what "AND" OR NEAR( kv-cache?') == ["near", "kv", "cache"]
    assert index.search('"AND" OR NEAR( kv-cache', 10)  # no word of a question is FTS syntax


def test_the_window_keeps_editions_from_since_to_until(tmp_path: Path) -> None:
    index = _index(tmp_path)
    assert [h.base_id for h in index.search("energy", 10, until="2026-11-25")] == []
    hits = index.search("speculative decoding", 10, since="2026-11-25", until="2026-11-25")
    assert [(h.base_id, h.editions) for h in hits] == [("2611.00001", ("2026-11-25",))]


def test_the_index_reads_only_new_or_changed_records_and_rebuilds_from_them(
        tmp_path: Path) -> None:
    docs = tmp_path / "site_src"
    _archive(docs)
    index = ArchiveIndex(tmp_path / "index.sqlite")
    read: list[Path] = []

    def reader(path: Path) -> EditionRecord:
        read.append(path)
        return read_record(path)

    def files() -> list[tuple[str, Path]]:
        return sorted((p.parent.name, p) for p in docs.glob("editions/*/edition.json"))

    first = index.update(files(), reader)
    assert len(first.added) == 3 and len(read) == 3
    again = index.update(files(), reader)
    assert not again.touched and again.kept == 3 and len(read) == 3  # nothing read again
    _write(docs, _record("2026-12-09", [_paper(1, "2611.00005v1", "seen")]))
    shutil.rmtree(docs / "editions" / "2026-11-18")
    update = index.update(files(), reader)
    assert (update.added, update.removed, update.kept) == (("2026-12-09",), ("2026-11-18",), 2)
    assert len(read) == 4
    assert [h.editions for h in index.search("paged attention", 5)] == []  # gone with its edition
    (tmp_path / "index.sqlite").write_bytes(b"not a database at all" * 100)
    assert len(index.update(files(), reader).added) == 3  # a damaged index is built again


def test_a_withdrawal_found_later_is_known_to_the_index(tmp_path: Path) -> None:
    gone = _index(tmp_path).withdrawn()
    assert list(gone) == ["2611.00001"]
    assert gone["2611.00001"].notice.endswith("throughput measurements.")


# The stage, through the Services seam ----------------------------------------------------------

def test_an_answer_reads_one_paper_per_paper_flags_the_withdrawn_and_checks_its_claims(
        tmp_path: Path) -> None:
    config = load_config(_workspace(tmp_path), registry=BUILTIN_KINDS)
    model = MockModel()
    run = services(tmp_path, [], {}, model=model)
    asked = ask_stage(config, run, "speculative decoding energy", now=lambda: ASKED)
    record = asked.record
    assert record is not None
    assert sorted(p.base_id for p in record.papers) == ["2611.00001", "2611.00004"]
    first = next(p for p in record.papers if p.base_id == "2611.00001")
    assert first.arxiv_id == "2611.00001v2" and len(first.editions) == 3
    assert first.withdrawn.endswith("throughput measurements.")
    kinds = [r.kind for r in model.asked]
    # One request, then its checks, then the judgement of the quotes they found.
    assert kinds[0] == "ask" and set(kinds[1:]) == {"evidence", "judge"}
    assert kinds.index("judge") > kinds.index("evidence")
    asked_of = model.asked[0].messages[1].content
    assert asked_of.count("## Paper ") == 2 and "WITHDRAWN on arXiv since" in asked_of
    assert "Checked claims of the digest" in asked_of
    assert record.checks is not None and len(record.checks) >= 2
    assert asked.requests_sent == len(model.asked)
    text = terminal_answer(record)
    assert "(⚠ withdrawn)" in text and "Paper 1" not in text
    # The same question again: answered from the cache, nothing sent.
    again = ask_stage(config, run, "speculative decoding energy", now=lambda: ASKED)
    assert again.requests_sent == 0 and len(model.asked) == len(kinds)
    assert again.record is not None and again.record.checks == record.checks


def test_an_answer_citing_no_paper_says_so_not_that_evidence_is_off(tmp_path: Path) -> None:
    """A small model's answer often names no "Paper N": checked, nothing to check."""
    from tests.servers.sglang import Answer

    config = load_config(_workspace(tmp_path), registry=BUILTIN_KINDS)
    model = MockModel(lambda body: Answer("The papers study decoding. They disagree."))
    record = ask_stage(config, services(tmp_path, [], {}, model=model),
                       "speculative decoding energy", now=lambda: ASKED).record
    assert record is not None and record.checks == () and record.evidence_figure is None
    assert [r.kind for r in model.asked] == ["ask"]  # no claim, no check sent
    assert "no sentence of the answer cites a paper" in terminal_answer(record)
    assert "cut off" not in terminal_answer(record)
    cut = MockModel(lambda body: Answer("The papers study decoding and", finish_reason="length"))
    record = ask_stage(config, services(tmp_path / "cut", [], {}, model=cut),
                       "speculative decoding energy", now=lambda: ASKED).record
    assert record is not None
    # Asked to go on (synthesis/continuation.py) and cut again: published cut, and said so.
    assert [r.kind for r in cut.asked][:2] == ["ask", "continue"]
    assert "3,000-token limit, so the answer is cut off" in terminal_answer(record)


def test_nothing_relevant_sends_nothing(tmp_path: Path) -> None:
    config = load_config(_workspace(tmp_path), registry=BUILTIN_KINDS)
    model = MockModel()
    asked = ask_stage(config, services(tmp_path, [], {}, model=model), "protein folding")
    assert asked.record is None and "no request was sent" in asked.nothing
    assert model.asked == []
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "config.toml").write_text('[arxiv]\nquery = "x"\n', encoding="utf-8")
    none = ask_stage(load_config(empty / "config.toml", registry=BUILTIN_KINDS),
                     services(empty, [], {}, model=model),
                     "anything at all")
    assert none.record is None and "no edition yet" in none.nothing and model.asked == []
    with pytest.raises(UsageError, match="empty"):
        ask_stage(config, services(tmp_path, [], {}, model=model), "   ")


def test_the_bundle_numbers_papers_like_an_editions_and_checks_against_what_it_shows(
        tmp_path: Path) -> None:
    config = load_config(_workspace(tmp_path), registry=BUILTIN_KINDS)
    run = services(tmp_path, [], {})
    index, _ = archive_index(config, run)
    from generator.pipeline.ask import _papers

    found = _papers(config, run, index, index.search("kv cache eviction", 3))
    bundle = ask_bundle(found, 100)
    assert bundle.text.startswith("# Archive bundle")
    assert [p.number for p in bundle.papers] == [1, 2]
    # The text a quote is checked against is the bundle's, beyond the abstract: no more.
    for item in bundle.papers:
        assert item.full_text.text in bundle.text
    assert (tmp_path / INDEX_FILE).is_file()


# The page ------------------------------------------------------------------------------------

def _published(tmp_path: Path) -> tuple[QuestionRecord, Path]:
    config_path = _workspace(tmp_path)
    config = load_config(config_path, registry=BUILTIN_KINDS)
    asked = ask_stage(config, services(tmp_path, [], {}), "speculative decoding energy",
                      now=lambda: ASKED)
    assert asked.record is not None
    publish_question(config, asked.record)
    return asked.record, config_path


def test_the_question_page_matches_its_golden_file(tmp_path: Path) -> None:
    record, _ = _published(tmp_path)
    page = question_page(make_environment(ROOT), record,
                         load_config(tmp_path / "config.toml", registry=BUILTIN_KINDS)
                         .registry)
    golden = GOLDEN / f"{record.slug}.md"
    if os.environ.get("DIGEST_UPDATE_GOLDEN"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(page, encoding="utf-8")
    assert page == golden.read_text(encoding="utf-8"), "see the module's docstring"
    assert "⚠\u00a0withdrawn" in page and "../papers/2611.00001.md" in page
    # The question is stated once, in the heading; one too long for it, also in full below.
    body = page.split("\n---\n", 1)[1]  # below the front matter's title
    assert body.count(record.question) == 1 and "!!! question" not in body
    long = replace(record, question=record.question + " " + "and its energy use " * 8)
    page = question_page(make_environment(ROOT), long,
                         load_config(tmp_path / "config.toml", registry=BUILTIN_KINDS).registry)
    assert "!!! question" in page and page.split("\n---\n", 1)[1].count(long.question) == 1


def test_a_published_question_is_kept_listed_in_the_navigation_and_the_feed(
        tmp_path: Path) -> None:
    record, _ = _published(tmp_path)
    docs = tmp_path / "site_src"
    kept = load_questions(docs)
    assert kept == [record]
    nav = edition_nav(History.load(docs), kept)
    assert nav[-1] == {"Questions": [{"All questions": "questions/index.md"},
                                     {"speculative decoding energy": record.page}]}
    feed = (docs / "feed.xml").read_text(encoding="utf-8")
    assert "question: speculative decoding energy" in feed and record.slug in feed
    assert "(⚠ withdrawn)" in feed
    # Asked again the same day in other words: a page of its own; the same words: the same one.
    config = load_config(tmp_path / "config.toml", registry=BUILTIN_KINDS)
    other = ask_stage(config, services(tmp_path, [], {}), "speculative decoding, energy?",
                      now=lambda: ASKED)
    assert other.record is not None
    publish_question(config, other.record)
    assert sorted(q.slug for q in load_questions(docs)) == [record.slug, record.slug + "-2"]


# End to end ----------------------------------------------------------------------------------

def _count_reads(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often each record and question file is read from disk, by file name and folder."""
    import generator.archive.history as history_module
    import generator.archive.question_record as question_module

    reads: dict[str, int] = {}

    def counted(real: Any) -> Any:
        def read(path: Path, *args: Any, **kwargs: Any) -> Any:
            key = f"{path.parent.name}/{path.name}"
            reads[key] = reads.get(key, 0) + 1
            return real(path, *args, **kwargs)
        return read

    from generator.store import jsonfile

    monkeypatch.setattr(history_module, "read_bounded", counted(jsonfile.read_bounded))
    monkeypatch.setattr(question_module, "load_json", counted(jsonfile.load_json))
    return reads


def test_ask_publish_then_site_then_render_all_without_the_cache(
        tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    config = write_config(tmp_path / "ws", arxiv_server, sglang_server, evidence=True,
                          max_papers=3, full_text_papers=1, max_pdf_chars=2000)
    runner = CliRunner()
    built = runner.invoke(cli, ["build", "--config", str(config), "--edition", "2026-11-25"])
    assert built.exit_code == 0, built.output
    sent = len(sglang_server.state.chat_requests)
    hostile = "<img src=x onerror=alert(1)> fuzzing or test prioritisation?"
    asked = runner.invoke(cli, ["ask", "--config", str(config), hostile, "--publish",
                                "--json"])
    assert asked.exit_code == 0, asked.output
    answer = json.loads(asked.stdout)
    assert answer["answered"] and answer["published"] and answer["papers"]
    assert answer["requests_sent"] == len(sglang_server.state.chat_requests) - sent >= 1
    assert answer["evidence"] is not None and "failed" not in asked.stderr
    reads = _count_reads(monkeypatch)
    site = runner.invoke(cli, ["site", "--config", str(config)])
    assert site.exit_code == 0, site.output
    # The history is read once (the feed at the site's address and the navigation share it),
    # each record and each question file once.
    question_file = "questions/" + Path(answer["published"]).with_suffix(".json").name
    assert reads == {"2026-11-25/edition.json": 1, question_file: 1}
    html = (tmp_path / "ws" / "site" / answer["published"].replace(".md", ".html"))
    assert "Papers the answer read" in html.read_text(encoding="utf-8")
    docs = tmp_path / "ws" / "site_src"
    before = {p.name: p.read_text(encoding="utf-8") for p in (docs / "questions").iterdir()}
    shutil.rmtree(tmp_path / "ws" / ".cache")
    reads.clear()
    again = runner.invoke(cli, ["render", "--config", str(config), "--all"])
    assert again.exit_code == 0, again.output
    assert reads == {"2026-11-25/edition.json": 1, question_file: 1}
    after = {p.name: p.read_text(encoding="utf-8") for p in (docs / "questions").iterdir()}
    assert after == before
    # The edition taken off the site: the page names it unlinked, and the site still builds.
    removed = runner.invoke(cli, ["remove", "--config", str(config), "2026-11-25"])
    assert removed.exit_code == 0, removed.output
    page = (docs / answer["published"]).read_text(encoding="utf-8")
    assert "2026-11-25 (taken off the site)" in page and "../papers/" not in page
    assert runner.invoke(cli, ["site", "--config", str(config)]).exit_code == 0


def test_questions_share_the_workspace_and_a_build_excludes_them(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    with cache.lock(shared=True), cache.lock(shared=True):  # two questions at once
        with pytest.raises(LockedError), cache.lock():  # a build: refused
            pass
    with cache.lock(), pytest.raises(LockedError), cache.lock(shared=True):
        pass
    with cache.questions_lock(), open(tmp_path / "questions.lock") as other:
        with pytest.raises(BlockingIOError):  # a second publisher waits its turn
            fcntl.flock(other.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_a_question_is_answered_and_published_while_another_is_being_answered(
        tmp_path: Path, sglang_server: SglangServer) -> None:
    """Four questions at once used to be three refusals ("another digest run is using this
    workspace"): a question holds a read lock, which a build's lock still excludes."""
    config = _workspace(tmp_path)
    config.write_text(config.read_text(encoding="utf-8") + f'[llm]\nbase_url = '
                      f'"{sglang_server.base_url}"\nmax_retries = 0\n', encoding="utf-8")
    cache = Cache(tmp_path / ".cache")
    ask = ["ask", "--config", str(config), "speculative decoding", "--publish"]
    with cache.lock(shared=True):  # another question, being answered
        result = CliRunner().invoke(cli, ask)
    assert result.exit_code == 0, result.output
    assert [p.suffix for p in (tmp_path / "site_src" / "questions").glob("2*")] != []
    with cache.lock():  # a build
        refused = CliRunner().invoke(cli, ask)
    assert refused.exit_code == 1 and "another digest run" in refused.output


def test_an_index_in_use_by_another_question_is_waited_for_never_rebuilt(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import generator.ask.index

    index = _index(tmp_path)
    docs = tmp_path / "site_src"
    files = sorted((p.parent.name, p) for p in docs.glob("editions/*/edition.json"))
    held = sqlite3.connect(index.path)
    held.execute("BEGIN IMMEDIATE")  # another question's update, under way
    monkeypatch.setattr(generator.ask.index, "BUSY_TIMEOUT_S", 0.2)
    try:
        with pytest.raises(IndexLockedError, match="locked by another process"):
            index.update(files[:1], read_record)  # one edition dropped: it must write
    finally:
        held.rollback()
        held.close()
    assert index.editions() == sorted(e for e, _ in files)  # the index was kept whole


def test_a_failed_answer_is_reported_in_our_words_and_never_published(
        tmp_path: Path, sglang_server: SglangServer) -> None:
    config = _workspace(tmp_path)
    config.write_text(config.read_text(encoding="utf-8") + f'[llm]\nbase_url = '
                      f'"{sglang_server.base_url}"\nmax_retries = 0\n', encoding="utf-8")
    sglang_server.state.faults.append(Fault(500, "CUDA error: an illegal memory access"))
    result = CliRunner().invoke(cli, ["ask", "--config", str(config), "speculative decoding",
                                      "--publish"])
    assert result.exit_code == 1
    assert "The answer failed" in result.stdout and "Nothing was published" in result.stderr
    assert not (tmp_path / "site_src" / "questions").exists()


def test_a_server_without_sglangs_extras_answers_within_the_context_it_states(
        tmp_path: Path) -> None:
    """llama.cpp's llama-server (the double over its recorded bytes): no /server_info, one
    slot, a small context stated at /props. The bundle is fitted to it before anything is
    sent, the one slot is never flooded, and the answer and its checks come back."""
    from tests.servers.llama_server import LlamaServer, LlamaState
    from tests.servers.sglang import realistic_responder

    model = "/models/SmolLM2-135M-Instruct.Q4_1.gguf"
    llama = LlamaServer(LlamaState(model_path=model, n_ctx=4096, n_parallel=1)).start()
    try:
        llama.state.responder = realistic_responder
        config = _workspace(tmp_path)
        config.write_text(config.read_text(encoding="utf-8") + f'[llm]\nbase_url = '
                          f'"{llama.base_url}"\nmodel = "{model}"\nmax_retries = 0\n'
                          '[ask]\nexcerpt_chars = 0\nmax_tokens = 600\n', encoding="utf-8")
        result = CliRunner().invoke(cli, ["ask", "--config", str(config), "--json",
                                          "speculative decoding, paged attention, eviction"])
        assert result.exit_code == 0, result.output
        answer = json.loads(result.stdout)
        assert answer["answered"] and answer["evidence"] is not None
        assert llama.state.max_in_flight <= 1
        assert all(len(str(r)) < 4096 * 4 for r in llama.state.chat_requests)
    finally:
        llama.stop()
