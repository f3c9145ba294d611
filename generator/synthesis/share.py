"""Sharing a server's width with whoever else uses it: other digests, a reader's `digest ask`.

A server (or a router's fleet) states how many requests it runs at once; a digest that takes
that whole width while another digest does the same makes the workers queue both. So where the
server reports its load (a router's `/workers` counts the requests it has in flight on each
worker the moment it routes them; SGLang's `/v1/loads` its running and waiting ones), the run
takes only what the others leave: the width less their requests in flight (the load less our
own). Each request is admitted just before it is
sent (`admit`), on a fresh reading: a request that finds no room waits, reading the load again
every `poll_s`, until the others' requests end (at most `starve_s` where none of its own is in
flight: a report that never falls does not stop a run). Between admissions the pool of senders is sized
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
STARVE_S = 120.0  # a run with nothing in flight waits for the others at most this long
CONFIRM_S = 0.05  # room found after a wait is read again this much later, before it is taken


class FleetShare:
    """This run's part of a server's `width` while others use it too (`load`: requests in flight
    on the server, as it reports them, ours included; None where it does not say)."""

    def __init__(self, width: int, load: Callable[[], int | None], *,
                 refresh_s: float = REFRESH_S, poll_s: float = POLL_S,
                 starve_s: float = STARVE_S, confirm_s: float = CONFIRM_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.width = max(1, width)
        self._load, self._refresh, self._poll, self._clock = load, refresh_s, poll_s, clock
        self._starve, self._confirm = starve_s, confirm_s
        self._admitted = 0  # requests of ours admitted so far
        self._own = 0  # our requests in flight
        self._others = 0  # others' requests in flight, at the last reading
        self._read_at: float | None = None
        self.most_others = 0  # the most the others were seen to hold (for the log)
        self._silent = False  # the server reports no load
        self._lock = threading.Lock()

    def admit(self) -> None:
        """Wait until one more of ours fits in what the others leave (on a fresh reading), and
        count it in. The run's first request, and one that had to wait, go only once a second
        reading `confirm_s` later still finds the room: a run that frees a slot and takes it
        again at once is not raced for it by one that was waiting (or just starting). A run
        with none in flight waits too while the others hold the whole width, but at most
        `starve_s`: a load that never falls (a report gone stale) does not stop the run."""
        waited_from = self._clock()
        confirm = self._admitted == 0
        while True:
            self._read(fresh=True)
            with self._lock:
                room = self.width - self._others
                starved = self._own == 0 and self._clock() - waited_from >= self._starve
                if (self._own < room and not confirm) or starved:
                    if starved and self._own >= room:
                        log.warning("the server has reported %d request(s) of others in "
                                    "flight for %.0f s; sending one regardless",
                                    self._others, self._starve)
                    self._own += 1
                    self._admitted += 1
                    return
                fits = self._own < room
            if fits:  # room: looked at again in a moment, before it is taken
                confirm = False
                time.sleep(self._confirm)
            else:
                confirm = True
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
            if self._silent or (not fresh and self._read_at is not None
                                and now - self._read_at < self._refresh):
                return
            self._read_at = now
            own = self._own
        reported = self._load()  # outside the lock: a network read
        if reported is None:
            if self._others == 0 and self.most_others == 0:
                self._silent = True  # it reports no load: not asked again
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
