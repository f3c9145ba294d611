"""A build killed mid-synthesis resumes from its cache without paying for answers twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from click.testing import CliRunner

from generator.cli import cli
from tests.conftest import ROOT, write_config
from tests.servers.arxiv import ArxivServer
from tests.servers.sglang import SglangServer


def test_killed_build_resumes_without_resending(
    tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer
) -> None:
    config = write_config(tmp_path / "ws", arxiv_server, sglang_server,
                          "max_concurrency = 1\n")
    sglang_server.state.delay_s = 0.3
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "generator", "build", "--config", str(config),
         "--edition", "2026-12-02"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while len(sglang_server.state.chat_requests) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    sent_before = len(sglang_server.state.chat_requests)
    assert 3 <= sent_before < 6

    sglang_server.state.delay_s = 0
    result = CliRunner().invoke(cli, ["build", "--config", str(config), "--edition", "2026-12-02"])
    assert result.exit_code == 0, result.output
    # Answers that arrived before the kill were cached; at most the one in flight is asked again.
    assert len(sglang_server.state.chat_requests) <= 6 + 1
    resent = len(sglang_server.state.chat_requests) - sent_before
    assert resent <= 6 - (sent_before - 1)
    cache = tmp_path / "ws" / ".cache"
    assert not [p for p in cache.rglob("*") if p.name.endswith(".tmp")]
    assert (tmp_path / "ws" / "site" / "editions" / "2026-12-02" / "thinking.html").is_file()
