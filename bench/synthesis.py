"""Benchmark: the synthesis stage of a 20-paper edition against a latency-modelled server.

    python bench/synthesis.py [--scale 0.5] [--prefill-tps 12000] [--decode-tps 80]

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
import functools
import json
import logging
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.latency_server import (  # noqa: E402
    CHARS_PER_TOKEN,
    Model,
    PrefixCache,
    ServerProcess,
    prompt_text,
    thinking,
)
from generator.completions import PromptRequest, SynthesisResult  # noqa: E402
from generator.config import Config, load_config  # noqa: E402
from generator.fetch.arxiv_source import ArxivSource, RateLimiter, RecordingSession  # noqa: E402
from generator.fetch.pdf_text import extract_text  # noqa: E402
from generator.kinds import CONTINUE, EVIDENCE, JUDGE  # noqa: E402
from generator.papers import Bundle, FullText, Source  # noqa: E402
from generator.pipeline.synthesize import follow_ups  # noqa: E402
from generator.prompts.builders import build_requests  # noqa: E402
from generator.prompts.kinds import BUILTIN_KINDS  # noqa: E402
from generator.store.cache import Cache  # noqa: E402
from generator.synthesis.batch import FollowUp, run_batch  # noqa: E402
from generator.synthesis.bundle import build_bundle  # noqa: E402
from generator.synthesis.continuation import with_continuations  # noqa: E402
from generator.synthesis.dispatch import concurrency  # noqa: E402
from generator.synthesis.llm_client import ChatClient  # noqa: E402
from generator.synthesis.server import ServerProbe  # noqa: E402
from tests.conftest import FIXTURES  # noqa: E402
from tests.servers.arxiv import ArxivServer  # noqa: E402

SEED_KINDS = ("research_map", "deep_dive", "thinking")  # the seed's six prompts


def edition_bundle(config: Config) -> Bundle:
    """A 20-paper bundle from the recorded arXiv feeds, with real PDF text for the first
    `full_text_papers` (as many as config.toml asks for)."""
    return build_bundle(edition_sources(config))


def edition_sources(config: Config) -> list[Source]:
    """The papers of `edition_bundle`, each with its text."""
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
    return sources


def body_of(request: PromptRequest) -> dict[str, object]:
    """The request body as the server sees it (for the floor's arithmetic)."""
    body: dict[str, object] = {"messages": [{"role": m.role, "content": m.content}
                                            for m in request.messages],
                               "max_tokens": request.max_tokens}
    body.update(json.loads(request.extra_body_json))
    return body


def replay(requests: Sequence[PromptRequest], answers: Sequence[str], page_tokens: int
           ) -> tuple[dict[str, int], dict[str, int]]:
    """(tokens, uncached tokens) of every prompt when each shared prefix is prefilled once:
    the requests in order, each answer cached after its prompt as the server does."""
    cache = PrefixCache(page_tokens)
    tokens, uncached = {}, {}
    for request, answer in zip(requests, answers, strict=True):
        body = body_of(request)
        prompt = prompt_text(body)
        tokens[request.name] = len(prompt) // CHARS_PER_TOKEN
        uncached[request.name] = tokens[request.name] - cache.cached_tokens(prompt)
        cache.insert(prompt)
        if not thinking(body):
            cache.insert(prompt + answer)
    return tokens, uncached


def floor(result: SynthesisResult, model: Model) -> tuple[float, float]:
    """(longest chain, distinct prefills + shortest decode), in model seconds: no schedule on
    this server can beat the larger of the two. An evidence check's chain is its answer's
    chain, then the prefill of what its prompt adds to the cached answer, then its decode."""
    bodies = {r.name: body_of(r) for r in result.requests}
    decodes = {name: sum(model.decode(b)) / model.decode_tps for name, b in bodies.items()}
    tokens, uncached = replay(result.requests, [c.content for c in result.completions],
                               model.page_tokens)
    chains: dict[str, float] = {}
    checked: dict[str, list[tuple[tuple[int, ...], str]]] = {}  # an answer's checks, by claims
    for request in result.requests:  # answers come before their checks, checks before judgements
        name = request.name
        if request.kind == JUDGE:  # after the check that found its first quote
            after = next(c for numbers, c in checked[request.parent]
                         if request.claims[0] in numbers)
            chains[name] = chains[after] + uncached[name] / model.prefill_tps + decodes[name]
        elif request.kind != EVIDENCE:
            chains[name] = tokens[name] / model.prefill_tps + decodes[name]
        else:
            checked.setdefault(request.parent, []).append((request.claims, name))
            chains[name] = chains[request.parent] + uncached[name] / model.prefill_tps + decodes[name]
    return max(chains.values()), sum(uncached.values()) / model.prefill_tps + min(
        decodes.values())


def cache_hit_ideal(result: SynthesisResult, page_tokens: int) -> float:
    """The fraction of prompt tokens a perfect prefix cache serves: all but the distinct ones."""
    tokens, uncached = replay(result.requests, [c.content for c in result.completions],
                               page_tokens)
    return 1 - sum(uncached.values()) / sum(tokens.values())


def sequential(client: ChatClient, requests: list[PromptRequest], follow_up: FollowUp | None
               ) -> None:
    """A notebook: one request at a time, each answer's evidence checks right after it, and
    each check's judgement of the quotes it found right after that."""
    for request in requests:
        completion = client.complete(request)
        for check in follow_up(request, completion) if follow_up else ():
            answer = client.complete(check)
            for judgement in follow_up(check, answer) if follow_up else ():
                client.complete(judgement)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=0.5, help=(
        "real seconds per model second (smaller runs faster, but the client's own work, a few "
        "milliseconds a request, then counts for more model seconds)"))
    parser.add_argument("--prefill-tps", type=float, default=12_000)
    parser.add_argument("--decode-tps", type=float, default=80)
    parser.add_argument("--answer-tokens", type=int, default=1_200)
    parser.add_argument("--reasoning-tokens", type=int, default=2_000)
    parser.add_argument("--structured-tokens", type=int, default=250)
    parser.add_argument("--over-budget-tokens", type=int, default=3_600, help=(
        "prose answers of this length in the run where each outgrows its budget and is "
        "continued (0: no such run)"))
    parser.add_argument("--config", type=Path, default=ROOT / "config.toml",
                        help="the workspace settings (default: what `digest init` writes)")
    args = parser.parse_args()
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    config = load_config(args.config, registry=BUILTIN_KINDS)

    bundle = edition_bundle(config)
    ours = build_requests(config, bundle)
    seed = [r for r in ours if r.kind in SEED_KINDS]
    evidence = follow_ups(config, bundle)
    unjudged = follow_ups(replace(config, evidence=replace(config.evidence, judge=False)), bundle)
    served = "deepseek-ai/DeepSeek-V4-Flash"
    times: dict[str, float] = {}
    hits: dict[str, float] = {}
    default: SynthesisResult | None = None
    runs = {"project (the defaults)": (True, evidence), "project, prefill gate off": (False, evidence),
            "project, judge off": (True, unjudged), "project, evidence off": (True, None)}
    spent: dict[str, tuple[int, int, int]] = {}  # run -> judge requests, prompt, completion tokens

    for aware in (False, True):
        model = Model(args.prefill_tps, args.decode_tps, args.answer_tokens,
                      args.reasoning_tokens, args.structured_tokens, scale=args.scale,
                      cache_blind=not aware)
        server = ServerProcess(model, served).start()
        client = ChatClient(server.base_url, served, "bench", timeout=600, max_retries=0)
        plain = ChatClient(server.base_url, served, "bench", timeout=600, max_retries=0,
                           stream=False)
        for warm in (client, plain):  # import openai and open the clients before any timing
            warm.served_models()
        info = ServerProbe(requests.Session(), server.base_url, "bench").server_info()
        label = "cache-aware" if aware else "cache-blind"
        for name, (gate, checks) in runs.items():
            server.reset()
            with tempfile.TemporaryDirectory() as cache:
                started = time.perf_counter()
                result = run_batch(ours, client, Cache(Path(cache)),
                                       bundle_chars=bundle.chars,
                                       bundle_tokens=bundle.estimated_tokens,
                                       max_concurrency=config.llm.max_concurrency,
                                       server_info=functools.partial(dict, info or {}),
                                       prefill_gate=gate,
                                       follow_up=checks, kinds=BUILTIN_KINDS)
                times[f"{label}, {name}"] = (time.perf_counter() - started) / args.scale
            judges = [c for r, c in zip(result.requests, result.completions, strict=True)
                      if r.kind == "judge"]
            spent[f"{label}, {name}"] = (len(judges),
                                         sum(c.usage.prompt_tokens or 0 for c in judges),
                                         sum(c.usage.completion_tokens or 0 for c in judges))
            assert all(c.ok for c in result.completions), [c.error for c in result.completions]
            hits[f"{label}, {name}"] = server.stats.cached_tokens / server.stats.prompt_tokens
            if name == "project (the defaults)":
                default = result
        notebooks: list[tuple[str, list[PromptRequest], FollowUp | None]] = [
            ("seed notebook", seed, None), ("notebook layout, our prompts", ours, evidence)]
        for name, prompts, then in notebooks:
            if aware:  # one request at a time: arrival is scheduling, the same on both servers
                times[f"{label}, {name}"] = times[f"cache-blind, {name}"]
                continue
            server.reset()
            started = time.perf_counter()
            sequential(plain, prompts, then)
            times[f"{label}, {name}"] = (time.perf_counter() - started) / args.scale
        server.stop()
    assert default is not None
    over = over_budget(args, config, ours, bundle, evidence, served) \
        if args.over_budget_tokens else None
    slots = concurrency(config.llm.max_concurrency, info, len(ours), 1, 0)

    model = Model(args.prefill_tps, args.decode_tps, args.answer_tokens, args.reasoning_tokens,
                  args.structured_tokens)
    chain, prefills = floor(default, model)
    bound = max(chain, prefills)
    checks_sent = sum(1 for r in default.requests if r.kind == "evidence")
    judges_sent = sum(1 for r in default.requests if r.kind == "judge")

    print(f"Synthesis benchmark: {len(ours)} prompts + {checks_sent} evidence checks "
          f"+ {judges_sent} judgements "
          f"({len(seed)} prompts in the seed's set), bundle of {bundle.estimated_tokens:,} tokens "
          f"({len(bundle.papers)} papers, {config.arxiv.full_text_papers} with full text), "
          f"max_concurrency = {config.llm.max_concurrency} -> {slots} in flight; prefill "
          f"{model.prefill_tps:,.0f} tok/s, decode {model.decode_tps:g} tok/s a request; "
          "model seconds")
    print(f"  {'floor: longest chain (prefill + decode, evidence after)':<60} {chain:8.1f} s")
    print(f"  {'floor: every distinct prefill + shortest decode':<60} {prefills:8.1f} s")
    for label in ("cache-blind", "cache-aware"):
        print(f"  {label} server")
        for name in (*runs, "seed notebook", "notebook layout, our prompts"):
            value = times[f"{label}, {name}"]
            shown = name if name.startswith("project") else name + ", sequential"
            hit = hits.get(f"{label}, {name}")
            extra = f"   cache hits {hit:5.1%}" if hit is not None else ""
            print(f"    {shown:<58} {value:8.1f} s   {value / bound:5.2f}x floor{extra}")
        project = times[f"{label}, project (the defaults)"]

        def ratio(text: str, value: float) -> None:
            print(f"    {text:<58} {value:8.2f}x")

        ratio("seed notebook / project (target >= 2.50)",
              times[f"{label}, seed notebook"] / project)
        ratio("notebook layout, our prompts / project",
              times[f"{label}, notebook layout, our prompts"] / project)
        ratio("gate off / gate on", times[f"{label}, project, prefill gate off"] / project)
        off = times[f"{label}, project, evidence off"]
        print(f"    {'evidence checks: extra wall time (target <= 15%)':<58} "
              f"{(project - off) / off:8.1%}")
        unjudged_time = times[f"{label}, project, judge off"]
        requests_, prompt, completion = spent[f"{label}, project (the defaults)"]
        print(f"    {'judgements: requests, prompt tokens, completion tokens':<58} "
              f"{requests_:8d}   {prompt:,} / {completion:,}")
        print(f"    {'judgements: extra wall time over judge off':<58} "
              f"{project - unjudged_time:8.1f} s   {(project - unjudged_time) / unjudged_time:6.1%}")
    print(f"  ideal cache-hit fraction (every shared prefix prefilled once): "
          f"{cache_hit_ideal(default, model.page_tokens):.1%}")
    if over is not None:
        seconds, result = over
        parts = [c for r, c in zip(result.requests, result.completions, strict=True)
                 if r.kind == CONTINUE]
        cut = sum(1 for r, c in with_continuations(result.pairs())
                  if r.kind != CONTINUE and c.ok and c.truncated)
        print(f"  prose answers of {args.over_budget_tokens:,} tokens, over their budget "
              f"(cache-aware, the defaults otherwise): {seconds:.1f} s, "
              f"{seconds / times['cache-aware, project (the defaults)']:.2f}x the defaults' run")
        print(f"    {'continuations: requests, prompt (cached) / completion tokens':<58} "
              f"{len(parts):8d}   {sum(c.usage.prompt_tokens or 0 for c in parts):,} "
              f"({sum(c.usage.cached_tokens or 0 for c in parts):,}) / "
              f"{sum(c.usage.completion_tokens or 0 for c in parts):,}")
        print(f"    {'answers still cut after their continuations':<58} {cut:8d}")


def over_budget(args: argparse.Namespace, config: Config, ours: Sequence[PromptRequest],
                bundle: Bundle, evidence: FollowUp, served: str
                ) -> tuple[float, SynthesisResult]:
    """The defaults against a model whose prose answers outgrow their budget: each is
    continued (synthesis/continuation.py), and what that costs is counted."""
    model = Model(args.prefill_tps, args.decode_tps, args.over_budget_tokens,
                  args.reasoning_tokens, args.structured_tokens, scale=args.scale,
                  cache_blind=False)
    server = ServerProcess(model, served).start()
    try:
        client = ChatClient(server.base_url, served, "bench", timeout=600, max_retries=0)
        client.served_models()
        info = ServerProbe(requests.Session(), server.base_url, "bench").server_info()
        with tempfile.TemporaryDirectory() as cache:
            started = time.perf_counter()
            result = run_batch(ours, client, Cache(Path(cache)), bundle_chars=bundle.chars,
                               bundle_tokens=bundle.estimated_tokens,
                               max_concurrency=config.llm.max_concurrency,
                               server_info=functools.partial(dict, info or {}),
                               prefill_gate=config.llm.prefill_gate, follow_up=evidence,
                               kinds=BUILTIN_KINDS)
            seconds = (time.perf_counter() - started) / args.scale
    finally:
        server.stop()
    assert all(c.ok for c in result.completions), [c.error for c in result.completions]
    return seconds, result


if __name__ == "__main__":
    main()
