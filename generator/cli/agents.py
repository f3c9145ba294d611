"""`digest mcp`: the archive served to agents over the Model Context Protocol.

Part of the CLI layer: the server is `generator.agents.server`; this command reads the config,
checks the address and starts it. The SDK is the `mcp` extra, imported only here, when the
command runs: a digest that never serves agents does not install it.
"""

from __future__ import annotations

import click

from ..errors import UsageError
from ..pipeline.services import make_services, workspace_cache
from .common import config_option, environment, read_config, user_errors, verbose_option

INSTALL_HINT = ("`digest mcp` needs the Model Context Protocol SDK, which is not installed: "
                "pip install \"research-digest[mcp]\" (from a clone: pip install -c "
                "constraints.txt -e \".[mcp]\")")


def _address(value: str) -> tuple[str, int]:
    """HOST:PORT (an IPv6 host in brackets: [::1]:8765)."""
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise click.BadParameter(f"{value!r} is not HOST:PORT (such as 127.0.0.1:8765)",
                                 param_hint="'--http'")
    return host, int(port)


@click.command("mcp")
@verbose_option
@config_option
@click.option("--http", "http", default=None, metavar="HOST:PORT",
              help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio "
                   "(127.0.0.1:8765; port 0 takes a free one, printed on stderr).")
@click.option("--allow-remote", is_flag=True,
              help="Allow --http on an address other than loopback: anyone who reaches it "
                   "reads the archive and asks through your LLM server.")
@click.option("--allow-publish", is_flag=True,
              help="Let a connected agent publish its questions (`ask` with publish=true "
                   "writes the question's record and page into the workspace, as `digest ask "
                   "--publish`). Off (the default): `ask` answers and publishes nothing.")
def mcp_command(config_path: str, http: str | None, allow_remote: bool,
                allow_publish: bool) -> None:
    """Serve the archive to agents (Model Context Protocol): search, paper, edition, ask.

    Over stdio by default, for desktop and editor agents, which start it themselves. The
    archive is only read; `ask` writes a question only when the agent asks to publish it and
    the server was started with --allow-publish.

    \b
    Example:
        digest mcp --config /path/to/my-digest/config.toml
        digest mcp --config my-digest/config.toml --http 127.0.0.1:8765
    """
    address = _address(http) if http else None
    with user_errors():
        try:
            from ..agents.server import make_server, serve_http, serve_stdio
        except ModuleNotFoundError as err:
            if (err.name or "").split(".")[0] not in ("mcp", "mcp_types"):
                raise
            raise UsageError(INSTALL_HINT) from err
        config = read_config(config_path)
        cache = workspace_cache(config)
        server = make_server(config, lambda: make_services(config, environment(), cache),
                             allow_publish=allow_publish)
        if address is None:
            serve_stdio(server)
            return
        host, port = address
        serve_http(server, host, port, remote=allow_remote,
                   ready=lambda url: click.echo(f"digest mcp: serving {url}", err=True))
