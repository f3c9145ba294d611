"""A router (smg 1.x, or the older sglang-router 0.3.x) in front of several workers, read as the
fleet it is.

The routers' answers are their recorded ones (tests/fixtures/servers/smg-1.13.0 and
sglang-router-0.3.2, replayed by tests/servers/router_replay.py); the workers are the
SGLang-shaped test servers. tests/test_router_e2e.py runs the real routers.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests
from click.testing import CliRunner

from generator.cli import cli
from generator.errors import ServerNotAnsweringError
from generator.pipeline.doctor import check_fleet, fleet_sglang_checks
from generator.ports import Fleet, RouterWorker
from generator.synthesis import llm_client
from generator.synthesis import server as server_module
from generator.synthesis.capabilities import Capabilities, without_requests
from generator.synthesis.dispatch import concurrency
from generator.synthesis.launch import router_commands
from generator.synthesis.router import (
    FLEET_SOURCE,
    SGLANG_ROUTER,
    SMG,
    fleet_limits,
    is_router,
    listed_workers,
    reachable_from_here,
    reported_load,
    router_kind,
    router_version,
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
    listed = listed_workers(recorded_json("02a_"))
    assert listed is not None and [w.healthy for w in listed] == [True, True]
    assert all(w.labels is None for w in listed)  # sglang-router lists no limits
    assert [w.healthy for w in listed_workers(recorded_json("02b_")) or []] == [False, False]
    assert listed_workers(recorded_json("02c_")) == []  # a worker not started is not listed
    assert listed_workers({"object": "error", "code": 404}) is None  # no router


def test_the_two_routers_are_told_apart_by_what_they_answer() -> None:
    old = (recorded_json("01a_"), recorded_json("02a_"), None)
    smg = (recorded_json("01a_", "smg"), recorded_json("02a_", "smg"),
           recorded_json("07a_", "smg"))
    assert router_kind(*old) == SGLANG_ROUTER and router_version(old[2]) == ""
    assert router_kind(*smg) == SMG and router_version(smg[2]) == "smg-1.13.0"
    # smg's /get_server_info is one worker's own settings, not the fleet's: the listing tells.
    assert not is_router(smg[0]) and smg[0]["max_running_requests"] == 5
    assert router_kind(smg[0], smg[1], None) == SMG
    listed = listed_workers(smg[1])
    assert listed is not None
    assert sorted(((w.labels or {}).get("max_running_requests"), (w.labels or {}).get(
        "context_length")) for w in listed) == [(3, 65536), (5, 131072)]  # listed as strings


def test_the_load_is_the_routers_own_count_of_requests_in_flight() -> None:
    """smg's /workers counts a request the moment it routes it; its /get_loads is the engines'
    reports as last polled (0, with three in flight: recorded)."""
    assert reported_load(listing=recorded_json("02d_", "smg")) == 3
    assert reported_load(listing=recorded_json("02a_", "smg")) == 0
    assert reported_load(loads=recorded_json("07c_", "smg")) == 0
    assert reported_load(listing=recorded_json("02a_")) == 0  # sglang-router counts too
    assert reported_load(loads={"workers": [{"worker": "u", "load": -1}]}) is None
    assert reported_load(listing=None, loads=None) is None


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


@pytest.fixture(params=[SMG, SGLANG_ROUTER])
def router(request: pytest.FixtureRequest, workers: list[SglangServer]
           ) -> Iterator[RouterReplay]:
    """Each router as recorded, over the two workers; smg lists each worker's limits as it
    read them (its labels)."""
    replay = RouterReplay(request.param).start()
    replay.state.workers = [(w.base_url.removesuffix("/v1"), True) for w in workers]
    replay.state.labels = {w.base_url.removesuffix("/v1"): {
        "max_running_requests": str(w.state.max_running_requests),
        "context_length": str(w.state.max_model_len)} for w in workers}
    yield replay
    replay.stop()


NAMES = {SMG: "The Shepherd Model Gateway (smg) (2 workers)",
         SGLANG_ROUTER: "sglang-router (SGLang's older router) (2 workers)"}


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
    assert found.stated and found.server == NAMES[router.state.kind]
    assert found.cache_report and found.context_tokens == 65536
    # The canonical endpoints first, the deprecated /get_* names after them.
    asked = router.state.requests
    assert asked.index("/server_info") < asked.index("/get_server_info")


def test_smgs_labels_give_the_limits_of_workers_out_of_reach() -> None:
    """Workers smg lists that do not answer from here: their labels still say their limits,
    so the fleet's width is known (and each worker is asked once a run)."""
    replay = RouterReplay(SMG).start()
    try:
        replay.state.workers = [("http://127.0.0.1:9", True), ("http://127.0.0.1:7", True)]
        replay.state.labels = {url: {"max_running_requests": "4", "context_length": "32768"}
                               for url, _ in replay.state.workers}
        probe = ServerProbe(requests.Session(), replay.base_url, "key")
        info, again = probe.server_info(), probe.server_info()
        fleet = probe.fleet()
    finally:
        replay.stop()
    assert info is not None and info["max_running_requests"] == 8
    assert info == again and info["context_length"] == 32768
    assert fleet is not None and fleet.kind == SMG and fleet.version == "smg-1.13.0"
    assert all(w.info is None and w.labels for w in fleet.workers)
    checks = {c.name: c for c in check_fleet(_config(), fleet)}
    assert checks["router"].detail.startswith(
        "The Shepherd Model Gateway (smg), version smg-1.13.0, 2 of 2 worker(s) healthy")
    assert "4 requests at once, 32,768-token context" in checks["worker 2"].detail


def test_workers_out_of_reach_leave_the_width_to_be_found(router: RouterReplay,
                                                          workers: list[SglangServer]) -> None:
    """A worker the router lists but this machine cannot reach: no limits, asked once a run."""
    router.state.workers.append(("http://127.0.0.1:9", True))  # the discard port: refused
    router.state.labels["http://127.0.0.1:9"] = {"max_running_requests": ""}  # none listed
    probe = ServerProbe(requests.Session(), router.base_url, "key")
    assert probe.server_info() is None
    known = Capabilities(concurrency=8, concurrency_source=FLEET_SOURCE)
    found = without_requests(probe, MODEL, None, known, None)
    assert (found.limits, found.router_workers, found.concurrency, found.stated) == (
        False, 3, None, False)
    assert "not stated: the workers' /server_info cannot be read from here" in dict(
        found.lines())["limits"]
    assert router.state.requests.count("/workers") == 1  # read once for both


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
    assert "worker(s) 3 not read from here" in checks["sglang"].detail
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
    *workers, router, older = result.stdout.strip().splitlines()
    assert router.startswith("smg launch --host 127.0.0.1 ")
    assert older == "# or, with the older sglang-router (pip install sglang-router): " \
        + router.replace("smg launch", "python -m sglang_router.launch_router")
    port = int(sglang_server.base_url.rsplit(":", 1)[1].split("/")[0])
    assert [w.split()[0] for w in workers] == ["CUDA_VISIBLE_DEVICES=0", "CUDA_VISIBLE_DEVICES=1"]
    assert all("--context-length" in w and "--host" not in w for w in workers)
    assert f"--port {port} --worker-urls http://127.0.0.1:{port + 1} " \
           f"http://127.0.0.1:{port + 2} --policy cache_aware" in router
    remote = router_commands(MODEL, "https://gpu.example.org:8443/v1", 3)
    assert len(remote) == 5 and '--host 0.0.0.0 --api-key "$SGLANG_API_KEY"' in remote[-2]
    assert all("--host" not in line for line in remote[:3])  # workers: the router's machine


def _config() -> Any:
    from generator.config import load_config
    from generator.prompts.kinds import BUILTIN_KINDS

    return load_config(Path(__file__).resolve().parents[1] / "config.toml", {},
                       registry=BUILTIN_KINDS)


def test_doctor_counts_a_large_fleet_instead_of_listing_it() -> None:
    """A router listing 2,000 workers: eight named, the rest counted alike, in a few lines."""
    fleet = Fleet(tuple(RouterWorker(f"http://10.0.{n // 250}.{n % 250}:30000", n % 100 != 7,
                                     labels={"max_running_requests": 4,
                                             "context_length": 131072})
                        for n in range(2000)), kind=SMG)
    checks = check_fleet(_config(), fleet)
    assert len(checks) == 1 + 8 + 1
    assert checks[-1].name == "workers 9-2000"
    assert checks[-1].detail == ("1,992 more: 1,973 with 4 requests at once, 131,072-token "
                                 "context; 19 not healthy")
    sglang = fleet_sglang_checks(_config(), fleet)
    assert len(sglang) == 1 and "and 1,972 more" in sglang[0].detail


class _Trickle(BaseHTTPRequestHandler):
    """Answers every GET with a 200 whose body comes one byte every 0.2 s (for a minute at
    most, or until the client goes away)."""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "300")
        self.end_headers()
        for _ in range(300):
            try:
                self.wfile.write(b" ")
                self.wfile.flush()
            except OSError:
                return
            time.sleep(0.2)


@pytest.fixture
def trickle() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_a_trickled_answer_is_cut_at_the_probes_deadline(
        trickle: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each read comes in time, the whole never does: the probe gives up on it (as "no
    answer") instead of waiting for the last byte, and --wait-for-server says so."""
    monkeypatch.setattr(server_module, "PROBE_DEADLINE_S", 0.5)
    monkeypatch.setattr(server_module, "WORKER_DEADLINE_S", 0.5)
    probe = ServerProbe(requests.Session(), trickle, "key")
    assert probe.json_or_none("/get_server_info", timeout=0.5) is None
    assert probe.readiness(0.5) == (False, "no whole answer in time")
    seen: list[str] = []
    assert not probe.wait_ready(1.0, lambda waited, said: seen.append(said), interval=0.1)
    assert seen and set(seen) == {"no whole answer in time"}


def test_a_router_ready_with_no_healthy_worker_is_not_ready() -> None:
    class Ready(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            body = b'{"status":"ready","healthy_workers":0,"total_workers":2}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Ready)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        probe = ServerProbe(requests.Session(),
                            f"http://127.0.0.1:{server.server_address[1]}/v1", "key")
        assert probe.readiness() == (False, "no healthy worker behind the router yet "
                                            "(0 of 2 healthy)")
    finally:
        server.shutdown()
        server.server_close()


def test_a_trickled_model_list_is_cut_at_its_deadline(
        trickle: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The build's first question (GET /v1/models, before any prompt) has a deadline for its
    whole answer too."""
    monkeypatch.setattr(llm_client, "MODELS_DEADLINE_S", 0.5)
    chat = llm_client.ChatClient(trickle, MODEL, "key", max_retries=0)
    with pytest.raises(ServerNotAnsweringError, match=r"did not answer GET /models \(no whole "
                                                      r"answer within 0.5 s\)"):
        chat.check_ready()


def test_the_api_key_goes_only_to_workers_on_the_routers_own_host() -> None:
    """A router can list any URL as a worker: the key given for the router goes to a worker
    on its host (or, for a router on loopback, to loopback workers), never elsewhere."""
    from generator.synthesis.router import same_host

    assert same_host("http://127.0.0.1:30001", "http://localhost:30000/v1")
    assert same_host("https://gpu.lab.org:30001", "https://GPU.lab.org/v1")
    assert not same_host("https://evil.example.com", "https://gpu.lab.org/v1")
    assert not same_host("http://10.0.0.5:30001", "http://127.0.0.1:30000/v1")
    assert not same_host("not a url", "http://127.0.0.1:30000/v1")
