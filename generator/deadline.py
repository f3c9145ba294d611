"""Deadlines for whole network exchanges, kept by shutting the socket down when one passes.

A client's timeout bounds each read of the socket, not the answer: a server that trickles a
byte (or a token, or a `: keep-alive` comment) every second keeps every read short and the
exchange open for hours. So every exchange the digest makes over the network has a deadline
for the whole of it, kept one way: a `Watchdog` (one daemon thread per client, started on
demand) holds a `Watch` per exchange and, when the exchange passes its deadline (or, for a
streamed answer, goes `stall_s` without a token once tokens have begun), shuts the watched
sockets down, which wakes the blocked read at once. The caller sees the read fail and
`Watch.fired` says why.

The socket is found either from the response itself (an httpx stream: the LLM's answers) or,
for `requests`, by the connection classes `DeadlineAdapter` gives its pools: each hands its
socket to the watch running in its thread before it waits for the answer (a kept-alive
connection included, whose `connect` is not called again): GitHub's API, arXiv's PDFs.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

DEADLINE, STALLED = "deadline", "stalled"

_current = threading.local()


class Watch:
    """One exchange under watch: `token()` at each token of a stream, `fired` once it was cut
    (and why), `release()` when it ends."""

    def __init__(self, dog: Watchdog, deadline: float, stall_s: float | None) -> None:
        self._dog = dog
        self.deadline, self.stall_s = deadline, stall_s
        self.last_token: float | None = None
        self.fired = ""  # DEADLINE or STALLED once the exchange was cut
        self.released = False  # let go: its sockets may serve another exchange now
        self._sockets: list[socket.socket] = []

    def attach(self, sock: Any) -> None:
        """Watch `sock` too (shut down at once if the exchange was cut already)."""
        if not isinstance(sock, socket.socket):
            return
        with self._dog.lock:
            if self.released:
                return
            self._sockets.append(sock)
            if self.fired:
                _shut(sock)

    def token(self) -> None:
        self.last_token = time.monotonic()

    def expired(self) -> bool:
        """Whether the exchange was cut, or its deadline has passed."""
        return bool(self.fired) or time.monotonic() >= self.deadline

    def due(self) -> float:
        if self.last_token is None or self.stall_s is None:
            return self.deadline
        return min(self.deadline, self.last_token + self.stall_s)

    def check(self, now: float) -> None:
        """Cut the exchange if it is overdue (also called by a reader between chunks: an
        exchange whose socket the watchdog cannot reach is still cut at the next chunk)."""
        with self._dog.lock:  # never after `release`: the socket may be another exchange's
            if self.released or self.fired or now < self.due():
                return
            self.fired = DEADLINE if now >= self.deadline else STALLED
            for sock in self._sockets:
                _shut(sock)

    def release(self) -> None:
        """Stop watching, before the connection is closed or goes back to its pool (where it
        may serve another exchange, whose socket must never be shut down)."""
        self._dog.release(self)


class Watchdog:
    """Watches the open exchanges of one client from a single daemon thread, started on demand."""

    def __init__(self) -> None:
        self._watches: set[Watch] = set()
        self.lock = threading.RLock()
        self._cond = threading.Condition(self.lock)
        self._thread: threading.Thread | None = None

    def watch(self, timeout_s: float, *, stall_s: float | None = None,
              started: float | None = None, response: Any = None) -> Watch:
        """Watch an exchange that began at `started` (time.monotonic(); now unless given) for
        `timeout_s` in all, and, once tokens flow, `stall_s` between them; `response`: a
        streamed httpx response, whose socket is watched."""
        begun = time.monotonic() if started is None else started
        watch = Watch(self, begun + timeout_s,
                      None if stall_s is None else max(0.001, min(stall_s, timeout_s)))
        stream = (getattr(response, "extensions", None) or {}).get("network_stream")
        if stream is not None:
            watch.attach(stream.get_extra_info("socket"))
        with self._cond:
            self._watches.add(watch)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="digest-watchdog",
                                                daemon=True)
                self._thread.start()
            self._cond.notify()
        return watch

    @contextmanager
    def exchange(self, timeout_s: float) -> Iterator[Watch]:
        """Watch the `requests` this thread makes (through a `DeadlineAdapter`) until the
        block ends, `timeout_s` in all."""
        watch = self.watch(timeout_s)
        before = getattr(_current, "watch", None)
        _current.watch = watch
        try:
            yield watch
        finally:
            watch.release()
            _current.watch = before

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


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # already closed: the read has ended anyway
        pass


def _hand_over(conn: HTTPConnection) -> None:
    watch = getattr(_current, "watch", None)
    if watch is not None:
        watch.attach(conn.sock)


class _Connection(HTTPConnection):
    def getresponse(self) -> Any:
        _hand_over(self)
        return super().getresponse()


class _TLSConnection(HTTPSConnection):
    def getresponse(self) -> Any:
        _hand_over(self)
        return super().getresponse()


class _Pool(HTTPConnectionPool):
    ConnectionCls = _Connection


class _TLSPool(HTTPSConnectionPool):
    ConnectionCls = _TLSConnection


class DeadlineAdapter(HTTPAdapter):
    """An adapter whose connections a running `Watchdog.exchange` can cut (mount it on the
    session)."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _Pool, "https": _TLSPool}
