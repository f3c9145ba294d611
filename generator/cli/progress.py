"""Progress for the command line: a live status line on a terminal, plain lines elsewhere.

Part of the CLI layer (library code only logs); the stages call these observers from worker
threads, so every write holds one lock. Off a terminal (CI logs) it prints one line per stage
and one per failure, nothing per cached prompt or per paper that was already in hand.
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from typing import TextIO

from ..completions import Completion, PromptRequest
from ..papers import FullText, Paper
from ..synthesis.batch import Observer


class Progress(Observer):
    """Reports fetch and synthesis progress to stderr."""

    def __init__(self, stream: TextIO | None = None, live: bool | None = None,
                 width: int | None = None) -> None:
        self._out = stream or sys.stderr
        self._live = self._out.isatty() if live is None else live
        self._width = width
        self._lock = threading.Lock()
        self._running: dict[str, int] = {}
        self._done = 0
        self._cached = 0
        self._total = 0
        self._papers = 0
        self._started = time.monotonic()
        self._stage = ""
        self._status = ""

    # Stages.
    def stage(self, name: str) -> None:
        """A stage begins: one line for it (a terminal also shows it on the status line)."""
        with self._lock:
            self._stage = name
        self._line(f"{name}…")
        self._redraw()

    # Fetch.
    def text(self, paper: Paper, text: FullText, from_cache: bool = False) -> None:
        with self._lock:
            self._papers += 1
        if text.status != "ok":
            self._line(f"  no full text for {paper.arxiv_id}: {text.reason}")
        elif self._live and not from_cache:
            self._line(f"  fetched {paper.arxiv_id}")
        self._redraw()

    # Synthesis.
    def planned(self, total: int, cached: int) -> None:
        with self._lock:
            self._total, self._cached = total, cached
        if cached:
            self._line(f"  {cached} of {total} prompt(s) answered from the cache")
        self._redraw()

    def added(self, count: int) -> None:
        with self._lock:
            self._total += count
        self._redraw()

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
        elif self._live and not completion.from_cache:
            where = f"{completion.latency_s:.1f} s"
            if completion.ttft_s is not None:
                where += f", first token {completion.ttft_s:.1f} s"
            note = ", truncated" if completion.truncated else ""
            tokens = completion.usage.completion_tokens
            spent = f"{tokens:,} completion tokens" if tokens is not None else "tokens not reported"
            self._line(f"  done    {request.name} ({spent}, {where}{note})")
        self._redraw()

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
            elapsed = time.monotonic() - self._started
            parts = [f"[{elapsed:5.1f} s] {self._stage or 'starting'}"]
            if self._total:
                parts.append(f"{self._done}/{self._total} prompts")
                if self._running:
                    running = ", ".join(f"{name} ({pieces} chunks)"
                                        for name, pieces in self._running.items())
                    parts.append(f"streaming: {running}")
            elif self._papers:
                parts.append(f"{self._papers} paper(s) with text in hand")
            # One row, never wider than the terminal: a wrapped line leaves a stale row behind.
            width = self._width or shutil.get_terminal_size((80, 24)).columns
            self._status = "  " + " · ".join(parts)
            self._status = self._status[: max(width - 1, 10)]
            self._out.write("\r\033[K" + self._status)
            self._out.flush()

    def close(self) -> None:
        with self._lock:
            if self._live and self._status:
                self._out.write("\r\033[K")
                self._out.flush()
            self._status = ""
