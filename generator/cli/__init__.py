"""The `digest` command line: thin commands over the pipeline, errors mapped to exit codes.

Exit codes: 0 done, 1 the run failed (in whole or in part), 2 bad usage or configuration.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import click

from .. import __version__, pipeline
from ..archive.history import History
from ..errors import DigestError
from ..pipeline.fetch import fetch_stage
from ..pipeline.render import remove_edition, render_all, render_flagged, render_stage
from ..pipeline.services import make_services, workspace_cache
from ..pipeline.site import check_pages, site_stage, skeleton_dir
from ..pipeline.synthesize import synthesize_stage
from ..publish.deploy import deploy_site
from ..publish.site import zip_site
from .agents import mcp_command
from .ask import ask
from .common import (
    TextOnlyGroup,
    config_option,
    edition_name,
    edition_option,
    environment,
    read_config,
    setup_logging,
    user_errors,
    verbose_option,
    wait_for,
    wait_option,
    workspace_lock,
)
from .feedback import feedback
from .progress import Progress
from .send import send
from .server import doctor, server_command
from .workflow import workflow
from .workspace import init as init  # re-exported: docs/screenshots.py and bench/ call it

log = logging.getLogger(__name__)

@click.group(cls=TextOnlyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="digest")
@click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")
def cli(verbose: int) -> None:
    """Turn an arXiv query into a browsable, LLM-synthesized research digest.

    \b
    Example:
        digest init my-digest
        digest build --config my-digest/config.toml
        digest serve --config my-digest/config.toml
    """
    setup_logging(verbose)


@cli.command()
@verbose_option
@config_option
@edition_option
@click.option("--refresh", is_flag=True, help="Query arXiv again even if this edition was fetched.")
@wait_option
@click.option("--zip", "make_zip", is_flag=True, help="Also write the site as one .zip archive.")
def build(config_path: str, edition: str | None, refresh: bool, wait_s: float,
          make_zip: bool) -> None:
    """Run every stage: fetch, synthesize, render and build the site.

    A rerun of the same edition reuses everything cached: no PDF is downloaded and no prompt
    is sent twice.

    \b
    Example:
        digest build --config my-digest/config.toml --edition 2026-12-02
    """
    with user_errors():
        config = read_config(config_path)
        cache = workspace_cache(config)
        name = edition_name(edition)
        services = make_services(config, environment(), cache)
        click.echo(f"Building edition {name} of {config.digest.title!r}", err=True)
        wait_for(services, wait_s)
        progress = Progress()
        try:
            with workspace_lock(cache):
                report = pipeline.run(config, services, name, refresh=refresh,
                                      observer=progress, on_text=progress.text)
        finally:
            progress.close()
        click.echo(
            f"Edition {report.edition}: {report.news}. {report.papers} papers read "
            f"({report.full_text} with full text, {report.missing_full_text} missing), "
            f"{report.sent_prompts} prompt(s) sent. Site: {report.site_dir}"
        )
        if make_zip and report.site_dir:
            click.echo(f"Archive: {zip_site(report.site_dir)}")
        if report.failed_prompts:
            click.secho(
                f"{len(report.failed_prompts)} prompt(s) failed: {', '.join(report.failed_prompts)}."
                " Their pages say so; run the same command again to retry them.",
                fg="red", err=True,
            )
        if report.failed_pages:
            click.secho(
                f"{len(report.failed_pages)} page(s) could not be made: "
                f"{', '.join(report.failed_pages)}. Each says so on the site and the run report "
                "lists it; run the same command again to make them again.",
                fg="red", err=True,
            )
        if report.failed_prompts or report.failed_pages:
            sys.exit(1)


@cli.command()
@verbose_option
@config_option
@edition_option
@click.option("--refresh", is_flag=True, help="Query arXiv again even if this edition was fetched.")
def fetch(config_path: str, edition: str | None, refresh: bool) -> None:
    """Search arXiv and download and extract the first PDFs into the cache.

    \b
    Example:
        digest fetch --config my-digest/config.toml
    """
    with user_errors():
        config = read_config(config_path)
        cache = workspace_cache(config)
        name = edition_name(edition)
        services = make_services(config, environment(), cache)
        with workspace_lock(cache):
            result = fetch_stage(config, services, name, refresh=refresh,
                                 on_text=Progress().text,
                                 history=History.load(config.docs_dir))
        for source in result.sources:
            status = source.full_text.status
            detail = f" ({source.full_text.reason})" if status == "missing" else ""
            click.echo(f"{source.paper.arxiv_id:>22}  {status:<13} {source.paper.title[:70]}{detail}")
        click.echo(f"{len(result.sources)} paper(s) recorded for edition {name}.")


@cli.command()
@verbose_option
@config_option
@edition_option
@wait_option
def synthesize(config_path: str, edition: str | None, wait_s: float) -> None:
    """Run every synthesis prompt of a fetched edition (cached answers are reused).

    \b
    Example:
        digest synthesize --config my-digest/config.toml --edition 2026-12-02
    """
    with user_errors():
        config = read_config(config_path)
        cache = workspace_cache(config)
        name = edition_name(edition)
        services = make_services(config, environment(), cache)
        wait_for(services, wait_s)
        progress = Progress()
        with workspace_lock(cache):
            try:
                result = synthesize_stage(config, services, name, observer=progress,
                                          history=History.load(config.docs_dir))
            finally:
                progress.close()
        from ..synthesis.batch import failed as counts_as_failed

        failed = [c.name for c in result.completions if counts_as_failed(c)]
        click.echo(f"{len(result.completions) - len(failed)} of {len(result.completions)} "
                   f"prompt(s) answered in {result.wall_time_s:.1f} s.")
        if failed:
            sys.exit(1)


@cli.command()
@verbose_option
@config_option
@edition_option
@click.option("--all", "every", is_flag=True,
              help="Render every edition again from its records (after a template change).")
def render(config_path: str, edition: str | None, every: bool) -> None:
    """Write the Markdown pages of a synthesized edition into docs_dir.

    Needs no network: it reads what fetch and synthesize recorded in the cache.

    \b
    Example:
        digest render --config my-digest/config.toml --edition 2026-12-02
        digest render --config my-digest/config.toml --all && digest site
    """
    with user_errors():
        config = read_config(config_path)
        cache = workspace_cache(config)
        with workspace_lock(cache):
            if every:
                done, skipped = render_all(config, cache)
                click.echo(f"Rendered {len(done)} edition(s) into {config.docs_dir}.")
                if skipped:
                    click.echo(f"Kept as they are (no records in the cache): {', '.join(skipped)}")
                return
            name = edition_name(edition)
            history = History.load(config.docs_dir, remaking=(name,))
            record = render_stage(config, cache, name, history=history)
            assert record is not None  # rendered whatever the fingerprint says
            render_flagged(config, cache, record, history.with_record(record))
        click.echo(f"Pages of edition {name} written to {config.docs_dir}.")


@cli.command()
@verbose_option
@config_option
@click.option("--zip", "make_zip", is_flag=True, help="Also write the site as one .zip archive.")
def site(config_path: str, make_zip: bool) -> None:
    """Build the static site from docs_dir with MkDocs (strict: broken links fail).

    The site reads offline from file:// (search included); --zip packs it to hand around.

    \b
    Example:
        digest site --config my-digest/config.toml --zip
    """
    with user_errors():
        config = read_config(config_path)
        cache = workspace_cache(config)
        with workspace_lock(cache):
            site_dir = site_stage(config, history=History.load(config.docs_dir))
            click.echo(f"Site: {site_dir}")
            if make_zip:
                click.echo(f"Archive: {zip_site(site_dir)}")


@cli.command()
@verbose_option
@config_option
@click.option("--message", "-m", default=None, help="Commit message for the gh-pages branch.")
@click.option("--force", is_flag=True, help="Force-push the gh-pages branch.")
@click.option("--remote", default=None, metavar="NAME",
              help="The git remote to push to (default: mkdocs.yml's remote_name, or origin).")
def deploy(config_path: str, message: str | None, force: bool, remote: str | None) -> None:
    """Publish the built site to GitHub Pages (the gh-pages branch; mkdocs gh-deploy).

    Run it in a workspace that is a git repository with a GitHub remote, after `digest build`.
    The remote and branch come from mkdocs.yml (remote_name, remote_branch), or --remote.
    Without that remote, or when the push fails, it says what to do (git's own words: -v).

    \b
    Example:
        digest build --config my-digest/config.toml && digest deploy --config my-digest/config.toml
    """
    with user_errors():
        config = read_config(config_path)
        cache = workspace_cache(config)
        with workspace_lock(cache):  # never push a site that a build is replacing
            pushed_to = deploy_site(config.mkdocs_yml, config.site_dir,
                                    fallback_yml=skeleton_dir() / "mkdocs.yml",
                                    message=message, force=force, remote=remote)
        click.echo(f"Deployed {config.site_dir} to the gh-pages branch of {pushed_to}.")


@cli.command()
@verbose_option
@config_option
@click.option("--dev-addr", default=None, metavar="IP:PORT", help="Address to serve on.")
def serve(config_path: str, dev_addr: str | None) -> None:
    """Preview the site with live reload (mkdocs serve).

    \b
    Example:
        digest serve --config my-digest/config.toml --dev-addr 127.0.0.1:8000
    """
    from ..publish.site import serve_site

    with user_errors():
        config = read_config(config_path)
        check_pages(config)
        address = dev_addr or "127.0.0.1:8000"
        click.echo(f"Serving {config.docs_dir} at http://{address}/ (live reload; Ctrl-C to stop)",
                   err=True)
        serve_site(config.mkdocs_yml, config.docs_dir, config.digest.title,
                   fallback_yml=skeleton_dir() / "mkdocs.yml", dev_addr=address)


@cli.command()
@verbose_option
@config_option
@click.argument("edition")
def remove(config_path: str, edition: str) -> None:
    """Take an edition off the site: its pages and record go, its cache stays.

    The other editions are rendered again (their papers' statuses may change) and the site is
    rebuilt; `digest build --edition EDITION` would bring the edition back from the cache.

    \b
    Example:
        digest remove --config my-digest/config.toml 2026-11-25
    """
    with user_errors():
        config = read_config(config_path)
        cache = workspace_cache(config)
        with workspace_lock(cache):
            skipped, failed = remove_edition(config, cache, pipeline.check_edition(edition))
            if skipped:
                click.echo(f"Kept as they are (no records in the cache): {', '.join(skipped)}",
                           err=True)
            # A page that could not be made says so on the site: the site is built all the
            # same, and the command then exits 1 naming it.
            site_dir = site_stage(config, history=History.load(config.docs_dir))
        click.echo(f"Removed edition {edition}. Site: {site_dir}")
        if failed is not None:
            raise DigestError(
                f"{len(failed.failed)} page(s) of edition"
                f"{'s' if ', ' in failed.edition else ''} {failed.edition} could not be made "
                f"again: {', '.join(f.path for f in failed.failed)}. Each says so on the site "
                "and the rest is published; `digest render --all` then `digest site` make "
                "them again")


# The LLM server's commands (doctor, server-command) live beside this module.
cli.add_command(ask)
cli.add_command(mcp_command)
cli.add_command(init)
cli.add_command(doctor)
cli.add_command(feedback)
cli.add_command(server_command)
cli.add_command(send)
cli.add_command(workflow)


def main(argv: list[str] | None = None) -> Any:
    return cli.main(args=argv, prog_name="digest")
