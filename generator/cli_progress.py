"""Progress for the command line: a live status line on a terminal, plain lines elsewhere.

Part of the CLI layer (library code only logs); the stages call these observers from worker
threads, so every write holds one lock.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

from .models import Completion, FullText, Paper, PromptRequest
from .synthesis import Observer


class Progress(Observer):
    """Reports fetch and synthesis progress to stderr."""

    def __init__(self, stream: TextIO | None = None, live: bool | None = None) -> None:
        self._out = stream or sys.stderr
        self._live = self._out.isatty() if live is None else live
        self._lock = threading.Lock()
        self._running: dict[str, int] = {}
        self._done = 0
        self._started = time.monotonic()
        self._status = ""

    # Fetch.
    def text(self, paper: Paper, text: FullText) -> None:
        detail = "full text" if text.status == "ok" else f"no full text: {text.reason}"
        self._line(f"  fetched {paper.arxiv_id} ({detail})")

    # Synthesis.
    def started(self, request: PromptRequest) -> None:
        with self._lock:
            self._running[request.name] = 0
        self._redraw()

    def progress(self, request: PromptRequest, pieces: int) -> None:
        with self._lock:
            self._running[request.name] = pieces
        self._redraw()

    def done(self, request: PromptRequest, completion: Completion) -> None:
        with self._lock:
            self._running.pop(request.name, None)
            self._done += 1
        if not completion.ok:
            self._line(f"  failed  {request.name}: {completion.error}")
            return
        where = "cached" if completion.from_cache else f"{completion.latency_s:.1f} s"
        if completion.ttft_s is not None and not completion.from_cache:
            where += f", first token {completion.ttft_s:.1f} s"
        note = ", truncated" if completion.truncated else ""
        self._line(f"  done    {request.name} ({completion.usage.completion_tokens:,} tokens, "
                   f"{where}{note})")

    def _line(self, text: str) -> None:
        with self._lock:
            if self._live and self._status:
                self._out.write("\r\033[K")
            self._out.write(text + "\n")
            if self._live and self._status:
                self._out.write(self._status)
            self._out.flush()

    def _redraw(self) -> None:
        if not self._live:
            return
        with self._lock:
            running = ", ".join(f"{name} ({pieces})" for name, pieces in self._running.items())
            elapsed = time.monotonic() - self._started
            self._status = f"  [{elapsed:5.1f} s] {self._done} done; running: {running or '-'}"[:160]
            self._out.write("\r\033[K" + self._status)
            self._out.flush()

    def close(self) -> None:
        with self._lock:
            if self._live and self._status:
                self._out.write("\r\033[K")
                self._out.flush()
            self._status = ""
