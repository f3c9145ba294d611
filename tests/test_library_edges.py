"""The reader's library and the other files a user hands the digest, read as an attacker or a
careless user would leave them: a FIFO, a device, a folder, a link out of the workspace, macros
that double, a huge file, an RIS export saved as .bib, two URLs on a line, a title shared with
another arXiv paper, ids arXiv never answers. Each is one line naming the file, at once."""

from __future__ import annotations

import operator
import os
from pathlib import Path
from typing import SupportsIndex

import pytest
from click.testing import CliRunner

from generator.archive.history import History
from generator.cli import cli
from generator.config import load_config
from generator.errors import ConfigError
from generator.marks import FeedbackError, Marks, bibtex_read, load_marks
from generator.marks.bibtex_read import BibSyntaxError, read_bibtex
from generator.marks.library import LibraryError, load_library
from generator.papers import Paper
from generator.pipeline.library import library_shelf
from generator.prompts.kinds import BUILTIN_KINDS
from generator.store.cache import Cache
from generator.store.jsonfile import JSONFileError, load_json
from tests.doubles import ScriptedArxiv


def paper(arxiv_id: str, title: str) -> Paper:
    return Paper(arxiv_id, title, ("Ada Author",), "2026-11-20", "2026-11-20", "We study it.",
                 ("cs.LG",), f"https://arxiv.org/abs/{arxiv_id}", None)


@pytest.mark.parametrize("kind", ["fifo", "folder", "device", "outside link"])
def test_a_library_that_is_no_regular_file_of_the_workspace_is_named_and_refused(
        tmp_path: Path, kind: str) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    path = workspace / "library.bib"
    if kind == "fifo":  # read_bytes() would wait for a writer for ever
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "device":  # st_size is 0: read_bytes() reads until memory runs out
        path = Path("/dev/zero")
    else:
        (tmp_path / "secret.bib").write_text("@misc{k, title = {Private notes of the lab}}\n")
        path.symlink_to(tmp_path / "secret.bib")
    with pytest.raises(LibraryError) as raised:
        load_library(path, workspace)
    said = str(raised.value)
    assert f"{path} ([triage] library) is " in said and "\n" not in said
    assert {"fifo": "a FIFO", "folder": "a folder", "device": "a device",
            "outside link": "outside the workspace"}[kind] in said


def test_config_marks_records_and_templates_refuse_a_fifo_too(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "config.toml")
    with pytest.raises(ConfigError, match="is a FIFO"):
        load_config(tmp_path / "config.toml", registry=BUILTIN_KINDS)
    os.mkfifo(tmp_path / "feedback.json")
    with pytest.raises(FeedbackError, match="feedback.json is a FIFO"):
        load_marks(tmp_path / "feedback.json")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "edition.json").write_text("{}")
    (tmp_path / "ed").mkdir()
    (tmp_path / "ed" / "edition.json").symlink_to(tmp_path / "elsewhere" / "edition.json")
    with pytest.raises(JSONFileError, match="outside the workspace"):
        load_json(tmp_path / "ed" / "edition.json", root=tmp_path / "ed")
    workspace = tmp_path / "ws"
    (workspace / "templates").mkdir(parents=True)
    (workspace / "config.toml").write_text('[arxiv]\nquery = "decoding"\n')
    os.mkfifo(workspace / "templates" / "page.md.j2")
    done = CliRunner().invoke(cli, ["render", "--config", str(workspace / "config.toml")])
    assert done.exit_code == 2 and "page.md.j2 is a FIFO" in done.output, done.output
    assert "Traceback" not in done.output
    assert Marks() == load_marks(tmp_path / "no-such.json")


def test_macros_that_double_are_refused_before_memory_runs_out(tmp_path: Path) -> None:
    lines = ['@string{m0 = "xxxxxxxxxxxxxxxx"}'] + [
        f"@string{{m{i} = m{i - 1} # m{i - 1}}}" for i in range(1, 41)]
    (tmp_path / "library.bib").write_text("\n".join(lines) + "\n@misc{k, title = m40}\n")
    assert (tmp_path / "library.bib").stat().st_size < 2048
    with pytest.raises(LibraryError, match=r"@string at line \d+ is longer than 1,000,000"):
        load_library(tmp_path / "library.bib")


def test_many_small_macro_uses_are_bounded_in_all() -> None:
    text = '@string{big = "' + "y" * 900_000 + '"}\n' + "".join(
        f"@misc{{k{i}, title = big}}\n" for i in range(40))
    with pytest.raises(BibSyntaxError, match="expand to more than"):
        read_bibtex(text)


def test_memory_and_recursion_errors_on_a_library_are_the_users(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:
    (tmp_path / "library.bib").write_text("@misc{k, title = {A title long enough to key}}\n")
    for error in (MemoryError, RecursionError):
        def fail(text: str, error: type[Exception] = error) -> list[bibtex_read.BibEntry]:
            raise error()
        monkeypatch.setattr("generator.marks.library.read_bibtex", fail)
        with pytest.raises(LibraryError, match=f"too large to read \\({error.__name__}\\)"):
            load_library(tmp_path / "library.bib")


class _CountingText(str):
    """The file's text, counting the characters scanned for line numbers."""

    scanned = 0

    def count(self, sub: str, start: SupportsIndex | None = None,
              end: SupportsIndex | None = None) -> int:
        low = 0 if start is None else operator.index(start)
        _CountingText.scanned += (len(self) if end is None else operator.index(end)) - low
        return super().count(sub, start, end)


def test_reading_is_linear_in_the_text() -> None:
    """Each entry's line number was counted from the start of the file: 100,000 entries were
    5 * 10^9 characters scanned. Now each character is counted once."""
    entry = "@misc{k%d,\n  title = {Paper %d},\n  eprint = {2611.%05d}\n}\n"
    text = _CountingText("".join(entry % (i, i, i) for i in range(3000)))
    _CountingText.scanned = 0
    assert len(read_bibtex(text)) == 3000
    assert _CountingText.scanned <= len(text)


def test_an_ris_export_saved_as_bib_is_read_as_ris(tmp_path: Path) -> None:
    (tmp_path / "library.bib").write_text(
        "TY  - JOUR\nTI  - Efficient Memory Management for LLM Serving\n"
        "DO  - 10.48550/arXiv.2309.06180\nER  - \n")
    library = load_library(tmp_path / "library.bib")
    assert [p.arxiv_id for p in library.papers] == ["2309.06180"]
    (tmp_path / "other.bib").write_text("title,year\nA CSV export,2024\n")
    with pytest.raises(LibraryError, match="holds no BibTeX entry"):
        load_library(tmp_path / "other.bib")


def test_two_arxiv_urls_on_one_line_are_two_papers(tmp_path: Path) -> None:
    (tmp_path / "library.txt").write_text(
        "https://arxiv.org/abs/2611.00001 https://arxiv.org/abs/2611.00002v2\n"
        "arXiv: 2611.00003\n")
    library = load_library(tmp_path / "library.txt")
    assert sorted(p.arxiv_id for p in library.papers) == ["2611.00001", "2611.00002",
                                                          "2611.00003"]


def test_a_title_matches_only_an_entry_that_names_no_arxiv_paper(tmp_path: Path) -> None:
    title = "Efficient Memory Management for LLM Serving"
    (tmp_path / "with-id.bib").write_text(f"@misc{{a, title = {{{title}}}, eprint = {{2309.06180}}}}\n")
    (tmp_path / "no-id.bib").write_text(f"@article{{b, title = {{{title}}}, journal = {{SOSP}}}}\n")
    other = paper("2611.00099v1", title)  # another paper of that title: not the library's
    assert not load_library(tmp_path / "with-id.bib").holds(other)
    assert load_library(tmp_path / "with-id.bib").holds(paper("2309.06180v2", "Renamed"))
    assert load_library(tmp_path / "no-id.bib").holds(other)


def test_an_id_arxiv_never_answered_is_not_promised_to_the_next_triage(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "library.txt").write_text("2309.06180\n2611.99999\n")
    (workspace / "config.toml").write_text(
        '[arxiv]\nquery = "decoding"\n\n[triage]\ninterests = "serving"\n'
        'library = "library.txt"\n')
    config = load_config(workspace / "config.toml", registry=BUILTIN_KINDS)
    arxiv = ScriptedArxiv([paper("2309.06180v2", "Efficient Memory Management for LLM Serving")])
    cache, history = Cache(config.cache_dir), History.load(config.docs_dir)
    first = library_shelf(config, cache, history, Marks(), arxiv)
    again = library_shelf(config, cache, history, Marks(), arxiv)
    assert first is not None and again is not None
    assert arxiv.lookups == [("2309.06180", "2611.99999")]  # asked once, not on every run
    assert (again.untitled, again.unknown) == ((), ("2611.99999",))
    listed = CliRunner().invoke(cli, ["feedback", "list", "--config", str(config.path)])
    assert "next triage" not in listed.output
    assert "1 arXiv knows no paper by (asked once, not again: check 2611.99999" in listed.output
