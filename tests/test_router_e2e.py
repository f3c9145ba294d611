"""The real SGLang router (sglang-router, the optional `router` extra) in front of two test
workers: the digest plans with the fleet's width, doctor names each worker and its context,
and `--wait-for-server` waits for a worker that starts late.

Skipped, with its reason, where sglang-router is not installed; CI installs it (.ci/run), and
there a missing router fails the test instead.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from generator.cli import cli
from generator.synthesis.launch import ROUTER_POLICY
from generator.synthesis.router import FLEET_SOURCE
from tests.conftest import write_config
from tests.servers.arxiv import ArxivServer
from tests.servers.router import Router, free_port, missing
from tests.servers.sglang import SglangServer

EDITION = "2026-12-02"
OPTIONS = tuple(part for option in ROUTER_POLICY for part in option.split())


@pytest.fixture(autouse=True)
def the_real_router() -> None:
    """Skipped where sglang-router is not installed; CI installs it (.ci/run), so there its
    absence is a failure, never a skip."""
    reason = missing()
    if reason and os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; CI must run the router's end-to-end test")
    if reason:
        pytest.skip(reason)


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def workspace(tmp_path: Path, arxiv_server: ArxivServer, router: Router,
              written: SglangServer) -> Path:
    """A workspace whose LLM server is the router (where write_config put `written`'s URL),
    its edition fetched."""
    config = write_config(tmp_path / "ws", arxiv_server, written, max_papers=3,
                          full_text_papers=1)
    config.write_text(config.read_text().replace(written.base_url, router.base_url))
    fetched = run("fetch", "--config", str(config), "--edition", EDITION)
    assert fetched.exit_code == 0, fetched.output
    return config


@pytest.fixture
def workers() -> Iterator[list[SglangServer]]:
    started = [SglangServer().start(), SglangServer().start()]
    for worker, running, context in zip(started, (2, 3), (65536, 131072), strict=True):
        worker.state.max_running_requests = running
        worker.state.max_model_len = context
    yield started
    for worker in started:
        worker.stop()


def test_the_fleet_is_read_through_the_real_router(
        tmp_path: Path, arxiv_server: ArxivServer, workers: list[SglangServer],
        caplog: pytest.LogCaptureFixture) -> None:
    router = Router([w.base_url.removesuffix("/v1") for w in workers], options=OPTIONS,
                    log=tmp_path / "router.log").start(healthy=2)
    try:
        config = workspace(tmp_path, arxiv_server, router, workers[0])
        doctor = run("doctor", "--config", str(config))
        assert doctor.exit_code == 0, doctor.output
        for words in ("router: SGLang's router, 2 of 2 worker(s) healthy",
                      "2 requests at once, 65,536-token context",
                      "3 requests at once, 131,072-token context",
                      f"concurrency: 5 at once ({FLEET_SOURCE})",
                      f"65,536 tokens (from {FLEET_SOURCE})",
                      "tokenizer: /v1/tokenize (sglang)",  # a worker's: the router has none
                      "prefix cache: the radix cache is on (every worker)"):
            assert words in doctor.output, doctor.output

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
    assert sum(len(w.state.chat_requests) for w in workers) >= 6
    remembered = json.loads((tmp_path / "ws" / ".cache" / "servers.json").read_text())
    (entry,) = remembered.values()
    assert (entry["found"]["concurrency"], entry["found"]["router_workers"]) == (5, 2)


def test_a_router_that_takes_fewer_than_the_fleet_narrows_the_width(
        tmp_path: Path, arxiv_server: ArxivServer, workers: list[SglangServer]) -> None:
    """The router's own cap (--max-concurrent-requests, no queue) is not stated anywhere: its
    429s narrow the width, and every prompt is answered (the test config retries nothing)."""
    capped = (*OPTIONS, "--max-concurrent-requests", "1", "--queue-size", "0")
    router = Router([w.base_url.removesuffix("/v1") for w in workers], options=capped,
                    log=tmp_path / "router.log").start(healthy=2)
    try:
        config = workspace(tmp_path, arxiv_server, router, workers[0])
        result = run("synthesize", "--config", str(config), "--edition", EDITION)
    finally:
        router.stop()
    assert result.exit_code == 0, result.output
    assert "6 of 6 prompt(s) answered" in result.output


def test_wait_for_server_waits_for_a_worker_that_starts_late(
        tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer) -> None:
    """The router answers /health with 200 before any worker is up: the run waits for its
    /readiness instead, and then runs."""
    port = free_port()
    router = Router([f"http://127.0.0.1:{port}"], options=OPTIONS,
                    log=tmp_path / "router.log").start(healthy=0)
    late: list[SglangServer] = []  # not even bound to its port until it starts
    timer = threading.Timer(1.5, lambda: late.append(SglangServer(port).start()))
    try:
        config = workspace(tmp_path, arxiv_server, router, sglang_server)
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
