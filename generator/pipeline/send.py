"""The send stage: mail a published edition as a newsletter (`digest send`).

It reads the edition's record, the one its pages and the feed were built from (no second
pipeline), and the HTML part must pass the same liveness check as the site's pages. Each reader
gets a message of their own (their address alone in To: the list is shown to nobody).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path

from ..config import Config
from ..edition.history import History
from ..errors import UsageError
from ..publish.inert import live_in_fragment
from ..publish.mail import Delivery, recipients, send, write_eml
from ..publish.newsletter import OWN_MARKUP, as_message, newsletter
from ..store.cache import Cache


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
    records = History.load(config.docs_dir).records
    if not records:
        raise UsageError("no edition has been published yet: run `digest build` first")
    record = next((r for r in records if r.edition == edition), None) if edition else records[0]
    if record is None:
        raise UsageError(f"edition {edition} has not been published; published: "
                         f"{', '.join(r.edition for r in records[:10])}")
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
