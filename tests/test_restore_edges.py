"""The workflow's restore and `digest remove` at their edges: a restored edition with a page
that cannot be made is restored all the same (a warning, never the step's failure, which
would stop every later week); `digest remove` builds the site before it says which pages of
which editions failed; a hostile sitemap is read once, and only the newest editions it names
are asked for; `.removed-editions` and an artifact's records are read as bounded regular
files (a FIFO is named, never waited on)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import pytest
from click.testing import CliRunner

from generator.archive.public import public_text
from generator.archive.record import EditionRecord
from generator.cli import cli
from generator.pipeline.restore import found_in_folder, found_on_site
from generator.store import Docs
from generator.store.userfile import UserFileError
from tests.conftest import ROOT

T = TypeVar("T")
GOLDEN = ROOT / "tests" / "golden" / "editions__2026-12-02__edition.json"
FAILING = ('# ok\n\n{% if edition.name == "{name}" %}{{ page.heading.index("\\x00") }}'
           '{% endif %}\n')


def workspace(folder: Path, editions: tuple[str, ...], *, failing: str) -> Path:
    """A workspace with the editions' records (the golden one, renamed) and a research map
    template that fails for the edition `failing` alone."""
    folder.mkdir(parents=True)
    config = folder / "config.toml"
    config.write_text('[digest]\ntitle = "Test Digest"\n\n[arxiv]\nquery = "testing"\n')
    for name in editions:
        write_record(folder / "site_src" / "editions" / name, name)
    (folder / "templates").mkdir()
    (folder / "templates" / "research_map.md.j2").write_text(
        FAILING.replace("{name}", failing))
    return config


def write_record(folder: Path, edition: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    record = json.loads(GOLDEN.read_text())
    (folder / "edition.json").write_text(json.dumps({**record, "edition": edition}))


def test_a_restored_edition_with_a_failed_page_is_restored_and_the_step_goes_on(
        tmp_path: Path) -> None:
    config = workspace(tmp_path / "ws", ("2026-12-02",), failing="2026-12-09")
    artifact = tmp_path / ".records"
    write_record(artifact / "digest-records-2026-12-09", "2026-12-09")
    result = CliRunner().invoke(cli, ["workflow", "restore", "--config", str(config),
                                      "--from", str(artifact)])
    assert result.exit_code == 0, result.output
    path = "editions/2026-12-09/research-map.md"
    assert "Restored edition 2026-12-09" in result.output
    assert f"::warning::1 page(s) of the restored edition 2026-12-09 could not be made: {path}" \
        in result.output
    docs = tmp_path / "ws" / "site_src"
    assert "could not be made in this run" in (docs / path).read_text()
    assert (docs / "editions" / "2026-12-09" / "index.md").is_file()
    assert (docs / "editions" / "2026-12-09" / "edition.json").is_file()


def test_remove_builds_the_site_then_names_only_the_editions_whose_pages_failed(
        tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    config = workspace(ws, ("2026-12-02", "2026-12-09", "2026-12-16"), failing="2026-12-16")
    result = CliRunner().invoke(cli, ["remove", "--config", str(config), "2026-12-02"])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert "Removed edition 2026-12-02" in result.output
    assert ("1 page(s) of edition 2026-12-16 could not be made again: "
            "editions/2026-12-16/research-map.md") in result.output
    assert not (ws / "site_src" / "editions" / "2026-12-02").exists()
    site = ws / "site"
    assert not (site / "editions" / "2026-12-02").exists()
    assert (site / "editions" / "2026-12-09" / "research-map.html").is_file()
    assert "could not be made in this run" in (
        site / "editions" / "2026-12-16" / "research-map.html").read_text()
    assert "2026-12-02" not in (site / "index.html").read_text()
    # `digest render --all` names only the edition that had a page fail.
    result = CliRunner().invoke(cli, ["render", "--config", str(config), "--all"])
    assert result.exit_code == 1, result.output
    assert "1 page(s) of edition 2026-12-16 could not be made" in result.output
    assert "2026-12-09" not in result.output


def test_a_hostile_sitemap_is_read_once_and_only_the_newest_editions_are_asked_for(
        caplog: pytest.LogCaptureFixture) -> None:
    """A sitemap of 400 KB made to make a backtracking pattern quadratic (an address that
    never closes, `/editions/` over and over) still gives the editions it names; of the
    twelve it names, only the newest eight are asked for, and the log says so."""
    base = "https://lab.example.org/digest/"
    record = json.loads(GOLDEN.read_text())
    names = [f"2027-01-{day:02d}" for day in range(1, 13)]

    def public(edition: str) -> bytes:
        return public_text(EditionRecord.from_json({**record, "edition": edition}, "x")).encode()

    hostile = "<loc>" + "a/editions/b" * 34_000  # never closed: no "</loc>" follows
    sitemap = ("<urlset>" + hostile + "".join(
        f"<url><loc>{base}editions/{name}/papers/x/</loc></url>" for name in names)
        + f"<url><loc>{base}{'x/' * 1100}editions/2027-02-01/</loc></url>"  # too long a loc
        + "<url><loc>editions/2027-02-02/</loc></url></urlset>").encode()
    assert len(sitemap) > 400_000
    asked: list[str] = []

    def get(url: str) -> bytes | None:
        asked.append(url)
        if url == base + "sitemap.xml":
            return sitemap
        name = url.removeprefix(base + "editions/").removesuffix("/edition.json")
        return public(name) if name in names else None

    with caplog.at_level(logging.WARNING, logger="generator.pipeline.restore"):
        found = found_on_site(base, get, newer_than="2027-01-01")
    assert [f.edition for f in found] == names[-8:]
    assert asked == [base + "sitemap.xml",
                     *(f"{base}editions/{name}/edition.json" for name in names[-8:])]
    assert ("names 11 editions newer than the branch's newest; only the newest 8 are read "
            "(2027-01-05 to 2027-01-12)") in caplog.text


def _within(seconds: float, call: Callable[[], T], fifos: Sequence[Path]) -> T:
    """`call()`'s result, or a failure where it is still waiting after `seconds` (on a FIFO:
    each is then opened for writing and closed, so that the waiting read ends)."""
    done: list[T] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            done.append(call())
        except BaseException as err:  # handed to the test's thread
            failed.append(err)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        for fifo in fifos:
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(5)
        pytest.fail(f"still reading after {seconds} s (a FIFO waited on)")
    if failed:
        raise failed[0]
    return done[0]


needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")


@needs_fifo
def test_removed_editions_is_read_as_a_bounded_regular_file(tmp_path: Path) -> None:
    docs = tmp_path / "site_src"
    docs.mkdir()
    removed = docs / ".removed-editions"
    os.mkfifo(removed)
    with pytest.raises(UserFileError, match=r"\.removed-editions is a FIFO"):
        _within(5, Docs(docs).removed, [removed])
    removed.unlink()
    removed.write_text("2026-12-02\n" * 100_000)  # 1.1 MB
    with pytest.raises(UserFileError, match="larger than 1 MB"):
        Docs(docs).removed()
    removed.write_text("2026-12-02\n\n2026-12-09\n")
    assert Docs(docs).removed() == {"2026-12-02", "2026-12-09"}
    removed.unlink()
    assert Docs(docs).removed() == set()


@needs_fifo
def test_an_artifacts_records_are_read_as_bounded_regular_files_in_it(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A record in the artifact that is a FIFO, or a link out of it, is named and passed over;
    the others are restored."""
    artifact = tmp_path / ".records"
    write_record(artifact / "digest-records-2026-12-09", "2026-12-09")
    (artifact / "fifo").mkdir()
    fifo = artifact / "fifo" / "edition.json"
    os.mkfifo(fifo)
    write_record(tmp_path / "elsewhere", "2026-12-16")
    (artifact / "link").mkdir()
    (artifact / "link" / "edition.json").symlink_to(tmp_path / "elsewhere" / "edition.json")
    with caplog.at_level(logging.WARNING, logger="generator.pipeline.restore"):
        found = _within(5, lambda: found_in_folder(artifact), [fifo])
    assert [f.edition for f in found] == ["2026-12-09"]
    assert "fifo/edition.json is a FIFO" in caplog.text
    assert "outside the workspace" in caplog.text
