"""What every `digest` command shares: error mapping, logging, the workspace lock, options.

Part of the CLI layer: the one place where our exceptions become a red line and an exit code
(0 done, 1 the run failed, 2 bad usage or configuration), and where the lock is taken.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from datetime import date
from typing import Any

import click

from .. import pipeline
from ..config import Config, load_config
from ..errors import DigestError
from ..pipeline.services import Services, wait_for_server
from ..prompts.kinds import BUILTIN_KINDS
from ..store.cache import Cache
from ..text.urls import RedactingFilter

CONFIG_HELP = "Workspace configuration file; paths in it are relative to its folder."


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """Turn our exceptions into one red line (plus details) and the right exit code."""
    try:
        yield
    except DigestError as err:
        click.secho(f"Error: {err}", fg="red", err=True)
        sys.exit(err.exit_code)
    except OSError as err:
        if err.filename is None:
            raise  # not about a file we write: a bug, shown with its traceback
        click.secho(f"Error: {write_error(err)}", fg="red", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.secho("Interrupted. Run the same command again to resume: finished work is cached.",
                    fg="yellow", err=True)
        sys.exit(130)


def write_error(err: OSError) -> str:
    """One line for a file that could not be written or read: the path and what to do."""
    path = err.filename
    if err.errno in (errno.ENOSPC, errno.EDQUOT):
        return (f"no space left on the device for {path}; the published site was left as it "
                "was and finished work is cached: free some space and run the same command again")
    return (f"{path}: {err.strerror or err}; the published site was left as it was and finished "
            "work is cached: fix this and run the same command again")


def setup_logging(verbose: int) -> None:
    level = logging.DEBUG if verbose > 1 else logging.INFO if verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", force=True)
    for handler in logging.getLogger().handlers:
        handler.addFilter(RedactingFilter())  # no credentials in any log line
    # pypdf warns about every font it cannot fully parse; the text comes out all the same.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    for noisy in ("httpx", "httpx2", "openai", "urllib3", "arxiv", "mkdocs"):
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))


def environment() -> Mapping[str, str]:
    """The process's environment: the one place the digest reads it (the config's overrides,
    the server's address, the secrets of mail, chat and GitHub); everything below the CLI is
    given it, so a test gives its own."""
    return os.environ


def read_config(path: str) -> Config:
    """The workspace's config, with the built-in kinds of prompt and the environment's
    overrides (`DIGEST_SITE_URL`): the one place a command reads it."""
    return load_config(path, environment(), registry=BUILTIN_KINDS)


def workspace_lock(cache: Cache, *, shared: bool = False
                   ) -> contextlib.AbstractContextManager[None]:
    """The one lock of a workspace (in its cache): every command that writes into it holds it;
    `shared`, a command that only reads the archive (`digest ask`), beside others like it."""
    return cache.lock(shared=shared)


def edition_name(edition: str | None) -> str:
    return pipeline.check_edition(edition or pipeline.today())


def wait_for(services: Services, wait_s: float) -> None:
    if wait_s <= 0:
        return

    def progress(waited: float, seen: str) -> None:
        click.echo(f"  waiting for {services.chat.base_url}: {seen} ({waited:.0f}/{wait_s:g} s)",
                   err=True)

    wait_for_server(services, wait_s, progress)


def _more_logging(ctx: click.Context, param: click.Parameter, value: int) -> None:
    if value:
        setup_logging(value + (ctx.find_root().params.get("verbose") or 0))


# -v works after the command too (`digest serve -v`), not only before it.
verbose_option = click.option("-v", "--verbose", count=True, expose_value=False, is_eager=True,
                              callback=_more_logging, help="More log output (-vv for debug).")

config_option = click.option("--config", "config_path", default="config.toml", show_default=True,
                             type=click.Path(dir_okay=False), help=CONFIG_HELP)
wait_option = click.option(
    "--wait-for-server", "wait_s", type=float, default=0.0, metavar="SECONDS",
    help="Wait up to SECONDS for the LLM server to become ready (a new SGLang server takes "
         "minutes to load a model).")
edition_option = click.option("--edition", default=None,
                              help="Edition name, a date (default: today, UTC).")

_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)


class IsoDate(click.ParamType[str, Any]):
    """A date as YYYY-MM-DD (2026-09-01), kept as that text: the editions' names sort by it, so
    a value that is not a date would be compared as a string and answered silently."""

    name = "date"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None
                ) -> str:
        text = str(value)
        if not text:
            return ""
        try:
            if _DATE_RE.fullmatch(text):
                return date.fromisoformat(text).isoformat()
        except ValueError:
            pass
        self.fail(f"{text!r} is not a date: give one as YYYY-MM-DD, such as 2026-09-01", param,
                  ctx)


def shown(arg: str) -> str:
    """An argument as the user typed it, bytes that are not UTF-8 as \\xNN escapes."""
    try:
        raw = arg.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate that no byte gave
        return arg.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")


def check_text(args: Sequence[str]) -> None:
    """Refuse, as bad usage, an argument that is not text: a shell passes bytes, and Python
    keeps those that are not UTF-8 as surrogates, which fail wherever the text is written
    (a cache key, SQLite, a page) long after the command started."""
    for number, arg in enumerate(args):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            pass
        else:
            continue
        option, _, value = arg.partition("=")
        if arg.startswith("--") and value:
            what = f"the value '{shown(value)}' of {shown(option)}"
        elif number and args[number - 1].startswith("-") and not arg.startswith("-"):
            what = f"the argument '{shown(arg)}' (after {shown(args[number - 1])})"
        else:
            what = f"the argument '{shown(arg)}'"
        raise click.UsageError(f"{what} is not text: it holds bytes that are not UTF-8; "
                               "give every argument and option as UTF-8 text")


class TextOnlyGroup(click.Group):
    """The root `digest` group: it sees every argument of every command, and checks once that
    each is text before any command parses it."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        check_text(args)
        return super().parse_args(ctx, args)
