"""`digest workflow`: the steps of the weekly workflow `digest init` writes, as commands.

Part of the CLI layer: the logic is in `publish.commit_back`, `pipeline.restore` and
`store.prune`, so that what the workflow does is tested by running it (tests/workflow_harness.py)
rather than trusted to lines of shell in YAML. A step's outputs go to the file GitHub names in
GITHUB_OUTPUT, a failure's explanation to GITHUB_STEP_SUMMARY as well as the log.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from ..errors import DigestError
from ..pipeline.restore import (
    Found,
    found_in_folder,
    found_on_site,
    missing,
    newest_edition,
    restore,
)
from ..pipeline.services import site_files, workspace_cache
from ..publish.commit_back import commit_back
from ..store import Docs
from ..store.cache import atomic_write_bytes
from ..store.prune import KEEP_EDITIONS, prune
from .common import config_option, read_config, user_errors, verbose_option, workspace_lock


@click.group()
def workflow() -> None:
    """The weekly workflow's own steps, as `digest init`'s digest.yml runs them: restore the
    editions a failed run kept, keep an edition's files on the branch, prune the cache.

    \b
    Example:
        digest workflow restore --from .records --from-site
        digest workflow keep -m "Digest edition 2026-12-07" site_src feedback.json
        digest workflow prune-cache
    """


@workflow.command("keep")
@verbose_option
@config_option
@click.argument("paths", nargs=-1, required=True)
@click.option("--message", "-m", required=True, help="The commit's message.")
@click.option("--branch", envvar="GITHUB_REF_NAME", default=None,
              help="The branch to push to (default: $GITHUB_REF_NAME, else the current one).")
@click.option("--remote", default="origin", show_default=True)
@click.option("--attempts", type=click.IntRange(1, 20), default=3, show_default=True,
              help="Pushes to try, fetching and rebasing onto the branch between them.")
@click.option("--output", "output_file", envvar="GITHUB_OUTPUT", default=None,
              type=click.Path(dir_okay=False), help="Where `commit=SHA` is written "
              "(default: $GITHUB_OUTPUT).")
@click.option("--summary", "summary_file", envvar="GITHUB_STEP_SUMMARY", default=None,
              type=click.Path(dir_okay=False), help="Where a failure is explained (default: "
              "$GITHUB_STEP_SUMMARY).")
def keep(config_path: str, paths: tuple[str, ...], message: str, branch: str | None,
         remote: str, attempts: int, output_file: str | None,
         summary_file: str | None) -> None:
    """Commit PATHS (those that exist) and push them to the branch; when the branch moved
    meanwhile, fetch it, put these files on top and push again. Exits 1, saying so in the job
    summary, when every push failed."""
    repo = Path(config_path).resolve().parent
    with user_errors():
        branch = branch or _current_branch(repo)
        try:
            kept = commit_back(repo, paths, message, branch=branch, remote=remote,
                               attempts=attempts)
        except DigestError as err:
            _append(summary_file, f"### The edition was not committed\n\n{err}.\n\nThe site "
                    "was published; the records are kept as this run's `digest-records-*` "
                    "artifact, and the next run puts the edition back before it builds. To "
                    "let it push, allow `github-actions[bot]` to push to the branch.\n")
            click.echo(f"::error::{err}")
            raise
        if kept.commit:
            _append(output_file, f"commit={kept.commit}\n")
            click.echo(f"Kept {len(kept.paths)} file(s) on {branch} in {kept.commit[:12]}"
                       + (f" (after {kept.attempts} attempts)" if kept.attempts > 1 else "")
                       + ".")
        else:
            click.echo("Nothing to keep: the branch has these files as they are.")


@workflow.command("restore")
@verbose_option
@config_option
@click.option("--from", "folders", multiple=True, type=click.Path(file_okay=False),
              help="A folder of edition records (a downloaded artifact); repeatable.")
@click.option("--from-site", is_flag=True,
              help="Also the editions the deployed site serves (at [digest] site_url or "
                   "DIGEST_SITE_URL).")
@click.option("--records-only", is_flag=True,
              help="Put the records back without rendering their pages (for `digest send`).")
def restore_command(config_path: str, folders: tuple[str, ...], from_site: bool,
                    records_only: bool) -> None:
    """Put back every edition newer than the branch's newest that a failed run kept (an
    artifact) or the deployed site holds, and render its pages, before a build."""
    with user_errors():
        config = read_config(config_path)
        found: list[Found] = [f for folder in folders for f in found_in_folder(Path(folder))]
        site = config.digest.site_url
        if from_site and site:
            with site_files() as get:
                found += found_on_site(site, get, newer_than=newest_edition(config))
        elif from_site:
            click.echo("No site URL ([digest] site_url, DIGEST_SITE_URL): the deployed site is "
                       "not read.", err=True)
        cache = workspace_cache(config)
        names: list[tuple[str, str, tuple[str, ...]]]
        with workspace_lock(cache):
            if records_only:
                chosen = missing(config, found)
                for item in chosen:
                    atomic_write_bytes(Docs(config.docs_dir).record_path(item.edition),
                                       item.record)
                names = [(f.edition, f.source, ()) for f in chosen]
            else:
                names = [(r.edition, r.source, r.failed_pages)
                         for r in restore(config, cache, found)]
        for edition, source, failed in names:
            click.echo(f"Restored edition {edition} (from {source}).")
            if failed:  # a warning: the step goes on, and so does the week's build
                click.echo(f"::warning::{len(failed)} page(s) of the restored edition "
                           f"{edition} could not be made: {', '.join(failed)}. Each says so "
                           "on the site and the rest is published; `digest render --edition "
                           f"{edition}` makes them again")
        if not names:
            click.echo("Nothing to restore: the branch has every edition.")


@workflow.command("prune-cache")
@verbose_option
@config_option
@click.option("--used-within-hours", type=click.FloatRange(0), default=24.0, show_default=True,
              help="Keep the text and answers used (read or written) this recently.")
@click.option("--keep-editions", type=click.IntRange(0), default=KEEP_EDITIONS,
              show_default=True, help="Keep the stage records of this many newest editions.")
def prune_command(config_path: str, used_within_hours: float, keep_editions: int) -> None:
    """Prune the cache to what the next run can use: no PDFs (their text is kept), no text
    or answer unused for a day, the newest editions' records and delivery logs only."""
    with user_errors():
        config = read_config(config_path)
        cache = workspace_cache(config)
        with workspace_lock(cache):
            done = prune(cache, used_within_s=used_within_hours * 3600,
                         keep_editions=keep_editions)
        click.echo(f"Pruned {done.files} file(s) ({done.bytes / 1e6:.1f} MB); the cache "
                   f"holds {done.kept_bytes / 1e6:.1f} MB.")


def _current_branch(repo: Path) -> str:
    head = repo / ".git" / "HEAD"
    try:
        text = head.read_text(encoding="utf-8").strip()
    except OSError:
        text = ""
    if text.startswith("ref: refs/heads/"):
        return text.removeprefix("ref: refs/heads/")
    click.secho("Error: no branch to push to: pass --branch (the workflow sets "
                "GITHUB_REF_NAME)", fg="red", err=True)
    sys.exit(2)


def _append(path: str | None, text: str) -> None:
    if path:
        with open(os.fspath(path), "a", encoding="utf-8") as handle:
            handle.write(text)
