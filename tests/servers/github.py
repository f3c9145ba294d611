"""A GitHub-REST-shaped server on 127.0.0.1 for `digest feedback pull`: a repository's issues,
searched, listed, commented on and closed as the real API does (GitHub's documentation of the
search, issues and pagination endpoints): pages of `per_page` with a `link` header (the issues'
next URL names the repository by id, `/repositories/<id>/issues?...&page=2`; the search's is
`/search/issues?q=...&page=2`), rate-limit headers on every answer, `{"message": ...,
"documentation_url": ...}` bodies for 401 (bad credentials), 403 (a token without the
permission, the primary rate limit spent, a secondary rate limit), 404 (no such repository, or
one the token cannot see) and 422 (a search of a repository the token cannot see); pull
requests are issues with a `pull_request` key.

What a hostile or broken API does is set on `GitHubState`: a canned refusal with odd headers,
a raw search answer, an answer trickled a byte at a time (headers or body), refusals that echo
the token, and a gate that holds the first search until a test lets it go."""

from __future__ import annotations

import base64
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote, urlencode, urlparse

REPO_ID = 1300192
DOCS = "https://docs.github.com/rest"
SECONDARY = ("You have exceeded a secondary rate limit. Please wait a few minutes before you "
             "try again. If you reach out to GitHub Support for help, please include the "
             "request ID 1234:5678.")


@dataclass
class Refusal:
    """An answer given to every request instead of the API's own (a rate limit, say)."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)  # over the usual rate-limit headers
    message: str = "API rate limit exceeded for installation ID 1."


@dataclass
class _Reply:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    trickle: bool = False


@dataclass
class GitHubState:
    repo: str = "reader/digest"
    token: str = "ghs_test-token"
    can_write: bool = True  # a token with issues: write
    remaining: int = 5000  # requests left in the rate-limit window
    secondary: bool = False  # GitHub's secondary limit: a 403 without Retry-After
    refusal: Refusal | None = None
    link_host: str = ""  # names another host in the `link` header's next URL (a hostile API)
    search_body: bytes | None = None  # the search's answer, as raw bytes (odd fields)
    trickle_s: float = 0.0  # searches answered a byte at a time, this far apart
    trickle_headers: bool = False  # ... their headers too, not only the body
    echo_at: int = 0  # refusals echo the Authorization header from this character on
    hold: threading.Event | None = None  # the first search waits for it ...
    held: threading.Event = field(default_factory=threading.Event)  # ... having set this
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

    def new_repository(self, repo: str) -> None:
        """Another repository, whose issues start again at #1."""
        self.repo, self.issues = repo, []


def _json(status: int, payload: Any, headers: dict[str, str] | None = None) -> _Reply:
    return _Reply(status, json.dumps(payload).encode(), headers or {})


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"  # kept alive, as GitHub's are

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
        searching = urlparse(self.path).path.rstrip("/") == "/search/issues"
        if searching and state.hold is not None:
            gate, state.hold = state.hold, None
            state.held.set()
            gate.wait(30)
        with state.lock:
            reply = self._answer(method, body)
        reply.trickle = searching and state.trickle_s > 0 and reply.status == 200
        self._send(reply)

    def _answer(self, method: str, body: Any) -> _Reply:
        state = self.server.state
        auth = self.headers.get("Authorization", "")
        state.requests.append((method, self.path))
        state.authorizations.append(auth)
        if state.refusal is not None:
            return self._refuse(state.refusal.status, state.refusal.message,
                                state.refusal.headers)
        if state.remaining <= 0:
            return self._refuse(403, "API rate limit exceeded for installation ID 1.",
                                {"X-RateLimit-Remaining": "0"})
        if state.secondary:
            return self._refuse(403, SECONDARY)
        state.remaining -= 1
        if auth != f"Bearer {state.token}":
            return self._refuse(401, "Bad credentials")
        url = urlparse(self.path)
        parts = url.path.strip("/").split("/")
        if parts == ["search", "issues"] and method == "GET":
            return self._search(parse_qs(url.query))
        repo = "/".join(parts[1:3]) if parts[0] == "repos" else (
            state.repo if parts[:2] == ["repositories", str(REPO_ID)] else "")
        rest = parts[3:] if parts[0] == "repos" else parts[2:]
        if repo != state.repo or not rest or rest[0] != "issues":
            return self._refuse(404, "Not Found")
        if method == "GET" and len(rest) == 1:
            return self._list(parse_qs(url.query))
        if method != "GET" and not state.can_write:
            return self._refuse(403, "Resource not accessible by integration")
        if method == "POST" and len(rest) == 3 and rest[2] == "comments":
            return self._comment(int(rest[1]), body)
        if method == "PATCH" and len(rest) == 2:
            return self._update(int(rest[1]), body)
        return self._refuse(404, "Not Found")

    def _refuse(self, status: int, message: str, headers: dict[str, str] | None = None
                ) -> _Reply:
        state = self.server.state
        if state.echo_at:  # a proxy or a debug build quoting the request back
            auth = self.headers.get("Authorization", "")
            value = auth.split(" ", 1)[-1]
            message = (f"{message} ".ljust(state.echo_at - len("Bearer ") - 1, ".")
                       + f" {auth} ({quote(value, safe='')}, "
                       f"{base64.b64encode(value.encode()).decode()})")
        return _json(status, {"message": message, "documentation_url": DOCS}, headers)

    def _page(self, found: list[dict[str, Any]], query: dict[str, list[str]], path: str
              ) -> tuple[list[dict[str, Any]], dict[str, str]]:
        per_page = min(int(query.get("per_page", ["30"])[0]), 100)
        page = int(query.get("page", ["1"])[0])
        shown = found[(page - 1) * per_page: page * per_page]
        if page * per_page >= len(found):
            return shown, {}
        params = {k: v[0] for k, v in query.items()} | {"page": str(page + 1)}
        host = self.server.state.link_host or f"http://127.0.0.1:{self.server.server_address[1]}"
        last = {**params, "page": str(-(-len(found) // per_page))}
        return shown, {"Link": f'<{host}{path}?{urlencode(params)}>; rel="next", '
                               f'<{host}{path}?{urlencode(last)}>; rel="last"'}

    def _search(self, query: dict[str, list[str]]) -> _Reply:
        """`q=repo:o/n is:issue is:open in:title "words"`, `sort=created`, `order`."""
        state = self.server.state
        if state.search_body is not None:
            return _Reply(200, state.search_body)
        q = query.get("q", [""])[0]
        terms = q.split('"')
        words = terms[1].casefold() if len(terms) > 2 else ""
        qualifiers = dict(t.split(":", 1) for t in terms[0].split() if ":" in t)
        if qualifiers.get("repo") != state.repo:
            return self._refuse(422, "Validation Failed")
        found = [i for i in state.issues
                 if (qualifiers.get("is") != "open" or i["state"] == "open")
                 and "pull_request" not in i and words in i["title"].casefold()]
        found.sort(key=lambda i: i["number"], reverse=query.get("order", ["desc"])[0] != "asc")
        shown, headers = self._page(found, query, "/search/issues")
        return _json(200, {"total_count": len(found), "incomplete_results": False,
                           "items": shown}, headers)

    def _list(self, query: dict[str, list[str]]) -> _Reply:
        state = self.server.state
        wanted = query.get("state", ["open"])[0]
        labels = [x for x in query.get("labels", [""])[0].split(",") if x]
        found = [i for i in state.issues if (wanted == "all" or i["state"] == wanted)
                 and all(name in {label["name"] for label in i["labels"]} for name in labels)]
        shown, headers = self._page(found, query, f"/repositories/{REPO_ID}/issues")
        return _json(200, shown, headers)

    def _comment(self, number: int, body: Any) -> _Reply:
        state = self.server.state
        issue = next((i for i in state.issues if i["number"] == number), None)
        if issue is None:
            return self._refuse(404, "Not Found")
        if not isinstance(body, dict) or "body" not in body:
            return self._refuse(422, "Invalid request.")
        state.comments.append((number, str(body["body"])))
        issue["comments"] += 1
        return _json(201, {"id": 9000 + len(state.comments), "body": body["body"]})

    def _update(self, number: int, body: Any) -> _Reply:
        state = self.server.state
        issue = next((i for i in state.issues if i["number"] == number), None)
        if issue is None:
            return self._refuse(404, "Not Found")
        if isinstance(body, dict) and body.get("state") in ("open", "closed"):
            issue["state"] = body["state"]
            issue["state_reason"] = body.get("state_reason")
        return _json(200, issue)

    def _send(self, reply: _Reply) -> None:
        state = self.server.state
        headers = {"Content-Type": "application/json; charset=utf-8",
                   "Content-Length": str(len(reply.body)),
                   "X-RateLimit-Limit": "5000",
                   "X-RateLimit-Remaining": str(max(state.remaining, 0)),
                   "X-RateLimit-Reset": str(int(time.time()) + 3600),
                   "X-GitHub-Api-Version-Selected": "2022-11-28"} | reply.headers
        head = f"HTTP/1.1 {reply.status} {self.responses.get(reply.status, ('',))[0]}\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
        try:
            if reply.trickle and state.trickle_headers:
                self._trickle(head.encode() + reply.body)
            elif reply.trickle:
                self.wfile.write(head.encode())
                self.wfile.flush()
                self._trickle(reply.body)
            else:
                self.wfile.write(head.encode() + reply.body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up: it may
            self.close_connection = True

    def _trickle(self, data: bytes) -> None:
        for index in range(len(data)):
            self.wfile.write(data[index:index + 1])
            self.wfile.flush()
            time.sleep(self.server.state.trickle_s)


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
