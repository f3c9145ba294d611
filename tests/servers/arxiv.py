"""An arXiv-shaped HTTP server for tests: recorded Atom feeds and real PDFs, on 127.0.0.1.

Feeds are served as recorded, except that PDF links are pointed at this server and the entries
are sliced to the request's start/max_results, as arXiv does.
"""

from __future__ import annotations

import re
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

_ENTRY_RE = re.compile(rb"<entry>.*?</entry>\s*", re.DOTALL)
_PDF_LINK_RE = re.compile(rb"https?://arxiv\.org/pdf/")
_TOTAL_RE = re.compile(rb"<opensearch:totalResults[^>]*>\d+<")
# The PDFs served for an id no test chose, by a sum over the id's bytes: named, so that which
# paper gets which layout does not change with what else is in tests/fixtures/pdfs/.
ROTATION = ("arxiv-1111.2011v2_revtex-2col.pdf", "arxiv-1704.01689v1_gr-qc_math-heavy.pdf",
            "arxiv-1708.05894v1_jmlr-1col.pdf", "arxiv-2004.04906v3_emnlp-2col.pdf",
            "arxiv-2202.00535v1_aaai-dvips-2col.pdf")


@dataclass
class PdfResponse:
    status: int = 200
    body: bytes = b""
    content_type: str = "application/pdf"
    trickle_s: float = 0.0  # send the body one byte at a time, this many seconds apart


@dataclass
class ArxivState:
    fixtures: Path
    feeds: dict[str, str] = field(default_factory=dict)  # search_query -> feed file name
    default_feed: str = "arxivpy2026_search_testing_start0_max10.xml"
    feed_override: bytes | None = None  # served instead of any file (hostile or odd feeds)
    # Answers id_list lookups: the entries of this feed whose id (without version) was asked
    # for, as arXiv answers one (the latest version of each).
    id_feed: bytes | None = None
    # A window of several recorded pages: their entries as one result list (each id once), its
    # totalResults their count, as arXiv answers a query for a date range.
    window: list[str] = field(default_factory=list)
    fail_from: int | None = None  # pages that start at or after this entry answer HTTP 503
    feed_status: int = 200
    # Served, in order, before any feed: an HTTP status, "reset" (the connection is dropped)
    # or "stall" (no answer for `stall_s`).
    feed_faults: list[int | str] = field(default_factory=list)
    stall_s: float = 5.0
    pdfs: dict[str, str | PdfResponse] = field(default_factory=dict)  # arXiv id -> file or fault
    requests: list[tuple[float, str]] = field(default_factory=list)  # (wall-clock time, path)
    user_agents: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def api_requests(self) -> list[str]:
        return [p for _, p in self.requests if p.startswith("/api/")]

    def pdf_requests(self) -> list[str]:
        return [p for _, p in self.requests if p.startswith("/pdf/")]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: object) -> None:  # keep test output quiet
        pass

    def do_GET(self) -> None:
        state = self.server.state
        with state.lock:
            state.requests.append((time.time(), self.path))
            state.user_agents.append(self.headers.get("User-Agent", ""))
        url = urlparse(self.path)
        if url.path == "/api/query":
            self._feed(parse_qs(url.query))
        elif url.path.startswith("/pdf/"):
            self._pdf(unquote(url.path[len("/pdf/"):]))
        else:
            self._send(404, b"not found", "text/plain")

    def _feed(self, params: dict[str, list[str]]) -> None:
        state = self.server.state
        with state.lock:
            fault = state.feed_faults.pop(0) if state.feed_faults else None
        if fault == "reset":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if fault == "stall":
            time.sleep(state.stall_s)
        elif isinstance(fault, int):
            self._send(fault, b"<html><body>Service Unavailable</body></html>", "text/html")
            return
        start = int(params.get("start", ["0"])[0])
        if state.fail_from is not None and start >= state.fail_from:
            self._send(503, b"<html><body>Service Unavailable</body></html>", "text/html")
            return
        query = params.get("search_query", [""])[0]
        ids = [i for i in params.get("id_list", [""])[0].split(",") if i]
        if ids and state.id_feed is not None:
            self._send(200, _by_id(state.id_feed, ids), "application/atom+xml; charset=utf-8")
            return
        name = state.feeds.get(query, state.default_feed)
        body = state.feed_override or (self._window() if state.window else
                                       (state.fixtures / "arxiv_api" / name).read_bytes())
        base = f"http://127.0.0.1:{self.server.server_address[1]}/pdf/".encode()
        body = _PDF_LINK_RE.sub(base, body)
        count = int(params.get("max_results", ["10"])[0])
        entries = _ENTRY_RE.findall(body)
        if entries:
            first = body.index(entries[0])
            tail = body[body.rindex(entries[-1]) + len(entries[-1]):]
            body = body[:first] + b"".join(entries[start:start + count]) + tail
        self._send(state.feed_status, body, "application/atom+xml; charset=utf-8")

    def _window(self) -> bytes:
        state = self.server.state
        pages = [(state.fixtures / "arxiv_api" / name).read_bytes() for name in state.window]
        entries: dict[bytes, bytes] = {}
        for page in pages:
            for entry in _ENTRY_RE.findall(page):
                key = re.search(rb"<id>([^<]*)</id>", entry)
                entries.setdefault(key.group(1) if key else entry, entry)
        body = _TOTAL_RE.sub(b"<opensearch:totalResults>%d<" % len(entries), pages[0])
        first = _ENTRY_RE.search(body)
        assert first is not None
        tail = body[body.rindex(b"</entry>") + len(b"</entry>"):]
        return body[:first.start()] + b"".join(entries.values()) + tail

    def _pdf(self, arxiv_id: str) -> None:
        state = self.server.state
        choice = state.pdfs.get(arxiv_id)
        if isinstance(choice, PdfResponse) and choice.trickle_s:
            self._trickle(choice)
            return
        if isinstance(choice, PdfResponse):
            self._send(choice.status, choice.body, choice.content_type)
            return
        if choice is None:
            path = state.fixtures / "pdfs" / ROTATION[sum(arxiv_id.encode()) % len(ROTATION)]
        else:
            path = state.fixtures / "pdfs" / choice
        self._send(200, path.read_bytes(), "application/pdf")

    def _trickle(self, choice: PdfResponse) -> None:
        self.send_response(choice.status)
        self.send_header("Content-Type", choice.content_type)
        self.send_header("Content-Length", str(len(choice.body)))
        self.end_headers()
        try:
            for index in range(min(len(choice.body), 60)):  # bounded: stops by itself
                self.wfile.write(choice.body[index:index + 1])
                self.wfile.flush()
                time.sleep(choice.trickle_s)
        except OSError:
            pass  # the client gave up, as it should

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _by_id(feed: bytes, ids: list[str]) -> bytes:
    """The feed with only the entries whose id, without its version, was asked for."""
    wanted = {re.sub(r"v\d+$", "", i) for i in ids}
    entries = _ENTRY_RE.findall(feed)
    kept = [e for e in entries if (m := re.search(rb"<id>[^<]*/abs/([^<]+?)(?:v\d+)?</id>", e))
            and m.group(1).decode() in wanted]
    first = feed.index(entries[0]) if entries else feed.rindex(b"</feed>")
    tail = feed[feed.rindex(entries[-1]) + len(entries[-1]):] if entries else b"</feed>\n"
    head = _TOTAL_RE.sub(b"<opensearch:totalResults>%d<" % len(kept), feed[:first])
    return head + b"".join(kept) + tail


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: ArxivState


class ArxivServer:
    """Start with `start()`; `api_url` goes into [arxiv] api_url."""

    def __init__(self, fixtures: Path) -> None:
        self.state = ArxivState(fixtures=fixtures)
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.state = self.state
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/query"

    def start(self) -> ArxivServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
