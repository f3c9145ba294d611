"""SGLang's router in front of several workers, read as the fleet it is.

The router's answers are its recorded ones (tests/fixtures/servers/sglang-router-0.3.2,
replayed by tests/servers/router_replay.py); the workers are the SGLang-shaped test servers.
tests/test_router_e2e.py runs the real router.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from click.testing import CliRunner

from generator.cli import cli
from generator.pipeline.doctor import check_fleet, fleet_sglang_checks
from generator.ports import Fleet, RouterWorker
from generator.synthesis.capabilities import Capabilities, without_requests
from generator.synthesis.dispatch import concurrency
from generator.synthesis.launch import router_commands
from generator.synthesis.router import (
    FLEET_SOURCE,
    fleet_limits,
    is_router,
    listed_workers,
    reachable_from_here,
)
from generator.synthesis.server import ServerProbe
from tests.conftest import write_config
from tests.servers.arxiv import ArxivServer
from tests.servers.router_replay import RouterReplay, recorded_json
from tests.servers.sglang import SglangServer

MODEL = "deepseek-ai/DeepSeek-V4-Flash"


def worker_info(running: int | None, context: int, **settings: Any) -> dict[str, Any]:
    """A worker's /server_info, as SGLang states it."""
    return {"max_running_requests": running, "context_length": context,
            "enable_cache_report": True, "disable_radix_cache": False, "schedule_policy": "lpm",
            "reasoning_parser": "deepseek-v4", **settings}


def two_workers(**second: Any) -> Fleet:
    return Fleet((RouterWorker("http://127.0.0.1:30001", True, worker_info(3, 65536)),
                  RouterWorker("http://127.0.0.1:30002", True,
                               worker_info(5, 131072, **second))))


def test_the_routers_summary_and_its_workers_are_read_as_recorded() -> None:
    assert is_router(recorded_json("01a_")) and is_router(recorded_json("01c_"))
    assert not is_router(worker_info(3, 65536))
    assert [healthy for _, healthy in listed_workers(recorded_json("02a_"))] == [True, True]
    assert [healthy for _, healthy in listed_workers(recorded_json("02b_"))] == [False, False]
    assert listed_workers(recorded_json("02c_")) == []  # a worker not started is not listed


def test_the_fleet_runs_the_sum_of_its_workers_and_fits_the_smallest_context() -> None:
    info = fleet_limits(two_workers())
    assert info is not None
    assert (info["max_running_requests"], info["context_length"]) == (8, 65536)
    assert concurrency(0, info, 100, 2000, 40000) == 8
    assert concurrency(0, info, 6, 2000, 40000) == 6  # never more than there are prompts
    assert concurrency(2, info, 100, 2000, 40000) == 2  # [llm] max_concurrency wins
    # Each worker holds the bundle in its own cache: its KV budget bounds its own share.
    tight = fleet_limits(two_workers(max_total_num_tokens=40000 + 2 * 2000))
    assert tight is not None and concurrency(0, tight, 100, 2000, 40000) == 3 + 2


@pytest.mark.parametrize("fleet", [
    Fleet(()),  # no worker listed (yet)
    Fleet((RouterWorker("http://127.0.0.1:30001", False),)),  # none healthy
    Fleet((RouterWorker("http://127.0.0.1:30001", True, worker_info(3, 65536)),
           RouterWorker("http://10.0.0.2:30000", True, None))),  # one out of reach
    two_workers(max_running_requests=None),  # one that states no limit
], ids=["none-listed", "none-healthy", "one-out-of-reach", "one-unstated"])
def test_a_fleet_not_fully_read_states_no_limits(fleet: Fleet) -> None:
    """Then the width is found gradually, as for any server that states none: never the
    flood of "as many as there are prompts"."""
    assert fleet_limits(fleet) is None


def test_a_worker_at_a_loopback_address_is_on_the_routers_machine() -> None:
    assert reachable_from_here("http://127.0.0.1:30001", "http://127.0.0.1:30000/v1")
    assert not reachable_from_here("http://127.0.0.1:30001", "https://gpu.example.org/v1")
    assert reachable_from_here("http://10.0.0.2:30000", "https://gpu.example.org/v1")


@pytest.fixture
def workers() -> Iterator[list[SglangServer]]:
    started = [SglangServer().start(), SglangServer().start()]
    for worker, running, context in zip(started, (3, 5), (65536, 131072), strict=True):
        worker.state.max_running_requests = running
        worker.state.max_model_len = context
    yield started
    for worker in started:
        worker.stop()


@pytest.fixture
def router(workers: list[SglangServer]) -> Iterator[RouterReplay]:
    replay = RouterReplay().start()
    replay.state.workers = [(w.base_url.removesuffix("/v1"), True) for w in workers]
    yield replay
    replay.stop()


def test_the_probe_reads_each_worker_behind_the_router(router: RouterReplay,
                                                       workers: list[SglangServer]) -> None:
    probe = ServerProbe(requests.Session(), router.base_url, "key")
    info = probe.server_info()
    assert info is not None and info["max_running_requests"] == 8
    assert probe.context_length(MODEL, info) == (65536, FLEET_SOURCE)
    # The router has no tokenizer (its recorded 400): a worker counts.
    assert probe.tokenize(MODEL, ["Hello, world."]) == [3]
    assert probe.tokenizer == "sglang"
    assert sum(w.state.tokenize_requests for w in workers) == 1
    found = without_requests(probe, MODEL, None, Capabilities(), info)
    assert (found.concurrency, found.concurrency_source, found.router_workers) == (
        8, FLEET_SOURCE, 2)
    assert found.stated and found.server == "SGLang's router (2 workers)"
    assert found.cache_report and found.context_tokens == 65536


def test_workers_out_of_reach_leave_the_width_to_be_found(router: RouterReplay,
                                                          workers: list[SglangServer]) -> None:
    """A worker the router lists but this machine cannot reach: no limits, asked once a run."""
    router.state.workers.append(("http://127.0.0.1:9", True))  # the discard port: refused
    probe = ServerProbe(requests.Session(), router.base_url, "key")
    assert probe.server_info() is None
    known = Capabilities(concurrency=8, concurrency_source=FLEET_SOURCE)
    found = without_requests(probe, MODEL, None, known, None)
    assert (found.limits, found.router_workers, found.concurrency, found.stated) == (
        False, 3, None, False)
    assert "not stated: the workers' /server_info cannot be read from here" in dict(
        found.lines())["limits"]
    assert router.state.requests.count("/workers") == 2


def test_doctor_names_each_worker_and_its_context() -> None:
    checks = {c.name: c for c in check_fleet(_config(), two_workers())}
    assert checks["router"].verdict == "ok" and "2 of 2 worker(s) healthy" in checks["router"].detail
    assert "3 requests at once, 65,536-token context" in checks["worker 1"].detail
    assert "5 requests at once, 131,072-token context" in checks["worker 2"].detail
    sglang = {c.name: c for c in fleet_sglang_checks(_config(), two_workers())}
    assert sglang["prefix cache"].detail == "the radix cache is on (every worker)"
    assert sglang["cache report"].verdict == "ok"


def test_doctor_tells_which_worker_differs_and_which_it_cannot_see() -> None:
    fleet = two_workers(enable_cache_report=False)
    fleet = Fleet((*fleet.workers, RouterWorker("http://10.0.0.9:30000", True, None),
                   RouterWorker("http://10.0.0.8:30000", False)))
    checks = {c.name: c for c in [*check_fleet(_config(), fleet),
                                  *fleet_sglang_checks(_config(), fleet)]}
    assert checks["router"].verdict == "warning" and "3 of 4" in checks["router"].detail
    assert checks["cache report, worker 1"].verdict == "ok"
    assert checks["cache report, worker 2"].verdict == "warning"
    assert "cannot be read from here" in checks["worker 3"].detail
    assert checks["worker 4"].verdict == "warning"
    assert "worker(s) 3 cannot be read from here" in checks["sglang"].detail
    none = {c.name: c for c in check_fleet(_config(), Fleet(
        (RouterWorker("http://127.0.0.1:30001", False),)))}
    assert none["router"].verdict == "problem" and "--wait-for-server" in none["router"].advice


def test_a_router_with_no_healthy_worker_is_waited_for_by_its_readiness(
        tmp_path: Path, arxiv_server: ArxivServer, router: RouterReplay,
        sglang_server: SglangServer) -> None:
    """Its /health says 200 with no healthy worker: --wait-for-server asks /readiness."""
    router.state.workers = [(url, False) for url, _ in router.state.workers]
    config = write_config(tmp_path / "ws", arxiv_server, sglang_server)
    text = config.read_text().replace(sglang_server.base_url, router.base_url)
    config.write_text(text)
    result = CliRunner().invoke(cli, ["build", "--config", str(config), "--wait-for-server",
                                      "0.5"])
    assert result.exit_code == 1
    assert "no healthy worker behind the router yet" in result.output
    assert "was not ready after 0.5 s" in result.output


def test_server_command_prints_the_workers_and_the_router(tmp_path: Path,
                                                          arxiv_server: ArxivServer,
                                                          sglang_server: SglangServer) -> None:
    config = write_config(tmp_path / "ws", arxiv_server, sglang_server)
    result = CliRunner().invoke(cli, ["server-command", "--config", str(config), "--router",
                                      "2"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    *workers, router = result.stdout.strip().splitlines()
    port = int(sglang_server.base_url.rsplit(":", 1)[1].split("/")[0])
    assert [w.split()[0] for w in workers] == ["CUDA_VISIBLE_DEVICES=0", "CUDA_VISIBLE_DEVICES=1"]
    assert all("--context-length" in w and "--host" not in w for w in workers)
    assert f"--port {port} --worker-urls http://127.0.0.1:{port + 1} " \
           f"http://127.0.0.1:{port + 2} --policy cache_aware" in router
    remote = router_commands(MODEL, "https://gpu.example.org:8443/v1", 3)
    assert len(remote) == 4 and '--host 0.0.0.0 --api-key "$SGLANG_API_KEY"' in remote[-1]
    assert all("--host" not in line for line in remote[:3])  # workers: the router's machine


def _config() -> Any:
    from generator.config import load_config
    from generator.prompts.kinds import BUILTIN_KINDS

    return load_config(Path(__file__).resolve().parents[1] / "config.toml", {},
                       registry=BUILTIN_KINDS)
