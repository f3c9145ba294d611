"""GitHub's answers read defensively: a search page's issues, the `link` header, a rate limit.

Every value is checked for its type and range before it is used (an issue number is a
positive integer of GitHub's size, never `1e999`, `"7"` or `true`), and a header GitHub would
never send (`X-RateLimit-Reset: 999999999999`, `Retry-After: soon`) is taken as "not said",
never a traceback. What cannot be read is `GitHubAnswerError`, whose message names the URL
(without credentials or query).
"""

from __future__ import annotations

import email.utils
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeGuard

from ..errors import DigestError
from ..store.jsonfile import JSONFileError, parse_json
from ..text.urls import redact_url

MAX_ANSWER_BYTES = 16 * 1024 * 1024  # a page of 100 issues with 64 KB bodies is ~7 MB
MAX_DEPTH = 32  # an issue nests about 4 deep (labels, user, reactions)
MAX_TITLE = 1024  # GitHub's own limit is 256 characters
MAX_ISSUE = 2**31 - 1
MAX_WAIT_S = 24 * 3600  # GitHub's windows are an hour; a longer wait is not an answer of its
_NEXT_RE = re.compile(r'<([^<>\s]+)>\s*;\s*rel="?next"?')


class GitHubError(DigestError):
    """GitHub refused: the token, its permissions or the repository; the message says what
    to change."""

    exit_code = 2


class GitHubUnavailable(GitHubError):
    """GitHub could not answer now (unreachable, its rate limit, a server error): run again."""

    exit_code = 1


class GitHubAnswerError(GitHubUnavailable):
    """An answer of GitHub's API that is not what the API sends: nothing was written."""


@dataclass(frozen=True)
class Issue:
    number: int
    title: str


@dataclass(frozen=True)
class SearchPage:
    issues: tuple[Issue, ...]  # open issues, pull requests left out
    items: int  # how many items the page held, whatever they were
    total: int  # GitHub's count of every match
    incomplete: bool  # GitHub's search timed out: some matches may be missing


def unreadable(url: str, why: str) -> GitHubAnswerError:
    return GitHubAnswerError(f"GitHub's answer could not be read ({redact_url(url)}): {why}; "
                             "nothing was written: run the same command again, and check "
                             "GITHUB_API_URL if it stays")


def answer_json(raw: bytes, url: str) -> Any:
    """The answer's JSON, bounded in size and depth, with finite numbers only."""
    try:
        return parse_json(raw, "the answer", max_depth=MAX_DEPTH, max_bytes=MAX_ANSWER_BYTES)
    except JSONFileError as err:
        raise unreadable(url, str(err)) from err


def search_page(data: Any, url: str) -> SearchPage:
    """One page of the search API's answer (`total_count`, `incomplete_results`, `items`)."""
    if not isinstance(data, dict) or not isinstance(data.get("items"), list):
        raise unreadable(url, "it is not a search result (no list of 'items')")
    total = data.get("total_count")
    if not _is_count(total):
        raise unreadable(url, f"'total_count' is not a count ({_shown(total)})")
    issues = []
    for index, item in enumerate(data["items"]):
        if not isinstance(item, dict):
            raise unreadable(url, f"items[{index}] is not an issue ({_shown(item)})")
        number, title = item.get("number"), item.get("title")
        if not _is_count(number) or not 0 < number <= MAX_ISSUE:
            raise unreadable(url, f"items[{index}].number is not an issue number "
                                  f"({_shown(number)})")
        if not isinstance(title, str):
            raise unreadable(url, f"items[{index}].title is not text ({_shown(title)})")
        if "pull_request" in item or item.get("state", "open") != "open":
            continue
        issues.append(Issue(number, title[:MAX_TITLE]))
    return SearchPage(tuple(issues), len(data["items"]), total,
                      data.get("incomplete_results") is True)


def next_link(headers: Mapping[str, str]) -> str | None:
    """The `link` header's next page, if it names one."""
    match = _NEXT_RE.search(headers.get("Link", "")[:8192])
    return match.group(1) if match else None


def _is_count(value: Any) -> TypeGuard[int]:
    return type(value) is int and 0 <= value < 2**53


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "…"


def rate_limit(status: int, headers: Mapping[str, str], body: str, doing: str,
               now: float) -> GitHubUnavailable | None:
    """Our words for a spent rate limit (primary or secondary), with when to run again; None
    for a refusal that is no rate limit (a 403 for a missing permission)."""
    if status not in (403, 429):
        return None
    remaining = headers.get("X-RateLimit-Remaining", "").strip()
    retry_after = headers.get("Retry-After")
    secondary = bool(re.search(r"secondary rate limit|abuse detection", body, re.IGNORECASE))
    primary = remaining == "0" and not secondary
    if not (status == 429 or primary or secondary or retry_after is not None):
        return None
    which = "primary" if primary else "secondary"
    wait = _seconds(retry_after, now, http_date=True) if retry_after is not None else None
    if wait is None and primary:
        wait = _seconds(headers.get("X-RateLimit-Reset"), now, epoch=True)
    spent = f"GitHub's {which} rate limit is spent (HTTP {status}) for the token used to {doing}"
    if wait is None:
        said = (retry_after is not None) or (primary and "X-RateLimit-Reset" in headers)
        hint = ("GitHub did not say when in a form this version reads" if said else
                "GitHub asks to wait at least a minute" if not primary else
                "GitHub did not say when")
        later = "in an hour" if primary else "in a few minutes"
        return GitHubUnavailable(f"{spent}; {hint}: run the same command again {later}")
    if wait <= 0:
        return GitHubUnavailable(f"{spent}; it has reset already: run the same command "
                                 "again now")
    at = datetime.fromtimestamp(now + wait, UTC).strftime("%H:%M UTC")
    return GitHubUnavailable(f"{spent}; run the same command again after {at} "
                             f"(in {_duration(wait)})")


def _seconds(value: str | None, now: float, *, epoch: bool = False,
             http_date: bool = False) -> float | None:
    """Seconds from `now` that a header names (a delay, a Unix time or an HTTP date), or None
    where it names none GitHub could mean (not a number, a time more than a day away)."""
    text = (value or "").strip()
    wait: float | None = None
    if text.isascii() and text.isdigit() and len(text) <= 12:
        wait = int(text) - now if epoch else float(int(text))
    elif http_date and text:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        wait = when.timestamp() - now
    if wait is None or not math.isfinite(wait) or wait > MAX_WAIT_S:
        return None
    return max(wait, 0.0)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{math.ceil(seconds)} s"
    minutes = math.ceil(seconds / 60)
    return f"{minutes} min" if minutes < 120 else f"{minutes / 60:.1f} h"
