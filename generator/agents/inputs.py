"""What an agent sends, checked before anything is read: every id, name, date and text is held
to the grammar the archive itself uses, so none of it can name a file outside the workspace,
and a refusal says in our words what was expected.
"""

from __future__ import annotations

import re
from datetime import date

from ..errors import UsageError
from ..papers import base_of, valid_arxiv_id

MAX_QUERY_CHARS = 500
MAX_QUESTION_CHARS = 2000
MAX_LIMIT = 50  # hits per search: each carries its claims, and an answer must stay bounded
EDITION_NAME_RE = re.compile(r"\d{4}-\d{2}-\d{2}(?:-[a-z0-9][a-z0-9-]{0,40})?", re.ASCII)
_ARXIV_PREFIX_RE = re.compile(r"^(?:arxiv:|https?://arxiv\.org/(?:abs|pdf)/)", re.IGNORECASE)


class AgentInputError(UsageError):
    """An argument of a tool call that the archive cannot take; the message says why."""


def _shown(value: str, limit: int = 60) -> str:
    """A refused value as a message quotes it: short, on one line, escapes visible."""
    return repr(value[:limit] + ("…" if len(value) > limit else ""))


def checked_text(value: str, what: str, limit: int) -> str:
    """`value` as one line of words: not empty, not longer than `limit` characters, and only
    characters UTF-8 can carry (a lone surrogate is what a non-UTF-8 byte decodes to)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as err:
        raise AgentInputError(f"the {what} holds something that is not text (a character "
                              f"UTF-8 cannot carry, at position {err.start}): send it as "
                              "UTF-8 text") from err
    words = " ".join(value.split())
    if not words:
        raise AgentInputError(f"the {what} is empty: give some words")
    if len(words) > limit:
        raise AgentInputError(f"the {what} is {len(words)} characters long; at most {limit} "
                              "are read")
    return words


def checked_arxiv_id(value: str) -> str:
    """An arXiv id (with or without its version, "arXiv:" or an arxiv.org address in front);
    anything else, a path included, is refused."""
    text = checked_text(value, "arXiv id", 100)
    bare = _ARXIV_PREFIX_RE.sub("", text).removesuffix(".pdf")
    if not valid_arxiv_id(bare):
        raise AgentInputError(f"{_shown(value)} is not an arXiv id: give one such as "
                              "2611.00101 or 2611.00101v2 (or hep-th/9901001)")
    return bare


def checked_base_id(value: str) -> str:
    return base_of(checked_arxiv_id(value))


def checked_edition(value: str) -> str:
    """"latest", or an edition's name: its date, with an optional suffix."""
    text = value.strip()
    if text == "latest":
        return text
    match = EDITION_NAME_RE.fullmatch(text)
    if match is None or not _is_date(text[:10]):
        raise AgentInputError(f"{_shown(value)} is not an edition's name: give \"latest\" or "
                              "a date such as 2026-12-07 (with a suffix for a second edition "
                              "that day: 2026-12-07-special)")
    return text


def checked_date(value: str | None, what: str) -> str:
    """A YYYY-MM-DD date, or "" where none was given."""
    if value is None or not value.strip():
        return ""
    text = value.strip()
    if not (len(text) == 10 and _is_date(text)):
        raise AgentInputError(f"`{what}` must be a date such as 2026-09-01, not {_shown(value)}")
    return text


def checked_window(since: str | None, until: str | None) -> tuple[str, str]:
    start, end = checked_date(since, "since"), checked_date(until, "until")
    if start and end and start > end:
        raise AgentInputError(f"`until` {end} is before `since` {start}: no edition can be in "
                              "that window")
    return start, end


def checked_limit(value: int | None, default: int) -> int:
    if value is None:
        return default
    if not 1 <= value <= MAX_LIMIT:
        raise AgentInputError(f"`limit` must be from 1 to {MAX_LIMIT}, not {value}")
    return value


def _is_date(text: str) -> bool:
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return bool(re.fullmatch(r"\d{4}-\d{2}-\d{2}", text, re.ASCII))
