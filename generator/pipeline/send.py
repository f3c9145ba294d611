"""The send stage: mail a published edition as a newsletter, and post it to the team's chat
(`digest send`).

It reads the edition's record, the one its pages and the feed were built from (no second
pipeline), and the HTML part must pass the same liveness check as the site's pages. Each reader
gets a message of their own (their address alone in To: the list is shown to nobody). The chat
post is made once per edition (deliver/webhook.py), to the webhook whose URL the environment
holds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path

import requests

from ..archive.history import History
from ..archive.record import EditionRecord
from ..config import Config
from ..deliver.chat import chat_post, payload
from ..deliver.mail import Delivery, recipients, send, write_eml
from ..deliver.newsletter import OWN_MARKUP, as_message, newsletter
from ..deliver.webhook import ChatError, Posted, Poster, Webhook, post_once
from ..errors import UsageError
from ..publish.inert import live_in_fragment
from ..store.cache import Cache, atomic_write_text


@dataclass(frozen=True)
class SendResult:
    edition: str
    subject: str
    delivery: Delivery | None  # None: a dry run
    eml: Path | None  # the dry run's message file
    size: int  # bytes of the whole message


def send_stage(config: Config, cache: Cache, edition: str | None, environ: Mapping[str, str], *,
               dry_run: bool = False, resend: bool = False,
               resend_held: bool = False) -> SendResult:
    settings = config.email
    if not settings.enabled and not dry_run:
        raise UsageError("no recipients: set [email] to (and smtp_host, from) in config.toml "
                         "to send editions by email (`digest init` writes an example)")
    record = published_record(config, edition)
    letter = newsletter(config.digest.title, record, config.digest.site_url, settings,
                        config.feedback.links)
    problems = live_in_fragment(letter.html, allowed=OWN_MARKUP)
    if problems:  # never, by construction: the same check as every page of the site
        raise UsageError(f"the newsletter's HTML would carry live markup: {problems[0]}")
    if dry_run:
        message = as_message(letter, settings, (recipients(settings.to) or
                                                ["reader@example.invalid"])[0])
        path = write_eml(cache, record.edition, message)
        return SendResult(record.edition, letter.subject, None, path, len(message.as_bytes()))
    sizes: list[int] = []

    def compose(address: str) -> EmailMessage:
        message = as_message(letter, settings, address)
        sizes.append(len(message.as_bytes()))
        return message

    delivery = send(compose, settings, cache, record.edition, environ, resend=resend,
                    resend_held=resend_held)
    return SendResult(record.edition, letter.subject, delivery, None, max(sizes, default=0))


def published_record(config: Config, edition: str | None) -> EditionRecord:
    """The record of `edition` (default: the latest), which must be published."""
    records = History.load(config.docs_dir).records
    if not records:
        raise UsageError("no edition has been published yet: run `digest build` first")
    record = next((r for r in records if r.edition == edition), None) if edition else records[0]
    if record is None:
        raise UsageError(f"edition {edition} has not been published; published: "
                         f"{', '.join(r.edition for r in records[:10])}")
    return record


@dataclass(frozen=True)
class ChatResult:
    edition: str
    posted: Posted | None  # None: a dry run
    path: Path | None  # the dry run's body, as it would be posted


def chat_stage(config: Config, cache: Cache, edition: str | None, environ: Mapping[str, str],
               *, dry_run: bool = False, resend: bool = False, resend_held: bool = False,
               poster: Poster | None = None) -> ChatResult:
    """Post the edition to [chat]'s webhook once (`poster`: the webhook, else made from the
    URL in the environment); a dry run writes the body to the cache instead."""
    settings = config.chat
    record = published_record(config, edition)
    body = json.dumps(payload(chat_post(config.digest.title, record, config.digest.site_url),
                              settings.format), ensure_ascii=False, indent=1).encode()
    if dry_run:
        path = cache.root / "editions" / record.edition / f"chat-{settings.format}.json"
        atomic_write_text(path, body.decode())
        return ChatResult(record.edition, None, path)
    if poster is None:
        variable = settings.webhook_url_env.strip()
        url = environ.get(variable, "").strip()
        if not url:
            raise ChatError(f"the chat webhook's URL is not set: export {variable} (named by "
                            "[chat] webhook_url_env) before `digest send`; in the workflow, "
                            f"add the repository secret {variable}")
        with requests.Session() as session:
            webhook = Webhook(session, url, variable, deadline_s=settings.timeout_seconds)
            return ChatResult(record.edition, post_once(
                webhook, body, settings.format, cache, record.edition, resend=resend,
                resend_held=resend_held), None)
    return ChatResult(record.edition, post_once(poster, body, settings.format, cache,
                                                record.edition, resend=resend,
                                                resend_held=resend_held), None)
