"""The archive at its edges: records that are missing, newer, odd or unreadable, and send records
that are mangled. Stage tests over fixed records (tests/edition_fixture.py): no server, no build.

The record is the one source of an edition's pages: a render never takes from it what it held,
and a record it cannot read whole is named with its path before anything is written.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from generator import pipeline
from generator.archive.history import History, RecordMissingError, load_records
from generator.archive.record import MAX_RECORD_ABSTRACT_CHARS, EditionRecord, RecordFormatError
from generator.cli import cli
from generator.config import Config, load_config
from generator.deliver.mail import EmailError, SendRecord
from generator.edition.model import Edition
from generator.edition.render import TemplateError, make_environment, render_edition, write_pages
from generator.prompts.builders import THEMES_SCHEMA
from generator.prompts.kinds import BUILTIN_KINDS
from generator.store.cache import read_json
from generator.synthesis.structured import InvalidAnswer, parse_answer
from tests.doubles import MockModel, services
from tests.edition_fixture import EDITION, PAPERS, fixed_edition

LATER = "2026-12-09"


@pytest.fixture
def config(tmp_path: Path) -> Config:
    path = tmp_path / "ws" / "config.toml"
    path.parent.mkdir()
    path.write_text('[digest]\ntitle = "Edge Digest"\n\n[arxiv]\nquery = "testing"\n')
    return load_config(str(path), registry=BUILTIN_KINDS)


def publish(config: Config, edition: Edition, published: list[EditionRecord] | None = None
            ) -> None:
    env = make_environment(config.workspace)
    write_pages(config.docs_dir, render_edition(env, edition, published or []))


def record_path(config: Config, edition: str = EDITION) -> Path:
    return config.docs_dir / "editions" / edition / "edition.json"


def edit_record(config: Config, change: Callable[[dict[str, Any]], None],
                edition: str = EDITION) -> str:
    """The record changed by `change` and written back: its new text."""
    path = record_path(config, edition)
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    text = json.dumps(data, indent=1)
    path.write_text(text, encoding="utf-8")
    return text


def digest(config: Config, *args: str) -> Result:
    return CliRunner().invoke(cli, [*args, "--config", str(config.path)])


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


# A render never shrinks a record ------------------------------------------------------------

def test_answers_that_no_longer_parse_keep_the_briefs_and_themes_the_record_holds(
        config: Config) -> None:
    publish(config, fixed_edition(config))

    def unparsable(data: dict[str, Any]) -> None:
        for prompt in data["prompts"]:
            if prompt["name"] in ("themes", "brief-1"):
                prompt["completion"]["content"] = '{"themes": [{"name": '  # a hand edit, cut
    edit_record(config, unparsable)
    held = json.loads(record_path(config).read_text())
    result = digest(config, "render", "--all")
    assert result.exit_code == 0, result.output
    after = json.loads(record_path(config).read_text())
    assert after["briefs"] == held["briefs"] and after["briefs"]["1"]["tldr"]
    assert after["themes"] == held["themes"] == [
        {"name": "Memory", "description": "Saving memory.", "papers": [1, 3]}]
    assert (config.docs_dir / "themes" / "memory.md").is_file()


def test_a_newer_releases_top_level_fields_are_written_back_as_they_were(config: Config) -> None:
    publish(config, fixed_edition(config))
    edit_record(config, lambda d: d.update(reviewers={"by": "a later release", "n": [1, 2]}))
    result = digest(config, "render", "--all")
    assert result.exit_code == 0, result.output
    assert json.loads(record_path(config).read_text())["reviewers"] == {
        "by": "a later release", "n": [1, 2]}


def test_a_record_with_unknown_fields_inside_is_left_as_it_is_and_named(
        config: Config) -> None:
    publish(config, fixed_edition(config))
    text = edit_record(config, lambda d: d["papers"][0].update(reviewed=True))
    (config.docs_dir / "editions" / EDITION / "index.md").unlink()
    result = digest(config, "render", "--all")
    assert result.exit_code == 0, result.output
    assert record_path(config).read_text(encoding="utf-8") == text  # not a byte lost
    assert (config.docs_dir / "editions" / EDITION / "index.md").is_file()  # its pages made
    assert "papers[0].reviewed" in result.output and "kept as it is" in result.output


def test_unknown_fields_are_listed_and_round_trip_at_the_top() -> None:
    data = fixed_edition().record.to_json()
    data["future"] = [1, {"deep": True}]
    data["papers"][1]["score"] = 0.5
    record = EditionRecord.from_json(data, "edition.json")
    assert sorted(record.unknown) == ["future", "papers[1].score"]
    assert record.to_json()["future"] == [1, {"deep": True}]
    assert "papers[1].score" in record.not_rewritable
    assert EditionRecord.from_json(record.to_json() | {"future": 1}, "e").not_rewritable == ""


# A missing earlier record stops the run, naming the file -------------------------------------

@pytest.fixture
def two_published(config: Config) -> Config:
    first = fixed_edition(config)
    publish(config, first)
    publish(config, fixed_edition(config, [first.record], edition=LATER), [first.record])
    return config


def test_a_missing_earlier_record_is_named_and_render_all_writes_nothing(
        two_published: Config) -> None:
    config = two_published
    record_path(config).unlink()
    before = snapshot(config.docs_dir)
    result = digest(config, "render", "--all")
    assert result.exit_code == 2
    assert f"{record_path(config)} is missing" in result.output
    assert "git checkout" in result.output and f"digest remove {EDITION}" in result.output
    assert snapshot(config.docs_dir) == before  # edition 1's pages all still there


def test_a_build_with_an_earlier_record_missing_stops_before_it_asks_anything(
        two_published: Config) -> None:
    config = two_published
    record_path(config, LATER).unlink()
    model = MockModel()
    run = services(config.cache_dir, list(PAPERS), {}, model)
    with pytest.raises(RecordMissingError, match="is missing"):
        pipeline.run(config, run, "2026-12-16")
    assert model.asked == [] and run.arxiv.queries == []  # type: ignore[attr-defined]
    assert not (config.docs_dir / "editions" / "2026-12-16").exists()


def test_the_edition_being_made_again_may_lack_its_own_record(two_published: Config) -> None:
    record_path(two_published, LATER).unlink()
    history = History.load(two_published.docs_dir, remaking=(LATER,))
    history.check_complete()
    assert [r.edition for r in history.records] == [EDITION]


# Odd records are named, never published ------------------------------------------------------

def _nan(text: str) -> str:
    return text.replace('"synthesis_wall_time_s": 12.5', '"synthesis_wall_time_s": NaN')


def _huge_number(text: str) -> str:
    return text.replace('"synthesis_wall_time_s": 12.5', '"synthesis_wall_time_s": 1e999')


def _deep(text: str) -> str:
    return text.replace('"overview": ', '"overview": ' + "[" * 50_000 + "]" * 50_000 + ", "
                        '"overview_was": ', 1)


def _hostile_slug(text: str) -> str:
    return text.replace('"slug": "2611.00001v1"', '"slug": "../../../outside"', 1)


def _hostile_id(text: str) -> str:
    return text.replace('"arxiv_id": "2611.00001v1"', '"arxiv_id": "../2611.00001v1"', 1)


def _script_url(text: str) -> str:
    return text.replace('"abs_url": "https://arxiv.org/abs/2611.00001v1"',
                        '"abs_url": "javascript:alert(1)"', 1)


@pytest.mark.parametrize("mangle", [_nan, _huge_number, _deep, _hostile_slug, _hostile_id,
                                    _script_url])
def test_an_odd_record_is_one_error_naming_its_file(config: Config,
                                                    mangle: Callable[[str], str]) -> None:
    publish(config, fixed_edition(config))
    path = record_path(config)
    text = path.read_text(encoding="utf-8")
    assert mangle(text) != text
    path.write_text(mangle(text), encoding="utf-8")
    with pytest.raises(RecordFormatError) as err:
        load_records(config.docs_dir)
    assert str(path) in str(err.value)
    result = digest(config, "render", "--all")
    assert result.exit_code == 2 and str(path) in result.output
    assert "Traceback" not in result.output and path.read_text(encoding="utf-8") == mangle(text)


def test_a_huge_abstract_in_a_record_is_published_cut_and_the_record_kept_whole(
        config: Config) -> None:
    publish(config, fixed_edition(config))
    text = edit_record(config, lambda d: d["papers"][0].update(abstract="word " * 1_000_000))
    record = load_records(config.docs_dir)[0]
    assert len(record.papers[0].abstract) <= MAX_RECORD_ABSTRACT_CHARS + 1
    assert record.trimmed == ("papers[0]",)
    assert digest(config, "render", "--all").exit_code == 0
    assert record_path(config).read_text(encoding="utf-8") == text  # the record keeps it all
    for page in (config.docs_dir / "papers" / "2611.00001.md",
                 config.docs_dir / "editions" / EDITION / "papers" / "2611.00001v1.md"):
        assert len(page.read_text(encoding="utf-8")) < MAX_RECORD_ABSTRACT_CHARS + 20_000


# Send records: one reader, no guess ----------------------------------------------------------

@pytest.mark.parametrize("content", [
    "[" * 100_000 + "]" * 100_000,
    '{"recipients": [{"to": ["ada@example.org"], "state": "sent"}]}',
    '{"recipients": [{"to": "ada@example.org", "state": null}]}',
    '{"recipients": [{"to": "ada@example.org", "state": "delivered"}]}',
    '{"recipients": ["ada@example.org"]}',
    '{"recipients": [{"to": "ada@example.org", "at": NaN}]}',
])
def test_a_mangled_send_record_stops_the_send_naming_the_file(tmp_path: Path,
                                                               content: str) -> None:
    path = tmp_path / "sent.json"
    path.write_text(content)
    with pytest.raises(EmailError) as err:
        SendRecord(path, EDITION)
    assert str(path) in str(err.value) and "nothing was sent" in str(err.value)


def test_a_send_record_of_an_earlier_release_reads_as_delivered(tmp_path: Path) -> None:
    path = tmp_path / "sent.json"
    path.write_text('{"recipients": [{"to": "Ada <ADA@example.org>"}]}')
    assert SendRecord(path, EDITION).state("ada@example.org") == "sent"


# Template overrides are checked before anything is written -----------------------------------

def test_a_broken_override_of_a_partial_stops_the_render_with_its_file_and_line(
        two_published: Config) -> None:
    config = two_published
    override = config.workspace / "templates" / "_comparison.md.j2"
    override.parent.mkdir()
    override.write_text("{# fine #}\n\n{% if edition %}\nno end\n")
    before = snapshot(config.docs_dir)
    with pytest.raises(TemplateError, match=r"_comparison\.md\.j2, line \d"):
        make_environment(config.workspace)
    result = digest(config, "render", "--all")
    assert result.exit_code == 2 and "_comparison.md.j2, line" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert snapshot(config.docs_dir) == before
    override.write_text("{% include '_key.md.j2' %}\n")  # a working one is taken as it is
    assert digest(config, "render", "--all").exit_code == 0


def test_a_record_of_the_same_edition_keeps_its_date_when_nothing_changed(
        config: Config) -> None:
    """The rewrite of a record with nothing new is the same record (kept fields included)."""
    first = fixed_edition(config)
    publish(config, first)
    edit_record(config, lambda d: d.update(future=True))
    record = load_records(config.docs_dir)[0]
    again = fixed_edition(config, [record])
    assert again.record.to_json() == record.to_json()
    assert replace(again.record, kept={}).to_json().get("future") is None


def test_deeply_nested_json_from_a_model_or_in_a_cache_entry_is_no_traceback(
        tmp_path: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(InvalidAnswer, match="nested too deeply"):
        parse_answer('{"themes": ' + deep + "}", THEMES_SCHEMA)
    entry = tmp_path / "entry.json"
    entry.write_text(deep)
    assert read_json(entry) is None  # recomputed, like any unreadable cache entry
