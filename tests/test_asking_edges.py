"""The edges of asking (issue 64): arguments that are not text, dates that are not dates, an
index that is not ours or is locked by another process, answers that copy a paper's full text,
odd marks files, and a feed that follows the site's address.

Each test names the failure it pins; the archive is tests/test_ask.py's fixed one.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
from click.testing import CliRunner

from generator.archive.history import read_record
from generator.ask.index import ArchiveIndex, IndexLockedError, UnusableIndex
from generator.cli import cli
from generator.deliver.mail import EmailError, SendRecord
from generator.deliver.webhook import ChatError, PostRecord
from generator.errors import DigestError
from generator.marks import FeedbackError, load_marks
from tests.conftest import ROOT, write_config
from tests.servers.arxiv import ArxivServer
from tests.servers.sglang import Answer, Responder, SglangServer, structured_answer
from tests.test_ask import _archive, _workspace

ATOM = "{http://www.w3.org/2005/Atom}"


def _served(tmp_path: Path, sglang_server: SglangServer) -> Path:
    config = _workspace(tmp_path)
    config.write_text(config.read_text(encoding="utf-8") + f'[llm]\nbase_url = '
                      f'"{sglang_server.base_url}"\nmax_retries = 0\n', encoding="utf-8")
    return config


def _digest(*args: str | bytes) -> subprocess.CompletedProcess[bytes]:
    """`digest ARGS` as a shell runs it: its arguments are bytes, not necessarily UTF-8."""
    return subprocess.run([sys.executable, "-m", "generator", *args], cwd=ROOT,
                          capture_output=True, timeout=120, check=False,
                          env={**os.environ, "PYTHONIOENCODING": "utf-8"})


def _one_error(stderr: bytes) -> str:
    text = stderr.decode("utf-8")
    assert "Traceback" not in text, text
    errors = [line for line in text.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, text
    return errors[0]


# Arguments that are not text -------------------------------------------------------------------

def test_a_question_that_is_not_utf8_is_one_usage_error_not_a_traceback(
        tmp_path: Path, sglang_server: SglangServer) -> None:
    config = os.fsencode(_served(tmp_path, sglang_server))
    asked = _digest(b"ask", b"--config", config, b"KV cache eviction memory \xff")
    assert asked.returncode == 2, asked.stderr
    error = _one_error(asked.stderr)
    assert "'KV cache eviction memory \\xff'" in error and "not text" in error
    assert not sglang_server.state.chat_requests  # refused before anything was asked


def test_an_option_value_that_is_not_utf8_is_one_usage_error_naming_the_option(
        tmp_path: Path, sglang_server: SglangServer) -> None:
    config = os.fsencode(_served(tmp_path, sglang_server))
    for until in ([b"--until", b"\xff"], [b"--until=\xff"]):
        asked = _digest(b"ask", b"--config", config, b"speculative decoding", *until)
        assert asked.returncode == 2, asked.stderr
        assert "--until" in _one_error(asked.stderr)


@pytest.mark.parametrize("args", [
    ["build", "--edition", "2026-12-0\udcff"],
    ["feedback", "add", "more", "2611.0000\udcff"],
    ["remove", "2026-11-\udcff"],
    ["site", "--config", "conf\udcffig.toml"],
])
def test_every_command_refuses_arguments_that_are_not_text(tmp_path: Path,
                                                           args: list[str]) -> None:
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    assert "\\xff" in result.stderr and "not text" in result.stderr


# Dates are dates -------------------------------------------------------------------------------

@pytest.mark.parametrize(("option", "value"), [
    ("--since", "2026-13-45"),
    ("--until", "'; DROP TABLE docs;--"),
    ("--since", "20261202"),
])
def test_since_and_until_are_dates_and_a_bad_one_is_named(tmp_path: Path, option: str,
                                                          value: str) -> None:
    config = _workspace(tmp_path)
    result = CliRunner().invoke(cli, ["ask", "--config", str(config), "speculative decoding",
                                      option, value])
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{option}': {value!r} is not a date" in result.stderr


def test_a_window_that_ends_before_it_starts_is_named(tmp_path: Path) -> None:
    config = _workspace(tmp_path)
    result = CliRunner().invoke(cli, ["ask", "--config", str(config), "energy",
                                      "--since", "2026-12-01", "--until", "2026-11-01"])
    assert result.exit_code == 2, result.output
    assert "2026-11-01 is before --since 2026-12-01" in result.stderr


def test_a_date_window_still_keeps_its_editions(tmp_path: Path) -> None:
    config = _workspace(tmp_path)
    result = CliRunner().invoke(cli, ["ask", "--config", str(config), "energy", "--json",
                                      "--since", "2026-11-18", "--until", "2026-11-25"])
    assert result.exit_code == 0, result.output
    assert not json.loads(result.stdout)["answered"]  # the energy paper came on 2026-12-02


# The index is ours or rebuilt ------------------------------------------------------------------

def _files(docs: Path) -> list[tuple[str, Path]]:
    return sorted((p.parent.name, p) for p in docs.glob("editions/*/edition.json"))


def _foreign(path: Path, columns: str = "edition, base_id, arxiv_id, title, authors, "
             "abstract, brief, claims, notes") -> None:
    """Another program's SQLite file at the index's path: a plain `docs` table, version 1."""
    db = sqlite3.connect(path)
    db.execute(f"CREATE TABLE docs ({columns})")
    db.execute("CREATE TABLE editions (edition TEXT PRIMARY KEY, digest TEXT, sighting TEXT)")
    db.execute("PRAGMA user_version = 1")
    db.commit()
    db.close()


def test_an_index_that_is_not_ours_is_rebuilt_before_it_is_searched(tmp_path: Path) -> None:
    docs = tmp_path / "site_src"
    _archive(docs)
    index = ArchiveIndex(tmp_path / "index.sqlite")
    _foreign(index.path)
    assert len(index.update(_files(docs), read_record).added) == 3
    hits = index.search("speculative decoding", 5)
    assert [h.base_id for h in hits] == ["2611.00001", "2611.00004"]


def test_every_read_of_an_index_that_is_not_ours_names_it(tmp_path: Path) -> None:
    index = ArchiveIndex(tmp_path / "index.sqlite")
    _foreign(index.path)
    for read in (lambda: index.search("speculative decoding", 5), index.editions,
                 index.withdrawn, lambda: index.covering(["2611.00001"])):
        with pytest.raises(UnusableIndex, match="tables this version did not write"):
            read()


def test_ask_over_an_index_that_is_not_ours_answers_from_the_records(
        tmp_path: Path, sglang_server: SglangServer) -> None:
    config = _served(tmp_path, sglang_server)
    (tmp_path / ".cache").mkdir()
    _foreign(tmp_path / ".cache" / "archive-index.sqlite")
    result = CliRunner().invoke(cli, ["ask", "--config", str(config), "--json",
                                      "speculative decoding"])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["answered"] and answer["papers"][0]["arxiv_id"] == "2611.00001v2"


# A locked index is never deleted ---------------------------------------------------------------

# Another process holding the file in a transaction (argv: the file, its BEGIN, its write)
# until told to commit.
HOLDER = textwrap.dedent("""
    import sqlite3, sys
    db = sqlite3.connect(sys.argv[1], isolation_level=None)
    db.execute(sys.argv[2])
    db.execute(sys.argv[3])
    print("held", flush=True)
    sys.stdin.readline()
    db.execute("COMMIT")
    db.close()
""")


def _holding(path: Path, begin: str, write: str) -> subprocess.Popen[str]:
    """The holder started, and holding, once this returns."""
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), begin, write],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


def test_a_locked_index_is_waited_for_and_left_whole_never_rebuilt(tmp_path: Path) -> None:
    docs = tmp_path / "site_src"
    _archive(docs)
    files = _files(docs)
    ArchiveIndex(tmp_path / "index.sqlite").update(files, read_record)
    index = ArchiveIndex(tmp_path / "index.sqlite", busy_timeout_s=0.2)
    holder = _holding(index.path, "BEGIN EXCLUSIVE",
                      "INSERT INTO editions VALUES ('2027-01-06', 'held', '{}')")
    try:
        for use in (lambda: index.update(files[:1], read_record),  # must write: waits, stops
                    lambda: index.update(files, read_record),
                    lambda: index.search("speculative decoding", 5), index.editions):
            with pytest.raises(IndexLockedError, match="locked by another process") as err:
                use()
            assert "database is locked" in str(err.value) and str(index.path) in str(err.value)
            assert index.path.exists()
    finally:
        holder.communicate("go\n", timeout=30)
    assert holder.returncode == 0  # the holder finished its transaction: nothing pulled away
    assert index.editions() == ["2026-11-18", "2026-11-25", "2026-12-02", "2027-01-06"]
    assert [h.base_id for h in index.search("paged attention", 5)] == ["2611.00002"]


def test_a_file_not_ours_that_another_process_is_writing_is_never_deleted(
        tmp_path: Path) -> None:
    """A newer digest (another format) writing the index: the file is not ours, but it is in
    use, so it is waited for, then left to its holder, never deleted from under it."""
    docs = tmp_path / "site_src"
    _archive(docs)
    path = tmp_path / "index.sqlite"
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.executescript("CREATE TABLE notes (text TEXT); PRAGMA user_version = 2;")
    index = ArchiveIndex(path, busy_timeout_s=0.2)
    holder = _holding(path, "BEGIN IMMEDIATE", "INSERT INTO notes VALUES ('mine')")
    try:
        with pytest.raises(IndexLockedError, match="locked by another process"):
            index.update(_files(docs), read_record)
        assert path.exists()
    finally:
        holder.communicate("go\n", timeout=30)
    assert holder.returncode == 0
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT text FROM notes").fetchall() == [("mine",)]


@pytest.mark.parametrize("kind", ["folder", "link"])
def test_a_folder_or_a_link_at_the_index_path_is_named_and_left_alone(
        tmp_path: Path, sglang_server: SglangServer, kind: str) -> None:
    config = _served(tmp_path, sglang_server)
    path = tmp_path / ".cache" / "archive-index.sqlite"
    path.parent.mkdir()
    outside = tmp_path / "elsewhere" / "index.sqlite"
    outside.parent.mkdir()
    if kind == "folder":
        path.mkdir()
    else:
        path.symlink_to(outside)  # a link to a file that is not there yet
    result = CliRunner().invoke(cli, ["ask", "--config", str(config), "speculative decoding"])
    assert result.exit_code == 2, result.output
    assert f"is a {kind}" in result.stderr and "Traceback" not in result.output
    assert not outside.exists() and (path.is_dir() if kind == "folder" else path.is_symlink())
    assert not sglang_server.state.chat_requests


def test_a_damaged_index_is_still_rebuilt(tmp_path: Path) -> None:
    docs = tmp_path / "site_src"
    _archive(docs)
    index = ArchiveIndex(tmp_path / "index.sqlite")
    index.path.write_bytes(b"not a database at all" * 100)
    with pytest.raises(UnusableIndex):
        index.editions()
    assert len(index.update(_files(docs), read_record).added) == 3
    assert isinstance(UnusableIndex("x"), DigestError)


# Odd marks, send and post records --------------------------------------------------------------

@pytest.mark.parametrize("content", ["null", "[]", "3"])
def test_a_marks_file_holding_null_or_no_object_is_named(tmp_path: Path, content: str) -> None:
    path = tmp_path / "feedback.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(FeedbackError, match="is not a marks file") as err:
        load_marks(path)
    assert str(path) in str(err.value)
    assert load_marks(tmp_path / "none.json").marks == ()  # no file: no marks


def test_feedback_list_names_a_marks_file_holding_null(tmp_path: Path) -> None:
    config = _workspace(tmp_path)
    (tmp_path / "feedback.json").write_text("null", encoding="utf-8")
    result = CliRunner().invoke(cli, ["feedback", "list", "--config", str(config)])
    assert result.exit_code == 2, result.output
    assert "feedback.json is not a marks file" in result.stderr
    assert "No marks yet." not in result.stdout


def test_a_send_or_post_record_holding_null_is_named_never_taken_for_none(
        tmp_path: Path) -> None:
    path = tmp_path / "sent.json"
    path.write_text("null", encoding="utf-8")
    with pytest.raises(EmailError, match="nothing was sent"):
        SendRecord(path, "2026-12-02")
    with pytest.raises(ChatError, match="nothing was posted"):
        PostRecord(path, "2026-12-02")


# The feed follows the site's address -----------------------------------------------------------

def test_a_rebuild_after_the_site_address_changed_moves_the_feed_with_the_pages(
        tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer) -> None:
    """The render's fingerprint held the config file but not DIGEST_SITE_URL, which the
    environment sets: a rebuild with nothing else changed skipped the render, so the feed
    written into docs_dir kept the old address while MkDocs moved the pages' canonical links."""
    config = write_config(tmp_path / "ws", arxiv_server, sglang_server)
    build = ["build", "--config", str(config), "--edition", "2026-12-02"]
    old, new = "https://old.example.org/digest/", "https://new.example.net/"
    for address in (old, new):
        result = CliRunner().invoke(cli, build, env={"DIGEST_SITE_URL": address})
        assert result.exit_code == 0, result.output
    site = config.parent / "site"
    feed = ElementTree.parse(site / "feed.xml").getroot()
    links = [link.get("href", "") for link in feed.iter(f"{ATOM}link")]
    assert links and all(link.startswith(new) for link in links), links
    assert old.removeprefix("https://") not in (site / "feed.xml").read_text(encoding="utf-8")
    canonical = re.search(r'<link rel="canonical" href="([^"]+)"',
                          (site / "index.html").read_text(encoding="utf-8"))
    assert canonical is not None and canonical.group(1).startswith(new)


def test_a_site_built_alone_after_the_address_changed_moves_the_feed_too(
        tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer) -> None:
    """`digest site` renders nothing: the feed in docs_dir, written by the last build for the
    old address, was copied into the new site as it was."""
    config = write_config(tmp_path / "ws", arxiv_server, sglang_server)
    old, new = "https://old.example.org/digest/", "https://new.example.net/"
    built = CliRunner().invoke(cli, ["build", "--config", str(config), "--edition", "2026-12-02"],
                               env={"DIGEST_SITE_URL": old})
    assert built.exit_code == 0, built.output
    sent = len(sglang_server.state.chat_requests)
    site = CliRunner().invoke(cli, ["site", "--config", str(config)],
                              env={"DIGEST_SITE_URL": new})
    assert site.exit_code == 0, site.output
    for feed in (config.parent / "site_src" / "feed.xml", config.parent / "site" / "feed.xml"):
        links = [link.get("href", "") for link in
                 ElementTree.parse(feed).getroot().iter(f"{ATOM}link")]
        assert links and all(link.startswith(new) for link in links), (feed, links)
    assert len(sglang_server.state.chat_requests) == sent  # nothing asked, only written again
    # A feed that is not even text (a bad merge, a disk error) is written again too.
    (config.parent / "site_src" / "feed.xml").write_bytes(b"\xff\xfe<feed/>")
    again = CliRunner().invoke(cli, ["site", "--config", str(config)],
                               env={"DIGEST_SITE_URL": new})
    assert again.exit_code == 0, again.output
    assert ElementTree.parse(config.parent / "site" / "feed.xml").getroot().tag == f"{ATOM}feed"


# Full text is never published ------------------------------------------------------------------

_EXCERPT_RE = re.compile(r"^## Paper (\d+): .*?^### Full-text excerpt \([^)]*\)\n\n(.*?)"
                         r"(?=\n\n## Paper |\Z)", re.MULTILINE | re.DOTALL)
COPIED = 1500  # characters of a paper's full text an answer copies: ten times a long quote


def _copying(copied: list[str]) -> Responder:
    """A model that answers in its own words, then pastes 1,500 characters of the first paper
    excerpt it was shown (what it pasted goes into `copied`)."""

    def respond(body: dict[str, Any]) -> Answer:
        structured = structured_answer(body)
        if structured:
            return structured
        shown = "\n".join(str(m["content"]) for m in body["messages"])
        number, excerpt = next((int(n), t) for n, t in _EXCERPT_RE.findall(shown)
                               if len(t) > COPIED + 200)
        paste = " ".join(excerpt[100:100 + COPIED].split()[1:-1])  # whole words
        copied.append(paste)
        return Answer(f"Paper {number} is the one to read first. As its text puts it:\n\n"
                      f"{paste}\n\nThat is why Paper {number} matters.\n")
    return respond


def _squashed(text: str) -> str:
    return " ".join(text.split())


def _published_anywhere(folder: Path, passage: str) -> list[Path]:
    """The files under `folder` (pages, records, the feed, the site) that hold `passage`."""
    return [p for p in folder.rglob("*") if p.is_file() and p.suffix in
            (".md", ".json", ".html", ".xml", ".txt")
            and passage in _squashed(p.read_text(encoding="utf-8", errors="replace"))]


def test_an_answer_copying_a_papers_full_text_is_recorded_and_published_cut(
        tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer) -> None:
    copied: list[str] = []
    sglang_server.state.responder = _copying(copied)
    config = write_config(tmp_path / "ws", arxiv_server, sglang_server)
    result = CliRunner().invoke(cli, ["build", "--config", str(config), "--edition",
                                      "2026-12-02"])
    assert result.exit_code == 0, result.output
    workspace = config.parent
    passage = _squashed(copied[0])[400:700]  # any stretch of the copy, longer than a quote
    for folder in ("site_src", "site"):
        assert _published_anywhere(workspace / folder, passage) == []
    record = json.loads((workspace / "site_src" / "editions" / "2026-12-02" / "edition.json")
                        .read_text(encoding="utf-8"))
    answers = [p["completion"]["content"] for p in record["prompts"] if p["completion"]["content"]]
    assert answers and all("copied word for word from the full text of arXiv" in a
                           and "is the one to read first" in a and "matters." in a
                           for a in answers if not a.lstrip().startswith("{"))
    page = next((workspace / "site_src" / "editions" / "2026-12-02").glob("research-map*.md"))
    assert "characters copied word for word" in page.read_text(encoding="utf-8")

    # The archive's answer to a question, on its page and in --json, the same.
    question = record["papers"][0]["title"]
    asked = CliRunner().invoke(cli, ["ask", "--config", str(config), "--json", "--publish",
                                     question])
    assert asked.exit_code == 0, asked.output
    answer = json.loads(asked.stdout)
    assert "copied word for word from the full text of arXiv" in answer["answer"]
    assert _squashed(copied[-1])[400:700] not in _squashed(answer["answer"])
    assert _published_anywhere(workspace / "site_src", _squashed(copied[-1])[400:700]) == []
