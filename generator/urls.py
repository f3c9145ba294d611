"""URLs as they may be shown: never with credentials, a query string or a fragment.

CI keeps the LLM server's address in a secret (`DIGEST_LLM_BASE_URL`), and such an address may
carry a user and password; error messages end up in pages, `edition.json`, the search index and
the log, so every URL shown anywhere passes through here first.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import urlsplit, urlunsplit

_URL_RE = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>()\[\]{}]+")


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
    """Every URL in a message, redacted."""
    return _URL_RE.sub(lambda m: redact_url(m.group(0)), text)


class RedactingFilter(logging.Filter):
    """Redacts URLs in log records, including those the openai and httpx loggers write."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = redact_text(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True
