"""The workflow's own steps on fixed objects: the commit-back against a real git remote (a
concurrent push rebased onto, feedback.json merged by mark, a refusal said once and loudly),
the restore's choice of editions (from an artifact folder or the deployed site's sitemap),
and the cache pruned to what the next run can use."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.archive.public import public_text
from generator.archive.record import EditionRecord
from generator.cli import cli
from generator.config import Config
from generator.marks import Marks, new_mark
from generator.marks import merge_marks as merge
from generator.papers import FullText
from generator.pipeline.restore import found_in_folder, found_on_site, missing
from generator.prompts.kinds import BUILTIN_KINDS
from generator.publish.commit_back import CommitBackError, commit_back, merge_feedback
from generator.store.cache import Cache
from generator.store.prune import prune
from tests.conftest import ROOT

GOLDEN = ROOT / "tests" / "golden" / "editions__2026-12-02__edition.json"
ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
       "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}


needs_git = pytest.mark.skipif(not shutil.which("git"), reason="git is not installed")


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)


def git(where: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=where, check=True, capture_output=True,
                          text=True, env={**os.environ, **ENV}).stdout


def marks_file(*marks: tuple[str, str, str], read: tuple[int, ...] = ()) -> str:
    return json.dumps({"format": 2, "marks": [
        {"arxiv_id": a, "kind": k, "source": "site", "at": at} for a, k, at in marks],
        "read": [{"repo": "lab/digest", "number": n} for n in read]}, indent=2) + "\n"


@pytest.fixture
def repos(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A bare remote, the run's clone at depth 1 (as actions/checkout makes it), and
    someone else's clone."""
    remote, seed = tmp_path / "remote.git", tmp_path / "seed"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    seed.mkdir()
    git(seed, "init", "-q", "-b", "main")
    (seed / "site_src" / "editions" / "2026-11-30").mkdir(parents=True)
    (seed / "site_src" / "editions" / "2026-11-30" / "edition.json").write_text("{}\n")
    (seed / "site_src" / "index.md").write_text("# Home\n")
    (seed / "feedback.json").write_text(marks_file(("2611.00001", "more", "2026-11-01"),
                                                   read=(1,)))
    git(seed, "add", ".")
    git(seed, "commit", "-q", "-m", "start")
    git(seed, "push", "-q", remote.as_uri(), "main")
    run, other = tmp_path / "run", tmp_path / "other"
    git(tmp_path, "clone", "-q", "--depth", "1", remote.as_uri(), str(run))
    git(tmp_path, "clone", "-q", remote.as_uri(), str(other))
    return remote, run, other


@needs_git
def test_a_push_that_lost_the_race_is_rebased_and_the_marks_merged(
        repos: tuple[Path, Path, Path]) -> None:
    remote, run, other = repos
    # The run writes its edition, the home page and a mark it read.
    (run / "site_src" / "editions" / "2026-12-07").mkdir()
    (run / "site_src" / "editions" / "2026-12-07" / "edition.json").write_text('{"e": 2}\n')
    (run / "site_src" / "index.md").write_text("# Home, with 2026-12-07\n")
    (run / "feedback.json").write_text(marks_file(
        ("2611.00001", "more", "2026-11-01"), ("2611.00002", "less", "2026-12-07"), read=(1, 2)))
    # Meanwhile someone marks another paper, changes their mind on the first, edits a file.
    (other / "feedback.json").write_text(marks_file(
        ("2611.00001", "less", "2026-12-03"), ("2611.00003", "more", "2026-12-02"), read=(1, 3)))
    (other / "README.md").write_text("hello\n")
    git(other, "add", ".")
    git(other, "commit", "-q", "-m", "by hand")
    git(other, "push", "-q", "origin", "main")

    kept = commit_back(run, ["site_src", "feedback.json"], "Digest edition 2026-12-07",
                       branch="main")
    assert kept.attempts == 2 and kept.commit == git(remote, "rev-parse", "main").strip()
    assert git(remote, "log", "--format=%s", "main").split("\n")[:2] == [
        "Digest edition 2026-12-07", "by hand"]
    assert git(remote, "show", "main:README.md") == "hello\n"
    assert git(remote, "show", "main:site_src/editions/2026-12-07/edition.json") == '{"e": 2}\n'
    merged = json.loads(git(remote, "show", "main:feedback.json"))
    assert {(m["arxiv_id"], m["kind"]) for m in merged["marks"]} == {
        ("2611.00001", "less"), ("2611.00002", "less"), ("2611.00003", "more")}
    assert [r["number"] for r in merged["read"]] == [1, 2, 3]
    # Nothing new: nothing committed, nothing pushed.
    assert commit_back(run, ["site_src", "feedback.json"], "again", branch="main").commit == ""


@needs_git
def test_a_branch_that_refuses_the_push_is_an_error_after_the_attempts(
        repos: tuple[Path, Path, Path], tmp_path: Path) -> None:
    remote, run, _ = repos
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'GH006: Protected branch update failed' >&2\nexit 1\n")
    hook.chmod(0o755)
    (run / "site_src" / "editions" / "2026-12-07").mkdir()
    (run / "site_src" / "editions" / "2026-12-07" / "edition.json").write_text("{}\n")
    summary, output = tmp_path / "summary.md", tmp_path / "output"
    result = CliRunner().invoke(cli, [
        "workflow", "keep", "--config", str(run / "config.toml"), "-m", "Digest edition",
        "--branch", "main", "--summary", str(summary), "--output", str(output),
        "site_src", "feedback.json"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "after 3 attempt(s) (the remote refused it: a protected branch or a hook)" in \
        result.output
    assert "The edition was not committed" in summary.read_text()
    assert not output.exists()  # no commit output: the send job takes the records artifact
    assert git(remote, "log", "--format=%s", "main").strip() == "start"
    with pytest.raises(CommitBackError):  # the local commit waits, and is pushed next time
        commit_back(run, ["site_src"], "again", branch="main", attempts=1)
    hook.unlink()
    assert commit_back(run, ["site_src"], "again", branch="main").paths == (
        "site_src/editions/2026-12-07/edition.json",)


def _someone_pushes(other: Path, name: str, text: str) -> None:
    (other / name).write_text(text)
    git(other, "add", ".")
    git(other, "commit", "-q", "-m", f"{name} by hand")
    git(other, "push", "-q", "origin", "main")


def _new_edition(run: Path) -> None:
    (run / "site_src" / "editions" / "2026-12-07").mkdir()
    (run / "site_src" / "editions" / "2026-12-07" / "edition.json").write_text('{"e": 2}\n')


@needs_git
def test_run_by_hand_a_commit_not_pushed_is_never_dropped_for_the_race(
        repos: tuple[Path, Path, Path]) -> None:
    """`digest workflow keep` in someone's own checkout: a commit of theirs not pushed yet,
    changing another file, would be lost by putting the files on the branch as it is now:
    refused, in our words, and nothing of the checkout changed."""
    remote, run, other = repos
    (run / "notes.md").write_text("mine, committed, not pushed\n")
    git(run, "add", "notes.md")
    git(run, "commit", "-q", "-m", "my notes")
    (run / "site_src" / "index.md").write_text("# Home, edited\n")  # kept: committed by it
    _new_edition(run)
    _someone_pushes(other, "README.md", "hello\n")
    with pytest.raises(CommitBackError, match=r"commits it lacks that change other files "
                       r"than those being kept \(notes\.md\).*nothing was changed"):
        commit_back(run, ["site_src", "feedback.json"], "Digest edition", branch="main")
    assert git(run, "log", "--format=%s").split("\n")[:3] == [
        "Digest edition", "my notes", "start"]
    assert (run / "notes.md").read_text() == "mine, committed, not pushed\n"
    assert git(run, "status", "--porcelain") == ""
    assert git(remote, "log", "--format=%s", "main").split("\n")[:2] == [
        "README.md by hand", "start"]


@needs_git
def test_run_by_hand_an_edit_not_committed_is_kept_or_the_rebase_refused(
        repos: tuple[Path, Path, Path]) -> None:
    """Edits not committed outside the kept paths stay as they were, uncommitted and not
    pushed, while the files go on top of the moved branch; an edit the branch's own change
    would overwrite stops it before anything changes."""
    remote, run, other = repos
    (run / "config.toml").write_text("[digest]\n")  # untracked, the branch never has it
    (run / "staged.md").write_text("staged, not committed\n")
    git(run, "add", "staged.md")
    _new_edition(run)
    _someone_pushes(other, "README.md", "hello\n")
    kept = commit_back(run, ["site_src", "feedback.json"], "Digest edition", branch="main")
    assert kept.attempts == 2 and kept.paths == ("site_src/editions/2026-12-07/edition.json",)
    assert git(remote, "ls-tree", "-r", "--name-only", "main").split() == [
        "README.md", "feedback.json", "site_src/editions/2026-11-30/edition.json",
        "site_src/editions/2026-12-07/edition.json", "site_src/index.md"]
    # Not committed, not pushed, and still there (git's rebase onto the branch unstages it).
    assert git(run, "status", "--porcelain").splitlines() == ["?? config.toml", "?? staged.md"]
    assert (run / "config.toml").read_text() == "[digest]\n"
    assert (run / "staged.md").read_text() == "staged, not committed\n"

    # The branch changes a file this checkout edited and has not committed: refused.
    (run / "README.md").write_text("my edit\n")
    (run / "site_src" / "editions" / "2026-12-14").mkdir()
    (run / "site_src" / "editions" / "2026-12-14" / "edition.json").write_text("{}\n")
    git(other, "pull", "-q", "--ff-only")
    _someone_pushes(other, "README.md", "hello again\n")
    head = git(run, "rev-parse", "HEAD")
    with pytest.raises(CommitBackError, match=r"would overwrite files this checkout has "
                       r"edited.*README\.md.*nothing was changed"):
        commit_back(run, ["site_src"], "Digest edition 2", branch="main")
    assert (run / "README.md").read_text() == "my edit\n"
    assert git(run, "log", "-1", "--format=%s") == "Digest edition 2\n"
    assert git(run, "rev-parse", "HEAD~1") == head
    assert git(run, "status", "--porcelain").splitlines() == [
        " M README.md", "?? config.toml", "?? staged.md"]


def test_marks_merge_keeps_every_read_issue_and_the_later_mark_of_a_paper() -> None:
    early, late = new_mark("2611.00001", "more", "site"), new_mark("2611.00001", "less", "site")
    theirs = Marks((early.__class__(early.arxiv_id, "more", "site", "2026-12-01"),),
                   format=2).with_read("lab/digest", 4)
    ours = Marks((late.__class__(late.arxiv_id, "less", "site", "2026-12-07"),),
                 format=2).with_read("lab/digest", 5)
    both = merge(theirs, ours)
    assert [(m.kind, m.at) for m in both.marks] == [("less", "2026-12-07")]
    assert both.was_read("lab/digest", 4) and both.was_read("lab/digest", 5)
    assert merge(ours, theirs).marks == both.marks  # the later mark, whichever side


def config_at(folder: Path) -> Config:
    return Config(path=folder / "config.toml", registry=BUILTIN_KINDS)


def test_restore_takes_only_editions_newer_than_the_branchs_newest(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "site_src" / "editions" / "2026-12-09").mkdir(parents=True)
    shutil.copy(GOLDEN, ws / "site_src" / "editions" / "2026-12-09" / "edition.json")
    record = json.loads(GOLDEN.read_text())
    artifact = tmp_path / ".records"
    for name in ("2026-12-02", "2026-12-16"):  # one the branch dropped on purpose, one lost
        (artifact / f"digest-records-{name}").mkdir(parents=True)
        (artifact / f"digest-records-{name}" / "edition.json").write_text(
            json.dumps({**record, "edition": name}))
    (artifact / "junk").mkdir()
    (artifact / "junk" / "edition.json").write_text("not json")
    found = found_in_folder(artifact)
    assert sorted(f.edition for f in found) == ["2026-12-02", "2026-12-16"]
    assert [f.edition for f in missing(config_at(ws), found)] == ["2026-12-16"]
    (ws / "site_src" / ".removed-editions").write_text("2026-12-16\n")  # `digest remove`d
    assert missing(config_at(ws), found) == []
    (ws / "site_src" / ".removed-editions").unlink()

    # The deployed site: its sitemap names the editions, each serves its record in its
    # public form (archive/public.py: the record whole under "record").
    def public(edition: str) -> bytes:
        return public_text(EditionRecord.from_json({**record, "edition": edition}, "x")).encode()

    served = {"https://lab.example.org/digest/sitemap.xml": (
        b"<urlset><url><loc>https://lab.example.org/digest/editions/2026-12-16/</loc></url>"
        b"<url><loc>https://lab.example.org/digest/editions/2026-12-23/papers/x/</loc></url>"
        b"<url><loc>https://lab.example.org/digest/editions/2026-12-09/</loc></url></urlset>"),
        "https://lab.example.org/digest/editions/2026-12-16/edition.json": public("2026-12-16"),
        "https://lab.example.org/digest/editions/2026-12-23/edition.json":
            public("2026-12-09")}  # not what it says
    on_site = found_on_site("https://lab.example.org/digest", served.get)
    assert [f.edition for f in on_site] == ["2026-12-16"]
    # What comes back is the record the branch keeps, not the site's public form.
    kept = EditionRecord.from_json(json.loads(on_site[0].record), "restored")
    assert kept.edition == "2026-12-16" and b"schema_version" not in on_site[0].record
    assert found_on_site("https://lab.example.org/other/", served.get) == []
    asked: list[str] = []

    def get(url: str) -> bytes | None:
        asked.append(url)
        return served.get(url)

    found_on_site("https://lab.example.org/digest/", get, newer_than="2026-12-16")
    assert asked == ["https://lab.example.org/digest/sitemap.xml",
                     "https://lab.example.org/digest/editions/2026-12-23/edition.json"]


def test_prune_keeps_what_the_next_run_uses(tmp_path: Path) -> None:
    cache = Cache(tmp_path / ".cache")
    old = time.time() - 8 * 24 * 3600
    files = {"pdf/2611.00001v1.pdf": None, "text/2611.00001v1.30000.json": None,
             "text/2611.00002v1.30000.json": old, "completions/ab/abc.json": None,
             "completions/cd/cde.json": old, "servers.json": old,
             "arxiv-last-request.json": old}
    for name in ("2026-11-09", "2026-11-16", "2026-11-23", "2026-11-30", "2026-12-07"):
        files[f"editions/{name}/fetch.json"] = old
        files[f"editions/{name}/sent.json"] = old
    for name, when in files.items():
        path = cache.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
        if when is not None:
            os.utime(path, (when, when))
    done = prune(cache)
    left = sorted(str(p.relative_to(cache.root)) for p in cache.root.rglob("*") if p.is_file())
    assert left == sorted(["text/2611.00001v1.30000.json", "completions/ab/abc.json",
                           "servers.json", "arxiv-last-request.json",
                           *(f"editions/{n}/{f}" for n in ("2026-11-16", "2026-11-23",
                                                           "2026-11-30", "2026-12-07")
                             for f in ("fetch.json", "sent.json"))])
    assert done.files == 5 and not (cache.root / "completions" / "cd").exists()
    # Reading an entry counts as using it: the next prune keeps it.
    cache.put_text("2611.00009v1", 30000, FullText("not_requested"))
    path = cache.root / "text" / "2611.00009v1.30000.json"
    os.utime(path, (old, old))
    assert cache.get_text("2611.00009v1", 30000) == FullText("not_requested")
    assert path.stat().st_mtime > old + 24 * 3600
    assert prune(cache).files == 0 and path.exists()


def test_feedback_files_merge_whatever_format_each_side_wrote() -> None:
    older = json.dumps({"marks": [{"arxiv_id": "2611.00004v2", "kind": "less",
                                   "source": "mail", "at": "2026-12-01"}], "read": [3]})
    ours = marks_file(("2611.00001", "more", "2026-12-07"), read=(5,))
    merged = json.loads(merge_feedback(older.encode(), ours.encode()))
    assert merged["format"] == 2
    assert [(m["arxiv_id"], m["kind"]) for m in merged["marks"]] == [
        ("2611.00001", "more"), ("2611.00004", "less")]
    assert sorted(r["number"] for r in merged["read"]) == [3, 5]
    assert merge_feedback(b"not json", ours.encode()) == ours.encode()  # ours, and a warning
