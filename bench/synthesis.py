"""Benchmark: the synthesis stage of a 20-paper edition against a latency-modelled server.

    python bench/synthesis.py [--scale 0.05] [--prefill-tps 12000] [--decode-tps 80]

Runs what users get: the prompts and settings of the config.toml that `digest init` writes
(every default prompt, briefs and the theme map on, `max_concurrency` as written there, the
concurrency then read from the server), against the server of bench/latency_server.py, once
with cache-blind and once with cache-aware prefix matching, prefill gate on (the default) and
off. Beside them, in the same run, the seed's notebook (its six prompts, bundle first, one at a
time) and the same layout with the project's prompt set, and the true floor of the edition:
max(the longest chain of one prompt's prefill and decode, every distinct prefill plus the
shortest decode). Times are in the model's seconds. See README.md, "Benchmarks".
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.latency_server import CHARS_PER_TOKEN, LatencyServer, Model, prompt_text  # noqa: E402
from generator.bundle import build_bundle  # noqa: E402
from generator.cache import Cache  # noqa: E402
from generator.config import Config, load_config  # noqa: E402
from generator.fetch.arxiv_source import ArxivSource, RateLimiter, RecordingSession  # noqa: E402
from generator.fetch.pdf_text import extract_text  # noqa: E402
from generator.models import Bundle, FullText, PromptRequest, Source  # noqa: E402
from generator.synthesis.dispatch import concurrency  # noqa: E402
from generator.synthesis.llm_client import ChatClient  # noqa: E402
from generator.synthesis.prompts import build_requests  # noqa: E402
from generator.synthesis.server import ServerProbe  # noqa: E402
from generator.synthesis.stage import run_synthesis  # noqa: E402
from tests.servers.arxiv import ArxivServer  # noqa: E402

FIXTURES = ROOT.parent / "shared" / "fixtures"
SEED_KINDS = ("research_map", "deep_dive", "thinking")  # the seed's six prompts


def edition_bundle(config: Config) -> Bundle:
    """A 20-paper bundle from the recorded arXiv feeds, with real PDF text for the first
    `full_text_papers` (as many as config.toml asks for)."""
    server = ArxivServer(FIXTURES).start()
    try:
        source = ArxivSource(RecordingSession(timeout=10), server.api_url, RateLimiter(0))
        found = []
        for feed, count in (("arxivpy2026_search_testing_start0_max15.xml", 15),
                            ("arxivpy2026_search_testing_start20_max10.xml", 10)):
            server.state.default_feed = feed
            found += source.search("testing", count, config.arxiv.max_abstract_chars)
    finally:
        server.stop()
    unique = list({p.arxiv_id: p for p in found}.values())[:config.arxiv.max_papers]
    pdfs = sorted(p for p in (FIXTURES / "pdfs").glob("*.pdf") if "owner-password" not in p.name)
    sources = []
    for i, paper in enumerate(unique):
        text = (extract_text(pdfs[i % len(pdfs)].read_bytes(), config.arxiv.max_pdf_chars)
                if i < config.arxiv.full_text_papers else FullText("not_requested"))
        sources.append(Source(paper, text))
    return build_bundle(sources)


def body_of(request: PromptRequest) -> dict[str, object]:
    """The request body as the server sees it (for the floor's arithmetic)."""
    body: dict[str, object] = {"messages": [{"content": m.content} for m in request.messages],
                               "max_tokens": request.max_tokens}
    body.update(json.loads(request.extra_body_json))
    return body


def floor(requests_: list[PromptRequest], model: Model) -> tuple[float, float]:
    """(longest chain, distinct prefills + shortest decode), in model seconds: no schedule on
    this server can beat the larger of the two."""
    bodies = [body_of(r) for r in requests_]
    prompts = [prompt_text(b) for b in bodies]
    decodes = [sum(model.decode(b)) / model.decode_tps for b in bodies]
    chain = max(len(p) // CHARS_PER_TOKEN / model.prefill_tps + d
                for p, d in zip(prompts, decodes, strict=True))
    ordered = sorted(prompts)
    distinct = len(ordered[0]) + sum(len(b) - len(os.path.commonprefix([a, b]))
                                     for a, b in zip(ordered, ordered[1:], strict=False))
    return chain, distinct // CHARS_PER_TOKEN / model.prefill_tps + min(decodes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=0.05, help="real seconds per model second")
    parser.add_argument("--prefill-tps", type=float, default=12_000)
    parser.add_argument("--decode-tps", type=float, default=80)
    parser.add_argument("--answer-tokens", type=int, default=1_200)
    parser.add_argument("--reasoning-tokens", type=int, default=2_000)
    parser.add_argument("--structured-tokens", type=int, default=250)
    parser.add_argument("--config", type=Path, default=ROOT / "config.toml",
                        help="the workspace settings (default: what `digest init` writes)")
    args = parser.parse_args()
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    config = load_config(args.config)

    bundle = edition_bundle(config)
    ours = build_requests(config.prompts, bundle, config.llm.thinking_extra_body,
                          language=config.digest.language, briefs=config.briefs)
    seed = [r for r in ours if r.kind in SEED_KINDS]
    results: dict[str, float] = {}
    hits: dict[str, float] = {}
    served = "deepseek-ai/DeepSeek-V4-Flash"

    for aware in (False, True):
        model = Model(args.prefill_tps, args.decode_tps, args.answer_tokens,
                      args.reasoning_tokens, args.structured_tokens, scale=args.scale,
                      cache_blind=not aware)
        server = LatencyServer(model, served).start()
        client = ChatClient(server.base_url, served, "bench", timeout=600, max_retries=0)
        info = ServerProbe(requests.Session(), server.base_url, "bench").server_info()
        plain = ChatClient(server.base_url, served, "bench", timeout=600, max_retries=0,
                           stream=False)
        for warm in (client, plain):  # import openai and open the clients before any timing
            warm.served_models()
        label = "cache-aware" if aware else "cache-blind"
        for gate in (True, False):
            server.reset()
            with tempfile.TemporaryDirectory() as cache:
                started = time.perf_counter()
                result = run_synthesis(ours, client, Cache(Path(cache)),
                                       bundle_chars=bundle.chars,
                                       bundle_tokens=bundle.estimated_tokens,
                                       max_concurrency=config.llm.max_concurrency,
                                       server_info=info, prefill_gate=gate)
                key = f"{label}, gate {'on' if gate else 'off'}"
                results[key] = (time.perf_counter() - started) / args.scale
            assert all(c.ok for c in result.completions), [c.error for c in result.completions]
            hits[key] = server.stats.cached_tokens / server.stats.prompt_tokens
        for name, prompts in (("seed notebook", seed), ("notebook layout, our prompts", ours)):
            server.reset()
            started = time.perf_counter()
            for request in prompts:
                plain.complete(request)
            results[f"{label}, {name}"] = (time.perf_counter() - started) / args.scale
        server.stop()
    slots = concurrency(config.llm.max_concurrency, info, len(ours), 1, 0)

    model = Model(args.prefill_tps, args.decode_tps, args.answer_tokens, args.reasoning_tokens,
                  args.structured_tokens)
    chain, prefills = floor(ours, model)
    bound = max(chain, prefills)
    tokens = [len(prompt_text(body_of(r))) // CHARS_PER_TOKEN for r in ours]
    ordered = sorted(prompt_text(body_of(r)) for r in ours)
    shared = sum(len(os.path.commonprefix([a, b])) // CHARS_PER_TOKEN
                 for a, b in zip(ordered, ordered[1:], strict=False))
    ideal = shared / sum(tokens)

    print(f"Synthesis benchmark: {len(ours)} prompts ({len(seed)} in the seed's set), "
          f"bundle of {bundle.estimated_tokens:,} tokens ({len(bundle.papers)} papers, "
          f"{config.arxiv.full_text_papers} with full text), max_concurrency = "
          f"{config.llm.max_concurrency} -> {slots} in flight; prefill "
          f"{model.prefill_tps:,.0f} tok/s, decode {model.decode_tps:g} tok/s a request; "
          "model seconds")
    print(f"  {'floor: longest chain (prefill + decode)':<58} {chain:8.1f} s")
    print(f"  {'floor: every distinct prefill + shortest decode':<58} {prefills:8.1f} s")
    for label in ("cache-blind", "cache-aware"):
        print(f"  {label} server")
        for name in ("gate on", "gate off", "seed notebook", "notebook layout, our prompts"):
            value = results[f"{label}, {name}"]
            shown = {"gate on": "project, prefill gate on (the default)",
                     "gate off": "project, prefill gate off"}.get(name, name + ", sequential")
            hit = hits.get(f"{label}, {name}")
            extra = f"   cache hits {hit:5.1%}" if hit is not None else ""
            print(f"    {shown:<56} {value:8.1f} s   {value / bound:5.2f}x floor{extra}")
        project = results[f"{label}, gate on"]
        print(f"    {'seed notebook / project (target >= 2.50)':<56} "
              f"{results[f'{label}, seed notebook'] / project:8.2f}x")
        print(f"    {'notebook layout, our prompts / project':<56} "
              f"{results[f'{label}, notebook layout, our prompts'] / project:8.2f}x")
        print(f"    {'gate off / gate on':<56} {results[f'{label}, gate off'] / project:8.2f}x")
    print(f"  ideal cache-hit fraction (every shared prefix prefilled once): {ideal:.1%}")


if __name__ == "__main__":
    main()
