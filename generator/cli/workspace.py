"""`digest init`: a new workspace, a repository ready to push, or its workflow rewritten.

Part of the CLI layer: the files and the pin are `generator.publish.workspace`'s.
"""

from __future__ import annotations

from pathlib import Path

import click

from ..publish.workspace import (
    WORKFLOW,
    git_install,
    running_install,
    upgrade_workflow,
    write_workspace,
)
from .common import user_errors, verbose_option


@click.command()
@verbose_option
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--upgrade-workflow", "upgrade_workflow_only", is_flag=True,
              help="Only rewrite the workflow and its pins (requirements.txt, constraints.txt) "
                   "for the research-digest installed now; config.toml and the rest stay.")
@click.option("--from-git", "from_git", default=None, metavar="URL@REF",
              help="Have the workflow install research-digest from this git repository at "
                   "this release tag or commit (not a branch: it moves) instead of from PyPI.")
def init(directory: Path, upgrade_workflow_only: bool = False,
         from_git: str | None = None) -> None:
    """Create a workspace in DIRECTORY: a repository to push as it is.

    It holds config.toml (the query, the LLM server), mkdocs.yml, .gitignore, README.md and
    .github/workflows/digest.yml, which builds an edition every Monday and publishes it on
    GitHub Pages, installing research-digest from requirements.txt: pinned to this version
    (from PyPI, or from the git repository and commit this one was installed from). Nothing
    is overwritten; a README.md or .gitignore already there is kept.

    \b
    Example:
        digest init my-digest
        digest init --from-git https://github.com/OWNER/research-digest@COMMIT my-digest
        digest init --upgrade-workflow my-digest    # after upgrading research-digest
    """
    with user_errors():
        running = running_install()
        install = git_install(from_git, running.version) if from_git else running
        if upgrade_workflow_only:
            done = upgrade_workflow(directory, install)
            was = f" (was: {done.previous})" if done.previous else ""
            click.echo(f"Rewrote {', '.join(str(directory / n) for n in done.written)}: the "
                       f"workflow installs {install.requirement}{was}. Review `git diff` and "
                       "commit.")
        else:
            directory.mkdir(parents=True, exist_ok=True)
            done = write_workspace(directory, install)
            click.echo(f"Wrote {', '.join(str(n) for n in done.written)} in "
                       f"{directory.resolve()}.")
            for name in done.kept:
                click.echo(f"Kept your {directory / name} as it was.")
            for name in done.appended:
                click.echo(f"Added the digest's lines to your {directory / name}.")
            click.echo(f"The workflow ({WORKFLOW}) installs {install.requirement}.")
            click.echo(f"Edit the query in {directory / 'config.toml'}, then: digest build "
                       f"--config {directory / 'config.toml'}. To publish it every week, push "
                       f"it to GitHub: the first lines of {directory / WORKFLOW} say what to "
                       "set there (Pages, the secrets).")
        if install.warning:
            click.secho(f"Note: {install.warning}", fg="yellow", err=True)
