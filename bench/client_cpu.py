"""Benchmark: the client's CPU per request, what the digest itself spends around each prompt.

    python bench/client_cpu.py [--rounds 5] [--baseline-src /path/to/older/checkout]

Builds the requests of an edition with the settings `digest init` writes (a 20-paper bundle
from the recorded feeds, real PDF text for the first five: about 190 KB a prompt) and runs them
through the synthesis stage's batch runner (`run_batch`: cache keys, the openai client, the
stream, the cache write) against the latency-modelled SGLang-shaped server in a process of its
own, so that this process's CPU time (`time.process_time`) is the client's alone. Each round
starts with an empty cache, so every request is sent and written. It prints CPU milliseconds
per request. With --baseline-src, an older checkout's `generator` is measured the same way, in
alternating fresh processes, and the ratio printed.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = Path(os.environ.get("DIGEST_BENCH_SRC", ROOT))  # whose `generator` is measured
sys.path[:0] = [str(SRC), str(ROOT)]

from bench.latency_server import Model, ServerProcess  # noqa: E402
from generator.completions import Message, PromptRequest  # noqa: E402
from generator.prompts.kinds import BUILTIN_KINDS  # noqa: E402
from generator.store.cache import Cache  # noqa: E402
from generator.synthesis.llm_client import ChatClient  # noqa: E402

try:  # the batch runner, under the name the measured checkout gives it
    from generator.synthesis.batch import run_batch  # noqa: E402
except ImportError:
    from generator.synthesis.batch import run_synthesis as run_batch  # type: ignore[attr-defined,no-redef] # noqa: E402,I001

MODEL = "deepseek-ai/DeepSeek-V4-Flash"


def one_round(base_url: str, requests: list[PromptRequest], bundle_chars: int,
              bundle_tokens: int) -> float:
    """CPU seconds of this process for one batch of the edition's requests, cache empty."""
    client = ChatClient(base_url, MODEL, "not-needed", max_retries=0)
    with tempfile.TemporaryDirectory() as cache:
        started = time.process_time()
        result = run_batch(requests, client, Cache(Path(cache)), bundle_chars=bundle_chars,
                           bundle_tokens=bundle_tokens, kinds=BUILTIN_KINDS)
        spent = time.process_time() - started
    failed = [c.name for c in result.completions if not c.ok]
    if failed:
        raise SystemExit(f"requests failed: {failed[:3]}")
    return spent


def edition_requests(path: Path) -> None:
    """Build the edition's requests with this checkout (the prompts are not what is measured)
    and write them to `path`, so every measured checkout sends the very same requests."""
    from bench.synthesis import edition_bundle
    from generator.config import load_config
    from generator.prompts.builders import build_requests

    config = load_config(ROOT / "config.toml", registry=BUILTIN_KINDS)  # the file `digest init` copies
    bundle = edition_bundle(config)
    fields = ("name", "title", "kind", "question", "max_tokens", "temperature", "thinking",
              "extra_body_json")
    path.write_text(json.dumps({
        "chars": bundle.chars, "tokens": bundle.estimated_tokens,
        "requests": [{f: getattr(r, f) for f in fields}
                     | {"messages": [[m.role, m.content] for m in r.messages]}
                     for r in build_requests(config, bundle)]}))


def measure(path: Path, rounds: int) -> float:
    """Median CPU ms a request for this process's checkout, over the requests in `path`."""
    data = json.loads(path.read_text())
    requests = [PromptRequest(**{**r, "messages": tuple(Message(*m) for m in r["messages"])})
                for r in data["requests"]]
    # Quick answers: the benchmark is about the client's work, not the model's time.
    model = Model(answer_tokens=40, reasoning_tokens=40, structured_tokens=40, scale=0.0005)
    server = ServerProcess(model, MODEL).start()
    try:
        one_round(server.base_url, requests, data["chars"], data["tokens"])  # warm up
        spent = [one_round(server.base_url, requests, data["chars"], data["tokens"])
                 for _ in range(rounds)]
    finally:
        server.stop()
    return statistics.median(spent) / len(requests) * 1000


def child(src: Path, path: Path, rounds: int) -> float:
    done = subprocess.run([sys.executable, __file__, "--child", str(path), "--rounds",
                           str(rounds)], capture_output=True, text=True, check=True,
                          env={**os.environ, "DIGEST_BENCH_SRC": str(src)})
    return float(json.loads(done.stdout.strip().splitlines()[-1])["ms"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--baseline-src", type=Path)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps({"ms": measure(args.child, args.rounds)}))
        return
    logging.getLogger("pypdf").setLevel(logging.ERROR)  # fonts it cannot fully parse: noise
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "requests.json"
        edition_requests(path)
        data = json.loads(path.read_text())
        size = statistics.mean(len(r["messages"][-1][1]) for r in data["requests"]) / 1000
        print(f"{len(data['requests'])} requests of {size:.0f} KB on average (the settings "
              f"`digest init` writes), {args.rounds} rounds a process, median of 3 processes:")
        sources = {"this checkout": ROOT}
        if args.baseline_src:
            sources["baseline"] = args.baseline_src.resolve()
        spent: dict[str, list[float]] = {name: [] for name in sources}
        for _ in range(3):  # alternating fresh processes
            for name, src in sources.items():
                spent[name].append(child(src, path, args.rounds))
    ours = statistics.median(spent["this checkout"])
    print(f"  this checkout {ours:.1f} ms of client CPU a request")
    if args.baseline_src:
        theirs = statistics.median(spent["baseline"])
        print(f"  baseline      {theirs:.1f} ms a request ({theirs / ours:.2f}x this checkout's)")


if __name__ == "__main__":
    main()
