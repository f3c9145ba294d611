"""Benchmark: triage of a 200-paper window against a latency-modelled server.

    python bench/triage.py [--candidates 200] [--scale 0.5] [--prefill-tps 12000] [--marks 20]

Scores `--candidates` papers (the recorded arXiv feeds' papers, repeated under new ids to fill
the window) as `digest build` does with `[triage] interests` set and the other settings of the
config.toml that `digest init` writes: one structured request a paper, the instructions and
interests first (one shared prefix), the paper last, sent at the server's pace (its
`/server_info`). Beside it, in the same run: the seed's sequential style (one request at a
time), the true floor (max(the longest request's prefill and decode, every distinct prefill
plus the shortest decode, the decode work spread over the server's running requests)), and the
ideal cache-hit fraction (every shared prefix prefilled once), and the project again with the
reader's `--marks` marked papers in the shared prefix (feedback.py: half "more", half "less",
their abstracts cut as [feedback] example_chars says), whose cache hits must not drop. Model
seconds, as in bench/synthesis.py; see README.md, "Benchmarks".
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import tempfile
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.latency_server import CHARS_PER_TOKEN, Model, ServerProcess, prompt_text  # noqa: E402
from bench.synthesis import body_of, replay  # noqa: E402
from generator.completions import PromptRequest  # noqa: E402
from generator.config import load_config  # noqa: E402
from generator.fetch.arxiv_source import ArxivSource, RateLimiter, RecordingSession  # noqa: E402
from generator.papers import Window  # noqa: E402
from generator.prompts.kinds import BUILTIN_KINDS  # noqa: E402
from generator.store.cache import Cache  # noqa: E402
from generator.synthesis.dispatch import concurrency  # noqa: E402
from generator.synthesis.llm_client import ChatClient  # noqa: E402
from generator.synthesis.server import ServerProbe  # noqa: E402
from generator.synthesis.triage import Example, run_triage, triage_request  # noqa: E402
from generator.text.safe_text import cut  # noqa: E402
from tests.conftest import FIXTURES  # noqa: E402
from tests.servers.arxiv import ArxivServer  # noqa: E402

INTERESTS = """Software testing and its automation: fuzzing, test generation for APIs and GUIs,
mutation testing, flaky and intermittently failing tests, testing of machine-learning systems.
Not interested in statistical hypothesis testing or medical trials."""


def window(count: int, max_abstract_chars: int) -> Window:
    """`count` papers: the recorded feeds' papers, then the same again under new ids."""
    server = ArxivServer(FIXTURES).start()
    try:
        source = ArxivSource(RecordingSession(timeout=10), server.api_url, RateLimiter(0))
        server.state.window = [f"arxivpy2026_search_testing_start{s}_max10.xml"
                               for s in (0, 10, 20)]
        found = list(source.search_window("testing", 1000, max_abstract_chars).papers)
    finally:
        server.stop()
    papers = [dataclasses.replace(found[i % len(found)], arxiv_id=f"2611.{i:05d}v1",
                                  abs_url=f"https://arxiv.org/abs/2611.{i:05d}v1")
              for i in range(count)]
    return Window(tuple(papers), count, False)


def floor(request_list: list[PromptRequest], model: Model, slots: int) -> float:
    """No schedule on this server beats the largest of: one request's prefill and decode; every
    distinct prefill and the shortest decode; all decode work spread over `slots`."""
    bodies = [body_of(r) for r in request_list]
    decodes = [sum(model.decode(b)) / model.decode_tps for b in bodies]
    _, uncached = replay(request_list, [""] * len(request_list), model.page_tokens)
    chain = max(len(prompt_text(b)) // CHARS_PER_TOKEN / model.prefill_tps + d
                for b, d in zip(bodies, decodes, strict=True))
    prefills = sum(uncached.values()) / model.prefill_tps + min(decodes)
    return max(chain, prefills, math.ceil(len(bodies) / slots) * min(decodes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--candidates", type=int, default=200)
    parser.add_argument("--scale", type=float, default=0.5, help="real seconds per model second")
    parser.add_argument("--prefill-tps", type=float, default=12_000)
    parser.add_argument("--decode-tps", type=float, default=80)
    parser.add_argument("--page-tokens", type=int, default=64,
                        help="the prefix cache's page (FlashMLA's, as DeepSeek V4 runs on SGLang)")
    parser.add_argument("--marks", type=int, default=20,
                        help="marked papers shown to triage in the second project run")
    parser.add_argument("--answer-tokens", type=int, default=70,
                        help="a triage answer: a score, a reason of up to 30 words, interests")
    args = parser.parse_args()
    config = load_config(ROOT / "config.toml", registry=BUILTIN_KINDS)
    settings = dataclasses.replace(config.triage, interests=INTERESTS)
    papers = window(args.candidates, config.arxiv.max_abstract_chars)
    model = Model(args.prefill_tps, args.decode_tps, structured_tokens=args.answer_tokens,
                  page_tokens=args.page_tokens, scale=args.scale, cache_blind=False)
    server = ServerProcess(model, config.llm.model).start()
    try:
        client = ChatClient(server.base_url, config.llm.model, "bench", timeout=600,
                            max_retries=0)
        client.served_models()  # import openai and open the client before any timing
        probe = ServerProbe(requests.Session(), server.base_url, "bench")
        info = probe.server_info()
        with tempfile.TemporaryDirectory() as cache:
            started = time.perf_counter()
            triage = run_triage(papers, "bench", args.candidates, settings,
                                config.arxiv.max_papers, client, Cache(Path(cache)),
                                language=config.digest.language,
                                max_concurrency=config.llm.max_concurrency,
                                server_info=probe.server_info, kinds=config.registry)
            ours = (time.perf_counter() - started) / args.scale
        stats = server.stats
        hits = stats.cached_tokens / stats.prompt_tokens
        examples = [Example("more" if i % 2 == 0 else "less", p.base_id, p.title,
                            cut(p.abstract, config.feedback.example_chars))
                    for i, p in enumerate(papers.papers[-args.marks:] if args.marks else [])]
        server.reset()
        with tempfile.TemporaryDirectory() as cache:
            started = time.perf_counter()
            run_triage(papers, "bench", args.candidates, settings, config.arxiv.max_papers,
                       client, Cache(Path(cache)), language=config.digest.language,
                       max_concurrency=config.llm.max_concurrency,
                       server_info=probe.server_info, examples=examples,
                       kinds=config.registry)
            marked_s = (time.perf_counter() - started) / args.scale
        marked_hits = server.stats.cached_tokens / server.stats.prompt_tokens
        request_list = [triage_request(i, p, settings, config.digest.language)
                        for i, p in enumerate(papers.papers)]
        server.reset()
        started = time.perf_counter()
        for request in request_list:  # the seed's style: one request after another
            client.complete(request)
        sequential = (time.perf_counter() - started) / args.scale
    finally:
        server.stop()
    slots = concurrency(config.llm.max_concurrency, info, len(request_list), 1, 0)
    answers = [""] * len(request_list)  # a triage answer is not continued: its text is moot
    bound = floor(request_list, Model(args.prefill_tps, args.decode_tps,
                                      structured_tokens=args.answer_tokens,
                                      page_tokens=args.page_tokens), slots)
    tokens, uncached = replay(request_list, answers, model.page_tokens)
    ideal = 1 - sum(uncached.values()) / sum(tokens.values())
    scored = sum(c.score is not None for c in triage.candidates)
    print(f"Triage benchmark: {args.candidates} candidates ({scored} scored), prefix of "
          f"{tokens[request_list[1].name] - uncached[request_list[1].name]:,} tokens shared, "
          f"max_concurrency = {config.llm.max_concurrency} -> {slots} in flight; prefill "
          f"{args.prefill_tps:,.0f} tok/s, decode {args.decode_tps:g} tok/s a request, "
          f"{args.answer_tokens} tokens an answer; model seconds")
    print(f"  {'floor':<52} {bound:8.1f} s")
    print(f"  {'project (concurrent, gated on the shared prefix)':<52} {ours:8.1f} s   "
          f"{ours / bound:5.2f}x floor (target <= 1.30)")
    print(f"  {'seed style (one request at a time)':<52} {sequential:8.1f} s   "
          f"{sequential / bound:5.2f}x floor")
    print(f"  {'seed style / project':<52} {sequential / ours:8.2f}x")
    print(f"  {'cache hits of the triage requests':<52} {hits:8.1%}   ideal {ideal:.1%} "
          f"(target: within 5 points)")
    print(f"  {f'project with {len(examples)} marks in the shared prefix':<52} {marked_s:8.1f} s")
    print(f"  {f'cache hits with {len(examples)} marks':<52} {marked_hits:8.1%}   "
          f"without: {hits:.1%} (target: no drop beyond noise)")


if __name__ == "__main__":
    main()
