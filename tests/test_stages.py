"""The pipeline's stages through the `Services` seam, with in-process doubles (tests/doubles.py).

The middle of the test pyramid: each stage is run for real (fetch with real PDF extraction, the
synthesis batch runner with its cache, assembly and templates) against doubles of arXiv and the
model, so a test costs a fraction of a second and fails for one reason. The client stack over
HTTP is covered by test_llm_client.py and test_arxiv_source.py, whole builds by the end-to-end
tests.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from generator import pipeline
from generator.archive.history import History
from generator.archive.record import EditionRecord
from generator.config import Config, load_config
from generator.evidence import claims
from generator.papers import FetchResult
from generator.pipeline.fetch import fetch_stage
from generator.pipeline.render import render_stage
from generator.pipeline.services import Services
from generator.pipeline.synthesize import synthesize_stage
from generator.prompts.kinds import BUILTIN_KINDS as KINDS
from generator.store import cache as cache_module
from generator.store.codec import from_data
from generator.synthesis import bundle, structured
from generator.synthesis.record import load_synthesis
from tests.conftest import FIXTURES
from tests.doubles import MockModel, PdfShelf, ScriptedArxiv, services
from tests.edition_fixture import EDITION, PAPERS
from tests.servers.sglang import Answer, Fault, default_responder, is_structured

PDF = (FIXTURES / "pdfs" / "arxiv-1111.2011v2_revtex-2col.pdf").read_bytes()


@pytest.fixture
def config(tmp_path: Path) -> Config:
    path = tmp_path / "ws" / "config.toml"
    path.parent.mkdir()
    path.write_text('[digest]\ntitle = "Stage Digest"\n\n[arxiv]\nquery = "testing"\n'
                    "max_papers = 3\nfull_text_papers = 2\nmax_pdf_chars = 4000\n")
    return load_config(str(path), registry=KINDS)


def doubles(config: Config, model: MockModel | None = None,
            pdfs: dict[str, bytes | str] | None = None) -> Services:
    """The fixed papers, each with a real PDF unless `pdfs` (by arXiv id) says otherwise."""
    shelf: dict[str, bytes | str] = {str(p.pdf_url): (pdfs or {}).get(p.arxiv_id, PDF)
                                     for p in PAPERS}
    return services(config.cache_dir, list(PAPERS), shelf, model)


def test_fetch_takes_the_newest_papers_and_the_first_ones_full_text(config: Config) -> None:
    run = doubles(config)
    fetch = fetch_stage(config, run, EDITION, history=History.load(config.docs_dir))
    assert [s.paper.arxiv_id for s in fetch.sources] == [p.arxiv_id for p in PAPERS]
    assert [s.full_text.status for s in fetch.sources] == ["ok", "ok", "not_requested"]
    assert all(0 < len(s.full_text.text) <= 4000 for s in fetch.sources[:2])
    assert run.cache.get_fetch(EDITION) == fetch


def test_a_broken_pdf_costs_only_its_own_full_text(config: Config) -> None:
    run = doubles(config, pdfs={"2611.00001v1": b"%PDF-1.4 not really"})
    fetch = fetch_stage(config, run, EDITION, history=History.load(config.docs_dir))
    broken, fine = fetch.sources[0].full_text, fetch.sources[1].full_text
    assert broken.status == "missing" and broken.reason
    assert fine.status == "ok"


def test_a_fetched_edition_is_neither_searched_nor_downloaded_again(config: Config) -> None:
    first = doubles(config)
    fetch_stage(config, first, EDITION, history=History.load(config.docs_dir))
    again = doubles(config)
    fetch = fetch_stage(config, again, EDITION, history=History.load(config.docs_dir))
    assert isinstance(again.arxiv, ScriptedArxiv) and again.arxiv.queries == []
    assert isinstance(again.downloader, PdfShelf) and again.downloader.asked == []
    assert [s.full_text.status for s in fetch.sources] == ["ok", "ok", "not_requested"]


def test_synthesis_answers_every_default_prompt_and_a_rerun_asks_nothing(config: Config) -> None:
    model = MockModel()
    run = doubles(config, model)
    fetch_stage(config, run, EDITION, history=History.load(config.docs_dir))
    result = synthesize_stage(config, run, EDITION, history=History.load(config.docs_dir))
    names = model.names()
    assert {"research-map", "themes", "thinking-off", "thinking-on", "brief-1", "brief-3"} \
        <= set(names)
    assert any(n.startswith("evidence-") for n in names)  # evidence is on by default
    assert all(c.ok for c in result.completions)
    again = MockModel()
    rerun = synthesize_stage(config, doubles(config, again), EDITION, history=History.load(config.docs_dir))
    assert again.asked == []
    assert all(c.from_cache for c in rerun.completions)


def test_a_failed_prompt_is_not_cached_and_a_rerun_asks_only_for_it(config: Config) -> None:
    def no_deep_dives(body: dict[str, Any]) -> Answer | Fault:
        if "Deep-dive question (Memory management)" in body["messages"][-1]["content"] \
                and not is_structured(body):
            return Fault(500, "the model fell over")
        return default_responder(body)

    run = doubles(config, MockModel(no_deep_dives))
    fetch_stage(config, run, EDITION, history=History.load(config.docs_dir))
    result = synthesize_stage(config, run, EDITION, history=History.load(config.docs_dir))
    failed = [c.name for c in result.completions if not c.ok]
    assert failed == ["memory-management"]
    again = MockModel()
    synthesize_stage(config, doubles(config, again), EDITION, history=History.load(config.docs_dir))
    assert again.names()[0] == "memory-management"
    assert not [n for n in again.names() if not n.startswith(("memory-management", "evidence-"))]


def test_render_writes_the_edition_from_the_stage_outputs(config: Config) -> None:
    run = doubles(config)
    fetch_stage(config, run, EDITION, history=History.load(config.docs_dir))
    synthesize_stage(config, run, EDITION, history=History.load(config.docs_dir))
    render_stage(config, run.cache, EDITION, history=History.load(config.docs_dir, remaking=(EDITION,)))
    edition = config.docs_dir / "editions" / EDITION
    assert {"index.md", "research-map.md", "thinking.md", "run-report.md",
            "edition.json"} <= {p.name for p in edition.iterdir()}
    record = json.loads((edition / "edition.json").read_text())
    assert [p["arxiv_id"] for p in record["papers"]] == [p.arxiv_id for p in PAPERS]
    assert record["briefs"]["1"]["tldr"].startswith("A study of")
    assert any(record["checks"].values())
    assert (config.docs_dir / "index.md").read_text().startswith(f"# Edition {EDITION}\n")


# A build reads each earlier record once ---------------------------------------------------------

_records_read: list[str] | None = None
_GENERATOR = str(Path(pipeline.__file__).resolve().parents[1])


def _count_record_reads(event: str, args: tuple[Any, ...]) -> None:
    """An audit hook (the interpreter's own record of every open): each edition.json that our
    code opens, to parse it or to digest it, not MkDocs' copy of it into the site."""
    if _records_read is None or event != "open" or not str(args[0]).endswith("edition.json"):
        return
    frame = sys._getframe(1)
    while frame is not None:
        where = frame.f_code.co_filename
        if f"{os.sep}mkdocs{os.sep}" in where:
            return  # MkDocs copying the site's files
        if where.startswith(_GENERATOR):
            _records_read.append(str(args[0]))
            return
        frame = frame.f_back  # type: ignore[assignment]


sys.addaudithook(_count_record_reads)


def test_a_build_opens_each_earlier_record_once(config: Config) -> None:
    global _records_read
    first = doubles(config)
    for edition in ("2026-11-18", "2026-11-25"):
        fetch_stage(config, first, edition, history=History.load(config.docs_dir))
        synthesize_stage(config, first, edition, history=History.load(config.docs_dir))
        render_stage(config, first.cache, edition, history=History.load(config.docs_dir, remaking=(edition,)))
    _records_read = []
    try:
        report = pipeline.run(config, doubles(config), EDITION)  # fetch, synthesis, render, site
        reads = list(_records_read)
    finally:
        _records_read = None
    assert report.site_dir is not None and (report.site_dir / "index.html").is_file()
    for earlier in ("2026-11-18", "2026-11-25"):
        assert len([r for r in reads if earlier in r]) == 1, reads


def test_a_rebuild_with_nothing_changed_parses_no_record_and_renders_nothing(
        config: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    global _records_read
    pipeline.run(config, doubles(config), EDITION)
    overview = config.docs_dir / "editions" / EDITION / "index.md"
    written = overview.stat().st_mtime_ns
    parsed: list[str] = []
    read = EditionRecord.from_json.__func__  # type: ignore[attr-defined]

    def counted(cls: type[EditionRecord], data: Any, source: str) -> EditionRecord:
        parsed.append(source)
        return read(cls, data, source)  # type: ignore[no-any-return]

    monkeypatch.setattr(EditionRecord, "from_json", classmethod(counted))
    _records_read = []
    try:
        pipeline.run(config, doubles(config), EDITION)
        reads = list(_records_read)
    finally:
        _records_read = None
    # Nothing changed: decided from a fingerprint (each record's bytes read once), not by
    # rendering; the one record parsed is this edition's, for the news line the run prints.
    assert parsed == [str(overview.with_name("edition.json"))]
    assert len(reads) == len(set(reads)) == 1
    assert overview.stat().st_mtime_ns == written
    monkeypatch.undo()
    # A changed template is something a render reads: the next build renders again.
    templates = config.workspace / "templates"
    templates.mkdir()
    (templates / "edition.md.j2").write_text("# {{ edition.name }} (a template of my own)\n")
    pipeline.run(config, doubles(config), EDITION)
    assert "(a template of my own)" in overview.read_text()


def test_a_json_answer_cut_at_max_tokens_says_so(config: Config) -> None:
    # Once reported only as "Expecting ',' delimiter".
    def cut_briefs(body: dict[str, Any]) -> Answer | Fault:
        answer = default_responder(body)
        if '"tldr"' in answer.content:
            return Answer(answer.content[:30], finish_reason="length")
        return answer

    run = doubles(config, MockModel(cut_briefs))
    fetch_stage(config, run, EDITION, history=History.load(config.docs_dir))
    result = synthesize_stage(config, run, EDITION, history=History.load(config.docs_dir))
    errors = {c.name: c.error for c in result.completions if not c.ok}
    assert set(errors) == {"brief-1", "brief-2", "brief-3"}
    assert "cut at max_tokens (800)" in errors["brief-1"]
    assert "raise the max_tokens of brief" in errors["brief-1"]


def test_a_build_parses_each_thing_once(config: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fetch record, the bundle, each answer's claims and each structured answer: made
    once in a build, however many stages ask (the memos' misses are the real work done)."""
    reads: list[str] = []

    def counted(kind: type[Any], data: Any, *args: Any, **kwargs: Any) -> Any:
        if kind is FetchResult:
            reads.append(data["query"])
        return from_data(kind, data, *args, **kwargs)

    monkeypatch.setattr(cache_module, "from_data", counted)
    memos = (bundle._bundle, claims._claims)
    for memo in memos:
        memo.cache_clear()
    structured.PARSED.clear()
    pipeline.run(config, doubles(config), EDITION)
    synthesis = load_synthesis(doubles(config).cache, EDITION)
    assert synthesis is not None
    pairs = synthesis.pairs()
    checked = sum(1 for r, c in pairs if KINDS[r.kind].evidence and c.ok)
    # Both thinking answers are one text, so their checks' answers are alike too: one parse.
    structured_answers = len({(r.kind, c.content) for r, c in pairs
                              if KINDS[r.kind].schema is not None and c.ok})
    assert checked == 6 and structured_answers > 4  # briefs, the theme map, the checks
    assert [m.cache_info().misses for m in memos] == [1, checked]
    assert structured.PARSED.misses == structured_answers
    assert reads == []  # the fetch stage wrote it: the later stages read it from memory
