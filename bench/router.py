"""Benchmark: editions over several SGLang-shaped workers behind a real router.

    pip install -c constraints.txt '.[router]'     # smg and sglang-router, the real routers
    python bench/router.py [--router smg] [--workers 1,2,4] [--cap 4] [--scale 0.25]
                           [--setups NAME,...]

Each worker is bench/latency_server.py in a process of its own (cache-aware, as SGLang
schedules; at most `--cap` requests running at once, more wait in its queue); the router is
`smg launch` (or, `--router sglang-router`, the older `python -m sglang_router.launch_router`)
over them, in each setup of `SETUPS`. The digest reads the fleet as it does in a build
(`ServerProbe.server_info`: each worker's limits, summed) and sends the edition's prompts,
evidence checks and judgements at the settings `digest init` writes (config.toml). It runs one
edition, and four editions at once (four digests with bundles of their own, sharing the fleet:
each takes what the others' requests in flight leave, as a build does), and prints, in the
model's seconds, the wall time against the floor of that fleet, the requests each worker
served, the most it held at once (waiting ones included), how many arrived to find its slots
all taken, and the prompt tokens served from the workers' caches.

The floor of a fleet of N workers with `cap` slots each: the larger of the longest chain (one
prompt's prefill and decode, then its evidence check's and judgement's), every request's own
prefill and decode spread over all N x cap slots, and every distinct prefill spread over the N
prefill queues. The setup `digest server-command --router N` prints is marked with a star.
See docs/benchmarks.md, "Several workers behind SGLang's router (`bench/router.py`)".
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.latency_server import Model, ServerProcess, Stats  # noqa: E402
from bench.synthesis import body_of, edition_sources, floor, replay  # noqa: E402
from generator.completions import PromptRequest, SynthesisResult  # noqa: E402
from generator.config import Config, load_config  # noqa: E402
from generator.papers import Source  # noqa: E402
from generator.pipeline.synthesize import follow_ups  # noqa: E402
from generator.prompts.builders import build_requests  # noqa: E402
from generator.prompts.kinds import BUILTIN_KINDS  # noqa: E402
from generator.store.cache import Cache  # noqa: E402
from generator.synthesis.batch import run_batch  # noqa: E402
from generator.synthesis.bundle import build_bundle  # noqa: E402
from generator.synthesis.launch import ROUTER_POLICY  # noqa: E402
from generator.synthesis.llm_client import ChatClient  # noqa: E402
from generator.synthesis.server import ServerProbe  # noqa: E402
from tests.servers.router import Router, missing  # noqa: E402

SERVED = "deepseek-ai/DeepSeek-V4-Flash"
# Name -> the router's policy options (`smg launch --help`; sglang-router takes the same).
SETUPS: dict[str, tuple[str, ...]] = {
    "cache_aware": ("--policy", "cache_aware"),  # at its defaults (abs 64, rel 1.5)
    # Rebalanced at any gap in load (the shortest queue unless loads are even, then the
    # worker holding the prompt's prefix): loads stay within one of each other.
    "cache_aware-abs0": ("--policy", "cache_aware", "--balance-abs-threshold", "0",
                         "--balance-rel-threshold", "1.0"),
    "cache_aware-abs2": ("--policy", "cache_aware", "--balance-abs-threshold", "2",
                         "--balance-rel-threshold", "1.2"),
    "cache_aware-abs8": ("--policy", "cache_aware", "--balance-abs-threshold", "8",
                         "--balance-rel-threshold", "1.2"),
    "round_robin": ("--policy", "round_robin"),
    "power_of_two": ("--policy", "power_of_two"),
}
EDITIONS_AT_ONCE = 4
# The setup `digest server-command --router N` prints: marked in the output.
ADVISED = tuple(part for option in ROUTER_POLICY for part in option.split())


@dataclass(frozen=True)
class Edition:
    requests: list[PromptRequest]
    sources: list[Source]


@dataclass(frozen=True)
class Run:
    wall: float  # model seconds
    floor: float
    per_worker: list[Stats]
    width: int


def editions(config: Config, count: int) -> list[Edition]:
    """`count` editions of the recorded papers, each in another order: bundles that share no
    prefix, as several digests' would."""
    sources = edition_sources(config)
    found = []
    for n in range(count):
        turned = sources[n * 5 % len(sources):] + sources[:n * 5 % len(sources)]
        found.append(Edition(build_requests(config, build_bundle(turned)), turned))
    return found


def fleet_floor(results: Sequence[SynthesisResult], model: Model, workers: int, cap: int) -> float:
    """The floor of `results` run together on `workers` workers of `cap` slots (see above)."""
    chain = 0.0
    slot_time = prefill = 0.0
    for result in results:
        longest, _ = floor(result, model)
        chain = max(chain, longest)
        _, uncached = replay(result.requests, [c.content for c in result.completions],
                             model.page_tokens)
        for request in result.requests:
            own = uncached[request.name] / model.prefill_tps
            prefill += own
            slot_time += own + sum(model.decode(body_of(request))) / model.decode_tps
    return max(chain, slot_time / (workers * cap), prefill / workers)


def run(config: Config, router: Router, servers: list[ServerProcess], chosen: list[Edition],
        model: Model, cap: int, share: bool = True) -> Run:
    for server in servers:
        server.reset()
    # What a build reads of the router: each worker's own limits, summed.
    probe = ServerProbe(requests.Session(), router.base_url, "bench")
    info = probe.server_info()
    if info is None:
        raise RuntimeError("the router's workers were not read: is each one reachable?")
    client = ChatClient(router.base_url, SERVED, "bench", timeout=600,
                        max_retries=config.llm.max_retries,
                        thinking_off=config.llm.thinking_switch(False))
    client.served_models()  # import openai and open the client before any timing
    results: list[SynthesisResult | None] = [None] * len(chosen)

    def one(index: int, edition: Edition) -> None:
        bundle = build_bundle(edition.sources)
        own = ServerProbe(requests.Session(), router.base_url, "bench")  # each digest's
        with tempfile.TemporaryDirectory() as folder:
            results[index] = run_batch(
                edition.requests, client, Cache(Path(folder)), bundle_chars=bundle.chars,
                bundle_tokens=bundle.estimated_tokens,
                max_concurrency=config.llm.max_concurrency, server_info=lambda: dict(info),
                prefill_gate=config.llm.prefill_gate, follow_up=follow_ups(config, bundle),
                load=own.load if share else None, kinds=BUILTIN_KINDS)

    started = time.perf_counter()
    threads = [threading.Thread(target=one, args=(n, e)) for n, e in enumerate(chosen)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = (time.perf_counter() - started) / model.scale
    done = [r for r in results if r is not None]
    failed = [c.error for r in done for c in r.completions if not c.ok]
    if len(done) != len(chosen) or failed:
        raise RuntimeError(f"not every request was answered: {failed[:3]}")
    return Run(wall, fleet_floor(done, model, len(servers), cap),
               [server.stats for server in servers], int(info["max_running_requests"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", default="1,2,4", help="fleet sizes, comma-separated")
    parser.add_argument("--cap", type=int, default=4, help="requests each worker runs at once")
    parser.add_argument("--scale", type=float, default=0.25,
                        help="real seconds per model second")
    parser.add_argument("--setups", default=",".join(SETUPS),
                        help=f"router setups, comma-separated, of: {', '.join(SETUPS)}")
    parser.add_argument("--config", type=Path, default=ROOT / "config.toml")
    parser.add_argument("--router", choices=("smg", "sglang-router"), default="smg")
    parser.add_argument("--no-share", action="store_true",
                        help="each digest takes the fleet's whole width (as before sharing)")
    args = parser.parse_args()
    if missing(args.router):
        sys.exit(missing(args.router))
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    config = load_config(args.config, registry=BUILTIN_KINDS)
    chosen = editions(config, EDITIONS_AT_ONCE)
    model = Model(scale=args.scale, cache_blind=False, max_running_requests=args.cap)
    setups = [name.strip() for name in args.setups.split(",") if name.strip()]

    print(f"Router benchmark: {args.router} in front of N workers of {args.cap} running requests "
          f"each; one edition = {len(chosen[0].requests)} prompts with their evidence checks and "
          f"judgements; {EDITIONS_AT_ONCE} editions at once = {EDITIONS_AT_ONCE} digests with "
          "bundles of their own; model seconds")
    for count in (int(n) for n in args.workers.split(",")):
        servers = [ServerProcess(model, SERVED).start() for _ in range(count)]
        roots = [s.base_url.removesuffix("/v1") for s in servers]
        try:
            for name in setups[:1] if count == 1 else setups:
                router = Router(roots, options=SETUPS[name], kind=args.router).start(count)
                try:
                    for load in (chosen[:1], chosen):
                        result = run(config, router, servers, load, model, args.cap,
                                     share=not args.no_share)
                        what = ("one edition" if len(load) == 1
                                else f"{len(load)} editions at once")
                        shown = name + ("*" if SETUPS[name] == ADVISED else "")
                        print(f"  {count} worker(s), {shown if count > 1 else 'one worker':<17} "
                              f"{what:<22} width {result.width:>2}: {result.wall:7.1f} s = "
                              f"{result.wall / result.floor:4.2f}x floor ({result.floor:.1f} s); "
                              f"requests {[s.requests for s in result.per_worker]}, most at once "
                              f"{[s.peak_in_flight for s in result.per_worker]}, waited for a slot "
                              f"{[s.waited for s in result.per_worker]}, cache hits "
                              f"{_hits(result.per_worker):.1%}; thinking "
                              f"{sum(s.thinking for s in result.per_worker)}, unsaid "
                              f"{sum(s.unsaid for s in result.per_worker)}", flush=True)
                finally:
                    router.stop()
        finally:
            for server in servers:
                server.stop()


def _hits(stats: list[Stats]) -> float:
    prompt = sum(s.prompt_tokens for s in stats)
    return sum(s.cached_tokens for s in stats) / prompt if prompt else 0.0


if __name__ == "__main__":
    main()
