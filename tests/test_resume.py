"""A build killed mid-synthesis resumes from its cache without paying for answers twice."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from generator.cli import cli
from tests.conftest import ROOT, write_config
from tests.servers.arxiv import ArxivServer
from tests.servers.sglang import Answer, SglangServer, default_responder


def test_killed_build_resumes_without_resending(
    tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer
) -> None:
    config = write_config(tmp_path / "ws", arxiv_server, sglang_server,
                          "max_concurrency = 1\n")
    # The third request is held unanswered until the build is killed: the kill comes with two
    # answers back and one in flight, whatever the machine's speed.
    holding, release = threading.Event(), threading.Event()
    asked = itertools.count(1)

    def hold_the_third(body: dict[str, Any]) -> Answer:
        if next(asked) == 3:
            holding.set()
            release.wait(60)
        return default_responder(body)

    sglang_server.state.responder = hold_the_third
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "generator", "build", "--config", str(config),
         "--edition", "2026-12-02"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        assert holding.wait(60), "the build never sent its third request"
        process.send_signal(signal.SIGKILL)
        process.wait()
    finally:
        release.set()
    sent_before = len(sglang_server.state.chat_requests)
    assert sent_before == 3  # one at a time: nothing more is sent while the third is held

    result = CliRunner().invoke(cli, ["build", "--config", str(config), "--edition", "2026-12-02"])
    assert result.exit_code == 0, result.output
    # The two answers that arrived before the kill were cached; the one in flight is asked
    # again, with the three never sent.
    assert len(sglang_server.state.chat_requests) - sent_before == 6 - 2
    cache = tmp_path / "ws" / ".cache"
    assert not [p for p in cache.rglob("*") if p.name.endswith(".tmp")]
    assert (tmp_path / "ws" / "site" / "editions" / "2026-12-02" / "thinking.html").is_file()
