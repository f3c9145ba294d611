"""A deadline for a whole HTTP exchange made with `requests`: headers and body together.

`requests`' timeout bounds each read of the socket, not the answer: a server that sends a byte
every two seconds keeps every read short and the answer open for hours (and `http.client`
keeps reading headers line by line the same way). As `synthesis/deadline.py` does for the
LLM's streams, the socket is shut down when the deadline passes, which wakes the blocked read
at once; the caller sees the exchange fail and `Deadline.fired` says why.

The socket is found by the connection classes `DeadlineAdapter` gives its pools: each one
hands its socket to the deadline of the request under way in its thread before it waits for
the answer (a kept-alive connection included, whose `connect` is not called again).
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

_current = threading.local()


class Deadline:
    """One exchange's deadline: `fired` once it passed and the socket was shut down."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds
        self.fired = False
        self._sockets: list[socket.socket] = []
        self._done = False
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(seconds, 0.0), self._fire)
        self._timer.daemon = True

    def expired(self) -> bool:
        return self.fired or time.monotonic() >= self.at

    def attach(self, sock: Any) -> None:
        """Watch `sock` (shut down at once if the deadline already passed)."""
        if not isinstance(sock, socket.socket):
            return
        with self._lock:
            if self._done:
                return
            self._sockets.append(sock)
            late = self.fired
        if late:
            _shut(sock)

    def _fire(self) -> None:
        with self._lock:
            if self._done:  # the exchange ended: its socket may serve another request now
                return
            self.fired = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shut(sock)

    @contextmanager
    def running(self) -> Iterator[Deadline]:
        """Watch the requests this thread makes until the block ends."""
        before = getattr(_current, "deadline", None)
        _current.deadline = self
        self._timer.start()
        try:
            yield self
        finally:
            with self._lock:
                self._done = True
            self._timer.cancel()
            _current.deadline = before


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # already closed: the read has ended anyway
        pass


def _hand_over(conn: HTTPConnection) -> None:
    deadline = getattr(_current, "deadline", None)
    if deadline is not None:
        deadline.attach(conn.sock)


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
    """An adapter whose connections a running `Deadline` can cut (mount it on the session)."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _Pool, "https": _TLSPool}
