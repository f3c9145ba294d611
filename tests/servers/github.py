"""A GitHub-REST-shaped server on 127.0.0.1 for `digest feedback pull`: a repository's issues,
listed, labelled, commented on and closed as the real API does (GitHub's documentation of the
issues and pagination endpoints): pages of `per_page` with a `link` header whose next URL names
the repository by id (`/repositories/<id>/issues?...&page=2`), rate-limit headers on every
answer, `{"message": ..., "documentation_url": ...}` bodies for 401 (bad credentials), 403 (a
token without the permission, or the rate limit spent), and 404 (no such repository, or one
the token cannot see); pull requests are listed among issues with a `pull_request` key."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse

REPO_ID = 1300192
DOCS = "https://docs.github.com/rest"


@dataclass
class GitHubState:
    repo: str = "reader/digest"
    token: str = "ghs_test-token"
    can_write: bool = True  # a token with issues: write
    remaining: int = 5000  # requests left in the rate-limit window
    link_host: str = ""  # names another host in the `link` header's next URL (a hostile API)
    issues: list[dict[str, Any]] = field(default_factory=list)
    comments: list[tuple[int, str]] = field(default_factory=list)  # (issue, body)
    requests: list[tuple[str, str]] = field(default_factory=list)  # (method, path?query)
    authorizations: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add_issue(self, title: str, body: str = "", labels: tuple[str, ...] = (),
                  pull_request: bool = False) -> int:
        number = len(self.issues) + 1
        issue: dict[str, Any] = {
            "id": 1000 + number, "number": number, "title": title, "body": body or None,
            "state": "open", "labels": [{"name": name} for name in labels],
            "user": {"login": "a-reader"}, "comments": 0,
            "html_url": f"https://github.com/{self.repo}/issues/{number}"}
        if pull_request:
            issue["pull_request"] = {"url": f"https://api.github.com/repos/{self.repo}/pulls/"
                                            f"{number}"}
        self.issues.append(issue)
        return number


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def _serve(self, method: str) -> None:
        state = self.server.state
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"null") if length else None
        with state.lock:
            state.requests.append((method, self.path))
            state.authorizations.append(self.headers.get("Authorization", ""))
            if state.remaining <= 0:
                self._send(403, {"message": "API rate limit exceeded for installation ID 1.",
                                 "documentation_url": f"{DOCS}/rate-limit"})
                return
            state.remaining -= 1
            if self.headers.get("Authorization") != f"Bearer {state.token}":
                self._send(401, {"message": "Bad credentials", "documentation_url": DOCS})
                return
            url = urlparse(self.path)
            parts = url.path.strip("/").split("/")
            repo = "/".join(parts[1:3]) if parts[0] == "repos" else (
                state.repo if parts[:2] == ["repositories", str(REPO_ID)] else "")
            rest = parts[3:] if parts[0] == "repos" else parts[2:]
            if repo != state.repo or not rest or rest[0] != "issues":
                self._send(404, {"message": "Not Found", "documentation_url": DOCS})
                return
            if method == "GET" and len(rest) == 1:
                self._list(parse_qs(url.query))
            elif method != "GET" and not state.can_write:
                self._send(403, {"message": "Resource not accessible by integration",
                                 "documentation_url": DOCS})
            elif method == "POST" and len(rest) == 3 and rest[2] == "comments":
                self._comment(int(rest[1]), body)
            elif method == "PATCH" and len(rest) == 2:
                self._update(int(rest[1]), body)
            else:
                self._send(404, {"message": "Not Found", "documentation_url": DOCS})

    def _list(self, query: dict[str, list[str]]) -> None:
        state = self.server.state
        wanted = query.get("state", ["open"])[0]
        labels = [x for x in query.get("labels", [""])[0].split(",") if x]
        per_page = min(int(query.get("per_page", ["30"])[0]), 100)
        page = int(query.get("page", ["1"])[0])
        found = [i for i in state.issues if (wanted == "all" or i["state"] == wanted)
                 and all(name in {label["name"] for label in i["labels"]} for name in labels)]
        shown = found[(page - 1) * per_page: page * per_page]
        link = ""
        if page * per_page < len(found):
            params = {k: v[0] for k, v in query.items()} | {"page": str(page + 1)}
            host = state.link_host or f"http://127.0.0.1:{self.server.server_address[1]}"
            last = {**params, "page": str(-(-len(found) // per_page))}
            link = (f'<{host}/repositories/{REPO_ID}/issues?{urlencode(params)}>; rel="next", '
                    f'<{host}/repositories/{REPO_ID}/issues?{urlencode(last)}>; rel="last"')
        self._send(200, shown, link)

    def _comment(self, number: int, body: Any) -> None:
        state = self.server.state
        issue = next((i for i in state.issues if i["number"] == number), None)
        if issue is None or not isinstance(body, dict) or "body" not in body:
            self._send(404 if issue is None else 422, {"message": "Not Found"
                       if issue is None else "Invalid request.", "documentation_url": DOCS})
            return
        state.comments.append((number, str(body["body"])))
        issue["comments"] += 1
        self._send(201, {"id": 9000 + len(state.comments), "body": body["body"]})

    def _update(self, number: int, body: Any) -> None:
        state = self.server.state
        issue = next((i for i in state.issues if i["number"] == number), None)
        if issue is None:
            self._send(404, {"message": "Not Found", "documentation_url": DOCS})
            return
        if isinstance(body, dict) and body.get("state") in ("open", "closed"):
            issue["state"] = body["state"]
            issue["state_reason"] = body.get("state_reason")
        self._send(200, issue)

    def _send(self, status: int, payload: Any, link: str = "") -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-RateLimit-Limit", "5000")
        self.send_header("X-RateLimit-Remaining", str(max(self.server.state.remaining, 0)))
        self.send_header("X-RateLimit-Reset", str(int(time.time()) + 3600))
        self.send_header("X-GitHub-Api-Version-Selected", "2022-11-28")
        if link:
            self.send_header("Link", link)
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: GitHubState


class GitHubServer:
    """The API at `api_url` (what GITHUB_API_URL would say)."""

    def __init__(self) -> None:
        self.state = GitHubState()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.state = self.state
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> GitHubServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
