"""`digest doctor` and `digest server-command`: the LLM server's commands (registered on the
`digest` group in cli.py)."""

from __future__ import annotations

import sys

import click

from ..pipeline.services import llm_base_url, make_services, workspace_cache
from .common import config_option, environment, read_config, user_errors, verbose_option

_MARKS = {"ok": ("ok", "green"), "warning": ("warning", "yellow"), "problem": ("problem", "red"),
          "info": ("info", "blue")}


@click.command()
@verbose_option
@config_option
def doctor(config_path: str) -> None:
    """Check the LLM server and arXiv before spending anything on them.

    Reports, with a verdict and advice per line: whether the server answers and serves the
    configured model, its context length against the bundle, SGLang's prefix cache, cache
    report, schedule policy and reasoning parser, whether thinking comes back separately,
    and whether arXiv answers. Exit code 1 when any line is a problem.

    \b
    Example:
        digest doctor --config my-digest/config.toml
    """
    from ..pipeline.doctor import run_doctor

    with user_errors():
        config = read_config(config_path)
        cache = workspace_cache(config)
        services = make_services(config, environment(), cache)
        checks = run_doctor(config, services.probe, services.chat, services.arxiv, services.cache)
        for check in checks:
            label, color = _MARKS[check.verdict]
            click.echo(click.style(f"{label:>8}", fg=color) + f"  {check.name}: {check.detail}")
            if check.advice:
                click.echo(f"{'':>10}-> {check.advice}")
        problems = sum(1 for c in checks if c.verdict == "problem")
        if problems:
            click.secho(f"{problems} problem(s) found.", fg="red", err=True)
            sys.exit(1)


@click.command("server-command")
@verbose_option
@config_option
@click.option("--router", "workers", type=click.IntRange(min=2, max=64), default=None,
              metavar="N", help="N SGLang workers (one GPU each) behind SGLang's router, with "
                                "the routing policy measured fastest for editions.")
def server_command(config_path: str, workers: int | None) -> None:
    """Print the SGLang launch command that fits this workspace's config.

    The context length leaves room for the bundle (the last edition's, or an estimate) plus
    the longest answer. With --router N: one line per worker and the router's line last; the
    router listens where [llm] base_url points, and the digest reads each worker's limits.

    \b
    Example:
        digest server-command --config my-digest/config.toml
        digest server-command --router 4
    """
    from ..pipeline.doctor import bundle_size, launch_command, router_launch
    from ..synthesis.launch import is_local

    with user_errors():
        config = read_config(config_path)
        cache = workspace_cache(config)
        base_url = llm_base_url(config, environment())
        size = bundle_size(config, cache)
        click.echo(f"# context length sized for {size.source} ({size.tokens:,} tokens)", err=True)
        if not is_local(base_url):
            click.echo(f"# reached from other machines: listens on every interface and wants the "
                       f"key in ${config.llm.api_key_env}; put it behind TLS (a reverse proxy) "
                       "or on the runner's own machine (docs/publishing.md: Publishing on a schedule)",
                       err=True)
        if workers:
            click.echo(f"# {workers} workers on this machine, one GPU each, then SGLang's router "
                       "in front of them (pip install sglang-router); workers on other machines: "
                       "start each with --host 0.0.0.0 and list it in --worker-urls by an "
                       "address that both the router and the digest reach (docs/servers.md)",
                       err=True)
            for line in router_launch(config, cache, base_url, workers):
                click.echo(line)
            return
        click.echo(launch_command(config, cache, base_url))
