"""Text as it may be shown: URLs without credentials, and no secret anywhere in it.

CI keeps the LLM server's address in a secret (`DIGEST_LLM_BASE_URL`), and such an address may
carry a user and password; a server may echo the API key in an error body ("Authorization:
Bearer sk-…"), and a model may repeat it. Error messages and answers end up in pages,
`edition.json`, the search index, the cache and the log, so every message passes through
`redact_text` and every answer through `redact_secrets` before it is kept anywhere.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import urlsplit, urlunsplit

_URL_RE = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>()\[\]{}]+")
REDACTED = "[redacted]"
# Credentials however they are spelt: an Authorization header, a bearer token, an OpenAI-style
# key, `api_key=…` and the like, user-info in a URL.
_CREDENTIAL_RES = (
    re.compile(r"(?i)\b(authorization[\"']?\s*[:=]\s*[\"']?)(?:(?:bearer|basic|token)\s+)?"
               r"[^\s'\",;}]+"),
    re.compile(r"(?i)\b(bearer\s+)(?=[A-Za-z._~+/=-]*[0-9])[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"()\b(?:sk|pk|rk)-[A-Za-z0-9_-]{8,}"),
    re.compile(r"(?i)\b((?:api[_-]?key|access[_-]?token|auth[_-]?token|secret|password|passwd)"
               r"[\"']?\s*[:=]\s*[\"']?)[^\s'\",;&}]+"),
    re.compile(r"(?i)(\b[a-z][a-z0-9+.\-]*://)[^/\s@'\"<>]+@"),
)
# Values too short to be told apart from ordinary words are not redacted by value (a key of
# "local" would blank that word in every answer); the patterns above still catch them.
_MIN_SECRET_CHARS = 8
_secrets: set[str] = set()


def register_secret(value: str) -> None:
    """Redact `value` wherever it appears from now on (the API key, read from the environment).

    Process-wide on purpose: a key echoed in an error body can surface through any message,
    log line or answer, and each must be cleaned without knowing which client it came from.
    """
    if len(value) >= _MIN_SECRET_CHARS:
        _secrets.add(value)


def redact_secrets(text: str) -> str:
    """`text` with every known secret value and every credential-shaped string replaced."""
    for secret in sorted(_secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    for pattern in _CREDENTIAL_RES:
        text = pattern.sub(lambda m: (m.group(1) or "") + REDACTED, text)
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
