"""The workflow's commit-back: an edition's files onto the branch, whoever pushed meanwhile.

A weekly run takes minutes to an hour, and anyone may push to the branch in that time (a
config edit, the readers' marks). The run commits its own files (the edition's folder, the
pages rendered again, `feedback.json`); when the push is refused it fetches the branch, puts
its files on top of what the branch holds now and pushes again. Nothing conflicts: each
edition owns its folder, the other pages are rendered from the records, and `feedback.json`
is merged mark by mark. Only when that keeps failing (a protected branch, a hook) does it
give up, loudly: the workflow then fails the job, keeps the records as an artifact, and the
next run restores them (`pipeline/restore.py`) before it builds.
"""

from __future__ import annotations

import logging
import os
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import DigestError
from ..marks import FILE as MARKS_FILE
from ..marks import FeedbackError, load_marks, merge_marks, save_marks
from ..text.urls import redact_text

log = logging.getLogger(__name__)

BOT_NAME = "github-actions[bot]"
BOT_EMAIL = "41898282+github-actions[bot]@users.noreply.github.com"
GIT_TIMEOUT_S = 300.0


class CommitBackError(DigestError):
    """The files could not be kept on the branch; the message says what happened and where
    the files are meanwhile."""


@dataclass(frozen=True)
class Kept:
    """What `commit_back` did."""

    commit: str  # the commit holding the files, on the branch ("" : nothing to keep)
    paths: tuple[str, ...]  # the files it committed (added, changed or removed)
    attempts: int  # pushes tried (0: nothing to push)


Merge = Callable[[bytes | None, bytes], bytes]


def merge_feedback(theirs: bytes | None, ours: bytes) -> bytes:
    """feedback.json as the branch has it and as this run wrote it, joined mark by mark (each
    read and written by the marks' own reader and writer, any format they read)."""
    if theirs is None:
        return ours
    with tempfile.TemporaryDirectory(prefix="digest-marks-") as folder:
        theirs_path, ours_path, merged_path = (Path(folder) / n for n in ("a", "b", "c"))
        theirs_path.write_bytes(theirs)
        ours_path.write_bytes(ours)
        try:
            merged = merge_marks(load_marks(theirs_path), load_marks(ours_path))
        except FeedbackError as err:
            log.warning("%s could not be merged (%s): this run's copy is kept", MARKS_FILE, err)
            return ours
        save_marks(merged_path, merged)
        return merged_path.read_bytes()


MERGES: dict[str, Merge] = {MARKS_FILE: merge_feedback}


def commit_back(repo: Path, paths: Sequence[str], message: str, *, branch: str,
                remote: str = "origin", attempts: int = 3,
                merges: dict[str, Merge] | None = None) -> Kept:
    """Commit `paths` (those that exist) and push them to `remote`'s `branch`; on a refused
    push, fetch the branch, put this run's files on top of it and try again, `attempts` times.

    Raises CommitBackError when every push failed; the local commit stays as it is."""
    merges = MERGES if merges is None else merges
    present = [p for p in paths if (repo / p).exists() or _tracked(repo, p)]
    if not present:
        return Kept("", (), 0)
    # What the branch had when this run last saw it: the files to keep are those that differ
    # from it (this commit's, and an earlier step's whose push failed).
    tracking = _run(repo, "rev-parse", "--verify", "-q", f"refs/remotes/{remote}/{branch}")
    base = tracking.stdout.strip() if tracking.returncode == 0 else \
        _git(repo, "rev-parse", "HEAD").stdout.strip()
    _git(repo, "add", "-A", "--", *present)
    _commit(repo, message, present)
    changed = tuple(_git(repo, "diff", "--name-only", "--no-renames", "-z", base, "HEAD",
                         "--", *present).stdout.split("\0")[:-1])
    if not changed:
        return Kept("", (), 0)
    ours = _git(repo, "rev-parse", "HEAD").stdout.strip()
    files = _files_of(repo, ours, changed)
    said = ""
    for attempt in range(1, attempts + 1):
        pushed = _run(repo, "push", remote, f"HEAD:refs/heads/{branch}")
        if pushed.returncode == 0:
            commit = _git(repo, "rev-parse", "HEAD").stdout.strip()
            log.info("kept %d file(s) on %s in %s (attempt %d)", len(changed), branch,
                     commit[:12], attempt)
            return Kept(commit, changed, attempt)
        said = redact_text(pushed.stderr.strip())
        log.info("git push (attempt %d) answered: %s", attempt, said[-2000:])
        if attempt == attempts:
            break
        if _run(repo, "fetch", "--no-tags", remote, branch).returncode != 0:
            continue  # the remote is away: push again, which says why
        _onto(repo, "FETCH_HEAD", files, merges, message,
              since=base, where=f"{remote}'s {branch}")
    raise CommitBackError(
        f"could not push {len(changed) or 'the'} file(s) to {remote}'s {branch} after "
        f"{attempts} attempt(s) ({_reason(said)}); they are committed locally "
        f"({_git(repo, 'rev-parse', '--short=12', 'HEAD').stdout.strip() or ours[:12]})")


def _onto(repo: Path, upstream: str, files: dict[str, bytes | None],
          merges: dict[str, Merge], message: str, *, since: str, where: str) -> None:
    """The branch as `upstream` has it, with this run's files on top, as one new commit.

    Nothing else of the checkout is lost: run by hand, it may hold commits not pushed yet and
    edits not committed. A commit beyond `upstream` (since where the two parted; `since`, the
    branch as this run first saw it, where git finds no such point) that changes a file other
    than this run's is refused, as is an edit or an untracked file that the branch's own
    change would overwrite (`git reset --keep`), before anything is changed; any other edit
    stays in the working tree as it was, uncommitted (unstaged, where it was staged)."""
    parted = _run(repo, "merge-base", upstream, "HEAD")
    start = parted.stdout.strip() if parted.returncode == 0 else since
    others = sorted(set(_names(repo, "diff", "--name-only", "--no-renames", "-z", start,
                               "HEAD")) - set(files))
    if others:
        raise CommitBackError(
            f"{where} moved meanwhile, and this checkout has commits it lacks that change "
            f"other files than those being kept ({_some(others)}): putting this run's files "
            "on top of the branch would drop them, so nothing was changed. Bring the branch "
            "in yourself (`git pull --rebase`), push, and run this again")
    theirs = {path: _show(repo, upstream, path) for path in files}
    kept = _run(repo, "reset", "-q", "--keep", upstream)
    if kept.returncode != 0:
        said = redact_text(kept.stderr.strip())
        raise CommitBackError(
            f"{where} moved meanwhile, and its change would overwrite files this checkout "
            f"has edited or not yet added ({_first_line(said)}), "
            "so nothing was changed: this run's files are committed locally. Commit or stash "
            "those edits, bring the branch in (`git pull --rebase`), and run this again")
    for path, content in files.items():
        target = repo / path
        if content is None:
            if target.exists():
                target.unlink()
            continue
        if path in merges:
            content = merges[path](theirs[path], content)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    # Only this run's files: a path neither here nor on the branch (removed on both) is none.
    paths = [p for p in files if (repo / p).exists() or _tracked(repo, p)]
    if paths:
        _git(repo, "add", "-A", "--", *paths)
        _commit(repo, message, paths)


def _names(repo: Path, *args: str) -> list[str]:
    return _git(repo, *args).stdout.split("\0")[:-1]


def _first_line(said: str) -> str:
    lines = said.splitlines()
    return lines[0].removeprefix("error: ")[:300] if lines else "git gave no detail"


def _some(paths: Sequence[str]) -> str:
    return ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")


def _files_of(repo: Path, commit: str, paths: Sequence[str]) -> dict[str, bytes | None]:
    """Each path's content in `commit` (None: the commit removes it)."""
    return {path: _show(repo, commit, path) for path in paths}


def _show(repo: Path, commit: str, path: str) -> bytes | None:
    done = subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{path}"],
                          capture_output=True, check=False, env=_env(), timeout=GIT_TIMEOUT_S)
    return done.stdout if done.returncode == 0 else None


def _tracked(repo: Path, path: str) -> bool:
    return bool(_git(repo, "ls-files", "--", path).stdout.strip())


def _commit(repo: Path, message: str, paths: Sequence[str]) -> None:
    """A commit of `paths` alone (whatever else is staged stays staged, uncommitted) by the
    workflow's bot (git's own GIT_AUTHOR_*/GIT_COMMITTER_* win, as ever); none where they
    are as HEAD has them."""
    if _git(repo, "diff", "--cached", "--quiet", "--", *paths, check=False).returncode == 0:
        return
    _git(repo, "-c", f"user.name={BOT_NAME}", "-c", f"user.email={BOT_EMAIL}",
         "commit", "-q", "--no-verify", "-m", message, "--only", "--", *paths)


def _reason(said: str) -> str:
    text = said.casefold()
    if "protected branch" in text or "pre-receive hook declined" in text:
        return "the remote refused it: a protected branch or a hook"
    if "rejected" in text or "fetch first" in text or "non-fast-forward" in text:
        return "the branch kept moving"
    if "permission" in text or "403" in text or "denied" in text:
        return "no permission to push: the job needs `contents: write`"
    lines = said.splitlines()
    return f"git: {lines[-1][:200]}" if lines else "git gave no reason"


def _env() -> dict[str, str]:
    """The child git's environment: this process's (inherited, not read), never prompting."""
    return {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GCM_INTERACTIVE": "never"}


def _run(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                              check=False, env=_env(), timeout=GIT_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    except FileNotFoundError as err:
        raise CommitBackError("git is not installed (or not on PATH)") from err
    except subprocess.TimeoutExpired as err:
        raise CommitBackError(f"`git {args[0]}` in {repo} did not finish within "
                              f"{GIT_TIMEOUT_S:g} s") from err


def _git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = _run(repo, *args)
    if check and done.returncode != 0:
        said = redact_text(done.stderr.strip())
        raise CommitBackError(f"`git {args[0] if args[0] != '-c' else 'commit'}` failed in "
                              f"{repo}: {said.splitlines()[-1] if said else 'no reason given'}")
    return done
