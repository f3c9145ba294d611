"""Benchmark: `digest render` when a model's evidence quote is 40 KB, beside a short one.

    python bench/evidence_quote.py [--runs 3] [--baseline-src /path/to/older/checkout]

Builds one edition twice with the settings `digest init` writes (every default prompt,
evidence on), pointed at the arXiv- and SGLang-shaped test servers: once with the server's
ordinary quotes, once with one claim's quote replaced by "the " × 10,000 (40 KB, the case of
issue 24 that took a render from 1.4 s to 65 s). Then times `digest render` of each edition in
fresh processes, alternating, and prints the ratio: a long quote should cost what a short one
does. With --baseline-src, an older checkout's code is timed the same way, side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.rebuild import EDITION, init_config  # noqa: E402
from tests.conftest import FIXTURES  # noqa: E402
from tests.servers.arxiv import ArxivServer  # noqa: E402
from tests.servers.sglang import Answer, Fault, SglangServer, structured_answer  # noqa: E402

LONG_QUOTE = "the " * 10_000


def long_quote(body: dict[str, Any]) -> Answer | Fault:
    """The server's structured answers, with the first evidence quote made 40 KB long."""
    answer = structured_answer(body)
    if answer is None:
        return Fault(500, "no structured answer")
    data = json.loads(answer.content)
    if isinstance(data, dict) and data.get("claims"):
        data["claims"][0]["quote"] = LONG_QUOTE
        return Answer(json.dumps(data))
    return answer


def render(src: Path, config: Path) -> float:
    """Seconds one `digest render` takes in a fresh process running the code in `src`."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "generator", "render", "--config", str(config), "--edition",
         EDITION], cwd=config.parent, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(src)})
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"digest render failed with {src}:\n{done.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--baseline-src", type=Path,
                        help="an older checkout whose code is timed side by side")
    args = parser.parse_args()
    arxiv = ArxivServer(FIXTURES).start()
    short_server, long_server = SglangServer().start(), SglangServer().start()
    long_server.state.structured_responder = long_quote
    try:
        with tempfile.TemporaryDirectory() as tmp:
            configs = {}
            for name, server in (("short quotes", short_server), ("one 40 KB quote", long_server)):
                config = init_config(Path(tmp) / name.replace(" ", "-"), arxiv, server, ROOT)
                done = subprocess.run([sys.executable, "-m", "generator", "build", "--config",
                                       str(config), "--edition", EDITION], cwd=config.parent,
                                      capture_output=True, text=True)
                if done.returncode != 0:
                    raise SystemExit(f"the build failed:\n{done.stderr[-2000:]}")
                configs[name] = config
            sources = {"this checkout": ROOT}
            if args.baseline_src:
                sources["baseline"] = args.baseline_src.resolve()
            times: dict[tuple[str, str], list[float]] = {}
            for _ in range(args.runs):
                for src_name, src in sources.items():
                    for name, config in configs.items():
                        times.setdefault((src_name, name), []).append(render(src, config))
    finally:
        arxiv.stop()
        short_server.stop()
        long_server.stop()
    print(f"digest render, median of {args.runs} (settings `digest init` writes, evidence on):")
    for src_name in sources:
        short = statistics.median(times[(src_name, "short quotes")])
        long = statistics.median(times[(src_name, "one 40 KB quote")])
        print(f"  {src_name:14} short quotes {short:6.2f} s   one 40 KB quote {long:6.2f} s   "
              f"ratio {long / short:5.2f}")


if __name__ == "__main__":
    main()
