"""Sharing a server's width with whoever else uses it: other digests, a reader's `digest ask`.

A server (or a router's fleet) states how many requests it runs at once; a digest that takes
that whole width while another digest does the same makes the workers queue both. So where the
server reports its load (a router's `/workers` counts the requests it has in flight on each
worker the moment it routes them; SGLang's `/v1/loads` its running and waiting ones), the run
takes only what the others leave: the width less their requests in flight (the load less our
own), never under one, so that no run starves. Each request is admitted just before it is
sent (`admit`), on a fresh reading: a request that finds no room waits, reading the load again
every `poll_s`, until the others' requests end. Between admissions the pool of senders is sized
on readings at most `refresh_s` old (`cap`). Our own count is ours to know, so a reading is kept
as "the others' requests", not as a total. Two runs that read the load in the same instant
can still both take the same free slot: the router counts a request only once it routes it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

REFRESH_S = 0.25  # the load, read again at most this often to size the senders
POLL_S = 0.1  # a request that found no room reads the load again this often


class FleetShare:
    """This run's part of a server's `width` while others use it too (`load`: requests in flight
    on the server, as it reports them, ours included; None where it does not say)."""

    def __init__(self, width: int, load: Callable[[], int | None], *,
                 refresh_s: float = REFRESH_S, poll_s: float = POLL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.width = max(1, width)
        self._load, self._refresh, self._poll, self._clock = load, refresh_s, poll_s, clock
        self._own = 0  # our requests in flight
        self._others = 0  # others' requests in flight, at the last reading
        self._read_at: float | None = None
        self.most_others = 0  # the most the others were seen to hold (for the log)
        self._lock = threading.Lock()

    def admit(self) -> None:
        """Wait until one more of ours fits in what the others leave (on a fresh reading; at
        once where none of ours is in flight), and count it in."""
        while True:
            self._read(fresh=True)
            with self._lock:
                if self._own < max(1, self.width - self._others):
                    self._own += 1
                    return
            time.sleep(self._poll)  # the others' requests end in their time

    def ended(self) -> None:
        with self._lock:
            self._own = max(0, self._own - 1)

    def cap(self, wanted: int) -> int:
        """At most `wanted`, and no more than the width the others leave (at least one)."""
        self._read()
        with self._lock:
            return max(1, min(wanted, self.width - self._others))

    def _read(self, fresh: bool = False) -> None:
        now = self._clock()
        with self._lock:
            if not fresh and self._read_at is not None and now - self._read_at < self._refresh:
                return
            self._read_at = now
            own = self._own
        reported = self._load()  # outside the lock: a network read
        if reported is None:
            return
        with self._lock:
            # Ours that ended while the load was read were still counted in it, or not: the
            # count taken before the read is the one the reading saw at most.
            self._others = max(0, reported - own)
            if self._others > self.most_others:
                self.most_others = self._others
                log.info("the server has %d request(s) of others in flight: this run takes "
                         "at most %d of its %d", self._others, max(1, self.width - self._others),
                         self.width)
