"""Sending the newsletter over SMTP exactly once per recipient, as a mail queue would.

What went to whom is kept with the edition (`editions/<name>/sent.json` in the workspace's
cache, never on the site: addresses are not published), keyed by the edition and the address,
never by anything derived from settings that may change. Each recipient gets two marks: *sending*,
written before the message is handed to the server, and *sent*, written the moment the server
accepts it. A recipient left at *sending* (a kill between DATA and the server's reply, a record
that could not be written) may have the message: the next run holds it back and names it,
and `--resend` is the way to send again. A recipient the server refused is marked so and
retried by the next run. The caller holds the workspace lock, so two runs never interleave.
"""

from __future__ import annotations

import email.generator
import io
import json
import logging
import re
import smtplib
import socket
import ssl
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import parseaddr
from pathlib import Path

from ..config import EmailSettings
from ..errors import DigestError
from ..store.cache import Cache, atomic_write_bytes
from ..store.jsonfile import ABSENT, JSONFileError, load_json
from ..text.urls import redact_text, register_login

log = logging.getLogger(__name__)

SENDING, SENT, REFUSED = "sending", "sent", "refused"
MAX_RECORD_BYTES = 16 * 1024 * 1024  # a mark is ~80 bytes: 200,000 readers


class EmailError(DigestError):
    """The SMTP server could not be reached, refused us, or refused every recipient."""

    exit_code = 1


@dataclass(frozen=True)
class Delivery:
    sent: tuple[str, ...]  # delivered now
    already: tuple[str, ...]  # delivered by an earlier run (left out)
    refused: dict[str, str]  # address -> the server's answer, in our words
    held: tuple[str, ...] = ()  # may have been delivered by an interrupted run: not re-sent


def sent_path(cache: Cache, edition: str) -> Path:
    return cache.root / "editions" / edition / "sent.json"


def mailbox(address: str) -> str:
    """The mailbox an address delivers to, as the record keys it: "Ada <ADA@x.org>" and
    " ada@x.org" are one reader."""
    return (parseaddr(address)[1] or address).strip().lower()


def recipients(addresses: Sequence[str]) -> list[str]:
    """`addresses` without repeats (by mailbox, case-insensitive, as mail systems compare)."""
    seen: set[str] = set()
    kept = []
    for address in addresses:
        if mailbox(address) not in seen:
            seen.add(mailbox(address))
            kept.append(address)
    return kept


class SendRecord:
    """The per-recipient marks of one edition's newsletter, rewritten atomically at each mark."""

    def __init__(self, path: Path, edition: str) -> None:
        self.path, self.edition = path, edition
        self.entries: list[dict[str, str]] = []
        try:
            data = load_json(path, max_bytes=MAX_RECORD_BYTES, missing=ABSENT)
        except JSONFileError as err:
            raise EmailError(f"the send record cannot be read: {err}; nothing was sent. Fix "
                             "it, or remove it to send to every recipient again") from err
        if data is ABSENT:  # never sent; a file holding `null` is an odd one, named below
            return
        listed = data.get("recipients") if isinstance(data, dict) else None
        if not isinstance(listed, list):
            raise EmailError(self._unreadable("no list of recipients"))
        self.entries = [self._entry(i, r) for i, r in enumerate(listed)]

    def _entry(self, index: int, entry: object) -> dict[str, str]:
        """One recipient's mark, as written; a mangled one is an error, never "not sent"
        (which would mail that reader again)."""
        where = f"recipients[{index}]"
        if not isinstance(entry, dict):
            raise EmailError(self._unreadable(f"{where} is not an object"))
        to, state, at = entry.get("to"), entry.get("state", SENT), entry.get("at", "")
        # Records of earlier releases carry no state: every entry in them was delivered.
        if not isinstance(to, str) or not to.strip():
            raise EmailError(self._unreadable(f"{where}.to is not an address"))
        if state not in (SENDING, SENT, REFUSED):
            raise EmailError(self._unreadable(f"{where}.state is not one of {SENDING!r}, "
                                              f"{SENT!r}, {REFUSED!r}"))
        if not isinstance(at, str):
            raise EmailError(self._unreadable(f"{where}.at is not a time"))
        return {"to": to, "state": state, "at": at}

    def _unreadable(self, why: str) -> str:
        return (f"the send record {self.path} cannot be read ({why}); nothing was sent. Fix it, "
                "or remove it to send to every recipient again")

    def state(self, address: str) -> str:
        """The last mark for `address`'s mailbox ("" if none)."""
        for entry in reversed(self.entries):
            if mailbox(entry["to"]) == mailbox(address):
                return entry["state"]
        return ""

    def mark(self, address: str, state: str) -> None:
        """Record `state` for `address` now, durably; OSError if it cannot be written."""
        now = datetime.now(UTC).isoformat(timespec="seconds")
        if self.entries and mailbox(self.entries[-1]["to"]) == mailbox(address) \
                and self.entries[-1]["state"] == SENDING:
            self.entries[-1] = {"to": address, "state": state, "at": now}
        else:
            self.entries.append({"to": address, "state": state, "at": now})
        data = {"edition": self.edition, "recipients": self.entries}
        atomic_write_bytes(self.path, (json.dumps(data, indent=2, ensure_ascii=False)
                                       + "\n").encode(), private=True)


def write_eml(cache: Cache, edition: str, message: EmailMessage) -> Path:
    """`--dry-run`: the message as a file a mail client opens, in the workspace's cache."""
    path = cache.root / "editions" / edition / "newsletter.eml"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, message.as_bytes())
    return path


def send(compose: Callable[[str], EmailMessage], settings: EmailSettings, cache: Cache,
         edition: str, environ: Mapping[str, str], *, resend: bool = False,
         resend_held: bool = False) -> Delivery:
    """Send `compose(address)` to every address of `[email] to` not yet reached (all with
    `resend`; with `resend_held`, also those an interrupted run may have reached), one message
    each, so that each acceptance is known and recorded."""
    record = SendRecord(sent_path(cache, edition), edition)
    addresses = recipients(settings.to)
    done = [] if resend else [a for a in addresses if record.state(a) == SENT]
    held = [] if resend or resend_held else [a for a in addresses if record.state(a) == SENDING]
    pending = [a for a in addresses if a not in done and a not in held]
    if not pending:
        return Delivery((), tuple(done), {}, tuple(held))
    where = f"{settings.smtp_host}:{settings.smtp_port}"
    user = environ.get(settings.username_env, "") if settings.username_env else ""
    password = environ.get(settings.password_env, "") if settings.password_env else ""
    if settings.password_env and not password:
        raise EmailError(f"the SMTP password is not set: export {settings.password_env} "
                         f"(named by [email] password_env) before `digest send`")
    register_login(user, password)  # never in a message, a page, a record or a log
    delivered: list[str] = []
    refused: dict[str, str] = {}
    try:
        smtp = _connect(settings, user, password)
    except smtplib.SMTPAuthenticationError as err:
        _log_said(where, err)
        raise EmailError(f"{where} refused the login of the user in "
                         f"{settings.username_env or '(no user)'}: "
                         f"{_answer(err.smtp_code, err.smtp_error)}") from err
    except ssl.SSLError as err:
        raise EmailError(f"the TLS connection to {where} failed: {err.reason or err}") from err
    except smtplib.SMTPNotSupportedError as err:
        raise EmailError(f"{where} does not offer STARTTLS: set [email] security to \"ssl\" "
                         "(port 465) or, on a trusted network only, \"none\"") from err
    except (smtplib.SMTPException, OSError) as err:
        raise EmailError(f"could not send through {where}: {_cause(err)}") from err
    try:
        with smtp:
            for address in pending:
                why = _hand_over(smtp, where, settings, compose(address), address, record,
                                 delivered)
                if why:
                    refused[address] = why
    except (smtplib.SMTPException, OSError) as err:
        if isinstance(err, smtplib.SMTPResponseException):
            _log_said(where, err)
        in_doubt = [a for a in pending if record.state(a) == SENDING]
        raise EmailError(f"could not send through {where}: {_cause(err)}"
                         + _so_far(delivered, in_doubt + held)) from err
    if refused and not delivered and not done:
        raise EmailError(f"{where} refused every recipient: "
                         + "; ".join(f"{a} ({why})" for a, why in refused.items())
                         + _so_far([], held))
    return Delivery(tuple(delivered), tuple(done), refused, tuple(held))


def _hand_over(smtp: smtplib.SMTP, where: str, settings: EmailSettings, message: EmailMessage,
               address: str, record: SendRecord, delivered: list[str]) -> str:
    """One message to one reader, step by step, so that only a failure after the message
    itself was handed over leaves the reader in doubt (marked *sending*). Returns why the
    server refused the reader ("" once accepted); a failure of the whole session raises."""
    sender, to = parseaddr(settings.sender)[1] or settings.sender, mailbox(address)
    data, options = _flatten(smtp, message, sender, to)
    if data is None:
        _mark(record, address, REFUSED, delivered)
        return "the server does not take international addresses (no SMTPUTF8)"
    smtp.ehlo_or_helo_if_needed()
    code, said = smtp.mail(sender, options)
    if code != 250:
        smtp.rset()
        raise smtplib.SMTPSenderRefused(code, said, sender)
    code, said = smtp.rcpt(to)
    if code not in (250, 251):
        smtp.rset()
        _mark(record, address, REFUSED, delivered)
        return _refusal(where, address, code, said)
    _mark(record, address, SENDING, delivered)  # from here on it may arrive
    try:
        code, said = smtp.data(data)
    except smtplib.SMTPDataError as err:  # DATA itself refused: nothing was handed over
        smtp.rset()
        _mark(record, address, REFUSED, delivered)
        return _refusal(where, address, err.smtp_code, err.smtp_error)
    if code != 250:
        smtp.rset()
        _mark(record, address, REFUSED, delivered)
        return _refusal(where, address, code, said)
    delivered.append(address)
    _mark(record, address, SENT, delivered)
    return ""


def _flatten(smtp: smtplib.SMTP, message: EmailMessage, sender: str, to: str
             ) -> tuple[bytes | None, list[str]]:
    """The message's bytes and MAIL options, as smtplib's send_message makes them; None for
    an international address the server cannot take."""
    smtp.ehlo_or_helo_if_needed()
    international = not (sender + to).isascii()
    if international and not smtp.has_extn("smtputf8"):
        return None, []
    with io.BytesIO() as out:
        policy = (message.policy.clone(utf8=True)  # type: ignore[call-arg]
                  if international else message.policy)
        email.generator.BytesGenerator(out, policy=policy).flatten(message, linesep="\r\n")
        data = out.getvalue()
    return data, (["SMTPUTF8", "BODY=8BITMIME"] if international else [])


def _mark(record: SendRecord, address: str, state: str, delivered: list[str]) -> None:
    try:
        record.mark(address, state)
    except OSError as err:
        why = err.strerror or str(err)
        went = (f"The newsletter went out to {', '.join(delivered)}" if delivered
                else "The newsletter went out to nobody")
        if state == SENDING:  # nothing is in doubt: the message was not handed over
            raise EmailError(f"the send record {record.path} could not be written ({why}), "
                             f"so nothing more was sent. {went}.") from err
        raise EmailError(
            f"the send record {record.path} could not be written ({why}) after the server "
            f"{'accepted' if state == SENT else 'refused'} the message for {address}. {went}. "
            "Running `digest send` again will not send it to them again: the record holds "
            f"{address} back as possibly sent (`--resend-held` sends to them)") from err


def _so_far(delivered: list[str], in_doubt: list[str]) -> str:
    said = ""
    if delivered:
        said += f"; the newsletter went out to {', '.join(delivered)} (recorded)"
    if in_doubt:
        said += (f"; {', '.join(in_doubt)} may have received it: the next `digest send` holds "
                 "them back (`--resend-held` sends to them)")
    return said


def _connect(settings: EmailSettings, user: str, password: str) -> smtplib.SMTP:
    if not (user.isascii() and password.isascii()):
        # Python's SMTP client sends the login as ASCII: it would fail mid-login with an
        # encoding error. Said before connecting, naming no character of either.
        raise EmailError("the SMTP user name or password holds characters outside ASCII, "
                         "which Python's SMTP client cannot send; nothing was sent. Use an "
                         "ASCII password (an app password, say) for the mail account")
    context = ssl.create_default_context()
    timeout = settings.timeout_seconds
    smtp: smtplib.SMTP
    if settings.security == "ssl":
        smtp = smtplib.SMTP_SSL(settings.smtp_host, settings.smtp_port, timeout=timeout,
                                context=context)
    else:
        smtp = smtplib.SMTP(settings.smtp_host, settings.smtp_port, timeout=timeout)
    try:
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
    except BaseException:
        smtp.close()
        raise
    return smtp


# What SMTP reply codes mean, in our words: the server's own text goes to the log only (a
# server may quote the AUTH blob, and with it the password, in its reply).
_CODES = {
    421: "service not available", 450: "mailbox busy", 451: "local error at the server",
    452: "insufficient storage", 454: "temporary failure", 500: "command not recognised",
    501: "syntax error in parameters", 502: "command not implemented",
    503: "bad sequence of commands", 504: "parameter not implemented",
    530: "authentication required", 534: "authentication mechanism too weak",
    535: "authentication failed", 550: "mailbox unavailable", 551: "user not local",
    552: "storage exceeded", 553: "mailbox name not allowed", 554: "transaction failed",
}
_ENHANCED_RE = re.compile(r"^\s*([245]\.\d{1,3}\.\d{1,3})\b")


def _answer(code: int, text: bytes | str) -> str:
    """A reply as code, enhanced status code (`5.1.1`) and meaning, never the server's words."""
    enhanced = _ENHANCED_RE.match(_text(text))
    meaning = _CODES.get(code) or ("temporary failure" if 400 <= code < 500 else
                                   "permanent failure" if 500 <= code < 600 else "unexpected reply")
    return f"{code}{' ' + enhanced.group(1) if enhanced else ''} {meaning}"


def _text(said: bytes | str) -> str:
    return said.decode(errors="replace") if isinstance(said, bytes) else str(said)


def _for_log(said: bytes | str) -> str:
    """A reply's own words for the log: redacted whole before it is shortened (a secret cut in
    two would match nothing)."""
    return " ".join(redact_text(_text(said)).split())[:300]


def _log_said(where: str, err: smtplib.SMTPResponseException) -> None:
    log.warning("%s answered %s: %s", where, err.smtp_code, _for_log(err.smtp_error))


def _refusal(where: str, address: str, code: int, said: bytes | str) -> str:
    """Why the server refused a reader, in our words; its own words to the log."""
    log.warning("%s refused the newsletter for %s: %s %s", where, address, code,
                _for_log(said))
    return _answer(code, said)


def _cause(err: BaseException) -> str:
    if isinstance(err, ConnectionRefusedError):
        return "connection refused (is the SMTP server running, and is smtp_port right?)"
    if isinstance(err, socket.timeout | TimeoutError):
        return "timed out"
    if isinstance(err, socket.gaierror):
        return f"unknown host ({err.strerror})"
    if isinstance(err, smtplib.SMTPServerDisconnected):
        return "the server closed the connection"
    if isinstance(err, smtplib.SMTPResponseException):
        return _answer(err.smtp_code, err.smtp_error)
    if isinstance(err, OSError):
        return err.strerror or type(err).__name__
    return type(err).__name__
