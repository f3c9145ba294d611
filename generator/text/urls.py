"""Text as it may be shown: URLs without credentials, and no secret anywhere in it.

CI keeps the LLM server's address in a secret (`DIGEST_LLM_BASE_URL`), and such an address may
carry a user and password; a server may echo the API key in an error body ("Authorization:
Bearer sk-…"), and a model may repeat it. Error messages and answers end up in pages,
`edition.json`, the search index, the cache and the log, so every message passes through
`redact_text` and every answer through `redact_secrets` before it is kept anywhere.
"""

from __future__ import annotations

import base64
import html
import json
import logging
import re
import threading
from urllib.parse import quote, quote_plus, urlsplit, urlunsplit

URL_RE = _URL_RE = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>()\[\]{}]+")
REDACTED = "[redacted]"
_KEYS = r"(?:api[_-]?key|access[_-]?token|auth[_-]?token|secret|password|passwd)"
# Credentials however they are spelt: an Authorization header, a bearer token, an OpenAI-style
# key, `api_key=…` and the like, user-info in a URL.
_CREDENTIAL_RES = (
    re.compile(r"(?i)\b(authorization[\"']?\s*[:=]\s*[\"']?)(?:(?:bearer|basic|token)\s+)?"
               r"[^\s'\",;}]+"),
    re.compile(r"(?i)\b(bearer\s+)(?=[A-Za-z._~+/=-]*[0-9])[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"()\b(?:sk|pk|rk)-[A-Za-z0-9_-]{8,}"),
    # "password=…", "secret:…", '"api_key": "…"': whatever follows is the value. After a
    # colon and a space the value must look like one (a digit, or _ + / =): prose says "a
    # secret: put it in …", and that "put" is no secret.
    re.compile(rf"(?i)\b({_KEYS}[\"']?\s*(?:=\s*[\"']?|:\s*[\"']|:(?=\S)))[^\s'\",;&}}]+"),
    re.compile(rf"(?i)\b({_KEYS}[\"']?\s*:\s+)(?=[^\s'\",;&}}]*[0-9_+/=])[^\s'\",;&}}]+"),
    re.compile(r"(?i)(\b[a-z][a-z0-9+.\-]*://)[^/\s@'\"<>]+@"),
)
# Values shorter than this are redacted only as whole words (a password of "local" must not
# blank "locale"); longer ones wherever they appear.
_WORD_CHARS = 8
_BASE64_CORE_CHARS = 8  # a secret's base64 inside a longer blob, at any byte offset
_secrets: set[str] = set()
_pattern: re.Pattern[str] | None = None
_lock = threading.Lock()


def register_secret(value: str) -> None:
    """Redact `value` wherever it appears from now on, in every encoding a server or a model
    may echo it in: as is, URL-encoded, JSON- or HTML-escaped, base64 (alone or inside a blob).

    Process-wide on purpose: a key echoed in an error body can surface through any message,
    log line or answer, and each must be cleaned without knowing which client it came from.
    """
    if value:
        _add(_spellings(value))


def register_login(user: str, password: str) -> None:
    """A login's password, its user and the blobs a server may quote back: SMTP AUTH PLAIN
    (`\\0user\\0pw`, base64) and HTTP Basic (`user:pw`, base64).

    The user name alone is redacted from `_WORD_CHARS` characters on (an address, an id): a
    short one is a word ("digest"), and blanking it would garble every message that uses it."""
    register_secret(password)
    if len(user) >= _WORD_CHARS:
        register_secret(user)
    if password:
        blobs = (f"\0{user}\0{password}", f"{user}\0{user}\0{password}", f"{user}:{password}")
        _add({form for blob in blobs for form in _base64_forms(blob.encode())})


def _add(forms: set[str]) -> None:
    global _pattern
    with _lock:
        if forms - _secrets:
            _secrets.update(forms)
            alternatives = []
            for form in sorted(_secrets, key=len, reverse=True):
                escaped = re.escape(form)
                alternatives.append(escaped if len(form) >= _WORD_CHARS
                                    else rf"(?<![\w-]){escaped}(?![\w-])")
            _pattern = re.compile("|".join(alternatives))


def _spellings(value: str) -> set[str]:
    forms = {value, html.escape(value), html.escape(value, quote=False),
             json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}
    # quote() keeps a "/" as it is; quote_plus() writes a space as "+".
    for encoded in (quote(value, safe=""), quote(value), quote_plus(value, safe="")):
        forms |= {encoded, re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), encoded)}
    forms |= _base64_forms(value.encode())
    return {form for form in forms if form}


def _base64_forms(data: bytes) -> set[str]:
    """`data` in base64 as a whole (with and without padding), and the part of its encoding
    that is the same wherever it sits in a longer blob (each of the three byte offsets)."""
    whole = base64.b64encode(data).decode()
    forms = {whole, whole.rstrip("=")}
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + data).decode()
        start = -(-8 * offset // 6)  # the first character made of `data`'s bits alone
        end = (8 * (offset + len(data))) // 6  # the last whole one
        core = encoded[start:end]
        if len(core) >= _BASE64_CORE_CHARS:
            forms.add(core)
    return forms | {form.translate(_URLSAFE) for form in forms}


_URLSAFE = str.maketrans("+/", "-_")


def redact_secrets(text: str) -> str:
    """`text` with every known secret (in any spelling) and every credential-shaped string
    replaced."""
    pattern = _pattern
    if pattern is not None:
        text = pattern.sub(REDACTED, text)
    for credential in _CREDENTIAL_RES:
        text = credential.sub(lambda m: (m.group(1) or "") + REDACTED, text)
    return text


def redact_url(url: str) -> str:
    """`url` without user-info, query string or fragment (host, port and path are kept)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:  # an unparseable port or bracket: show the scheme alone
        return url.split("://", 1)[0] + "://…"
    if ":" in host:
        host = f"[{host}]"
    return urlunsplit((parts.scheme, host + port, parts.path, "", ""))


def redact_text(text: str) -> str:
    """A message with every URL shown without credentials and no secret in it."""
    return redact_secrets(_URL_RE.sub(lambda m: redact_url(m.group(0)), text))


class RedactingFilter(logging.Filter):
    """Redacts URLs and secrets in log records, the openai and httpx loggers' included."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = redact_text(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True


def host_only(url: str) -> str:
    """`url` as its scheme and host alone ("https://hooks.slack.com/…"): for a URL that sits
    where no URL belongs, whose path may be its secret."""
    scheme = url.split("://", 1)[0]
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        host = ""
    return f"{scheme}://{host}/…" if host else f"{scheme}://…"
