"""A server's error, read as a person would, and told in our own words.

What the digest publishes about a failed request (an edition page, `edition.json`, the feed,
the mail) is a short summary in the project's words: the HTTP status, the kind of failure and
the server. The server's own text can quote the API key (URL-encoded, base64, …), name files
on the server or echo the prompt; it goes to the local log only, redacted, and is kept on the
error as `detail` for what reads it to decide (a context refusal's numbers, a refused format).
A connection that failed is told the same way (`connection_cause`): the build and doctor say
alike that nothing accepted it (`NOT_CONNECTED`).
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any

from ..text.urls import redact_text
from .planning import refusal_from_error

if TYPE_CHECKING:
    import openai

log = logging.getLogger(__name__)

_PATH_RE = re.compile(r"(?:[A-Za-z]:)?(?:[\\/][\w.@+-]+){2,}\.py\b(?:\", line \d+)?")
_FRAME_RE = re.compile(r"^\s*(Traceback \(most recent call last\)|File \")")
_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "grammar")
# llama-server's refusal counts the prompt alone (recorded): "request (N tokens) exceeds the
# available context size (C tokens)"; other servers' counts include the answer's budget.
_PROMPT_ALONE_RE = re.compile(r"request \([0-9][0-9,]* tokens\) exceeds the available context",
                              re.IGNORECASE)
# llama-server, mid-stream (recorded): its KV cache filled while answering, because the
# requests in flight share it (the default unified cache) or the answer outgrew one slot.
_CONTEXT_FULL_RE = re.compile(r"context size has been exceeded|failed to find (?:a )?(?:free )?"
                              r"(?:space in the )?kv cache|kv cache is full", re.IGNORECASE)

_STATUS_WORDS = {
    400: "the server refused the request as invalid",
    401: "the server refused the API key (set the environment variable named by [llm] "
         "api_key_env)",
    403: "the server refused access to this model",
    404: "not found (check [llm] base_url and [llm] model)",
    408: "the server timed out waiting for the request",
    413: "the request is too large for the server",
    422: "the server refused the request as invalid",
    429: "too many requests: the server is overloaded or rate-limited",
    500: "internal server error",
    502: "bad gateway: the server behind the proxy did not answer",
    503: "the server is overloaded or still starting",
    504: "gateway timeout: the server behind the proxy took too long",
}


def body_text(body: Any, fallback: str) -> str:
    """The message a server put in its error body: OpenAI's nested `error.message`, SGLang's
    flat `message`, FastAPI's `detail` (a string or a list of validation errors), else the
    raw text."""
    if isinstance(body, dict):
        nested = body.get("error")
        for value in ((nested or {}).get("message") if isinstance(nested, dict) else nested,
                      body.get("message"), body.get("detail")):
            if isinstance(value, str) and value.strip():
                return value
            if isinstance(value, list) and value:
                return "; ".join(str(item.get("msg", item)) if isinstance(item, dict)
                                 else str(item) for item in value)
    return fallback


def detail(text: str, limit: int = 20_000) -> str:
    """A server's message as one line for reading its cause and for the log (which shortens
    it): every line that says something (a validation error, the exception line), the frames
    of a traceback and source paths left out, secrets redacted. Its cause may be anywhere in
    it (a context refusal after a long validation error), so only a huge one is cut."""
    lines = text.splitlines()
    kept: list[str] = []
    in_frame = False
    for line in lines:
        if not line.strip():
            in_frame = False
            continue
        if _FRAME_RE.match(line):
            in_frame = line.lstrip().startswith("File")
            continue
        if in_frame and line.startswith("    "):  # the source line a frame shows
            in_frame = False
            continue
        in_frame = False
        kept.append(line.strip())
    said = _PATH_RE.sub("…", " ".join(kept or [line.strip() for line in lines if line.strip()]))
    said = redact_text(said)
    return said if len(said) <= limit else said[:limit - 1].rstrip() + "…"


def context_full(said: str) -> bool:
    """Whether a server ran out of context while answering (not a prompt it refused): a sign
    of too many requests at once on a shared cache, so sent again fewer at a time."""
    return bool(_CONTEXT_FULL_RE.search(said)) and refusal_from_error(said) is None


def format_refusal(status: int | None, said: str) -> bool:
    """Whether the server refused how the JSON was asked for (not the prompt or its length):
    a 400 or 422 that is not about the context, or a 500 that names the format (llama-cpp-python
    reports its validation error as a 500, and LiteLLM passes it on)."""
    if refusal_from_error(said):
        return False
    if status in (400, 422):
        return True
    lowered = said.lower()
    return status == 500 and any(word in lowered for word in _FORMAT_WORDS)


def describe(status: int, said: str) -> str:
    """What an HTTP error means, in our words."""
    refusal = refusal_from_error(said)
    if refusal is not None and _PROMPT_ALONE_RE.search(said):
        return (f"the prompt alone ({refusal.input_tokens:,} tokens) is longer than the "
                f"model's context of {refusal.context:,} tokens")
    if refusal is not None:
        return (f"the prompt and its answer are longer than the model's context of "
                f"{refusal.context:,} tokens")
    if any(word in said.lower() for word in _FORMAT_WORDS) and format_refusal(status, said):
        return "the server does not accept this way of asking for JSON (response_format)"
    return _STATUS_WORDS.get(status) or (
        "the server refused the request" if 400 <= status < 500 else "the server failed")


# Statuses that say "too much at once", not "this request is wrong": 500 is not among them
# (llama-cpp-python answers an invalid response_format with a 500).
OVERLOAD_STATUSES = (429, 502, 503, 504)


def dropped(err: openai.APIConnectionError) -> bool:
    """A connection the server closed or reset without a response (a full accept queue, a
    server past its capacity), not one it refused (down) or a timeout."""
    import openai

    if isinstance(err, openai.APITimeoutError):
        return False
    seen: BaseException | None = err.__cause__
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError | TimeoutError) or type(seen).__name__ in (
                "ConnectError", "ConnectTimeout"):
            return False
        seen = seen.__cause__ or seen.__context__
    return True


# Why a server did not answer when nothing accepted the connection: the build and doctor say it
# alike.
NOT_CONNECTED = ("could not connect: is the server running, and is [llm] base_url (or "
                 "DIGEST_LLM_BASE_URL) right?")


def connection_cause(err: openai.APIConnectionError) -> str:
    """What went wrong with the connection, in our words: a transport error's own text can
    quote what the server sent (a malformed header line), so it goes to the log only."""
    import openai

    if isinstance(err, openai.APITimeoutError):
        return "timed out"
    cause = err.__cause__
    log.info("connection error: %r", cause)
    if not dropped(err):
        return NOT_CONNECTED
    return f"the connection failed: {transport_words(cause)}"


def transport_words(error: BaseException | None) -> str:
    name = type(error).__name__ if error is not None else ""
    if "RemoteProtocol" in name:
        return "the server closed it without a complete response"
    if "Read" in name or "Write" in name:
        return "the connection broke while reading or sending"
    return name or "unknown"
