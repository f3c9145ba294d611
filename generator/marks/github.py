"""The digest's repository on GitHub, for the readers' marks: its issues, through the REST API.

Only what `digest feedback pull` needs: the open issues whose title carries the marks' tag
(the search API, newest first, so that a repository's other issues never hide them), closing
one, and a comment on it. The API is at `GITHUB_API_URL` (Actions sets it; default
https://api.github.com), the token is `GITHUB_TOKEN`'s, sent in a header and never shown.
Each exchange has a deadline for the whole of it (`generator.deadline`), each answer is bounded and
read defensively (`github_answers`), and a refusal is one sentence in our words that names
the repository and what to change; GitHub's own text goes to the log only, redacted first.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import requests
import urllib3
from requests.structures import CaseInsensitiveDict

from ..deadline import DeadlineAdapter, Watch, Watchdog
from ..text.urls import redact_text, redact_url, register_secret
from .github_answers import (
    MAX_ANSWER_BYTES,
    GitHubAnswerError,
    GitHubError,
    GitHubUnavailable,
    Issue,
    answer_json,
    next_link,
    rate_limit,
    search_page,
    unreadable,
)

__all__ = ["DEFAULT_API", "Found", "GitHubAnswerError", "GitHubError", "GitHubIssues",
           "GitHubUnavailable", "Issue", "valid_repo"]

log = logging.getLogger(__name__)

DEFAULT_API = "https://api.github.com"
PER_PAGE = 100
MAX_PAGES = 10  # the search API gives 1,000 results at most; the rest come with the next pull
LOGGED_CHARS = 300  # of an error body, in the log (after redaction)
_REPO_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+")


@dataclass(frozen=True)
class Found:
    """The open issues a search found, and how many more it matched than were read."""

    issues: tuple[Issue, ...]  # newest first, each once
    left: int = 0  # matches beyond the page cap (read by the next pull, once these are closed)


@dataclass(frozen=True)
class _Answer:
    status: int
    headers: CaseInsensitiveDict[str]
    body: bytes


def valid_repo(repo: str) -> bool:
    return bool(_REPO_RE.fullmatch(repo)) and ".." not in repo


class GitHubIssues:
    """One repository's issues, read and closed with one token.

    `timeout_s` bounds each read of the socket, `deadline_s` a whole exchange (headers and
    body: an API that trickles its answer is cut). The session gets an adapter for the API's
    origin that lets the deadline reach its connections."""

    def __init__(self, session: requests.Session, api_url: str, repo: str, token: str, *,
                 timeout_s: float = 30.0, deadline_s: float = 60.0, per_page: int = PER_PAGE,
                 max_pages: int = MAX_PAGES) -> None:
        if not valid_repo(repo):
            raise GitHubError(f"[feedback] github_repo must be owner/name, not {repo!r}")
        parts = urlsplit(api_url)
        local = parts.hostname in ("127.0.0.1", "localhost", "::1")
        if not parts.hostname or not (parts.scheme == "https" or (parts.scheme == "http"
                                                                  and local)):
            raise GitHubError(f"GITHUB_API_URL must be an https URL (the token goes there), "
                              f"not {redact_url(api_url)!r}")
        if token:
            register_secret(token)  # redacted, in any encoding, from every message and log
        self._session, self._api, self._repo = session, api_url.rstrip("/"), repo
        self._origin = (parts.scheme, parts.netloc)
        session.mount(f"{parts.scheme}://{parts.netloc}", DeadlineAdapter())
        self._timeout, self._deadline = timeout_s, deadline_s
        self._watchdog = Watchdog()  # cuts an exchange that outlasts its deadline
        self._per_page, self._max_pages = per_page, max_pages
        self._headers = {"Accept": "application/vnd.github+json",
                         "X-GitHub-Api-Version": "2022-11-28",
                         "User-Agent": "research-digest"}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"

    @property
    def repo(self) -> str:
        return self._repo

    def open_issues(self, in_title: str) -> Found:
        """The open issues (pull requests left out) whose title has `in_title`, newest first,
        each once, at most `max_pages` pages. Pages are followed by the `link` header, only
        on the API's own host (the token goes with each request), never to one already read."""
        url: str | None = f"{self._api}/search/issues"
        query = f'repo:{self._repo} is:issue is:open in:title "{in_title}"'
        params: dict[str, Any] | None = {"q": query, "sort": "created", "order": "desc",
                                         "per_page": self._per_page}
        issues: dict[int, Issue] = {}
        seen: set[str] = set()
        total = read = 0
        for _ in range(self._max_pages):
            if url is None:
                break
            seen.add(url)
            answer = self._call("GET", url, "search the issues of", params=params,
                                missing=(404, 422))
            page = search_page(answer_json(answer.body, url), url)
            if page.incomplete:
                log.warning("GitHub's search of %s's issues timed out on its side: some marks "
                            "may be read by the next pull only", self._repo)
            for issue in page.issues:
                issues.setdefault(issue.number, issue)
            total, read = max(total, page.total), read + page.items
            url, params = next_link(answer.headers), None  # the next link has the query
            if url is not None and (urlsplit(url)[:2] != self._origin or url in seen):
                log.warning("not following the issues' next page at %s: not the API's own "
                            "host, or a page already read", redact_url(url))
                url = None
        left = max(total - read, 0) if url is not None else 0
        if left:
            log.warning("stopped after %d pages of %s's marks; %d are left for the next pull",
                        self._max_pages, self._repo, left)
        return Found(tuple(sorted(issues.values(), key=lambda i: -i.number)), left)

    def close(self, number: int, comment: str) -> None:
        """Close issue `number`, then thank its reader in a comment. Closed first: a comment
        that fails leaves a closed issue without thanks, never a second thank-you (a closed
        issue is not listed again)."""
        base = f"{self._api}/repos/{self._repo}/issues/{number}"
        self._call("PATCH", base, "close the issues of",
                   json={"state": "closed", "state_reason": "completed"})
        self._call("POST", f"{base}/comments", "comment on the issues of", json={"body": comment})

    def _call(self, method: str, url: str, doing: str, *, missing: tuple[int, ...] = (404,),
              **kwargs: Any) -> _Answer:
        with self._watchdog.exchange(self._deadline) as deadline:
            try:
                response = self._session.request(
                    method, url, headers=self._headers, stream=True, allow_redirects=False,
                    timeout=(min(self._timeout, self._deadline), self._timeout), **kwargs)
                with response:
                    body = self._body(response, url, deadline, doing,
                                      MAX_ANSWER_BYTES if response.status_code < 400
                                      else 64 * 1024)
            except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as err:
                if deadline.expired():
                    raise self._overdue(doing) from err
                raise GitHubUnavailable(f"could not reach GitHub's API at "
                                        f"{redact_url(self._api)} to {doing} {self._repo}: "
                                        f"{type(err).__name__}; check GITHUB_API_URL and the "
                                        "network") from err
        answer = _Answer(response.status_code, response.headers, body)
        if answer.status < 300:
            return answer
        text = body.decode("utf-8", errors="replace")
        # Redacted before it is cut: a token straddling the cut would leave its pieces.
        log.info("GitHub answered HTTP %d to %s %s: %s", answer.status, method,
                 redact_url(url), redact_text(text)[:LOGGED_CHARS])
        raise self._refusal(answer, text, doing, missing)

    def _body(self, response: requests.Response, url: str, deadline: Watch, doing: str,
              most: int) -> bytes:
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_content(64 * 1024):
            size += len(chunk)
            if size > most:
                if response.status_code >= 400:  # an error's body is for the log only
                    break
                raise unreadable(url, f"it is larger than {most // (1024 * 1024)} MB")
            chunks.append(chunk)
            if deadline.expired():
                raise self._overdue(doing)
        return b"".join(chunks)

    def _overdue(self, doing: str) -> GitHubUnavailable:
        return GitHubUnavailable(
            f"GitHub's API at {redact_url(self._api)} did not answer within "
            f"{self._deadline:g} s when asked to {doing} {self._repo}; nothing was written "
            "for this answer: run the same command again later (--timeout sets the limit)")

    def _refusal(self, answer: _Answer, text: str, doing: str,
                 missing: tuple[int, ...]) -> GitHubError:
        status, repo = answer.status, self._repo
        limited = rate_limit(status, answer.headers, text, f"{doing} {repo}", time.time())
        if limited is not None:
            return limited
        if status >= 500:
            return GitHubUnavailable(f"GitHub answered HTTP {status} when asked to {doing} "
                                     f"{repo}; run the same command again later")
        if status == 401:
            return GitHubError(f"GitHub refused the token (HTTP 401) to {doing} {repo}: "
                               "GITHUB_TOKEN is missing, expired or revoked")
        if status == 403:
            return GitHubError(
                f"the token may not {doing} {repo} (HTTP 403): it needs the 'issues: write' "
                "permission (in a workflow: `permissions: issues: write`; a personal token: "
                "Issues read and write on this repository)")
        if status in missing:
            return GitHubError(f"GitHub has no repository {repo} that this token can see "
                               f"(HTTP {status}): check [feedback] github_repo, and that the "
                               "token has access to it")
        if status < 400:
            return GitHubUnavailable(f"GitHub answered HTTP {status} (a redirect, which is not "
                                     f"followed with the token) when asked to {doing} {repo}; "
                                     "check GITHUB_API_URL")
        return GitHubError(f"GitHub answered HTTP {status} when asked to {doing} {repo}")
