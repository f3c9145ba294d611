"""A deadline for a whole streamed completion, and a limit on how long its tokens may stall.

The HTTP client's timeout bounds each read, not the answer: a server that trickles a token
every half second, or sends only `: keep-alive` comments after its 200, keeps every read short
and the answer open for ever. One watchdog thread per client watches every open stream; when a
stream passes its deadline, or goes `stall_s` without a token once tokens have begun, it shuts
the stream's socket down, which wakes the blocked read at once. Before the first token only the
deadline applies: a long prompt may wait in the server's queue and prefill for minutes.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

DEADLINE, STALLED = "deadline", "stalled"


class Watch:
    """One stream under watch: `token()` at each token, `fired` once it was cut, and why."""

    def __init__(self, dog: Watchdog, sock: socket.socket | None, deadline: float,
                 stall_s: float) -> None:
        self._dog, self._sock = dog, sock
        self.deadline, self.stall_s = deadline, stall_s
        self.last_token: float | None = None
        self.fired = ""  # DEADLINE or STALLED once the stream was cut
        self.released = False  # let go: its socket may serve another request now

    def token(self) -> None:
        self.last_token = time.monotonic()

    def due(self) -> float:
        if self.last_token is None:
            return self.deadline
        return min(self.deadline, self.last_token + self.stall_s)

    def check(self, now: float) -> None:
        """Cut the stream if it is overdue (also called by the reader between chunks: a
        stream whose socket the watchdog cannot reach is still cut at the next chunk)."""
        with self._dog.lock:  # never after `release`: the socket may be another request's
            if self.released or self.fired or now < self.due():
                return
            self.fired = DEADLINE if now >= self.deadline else STALLED
            if self._sock is not None:
                try:
                    self._sock.shutdown(socket.SHUT_RDWR)
                except OSError:  # already closed: the read has ended anyway
                    pass

    def release(self) -> None:
        """Stop watching, before the stream is closed (its connection may go back to the
        pool and serve another request, whose socket must never be shut down)."""
        self._dog.release(self)


class Watchdog:
    """Watches the open streams of one client from a single daemon thread, started on demand."""

    def __init__(self) -> None:
        self._watches: set[Watch] = set()
        self.lock = threading.RLock()
        self._cond = threading.Condition(self.lock)
        self._thread: threading.Thread | None = None

    def watch(self, response: Any, timeout_s: float, stall_s: float, started: float) -> Watch:
        """Watch a streamed httpx response that went out at `started` (time.monotonic())."""
        stream = (getattr(response, "extensions", None) or {}).get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        watch = Watch(self, sock if isinstance(sock, socket.socket) else None,
                      started + timeout_s, max(0.001, min(stall_s, timeout_s)))
        with self._cond:
            self._watches.add(watch)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="digest-watchdog",
                                                daemon=True)
                self._thread.start()
            self._cond.notify()
        return watch

    def release(self, watch: Watch) -> None:
        with self._cond:
            watch.released = True
            self._watches.discard(watch)

    def _run(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                for watch in list(self._watches):
                    watch.check(now)
                if not self._watches:  # idle: the next watch starts the thread again
                    self._thread = None
                    return
                due = min((w.due() for w in self._watches if not w.fired), default=now + 1.0)
                # At least once a second: a stream's first token can bring its due time
                # forward (from the deadline to the stall limit), and it tells nobody.
                self._cond.wait(min(1.0, max(0.01, due - now + 0.005)))
