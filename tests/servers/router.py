"""SGLang's real routers from the package registry (the `router` extra) in front of local
workers, for the routers' end-to-end tests and bench/router.py: today's Shepherd Model Gateway
(`smg`) and the older sglang-router.

Each is started as its users start it (`smg launch`, `python -m sglang_router.launch_router`),
on 127.0.0.1 with ports of its own (two routers on the default Prometheus port panic).
"""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO

import requests

# Each router: its package (to import) and how it is launched (after the interpreter).
ROUTERS = {"smg": ("smg", ("-m", "smg", "launch")),
           "sglang-router": ("sglang_router", ("-m", "sglang_router.launch_router"))}


def missing(kind: str = "smg") -> str:
    """Why the router `kind` (ROUTERS) cannot be started here ("" where it can)."""
    if importlib.util.find_spec(ROUTERS[kind][0]) is None:
        return (f"{kind} is not installed (pip install -c constraints.txt '.[router]')")
    return ""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Router:
    """The router `kind` (ROUTERS: `smg launch`, or sglang-router's launcher) over `workers`
    (their root URLs), with the router's own `options` (its policy, say: `("--policy",
    "round_robin")`)."""

    def __init__(self, workers: Sequence[str], *, options: Sequence[str] = (),
                 log: Path | None = None, kind: str = "smg") -> None:
        self.port = free_port()
        self.kind = kind
        self.command = [sys.executable, *ROUTERS[kind][1], "--host", "127.0.0.1", "--port", str(self.port),
                        "--worker-urls", *workers, *options,
                        "--prometheus-port", str(free_port()),
                        "--worker-startup-check-interval", "1", "--log-level", "warn"]
        self._log = log
        self._out: IO[bytes] | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, healthy: int = 0, timeout: float = 30.0) -> Router:
        """Start it, and wait until it answers (and, given `healthy`, has that many healthy
        workers)."""
        self._out = open(self._log, "wb") if self._log else None  # noqa: SIM115
        self._process = subprocess.Popen(self.command, stdout=self._out or subprocess.DEVNULL,
                                         stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"the router exited ({self._process.returncode}): "
                                   f"{' '.join(self.command)}")
            if self.healthy_workers() >= healthy:
                return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"the router had not {healthy} healthy worker(s) after {timeout:g} s")

    def healthy_workers(self) -> int:
        """Its healthy workers, as /readiness counts them; -1 while it does not answer."""
        try:
            response = requests.get(f"http://127.0.0.1:{self.port}/readiness", timeout=2)
        except requests.RequestException:
            return -1
        if response.status_code == 503:
            return 0
        return int(response.json().get("healthy_workers", 0))

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        if self._out is not None:
            self._out.close()
            self._out = None
