"""`digest feedback`: the readers' marks (registered on the `digest` group in cli.py)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import click
import requests

from .cli_common import config_option, user_errors, verbose_option
from .config import Config, load_config
from .edition.history import History
from .errors import UsageError
from .feedback import KINDS, close_read, load_marks, new_mark, pull, save_marks
from .github import DEFAULT_API, GitHubIssues


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
def pull_command(config_path: str, keep_open: bool, if_configured: bool) -> None:
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
        config = load_config(config_path, os.environ)
        if _skipped(config, if_configured, "no marks to read"):
            return
        with _issues(config) as issues:
            pulled = pull(issues, config.marks_file, close=not keep_open)
        known = _known(config.docs_dir)
        for mark in pulled.added:
            note = "" if mark.arxiv_id in known else " (not in any edition yet: kept)"
            click.echo(f"#{mark.issue}: {mark.kind} like {mark.arxiv_id}{note}")
        if pulled.ignored:
            click.echo(f"Left open (not a mark we can read): "
                       f"{', '.join(f'#{n}' for n in pulled.ignored)}")
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
def close_command(config_path: str, if_configured: bool) -> None:
    """Close the open issues whose marks feedback.json has read, each with a comment.

    \b
    Example:
        digest feedback pull --keep-open && git commit feedback.json ... && digest feedback close
    """
    with user_errors():
        config = load_config(config_path, os.environ)
        if _skipped(config, if_configured, "no issues to close"):
            return
        with _issues(config) as issues:
            closed = close_read(issues, load_marks(config.marks_file))
        click.echo(f"{len(closed)} issue(s) closed.")


def _skipped(config: Config, if_configured: bool, nothing: str) -> bool:
    """Whether `--if-configured` finds no repository to read (and says so)."""
    if config.feedback.github_repo or not if_configured:
        return False
    click.echo(f"No [feedback] github_repo: {nothing}.")
    return True


@contextlib.contextmanager
def _issues(config: Config) -> Iterator[GitHubIssues]:
    """The repository's issues, with the token from the environment."""
    repo = config.feedback.github_repo
    if not repo:
        raise UsageError(f"set [feedback] github_repo = \"owner/name\" in {config.path} to read "
                         "marks from that repository's issues (or pass --if-configured)")
    token = os.environ.get("GITHUB_TOKEN", "")
    if not token:
        raise UsageError("GITHUB_TOKEN is not set: the marks' issues are read and closed "
                         "with it (locally: GITHUB_TOKEN=$(gh auth token), or a fine-grained "
                         "token with Issues read and write on the repository; in a workflow: "
                         "env: GITHUB_TOKEN: ${{ github.token }})")
    with requests.Session() as session:
        yield GitHubIssues(session, os.environ.get("GITHUB_API_URL") or DEFAULT_API, repo,
                           token)


@feedback.command("add")
@verbose_option
@config_option
@click.argument("arxiv_id")
@click.argument("kind", type=click.Choice(KINDS))
def add_command(config_path: str, arxiv_id: str, kind: str) -> None:
    """Mark a paper: more or less like it (replaces an earlier mark of it).

    \b
    Example:
        digest feedback add 2611.00001 more
    """
    with user_errors():
        config = load_config(config_path, os.environ)
        mark = new_mark(arxiv_id, kind, "command line")
        save_marks(config.marks_file, load_marks(config.marks_file).with_mark(mark))
        note = "" if mark.arxiv_id in _known(config.docs_dir) else (
            " It is in no edition yet: the mark is kept, and counts once triage can show it.")
        click.echo(f"Marked {mark.arxiv_id}: {kind} like this.{note}")
        _warn_without_triage(config)


@feedback.command("remove")
@verbose_option
@config_option
@click.argument("arxiv_id")
def remove_command(config_path: str, arxiv_id: str) -> None:
    """Take a paper's mark away.

    \b
    Example:
        digest feedback remove 2611.00001
    """
    with user_errors():
        config = load_config(config_path, os.environ)
        marks = load_marks(config.marks_file)
        if marks.get(arxiv_id) is None:
            raise UsageError(f"{arxiv_id} has no mark (`digest feedback list` shows them)")
        save_marks(config.marks_file, marks.without(arxiv_id))
        click.echo(f"Removed the mark of {arxiv_id}.")


@feedback.command("list")
@verbose_option
@config_option
def list_command(config_path: str) -> None:
    """Show the marks, with the papers' titles where an edition covered them.

    \b
    Example:
        digest feedback list --config my-digest/config.toml
    """
    with user_errors():
        config = load_config(config_path, os.environ)
        marks = load_marks(config.marks_file)
        known = _known(config.docs_dir)
        if not marks.marks:
            click.echo("No marks yet.")
        for mark in marks.marks:
            title = known.get(mark.arxiv_id, "(in no edition yet)")
            click.echo(f"{mark.kind:<4}  {mark.arxiv_id:<16}  {mark.at}  {mark.source:<12}  "
                       f"{title}")


def _warn_without_triage(config: Config) -> None:
    if not config.triage.enabled:
        click.secho("Note: marks shape triage, which is off: set [triage] interests in "
                    f"{config.path} for them to take effect.", fg="yellow", err=True)


def _known(docs_dir: Path) -> dict[str, str]:
    """The titles of every paper an edition covered, by id without version."""
    return {p.base_id: p.title for r in History.load(Path(docs_dir)).records for p in r.papers}
