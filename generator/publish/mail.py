"""Sending the newsletter over SMTP, once: what went to whom is kept with the edition.

The record lives in the workspace's cache (`editions/<name>/sent.json`), never on the site:
addresses are not published. A recipient the server refused, or a run that failed before it
reached one, is not recorded, so the next `digest send` completes the delivery and sends
nobody the same edition twice (`--resend` does, on purpose).
"""

from __future__ import annotations

import logging
import smtplib
import socket
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from ..cache import Cache, atomic_write_bytes, read_json, write_json
from ..config import EmailSettings
from ..errors import DigestError
from ..urls import register_secret

log = logging.getLogger(__name__)


class EmailError(DigestError):
    """The SMTP server could not be reached, refused us, or refused every recipient."""

    exit_code = 1


@dataclass(frozen=True)
class Delivery:
    sent: tuple[str, ...]  # delivered now
    already: tuple[str, ...]  # delivered by an earlier run (left out)
    refused: dict[str, str]  # address -> the server's answer


def sent_path(cache: Cache, edition: str) -> Path:
    return cache.root / "editions" / edition / "sent.json"


def already_sent(cache: Cache, edition: str, message_id: str) -> list[str]:
    data = read_json(sent_path(cache, edition))
    if not isinstance(data, dict) or data.get("message_id") != message_id:
        return []
    return [str(r["to"]) for r in data.get("recipients", ()) if isinstance(r, dict)]


def _record(cache: Cache, edition: str, message_id: str, delivered: list[str]) -> None:
    data = read_json(sent_path(cache, edition))
    kept: list[dict[str, Any]] = []
    if isinstance(data, dict) and data.get("message_id") == message_id:
        kept = [r for r in data.get("recipients", ()) if isinstance(r, dict)]
    now = datetime.now(UTC).isoformat(timespec="seconds")
    kept += [{"to": address, "at": now} for address in delivered]
    write_json(sent_path(cache, edition), {"message_id": message_id, "recipients": kept})


def write_eml(cache: Cache, edition: str, message: EmailMessage) -> Path:
    """`--dry-run`: the message as a file a mail client opens, in the workspace's cache."""
    path = cache.root / "editions" / edition / "newsletter.eml"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, message.as_bytes())
    return path


def send(message: EmailMessage, settings: EmailSettings, cache: Cache, edition: str,
         environ: Mapping[str, str], *, resend: bool = False) -> Delivery:
    """Send to every address of `[email] to` not yet reached (all with `resend`)."""
    message_id = str(message["Message-ID"])
    done = [] if resend else already_sent(cache, edition, message_id)
    pending = [a for a in settings.to if a not in done]
    if not pending:
        return Delivery((), tuple(done), {})
    where = f"{settings.smtp_host}:{settings.smtp_port}"
    user = environ.get(settings.username_env, "") if settings.username_env else ""
    password = environ.get(settings.password_env, "") if settings.password_env else ""
    if settings.password_env and not password:
        raise EmailError(f"the SMTP password is not set: export {settings.password_env} "
                         f"(named by [email] password_env) before `digest send`")
    if password:
        register_secret(password)  # never in a message, a page, a record or a log
    try:
        refused = _deliver(message, settings, pending, user, password)
    except smtplib.SMTPAuthenticationError as err:
        raise EmailError(f"{where} refused the login for {user or '(no user)'}: "
                         f"{err.smtp_code} {_said(err.smtp_error)}") from err
    except smtplib.SMTPRecipientsRefused as err:
        refused = {a: f"{code} {_said(text)}" for a, (code, text) in err.recipients.items()}
        raise EmailError(f"{where} refused every recipient: "
                         + "; ".join(f"{a} ({why})" for a, why in refused.items())) from err
    except ssl.SSLError as err:
        raise EmailError(f"the TLS connection to {where} failed: {err.reason or err}") from err
    except smtplib.SMTPNotSupportedError as err:
        raise EmailError(f"{where} does not offer STARTTLS: set [email] security to \"ssl\" "
                         "(port 465) or, on a trusted network only, \"none\"") from err
    except (smtplib.SMTPException, OSError) as err:
        raise EmailError(f"could not send through {where}: {_cause(err)}") from err
    delivered = [a for a in pending if a not in refused]
    _record(cache, edition, message_id, delivered)
    return Delivery(tuple(delivered), tuple(done), refused)


def _deliver(message: EmailMessage, settings: EmailSettings, to: list[str], user: str,
             password: str) -> dict[str, str]:
    context = ssl.create_default_context()
    timeout = settings.timeout_seconds
    smtp: smtplib.SMTP
    if settings.security == "ssl":
        smtp = smtplib.SMTP_SSL(settings.smtp_host, settings.smtp_port, timeout=timeout,
                                context=context)
    else:
        smtp = smtplib.SMTP(settings.smtp_host, settings.smtp_port, timeout=timeout)
    with smtp:
        smtp.ehlo()
        if settings.security == "starttls":
            smtp.starttls(context=context)
            smtp.ehlo()
        if user or password:
            # PLAIN where offered (every common server): one exchange, one clear answer;
            # smtplib's login() would go on to other mechanisms after a refusal.
            if "PLAIN" in smtp.esmtp_features.get("auth", "").upper().split():
                smtp.user, smtp.password = user, password
                smtp.auth("PLAIN", smtp.auth_plain)
            else:
                smtp.login(user, password)
        refused = smtp.send_message(message, from_addr=settings.sender, to_addrs=to)
    return {a: f"{code} {_said(text)}" for a, (code, text) in refused.items()}


def _said(text: bytes | str) -> str:
    value = text.decode(errors="replace") if isinstance(text, bytes) else str(text)
    return " ".join(value.split())[:200]


def _cause(err: BaseException) -> str:
    if isinstance(err, ConnectionRefusedError):
        return "connection refused (is the SMTP server running, and is smtp_port right?)"
    if isinstance(err, socket.timeout | TimeoutError):
        return "timed out"
    if isinstance(err, socket.gaierror):
        return f"unknown host ({err.strerror})"
    if isinstance(err, smtplib.SMTPResponseException):
        return f"{err.smtp_code} {_said(err.smtp_error)}"
    return f"{type(err).__name__}: {err}"
