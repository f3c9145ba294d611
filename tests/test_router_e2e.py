"""The real routers (the optional `router` extra): today's Shepherd Model Gateway (`smg` 1.x) and
the older sglang-router 0.3.x, each in front of two test workers: doctor names the router and
each worker with its limits, the digest plans with the fleet's width and never has more in
flight, no request thinks unless the digest asked, `--wait-for-server` waits for a worker that
starts late, and two digests on one router together stay within the fleet's width.

Skipped, with its reason, where a router is not installed; CI installs both (.ci/run), and
there a missing router fails the test instead.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from generator.archive.history import History
from generator.cli import cli
from generator.cli.common import read_config
from generator.pipeline.services import make_services, workspace_cache
from generator.pipeline.synthesize import synthesize_stage
from generator.synthesis.launch import ROUTER_POLICY
from generator.synthesis.router import FLEET_SOURCE
from tests.conftest import write_config
from tests.servers.arxiv import ArxivServer
from tests.servers.router import Router, free_port, missing
from tests.servers.sglang import FleetCount, SglangServer, thinking_of

EDITION = "2026-12-02"
OPTIONS = tuple(part for option in ROUTER_POLICY for part in option.split())
NAMES = {"smg": "The Shepherd Model Gateway (smg), version smg-1.13.0",
         "sglang-router": "sglang-router (SGLang's older router)"}


@pytest.fixture(params=["smg", "sglang-router"])
def kind(request: pytest.FixtureRequest) -> str:
    """Each router; skipped where it is not installed, except in CI (.ci/run installs both),
    where its absence is a failure, never a skip."""
    reason = missing(request.param)
    if reason and os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; CI must run the routers' end-to-end tests")
    if reason:
        pytest.skip(reason)
    return str(request.param)


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def workspace(folder: Path, arxiv_server: ArxivServer, router: Router,
              written: SglangServer) -> Path:
    """A workspace whose LLM server is the router (where write_config put `written`'s URL),
    its edition fetched."""
    config = write_config(folder, arxiv_server, written, max_papers=3, full_text_papers=1)
    config.write_text(config.read_text().replace(written.base_url, router.base_url))
    fetched = run("fetch", "--config", str(config), "--edition", EDITION)
    assert fetched.exit_code == 0, fetched.output
    return config


@pytest.fixture
def fleet() -> FleetCount:
    return FleetCount()


@pytest.fixture
def workers(fleet: FleetCount) -> Iterator[list[SglangServer]]:
    started = [SglangServer().start(), SglangServer().start()]
    for worker, running, context in zip(started, (2, 3), (65536, 131072), strict=True):
        worker.state.max_running_requests = running
        worker.state.max_model_len = context
        worker.state.fleet = fleet  # what is in flight on both together
    yield started
    for worker in started:
        worker.stop()


def roots(workers: list[SglangServer]) -> list[str]:
    return [w.base_url.removesuffix("/v1") for w in workers]


def test_the_fleet_is_read_through_the_real_router(
        tmp_path: Path, arxiv_server: ArxivServer, workers: list[SglangServer], kind: str,
        fleet: FleetCount, caplog: pytest.LogCaptureFixture) -> None:
    router = Router(roots(workers), options=OPTIONS, log=tmp_path / "router.log",
                    kind=kind).start(healthy=2)
    try:
        config = workspace(tmp_path / "ws", arxiv_server, router, workers[0])
        doctor = run("doctor", "--config", str(config))
        assert doctor.exit_code == 0, doctor.output
        for words in (f"router: {NAMES[kind]}, 2 of 2 worker(s) healthy",
                      "2 requests at once, 65,536-token context",
                      "3 requests at once, 131,072-token context",
                      f"concurrency: 5 at once ({FLEET_SOURCE})",
                      f"65,536 tokens (from {FLEET_SOURCE})",
                      "tokenizer: /v1/tokenize (sglang)",  # a worker's: the router has none
                      "prefix cache: the radix cache is on (every worker)",
                      "thinking off: no reasoning comes back with thinking off"):
            assert words in doctor.output, doctor.output
        for worker in workers:
            worker.state.chat_requests.clear()

        # On the batch's own logger: the command sets up the root logger's handlers anew.
        batch = logging.getLogger("generator.synthesis.batch")
        caplog.set_level(logging.INFO, logger=batch.name)
        batch.addHandler(caplog.handler)
        try:
            synthesized = run("synthesize", "--config", str(config), "--edition", EDITION)
        finally:
            batch.removeHandler(caplog.handler)
        assert synthesized.exit_code == 0, synthesized.output
    finally:
        router.stop()
    # Six prompts, the fleet's two and three slots: five at a time, as both workers together.
    assert "sending 6 prompt(s), up to 5 at a time" in caplog.text
    assert fleet.max_in_flight <= 5
    sent = [body for w in workers for body in w.state.chat_requests]
    assert len(sent) >= 6
    # Every request says whether it thinks, and only the thinking page's does (the router
    # passes the switch on; smg would turn thinking on where a request is silent).
    assert all("chat_template_kwargs" in body for body in sent)
    assert sum(thinking_of(body) for body in sent) == 1
    remembered = json.loads((tmp_path / "ws" / ".cache" / "servers.json").read_text())
    (entry,) = remembered.values()
    assert (entry["found"]["concurrency"], entry["found"]["router_workers"],
            entry["found"]["router"]) == (5, 2, kind)


def test_a_router_that_takes_fewer_than_the_fleet_narrows_the_width(
        tmp_path: Path, arxiv_server: ArxivServer, workers: list[SglangServer],
        kind: str) -> None:
    """The router's own cap (--max-concurrent-requests, no queue) is not stated anywhere: its
    429s narrow the width, and every prompt is answered (the test config retries nothing)."""
    capped = (*OPTIONS, "--max-concurrent-requests", "1", "--queue-size", "0")
    router = Router(roots(workers), options=capped, log=tmp_path / "router.log",
                    kind=kind).start(healthy=2)
    try:
        config = workspace(tmp_path / "ws", arxiv_server, router, workers[0])
        result = run("synthesize", "--config", str(config), "--edition", EDITION)
    finally:
        router.stop()
    assert result.exit_code == 0, result.output
    assert "6 of 6 prompt(s) answered" in result.output


def test_wait_for_server_waits_for_a_worker_that_starts_late(
        tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer,
        kind: str) -> None:
    """The router answers /health with 200 before any worker is up: the run waits for its
    /readiness with a healthy worker instead, and then runs."""
    port = free_port()
    router = Router([f"http://127.0.0.1:{port}"], options=OPTIONS, log=tmp_path / "router.log",
                    kind=kind).start(healthy=0)
    late: list[SglangServer] = []  # not even bound to its port until it starts
    timer = threading.Timer(1.5, lambda: late.append(SglangServer(port).start()))
    try:
        config = workspace(tmp_path / "ws", arxiv_server, router, sglang_server)
        timer.start()
        result = run("synthesize", "--config", str(config), "--edition", EDITION,
                     "--wait-for-server", "60")
    finally:
        timer.cancel()
        router.stop()
        for worker in late:
            worker.stop()
    assert result.exit_code == 0, result.output
    assert "no healthy worker behind the router yet" in result.output
    assert [len(w.state.chat_requests) for w in late] == [6]
    assert not sglang_server.state.chat_requests


def test_two_digests_on_one_router_share_its_width(
        tmp_path: Path, arxiv_server: ArxivServer, workers: list[SglangServer], kind: str,
        fleet: FleetCount) -> None:
    """Two editions at once on a fleet of five: each takes what the other leaves (the
    router's count of requests in flight), so together they never exceed five in flight,
    where each alone would take all five. The second starts once the first has four in flight
    (a state, not a time): two runs that start in the same instant can both take a free slot
    (docs/servers.md)."""
    for worker in workers:
        worker.state.delay_s = 0.3  # answers that last, so that the two overlap
    router = Router(roots(workers), options=OPTIONS, log=tmp_path / "router.log",
                    kind=kind).start(healthy=2)
    errors: list[BaseException] = []
    answered: list[int] = []

    def digest(config: Path) -> None:
        try:
            settings = read_config(str(config))
            cache = workspace_cache(settings)
            services = make_services(settings, os.environ, cache)
            result = synthesize_stage(settings, services, EDITION,
                                      history=History.load(settings.docs_dir))
            answered.append(sum(c.ok for c in result.completions))
        except BaseException as err:  # noqa: BLE001 (raised in the test's thread below)
            errors.append(err)

    try:
        configs = [workspace(tmp_path / name, arxiv_server, router, workers[0])
                   for name in ("a", "b")]
        first = threading.Thread(target=digest, args=(configs[0],))
        first.start()
        while fleet.in_flight < 4 and first.is_alive():
            time.sleep(0.01)  # until the first has most of the width in flight
        second = threading.Thread(target=digest, args=(configs[1],))
        second.start()
        first.join(120)
        second.join(120)
    finally:
        router.stop()
    assert not errors, errors
    assert answered == [6, 6]
    assert fleet.max_in_flight <= 5
