"""`digest send`: the edition in the readers' inbox ([email]) and the team's chat ([chat]).

Each channel is delivered on its own: a mail server that is down does not keep the chat post
back, nor the other way round; each failure is its own red line, and the exit code is the
worst of them.
"""

from __future__ import annotations

import sys

import click

from ..errors import DigestError, UsageError
from ..pipeline.send import ChatResult, SendResult, chat_stage, send_stage
from ..pipeline.services import workspace_cache
from .common import config_option, environment, read_config, user_errors, verbose_option, workspace_lock


@click.command()
@verbose_option
@config_option
@click.option("--edition", default=None,
              help="The edition to send, a date (default: the latest published edition).")
@click.option("--dry-run", is_flag=True,
              help="Write the message as an .eml file and the chat post as a .json file (and "
                   "print their paths) instead of sending.")
@click.option("--resend", is_flag=True,
              help="Send again to everyone, even those already sent (and post again).")
@click.option("--resend-held", is_flag=True,
              help="Also send to the readers (and the chat) held back because an interrupted "
                   "run may have reached them.")
def send(config_path: str, edition: str | None, dry_run: bool, resend: bool,
         resend_held: bool) -> None:
    """Mail a published edition (default: the latest) as a newsletter, and post it to the
    team's chat, once.

    Sends to [email] to through [email] smtp_host, one message per reader, and posts to the
    incoming webhook whose URL is in the environment variable [chat] webhook_url_env names.
    What went where is kept with the edition, so a second run sends nothing and a failed one
    completes the delivery (a reader or a post it may have reached already is held back:
    --resend-held).

    \b
    Example:
        DIGEST_SMTP_PASSWORD=... DIGEST_CHAT_WEBHOOK_URL=... digest send --config my-digest/config.toml
    """
    with user_errors():
        config = read_config(config_path)
        cache = workspace_cache(config)
        mail_on, chat_on = config.email.enabled, config.chat.enabled
        if not mail_on and not chat_on and not dry_run:
            raise UsageError("nothing to send: set [email] to (and smtp_host, from) in "
                             "config.toml to send editions by email, or [chat] webhook_url_env "
                             "to post them to a chat (`digest init` writes examples of both)")
        failed: list[DigestError] = []
        mail: SendResult | None = None
        chat: ChatResult | None = None
        with workspace_lock(cache):  # two sends at once would both read "not yet sent"
            if mail_on or not chat_on:
                try:
                    mail = send_stage(config, cache, edition, environment(), dry_run=dry_run,
                                      resend=resend, resend_held=resend_held)
                except DigestError as err:
                    failed.append(err)
            if chat_on:
                try:
                    chat = chat_stage(config, cache, edition, environment(), dry_run=dry_run,
                                      resend=resend, resend_held=resend_held)
                except DigestError as err:
                    failed.append(err)
        code = max([_say_mail(mail) if mail else 0, _say_chat(chat) if chat else 0,
                    *(f.exit_code for f in failed)])
        for problem in failed:
            click.secho(f"Error: {problem}", fg="red", err=True)
        if code:
            sys.exit(code)


def _say_mail(result: SendResult) -> int:
    """What the mail did, in a line or two; the exit code it calls for."""
    if result.eml is not None:
        click.echo(f"Edition {result.edition}: {result.subject!r} ({result.size:,} bytes) "
                   f"written to {result.eml}")
        return 0
    delivery = result.delivery
    assert delivery is not None
    if delivery.held:  # exit 1 below: a reader may lack the edition until someone decides
        click.secho(f"Held back: {', '.join(delivery.held)}: an earlier `digest send` was "
                    "cut off after handing them the message, which may have arrived. "
                    "`digest send --resend-held` sends it to them again.",
                    fg="yellow", err=True)
    if not delivery.sent and not delivery.refused:
        click.echo(f"Edition {result.edition} was already sent to "
                   f"{len(delivery.already)} recipient(s): nothing sent (--resend sends "
                   "it again).")
        return 1 if delivery.held else 0
    click.echo(f"Edition {result.edition}: {result.subject!r} sent to "
               f"{len(delivery.sent)} recipient(s)"
               + (f" ({len(delivery.already)} had it already)" if delivery.already else "")
               + ".")
    if delivery.refused:
        click.secho("refused: " + "; ".join(f"{a} ({why})" for a, why in
                                            delivery.refused.items())
                    + ". Run `digest send` again to retry them.", fg="red", err=True)
    return 1 if delivery.refused or delivery.held else 0


def _say_chat(result: ChatResult) -> int:
    """What the chat post did, in a line; the exit code it calls for."""
    if result.path is not None:
        click.echo(f"Edition {result.edition}: the chat post written to {result.path}")
        return 0
    posted = result.posted
    assert posted is not None
    if posted.state == "held":
        click.secho(f"Held back: the post of edition {result.edition} to {posted.where}: an "
                    "earlier `digest send` was cut off after sending it, and it may be in the "
                    "channel. `digest send --resend-held` posts it again.", fg="yellow",
                    err=True)
        return 1
    if posted.state == "already":
        click.echo(f"Edition {result.edition} was already posted to {posted.where}: nothing "
                   "posted (--resend posts it again).")
        return 0
    click.echo(f"Edition {result.edition} posted to {posted.where}.")
    return 0
