"""Sharing a server's width with others on it (share.FleetShare): the run takes what their
requests in flight leave, as the server reports its load, and waits while they hold it all."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import cli
from generator.synthesis.share import FleetShare
from tests.conftest import write_config
from tests.servers.arxiv import ArxivServer
from tests.servers.sglang import SglangServer


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def tick(self, value: int) -> int:
        """`value`, one second later (a load read that takes a second of this clock)."""
        self.now += 1.0
        return value


def test_the_run_takes_what_the_others_leave() -> None:
    reported = [5]
    clock = Clock()
    share = FleetShare(8, lambda: reported[0], refresh_s=1.0, confirm_s=0.0, clock=clock)
    assert share.cap(8) == 3  # five of the others' in flight
    assert share.cap(2) == 2  # never more than the run wants
    for _ in range(3):
        share.admit()
    reported[0] = 8  # ours are counted in the load too: the others still hold five
    clock.now = 1.0
    assert share.cap(8) == 3
    reported[0] = 11  # the others took three more
    clock.now = 2.0
    assert share.cap(8) == 1  # the senders: one, to wait for room
    reported[0] = 3  # the others are done; ours remain
    clock.now = 3.0
    assert share.cap(8) == 8


def test_a_request_that_finds_no_room_waits_for_the_others_to_end() -> None:
    """Admitted on a fresh reading each time; with ours in flight and the rest taken by others,
    the next one waits (reading again) until the others' requests end."""
    # The first request's two readings; ours, one; then the others' 8, until 4 of them end.
    readings = [0, 0, 1, 9, 9, 5, 5, 20]
    seen: list[int] = []

    def load() -> int:
        seen.append(readings[min(len(seen), len(readings) - 1)])
        return seen[-1]

    share = FleetShare(8, load, poll_s=0.0, confirm_s=0.0, clock=Clock())
    share.admit()  # the run's first: room, read again before it is taken
    share.admit()  # one of ours in flight, none of others': room for 7 more
    share.ended()
    share.admit()  # 9 in flight, 1 ours: the others hold 8; it waits until 4 of them end
    assert seen == [0, 0, 1, 9, 9, 5, 5]  # the room it found after waiting, read twice
    assert share.cap(8) == 4  # the reading just taken: the others hold 4
    share.ended()
    share.ended()
    clock = Clock()
    starving = FleetShare(8, lambda: clock.tick(8), poll_s=0.0, confirm_s=0.0, starve_s=3.0,
                          clock=clock)
    starving.admit()  # the others hold all 8 and never let go: it waits, but not for ever
    assert clock.now == 3.0


def test_the_load_is_read_again_only_after_refresh_and_a_silent_server_once() -> None:
    reads: list[int] = []

    def load() -> int:
        reads.append(0)
        return 0

    clock = Clock()
    share = FleetShare(4, load, refresh_s=1.0, clock=clock)
    assert [share.cap(4) for _ in range(3)] == [4, 4, 4]
    clock.now = 1.0
    share.cap(4)
    assert len(reads) == 2
    silent: list[None] = []

    def no_load() -> None:
        silent.append(None)

    quiet = FleetShare(4, no_load, confirm_s=0.0, clock=clock)
    quiet.admit()
    clock.now = 5.0
    quiet.admit()
    assert [quiet.cap(4), len(silent)] == [4, 1]  # it reports no load: asked once


def test_a_build_takes_only_the_width_others_leave(
        tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer,
        caplog: pytest.LogCaptureFixture) -> None:
    """An SGLang server of 8 slots whose /v1/loads says 6 requests of others are in flight:
    the edition goes 2 at a time, and every prompt is answered."""
    sglang_server.state.max_running_requests = 8
    sglang_server.state.others_in_flight = 6
    config = write_config(tmp_path / "ws", arxiv_server, sglang_server, max_papers=3,
                          full_text_papers=1)
    runner = CliRunner()
    fetched = runner.invoke(cli, ["fetch", "--config", str(config), "--edition", "2026-12-02"],
                            catch_exceptions=False)
    assert fetched.exit_code == 0, fetched.output
    batch = logging.getLogger("generator.synthesis.batch")
    caplog.set_level(logging.INFO, logger=batch.name)
    batch.addHandler(caplog.handler)
    try:
        result = runner.invoke(cli, ["synthesize", "--config", str(config), "--edition",
                                     "2026-12-02"], catch_exceptions=False)
    finally:
        batch.removeHandler(caplog.handler)
    assert result.exit_code == 0, result.output
    assert "sending 6 prompt(s), up to 2 at a time" in caplog.text
    assert "6 of 6 prompt(s) answered" in result.output
