"""The digest's repository on GitHub, for the readers' marks: its issues, through the REST API.

Only what `digest feedback pull` needs: the repository's open issues (every page, following
the `Link` header as GitHub paginates), a comment on one, and closing it. The API is
at `GITHUB_API_URL` (Actions sets it; default https://api.github.com), the token is
`GITHUB_TOKEN`'s, sent in a header and never shown. A refusal is one sentence in our words that
names the repository and what the token needs; GitHub's own text goes to the log only.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import requests

from .errors import DigestError
from .urls import redact_text, redact_url, register_secret

log = logging.getLogger(__name__)

DEFAULT_API = "https://api.github.com"
PER_PAGE = 100
MAX_PAGES = 50  # 5,000 open feedback issues at most in one pull
_NEXT_RE = re.compile(r'<([^>]+)>;\s*rel="next"')
_REPO_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+")


class GitHubError(DigestError):
    """GitHub refused: the token, its permissions or the repository; the message says what
    to change."""

    exit_code = 2


class GitHubUnavailable(GitHubError):
    """GitHub could not answer now (unreachable, its rate limit, a server error): run again."""

    exit_code = 1


@dataclass(frozen=True)
class Issue:
    number: int
    title: str
    body: str


def valid_repo(repo: str) -> bool:
    return bool(_REPO_RE.fullmatch(repo)) and ".." not in repo


class GitHubIssues:
    """One repository's issues, read and closed with one token."""

    def __init__(self, session: requests.Session, api_url: str, repo: str, token: str,
                 timeout_s: float = 30.0) -> None:
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
        self._timeout = timeout_s
        self._headers = {"Accept": "application/vnd.github+json",
                         "X-GitHub-Api-Version": "2022-11-28",
                         "User-Agent": "research-digest"}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"

    def open_issues(self, label: str = "") -> list[Issue]:
        """Every open issue (with `label`, if given; pull requests left out), oldest first,
        each once. Pages are followed by the `Link` header, only on the API's own host (the
        token goes with each request), and never to a page already read."""
        url: str | None = f"{self._api}/repos/{self._repo}/issues"
        params: dict[str, Any] | None = {"state": "open", "per_page": PER_PAGE,
                                         "sort": "created", "direction": "asc"}
        if label:
            assert params is not None
            params["labels"] = label
        issues: dict[int, Issue] = {}
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            if url is None:
                break
            seen.add(url)
            response = self._call("GET", url, "read the issues of", params=params)
            try:
                items = response.json()
                for item in items if isinstance(items, list) else []:
                    if isinstance(item, dict) and "pull_request" not in item:
                        number = int(item["number"])
                        issues.setdefault(number, Issue(number, str(item.get("title") or ""),
                                                        str(item.get("body") or "")))
            except (ValueError, KeyError, TypeError) as err:
                raise GitHubUnavailable(f"GitHub's answer listing the issues of {self._repo} "
                                        f"is not the API's JSON ({type(err).__name__})") from err
            match = _NEXT_RE.search(response.headers.get("Link", ""))
            url, params = (match.group(1) if match else None), None  # the next link has them
            if url is not None and (urlsplit(url)[:2] != self._origin or url in seen):
                log.warning("not following the issues' next page at %s: not the API's own "
                            "host, or a page already read", redact_url(url))
                url = None
        else:
            if url is not None:
                log.warning("stopped after %d pages of issues of %s; the rest are read by the "
                            "next pull", MAX_PAGES, self._repo)
        return sorted(issues.values(), key=lambda i: i.number)

    def close(self, number: int, comment: str) -> None:
        """Comment on issue `number`, then close it (read: the next pull skips it)."""
        base = f"{self._api}/repos/{self._repo}/issues/{number}"
        self._call("POST", f"{base}/comments", "comment on the issues of", json={"body": comment})
        self._call("PATCH", base, "close the issues of",
                   json={"state": "closed", "state_reason": "completed"})

    def _call(self, method: str, url: str, doing: str, **kwargs: Any) -> requests.Response:
        try:
            response = self._session.request(method, url, headers=self._headers,
                                             timeout=self._timeout, **kwargs)
        except requests.RequestException as err:
            raise GitHubUnavailable(f"could not reach GitHub's API at {redact_url(self._api)} to "
                              f"{doing} {self._repo}: {type(err).__name__}; check "
                              "GITHUB_API_URL and the network") from err
        if response.status_code < 400:
            return response
        log.info("GitHub answered HTTP %d to %s %s: %s", response.status_code, method,
                 redact_url(url), redact_text(response.text[:300]))
        raise self._refusal(response, doing)

    def _refusal(self, response: requests.Response, doing: str) -> GitHubError:
        status, repo = response.status_code, self._repo
        if status in (403, 429) and (response.headers.get("X-RateLimit-Remaining") == "0"
                                     or status == 429 or "Retry-After" in response.headers):
            reset = response.headers.get("X-RateLimit-Reset", "")
            when = (datetime.fromtimestamp(int(reset), UTC).strftime("%H:%M UTC")
                    if reset.isdigit() else "later")
            return GitHubUnavailable(
                f"GitHub's rate limit is spent (HTTP {status}) for the token used to {doing} "
                f"{repo}; it resets at {when}: run the same command again then")
        if status >= 500:
            return GitHubUnavailable(f"GitHub answered HTTP {status} when asked to {doing} "
                                     f"{repo}; run the same command again later")
        return GitHubError(self._words(status, doing))

    def _words(self, status: int, doing: str) -> str:
        repo = self._repo
        if status == 401:
            return (f"GitHub refused the token (HTTP 401) to {doing} {repo}: GITHUB_TOKEN is "
                    "missing, expired or revoked")
        if status == 403:
            return (f"the token may not {doing} {repo} (HTTP 403): it needs the 'issues: write' "
                    "permission (in a workflow: `permissions: issues: write`; a personal token: "
                    "Issues read and write on this repository)")
        if status == 404:
            return (f"GitHub has no repository {repo} that this token can see (HTTP 404): check "
                    "[feedback] github_repo, and that the token has access to it")
        return f"GitHub answered HTTP {status} when asked to {doing} {repo}"
