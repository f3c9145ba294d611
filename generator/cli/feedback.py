"""`digest feedback`: the readers' marks (registered on the `digest` group in cli.py).

Every command that writes feedback.json or the repository's issues holds the workspace lock
(`held`), as builds and sends do: two pulls at once would thank every reader twice, and a pull
beside `add` would write over the added mark. A second one waits for the first (`--lock-wait`),
saying which process holds the lock, then goes on or gives up in our words.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import click
import requests

from ..archive.history import History
from ..config import Config
from ..errors import LockedError, UsageError
from ..marks import FORMAT, KINDS, close_read, load_marks, new_mark, pull, save_marks
from ..marks.github import DEFAULT_API, GitHubIssues
from ..pipeline.library import Shelf, library_shelf
from ..pipeline.services import workspace_cache
from ..synthesis.triage import LIBRARY
from ..text.safe_text import text_of
from .common import config_option, environment, read_config, user_errors, verbose_option, workspace_lock

LOCK_WAIT_S = 120.0
lock_wait_option = click.option(
    "--lock-wait", "lock_wait_s", type=click.FloatRange(min=0), default=LOCK_WAIT_S,
    show_default=True, metavar="SECONDS",
    help="Wait up to SECONDS for another digest run in this workspace to finish (0: not at all).")
timeout_option = click.option(
    "--timeout", "timeout_s", type=click.FloatRange(min=0.01), default=60.0, show_default=True,
    metavar="SECONDS", help="Give up on an answer of GitHub's that takes longer than SECONDS.")


@click.group()
def feedback() -> None:
    """The readers' "more like this" and "less like this" marks, which the next edition's
    triage reads with [triage] interests set (kept in feedback.json beside config.toml; one
    mark per paper, the last counts).

    \b
    Example:
        digest feedback list --config my-digest/config.toml
    """


@feedback.command("pull")
@verbose_option
@config_option
@click.option("--keep-open", is_flag=True,
              help="Read and keep the marks, close nothing (then `digest feedback close`).")
@click.option("--if-configured", is_flag=True,
              help="Do nothing, successfully, where [feedback] github_repo is not set.")
@lock_wait_option
@timeout_option
def pull_command(config_path: str, keep_open: bool, if_configured: bool, lock_wait_s: float,
                 timeout_s: float) -> None:
    """Read the marks readers left as issues in [feedback] github_repo, then close them.

    A mark is an open issue titled like "digest-feedback more 2611.00001" (the site's links
    open one, labelled where the reader may label). The API is GITHUB_API_URL's (default
    https://api.github.com), the token GITHUB_TOKEN's (it needs to read, comment on and close
    issues). Issues that are not a mark are left open. The workflow reads with --keep-open,
    commits feedback.json, then closes (`digest feedback close`), so no mark is lost.

    \b
    Example:
        GITHUB_TOKEN=... digest feedback pull --config my-digest/config.toml
    """
    with user_errors():
        config = read_config(config_path)
        if _skipped(config, if_configured, "no marks to read"):
            return
        with held(config, lock_wait_s), _issues(config, timeout_s) as issues:
            pulled = pull(issues, config.marks_file, close=not keep_open)
        known = _known(History.load(config.docs_dir))
        for mark in pulled.added:
            note = "" if mark.arxiv_id in known else " (not in any edition yet: kept)"
            click.echo(f"#{mark.issue}: {mark.kind} like {mark.arxiv_id}{note}")
        if pulled.ignored:
            click.echo(f"Left open (not a mark we can read): "
                       f"{', '.join(f'#{n}' for n in pulled.ignored)}")
        if pulled.left:
            click.echo(f"{pulled.left} more issue(s) with a mark are left for the next pull "
                       "(GitHub lists at most 1,000 at a time).")
        _warn_without_triage(config)
        click.echo(f"{len(pulled.added)} mark(s) read from {config.feedback.github_repo}, "
                   f"{len(pulled.closed)} issue(s) closed; "
                   f"{len(load_marks(config.marks_file).marks)} mark(s) in "
                   f"{config.marks_file.name}.")


@feedback.command("close")
@verbose_option
@config_option
@click.option("--if-configured", is_flag=True,
              help="Do nothing, successfully, where [feedback] github_repo is not set.")
@lock_wait_option
@timeout_option
def close_command(config_path: str, if_configured: bool, lock_wait_s: float,
                  timeout_s: float) -> None:
    """Close the open issues whose marks feedback.json has read, each with a comment.

    \b
    Example:
        digest feedback pull --keep-open && git commit feedback.json ... && digest feedback close
    """
    with user_errors():
        config = read_config(config_path)
        if _skipped(config, if_configured, "no issues to close"):
            return
        with held(config, lock_wait_s), _issues(config, timeout_s) as issues:
            marks = load_marks(config.marks_file, issues.repo)
            if marks.format != FORMAT:  # numbers alone: pinned to this repository now
                save_marks(config.marks_file, marks)
            closed = close_read(issues, marks)
        click.echo(f"{len(closed)} issue(s) closed.")


def _skipped(config: Config, if_configured: bool, nothing: str) -> bool:
    """Whether `--if-configured` finds no repository to read (and says so)."""
    if config.feedback.github_repo or not if_configured:
        return False
    click.echo(f"No [feedback] github_repo: {nothing}.")
    return True


@contextlib.contextmanager
def held(config: Config, wait_s: float) -> Iterator[None]:
    """The workspace lock, waited for up to `wait_s` seconds (said once, with its holder)."""
    deadline = time.monotonic() + wait_s
    told = False
    cache = workspace_cache(config)
    with contextlib.ExitStack() as stack:
        while True:
            try:
                stack.enter_context(workspace_lock(cache))
                break
            except LockedError as err:
                holder = _holder(config)
                if time.monotonic() >= deadline:
                    waited = f"after waiting {wait_s:g} s" if wait_s else "(--lock-wait 0)"
                    raise LockedError(
                        f"another digest run ({holder}) still holds this workspace's lock "
                        f"{waited}: nothing was changed; run the same command again once it "
                        "has finished, or with a longer --lock-wait") from err
                if not told:
                    click.echo(f"Waiting up to {wait_s:g} s for another digest run ({holder}) "
                               "to finish with this workspace…", err=True)
                    told = True
                time.sleep(min(0.2, max(deadline - time.monotonic(), 0.0)))
        yield


def _holder(config: Config) -> str:
    """Which process holds the lock, as well as its lock file tells (its pid) and /proc."""
    try:
        pid = int((config.cache_dir / "digest.lock").read_text(encoding="utf-8").split()[0])
    except (OSError, ValueError, IndexError):
        return "a process of unknown id"
    try:
        words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        command = " ".join(w.decode(errors="replace") for w in words if w)[:120]
    except OSError:
        command = ""
    return f"process {pid}: {command}" if command else f"process {pid}"


@contextlib.contextmanager
def _issues(config: Config, timeout_s: float) -> Iterator[GitHubIssues]:
    """The repository's issues, with the token from the environment."""
    repo = config.feedback.github_repo
    if not repo:
        raise UsageError(f"set [feedback] github_repo = \"owner/name\" in {config.path} to read "
                         "marks from that repository's issues (or pass --if-configured)")
    token = environment().get("GITHUB_TOKEN", "")
    if not token:
        raise UsageError("GITHUB_TOKEN is not set: the marks' issues are read and closed "
                         "with it (locally: GITHUB_TOKEN=$(gh auth token), or a fine-grained "
                         "token with Issues read and write on the repository; in a workflow: "
                         "env: GITHUB_TOKEN: ${{ github.token }})")
    with requests.Session() as session:
        yield GitHubIssues(session, environment().get("GITHUB_API_URL") or DEFAULT_API, repo,
                           token, deadline_s=timeout_s)


@feedback.command("add")
@verbose_option
@config_option
@click.argument("arxiv_id")
@click.argument("kind", type=click.Choice(KINDS))
@lock_wait_option
def add_command(config_path: str, arxiv_id: str, kind: str, lock_wait_s: float) -> None:
    """Mark a paper: more or less like it (replaces an earlier mark of it).

    \b
    Example:
        digest feedback add 2611.00001 more
    """
    with user_errors():
        config = read_config(config_path)
        mark = new_mark(arxiv_id, kind, "command line")
        with held(config, lock_wait_s):
            marks = load_marks(config.marks_file, config.feedback.github_repo)
            save_marks(config.marks_file, marks.with_mark(mark))
        note = "" if mark.arxiv_id in _known(History.load(config.docs_dir)) else (
            " It is in no edition yet: the mark is kept, and counts once triage can show it.")
        click.echo(f"Marked {mark.arxiv_id}: {kind} like this.{note}")
        _warn_without_triage(config)


@feedback.command("remove")
@verbose_option
@config_option
@click.argument("arxiv_id")
@lock_wait_option
def remove_command(config_path: str, arxiv_id: str, lock_wait_s: float) -> None:
    """Take a paper's mark away.

    \b
    Example:
        digest feedback remove 2611.00001
    """
    with user_errors():
        config = read_config(config_path)
        with held(config, lock_wait_s):
            marks = load_marks(config.marks_file, config.feedback.github_repo)
            if marks.get(arxiv_id) is None:
                raise UsageError(f"{arxiv_id} has no mark (`digest feedback list` shows them)")
            save_marks(config.marks_file, marks.without(arxiv_id))
        click.echo(f"Removed the mark of {arxiv_id}.")


@feedback.command("list")
@verbose_option
@config_option
def list_command(config_path: str) -> None:
    """Show the marks, with the papers' titles where an edition covered them, then the papers
    of your library ([triage] library) that triage is shown, newest first.

    \b
    Example:
        digest feedback list --config my-digest/config.toml
    """
    with user_errors():
        config = read_config(config_path)
        marks = load_marks(config.marks_file)
        history = History.load(config.docs_dir)
        known = _known(history)
        if not marks.marks:
            click.echo("No marks yet.")
        for mark in marks.marks:
            title = known.get(mark.arxiv_id, "(in no edition yet)")
            click.echo(f"{mark.kind:<4}  {mark.arxiv_id:<16}  {mark.at:<10}  {mark.source:<12}  "
                       f"{title}")
        shelf = library_shelf(config, workspace_cache(config), history, marks, None)
        if shelf is not None:
            for paper in shelf.shown:
                click.echo(f"more  {paper.arxiv_id or '(no arXiv id)':<16}  {paper.date:<10}  "
                           f"{LIBRARY:<12}  {text_of(paper.title)}")
            _say_library(shelf, config.triage.library_examples)
        _warn_without_triage(config)


def _say_library(shelf: Shelf, most: int) -> None:
    """How much of the library triage is shown, and why the rest is not."""
    library = shelf.library
    said = [f"{len(shelf.shown)} of the {len(library.papers)} paper(s) of {library.name} are "
            "shown to triage as \"more like this\" (source: library), newest first"]
    if shelf.beyond:
        said.append(f"{shelf.beyond} more are left out by [triage] library_examples = {most} "
                    "or by a mark of theirs")
    if shelf.untitled:
        said.append(f"{len(shelf.untitled)} whose title is not known yet are looked up on "
                    "arXiv by the next triage")
    if library.skipped:
        said.append(f"{library.skipped} entr{'y' if library.skipped == 1 else 'ies'} with "
                    "neither an arXiv id nor a title are skipped")
    click.echo("; ".join(said) + ".")


def _warn_without_triage(config: Config) -> None:
    if not config.triage.enabled:
        click.secho("Note: marks and the library shape triage, which is off: set [triage] "
                    "interests in "
                    f"{config.path} for them to take effect.", fg="yellow", err=True)


def _known(history: History) -> dict[str, str]:
    """The titles of every paper an edition covered, by id without version."""
    return {p.base_id: p.title for r in history.records for p in r.papers}
