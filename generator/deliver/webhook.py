"""Posting the edition to the team's chat exactly once, through an incoming webhook.

An incoming webhook's URL is its password: whoever has it may post in the channel. It is read
from the environment variable `[chat] webhook_url_env` names, registered as a secret (the whole
URL, its path and its token, in every encoding), and never shown: messages name the variable
and the host only, and the server's own words go to the log, redacted.

What was posted is kept with the edition (`editions/<name>/posted.json` in the workspace's
cache), as the mail keeps what went to whom: *sending* is written before the request goes
out, *sent* once the server accepted it, *failed* when it was certainly not posted (the
connection could not be made, or the server refused it: a 4xx, a 5xx), which the next run
retries. A post left at *sending* (the connection dropped or the deadline passed after the
request went out, or the record could not be written after) may be in the channel: the next
run holds it back and says so, and `--resend-held` posts it. The caller holds the workspace
lock, so two runs never interleave.
"""

from __future__ import annotations

import json
import logging
import ssl
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

import requests
import urllib3

from ..deadline import DeadlineAdapter, Watchdog
from ..errors import DigestError
from ..store.cache import Cache, atomic_write_bytes
from ..store.jsonfile import ABSENT, JSONFileError, load_json
from ..text.urls import redact_text, register_secret

log = logging.getLogger(__name__)

SENDING, SENT, FAILED = "sending", "sent", "failed"
LOGGED_CHARS = 300  # of an answer's body, in the log (after redaction)
MAX_ANSWER_BYTES = 64 * 1024


class ChatError(DigestError):
    """The post could not be made, or its record cannot be read or written."""

    exit_code = 1


class NotPosted(ChatError):
    """Certainly not posted: retried by the next run."""


class InDoubt(ChatError):
    """Sent, with no answer: it may be in the channel."""


class Poster(Protocol):
    """Where a post goes (`Webhook`, or a test's double)."""

    @property
    def where(self) -> str: ...

    def post(self, body: bytes) -> None: ...


@dataclass(frozen=True)
class Posted:
    state: str  # "posted" now, "already" by an earlier run, or "held" (in doubt)
    where: str


def posted_path(cache: Cache, edition: str) -> Path:
    return cache.root / "editions" / edition / "posted.json"


class Webhook:
    """One incoming webhook: a JSON POST with a deadline for the whole exchange."""

    def __init__(self, session: requests.Session, url: str, variable: str, *,
                 deadline_s: float = 30.0) -> None:
        parts = urlsplit(url.strip())
        local = parts.hostname in ("127.0.0.1", "localhost", "::1")
        if not parts.hostname or not (parts.scheme == "https" or (parts.scheme == "http"
                                                                  and local)):
            raise ChatError(f"{variable} must hold the https URL of an incoming webhook (it "
                            "holds something else, not shown here: it may be a secret)")
        register_secret(url.strip())  # the URL, its path and token: redacted everywhere
        for piece in (parts.path + (f"?{parts.query}" if parts.query else ""), parts.path,
                      parts.path.rstrip("/").rsplit("/", 1)[-1], parts.query):
            if len(piece) >= 8:
                register_secret(piece)
        self._session, self._url, self._variable = session, url.strip(), variable
        self.host = parts.hostname
        session.mount(f"{parts.scheme}://{parts.netloc}", DeadlineAdapter())
        self._deadline = deadline_s
        self._watchdog = Watchdog()

    @property
    def where(self) -> str:
        """The webhook as messages name it: its variable and host, never its URL."""
        return f"the chat webhook at {self.host} ({self._variable})"

    def post(self, body: bytes) -> None:
        """POST `body`; NotPosted when it certainly did not arrive, InDoubt when it may have."""
        with self._watchdog.exchange(self._deadline) as deadline:
            try:
                response = self._session.post(
                    self._url, data=body, allow_redirects=False, stream=True,
                    headers={"Content-Type": "application/json",
                             "User-Agent": "research-digest"},
                    timeout=(min(10.0, self._deadline), self._deadline))
                with response:
                    answer = _read(response, deadline.expired)
            except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as err:
                if _never_sent(err) and not deadline.expired():
                    raise NotPosted(f"could not reach {self.where}: {type(err).__name__}; "
                                    "nothing was posted, the next `digest send` tries again"
                                    ) from err
                raise InDoubt(
                    f"{self.where} did not answer " + (
                        f"within {self._deadline:g} s" if deadline.expired() else
                        f"({type(err).__name__})") + " after the post was sent") from err
        status = response.status_code
        if status < 300:
            return
        log.info("%s answered HTTP %d: %s", self.where, status,
                 redact_text(answer.decode("utf-8", errors="replace"))[:LOGGED_CHARS])
        raise NotPosted(refusal(status, self.where, self._variable))


def _read(response: requests.Response, expired: Any) -> bytes:
    chunks, size = [], 0
    for chunk in response.iter_content(16 * 1024):
        size += len(chunk)
        if size <= MAX_ANSWER_BYTES:
            chunks.append(chunk)
        if expired():
            raise TimeoutError("the answer outlasted the deadline")
    return b"".join(chunks)


def _never_sent(err: BaseException) -> bool:
    """Whether the request never left: the connection (or its TLS) could not be made."""
    seen: set[int] = set()
    stack: list[Any] = [err]
    while stack:
        cause = stack.pop()
        if cause is None or id(cause) in seen:
            continue
        seen.add(id(cause))
        if isinstance(cause, (requests.ConnectTimeout, requests.exceptions.SSLError,
                              urllib3.exceptions.NewConnectionError,
                              urllib3.exceptions.NameResolutionError,
                              urllib3.exceptions.ConnectTimeoutError, ssl.SSLError,
                              ConnectionRefusedError)):
            return True
        stack += [getattr(cause, "reason", None), cause.__cause__, cause.__context__,
                  *(a for a in getattr(cause, "args", ()) if isinstance(a, BaseException))]
    return False


def refusal(status: int, where: str, variable: str) -> str:
    """What a webhook's HTTP status means, in our words, and what to do."""
    if status in (404, 410):
        why = (f"has no webhook at this address (HTTP {status}): it was deleted, or its "
               f"channel archived; create a new incoming webhook and set {variable} to its URL")
    elif status in (401, 403):
        why = (f"refused the post (HTTP {status}): the webhook may not post in its channel "
               "any more (its app was removed, or the channel archived)")
    elif status == 429:
        why = "is limiting how often it is posted to (HTTP 429)"
    elif status == 413:
        why = "refused the post as too large (HTTP 413)"
    elif status in (400, 422):
        why = (f"refused the post as malformed (HTTP {status}): check that [chat] format "
               "matches the webhook (slack, discord or json)")
    elif status < 400:
        why = (f"answered with a redirect (HTTP {status}), which is not followed: set "
               f"{variable} to the webhook's own URL")
    elif status >= 500:
        why = f"failed on its side (HTTP {status})"
    else:
        why = f"refused the post (HTTP {status})"
    return f"{where} {why}; nothing was posted, the next `digest send` tries again"


class PostRecord:
    """Whether an edition was posted: one state, rewritten atomically at each step."""

    def __init__(self, path: Path, edition: str) -> None:
        self.path, self.edition, self.state = path, edition, ""
        try:
            data = load_json(path, missing=ABSENT)
        except JSONFileError as err:
            raise ChatError(f"the chat post's record cannot be read: {err}; nothing was "
                            "posted. Fix it, or remove it to post the edition again") from err
        if data is ABSENT:  # never posted; a file holding `null` is an odd one, named below
            return
        state = data.get("state") if isinstance(data, dict) else None
        if state not in (SENDING, SENT, FAILED):
            raise ChatError(f"the chat post's record {path} cannot be read (its state is not "
                            f"one of {SENDING!r}, {SENT!r}, {FAILED!r}); nothing was posted. "
                            "Fix it, or remove it to post the edition again")
        self.state = state

    def mark(self, state: str, format: str) -> None:
        """Record `state` now, durably; OSError if it cannot be written."""
        data = {"edition": self.edition, "state": state, "format": format,
                "at": datetime.now(UTC).isoformat(timespec="seconds")}
        atomic_write_bytes(self.path, (json.dumps(data, indent=2) + "\n").encode(),
                           private=True)
        self.state = state


def post_once(poster: Poster, body: bytes, format: str, cache: Cache, edition: str, *,
              resend: bool = False, resend_held: bool = False) -> Posted:
    """Post `body` unless the record says it was (all the same with `resend`), or may have
    been (all the same with `resend_held`)."""
    record = PostRecord(posted_path(cache, edition), edition)
    if record.state == SENT and not resend:
        return Posted("already", poster.where)
    if record.state == SENDING and not (resend or resend_held):
        return Posted("held", poster.where)
    try:
        record.mark(SENDING, format)
    except OSError as err:
        raise ChatError(f"the chat post's record {record.path} could not be written "
                        f"({err.strerror or err}), so nothing was posted") from err
    try:
        poster.post(body)
    except NotPosted:
        try:
            record.mark(FAILED, format)
        except OSError as err:  # left at "sending": the next run holds it, never doubles it
            log.warning("the chat post's record could not be written: %s", err)
        raise
    except InDoubt as err:
        raise InDoubt(f"{err}: it may be in the channel, so the next `digest send` holds it "
                      "back (`--resend-held` posts it again)") from err
    try:
        record.mark(SENT, format)
    except OSError as err:
        raise ChatError(f"the edition was posted to {poster.where}, but its record "
                        f"{record.path} could not be written ({err.strerror or err}): the next "
                        "`digest send` holds it back as possibly posted") from err
    return Posted("posted", poster.where)
