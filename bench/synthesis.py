"""Benchmark: the synthesis stage of a 20-paper edition against a latency-modelled server.

    python bench/synthesis.py [--scale 0.05] [--prefill-tps 12000] [--decode-tps 80]

Prints, measured side by side in one run, in the model's seconds: the project's synthesis
stage (with and without the prefill gate), the floor (each distinct prefix prefilled once plus
the longest decode), a sequential client with a notebook's prompt layout, and the fraction of
prompt tokens served from the prefix cache. See README.md, "Benchmarks".
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.latency_server import CHARS_PER_TOKEN, LatencyServer, Model  # noqa: E402
from generator.bundle import build_bundle  # noqa: E402
from generator.cache import Cache  # noqa: E402
from generator.config import PromptSettings  # noqa: E402
from generator.fetch.arxiv_source import ArxivSource, RateLimiter, RecordingSession  # noqa: E402
from generator.fetch.pdf_text import extract_text  # noqa: E402
from generator.models import Bundle, FullText, Message, PromptRequest, Source  # noqa: E402
from generator.synthesis.llm_client import ChatClient  # noqa: E402
from generator.synthesis.prompts import build_requests  # noqa: E402
from generator.synthesis.stage import run_synthesis  # noqa: E402
from tests.servers.arxiv import ArxivServer  # noqa: E402

MODEL = "deepseek-ai/DeepSeek-V4-Flash"
THINKING = {"chat_template_kwargs": {"thinking": True}}
FIXTURES = ROOT.parent / "shared" / "fixtures"


def edition_bundle(papers: int = 20, full_text: int = 5, max_pdf_chars: int = 30_000) -> Bundle:
    """A 20-paper bundle from the recorded arXiv feeds, 5 papers with real PDF text."""
    server = ArxivServer(FIXTURES).start()
    try:
        source = ArxivSource(RecordingSession(timeout=10), server.api_url, RateLimiter(0))
        found = []
        for feed, count in (("arxivpy2026_search_testing_start0_max15.xml", 15),
                            ("arxivpy2026_search_testing_start20_max10.xml", 10)):
            server.state.default_feed = feed
            found += source.search("testing", count, 2000)
    finally:
        server.stop()
    unique = list({p.arxiv_id: p for p in found}.values())[:papers]
    pdfs = sorted(p for p in (FIXTURES / "pdfs").glob("*.pdf") if "owner-password" not in p.name)
    sources = []
    for i, paper in enumerate(unique):
        text = (extract_text(pdfs[i].read_bytes(), max_pdf_chars) if i < full_text
                else FullText("not_requested"))
        sources.append(Source(paper, text))
    return build_bundle(sources)


def notebook_requests(requests: list[PromptRequest], bundle: Bundle) -> list[PromptRequest]:
    """The same prompts laid out as a notebook would: the question first, the bundle after it."""
    out = []
    for r in requests:
        task = r.messages[1].content[len(bundle.text):]
        out.append(PromptRequest(
            name=r.name, title=r.title, kind=r.kind, question=r.question,
            messages=(r.messages[0], Message("user", task + "\n\n" + bundle.text)),
            max_tokens=r.max_tokens, temperature=r.temperature, thinking=r.thinking,
            extra_body_json=r.extra_body_json))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=0.05, help="real seconds per model second")
    parser.add_argument("--prefill-tps", type=float, default=12_000)
    parser.add_argument("--decode-tps", type=float, default=80)
    parser.add_argument("--answer-tokens", type=int, default=900)
    parser.add_argument("--reasoning-tokens", type=int, default=1_200)
    parser.add_argument("--cache-aware", action="store_true",
                        help="match the prefix cache when a prefill starts, not on arrival")
    args = parser.parse_args()
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    model = Model(args.prefill_tps, args.decode_tps, args.answer_tokens, args.reasoning_tokens,
                  scale=args.scale, cache_blind=not args.cache_aware)

    bundle = edition_bundle()
    requests = build_requests(PromptSettings(), bundle, THINKING)
    server = LatencyServer(model, MODEL).start()
    client = ChatClient(server.base_url, MODEL, "bench", timeout=600, max_retries=0)

    def project(gate: bool) -> tuple[float, float]:
        server.reset()
        with tempfile.TemporaryDirectory() as cache:
            started = time.perf_counter()
            result = run_synthesis(requests, client, Cache(Path(cache)), bundle_chars=bundle.chars,
                                   bundle_tokens=bundle.estimated_tokens, prefill_gate=gate)
            wall = (time.perf_counter() - started) / model.scale
        assert all(c.ok for c in result.completions), [c.error for c in result.completions]
        return wall, server.stats.cached_tokens / server.stats.prompt_tokens

    def sequential() -> float:
        server.reset()
        plain = ChatClient(server.base_url, MODEL, "bench", timeout=600, max_retries=0, stream=False)
        started = time.perf_counter()
        for request in notebook_requests(requests, bundle):
            plain.complete(request)
        return (time.perf_counter() - started) / model.scale

    gated, hit = project(gate=True)
    ungated, hit_ungated = project(gate=False)
    seq = sequential()
    server.stop()

    prompt_tokens = [sum(len(m.content) for m in r.messages) // CHARS_PER_TOKEN for r in requests]
    modes = {r.thinking for r in requests}
    prefix_tokens = len(requests[0].messages[0].content + bundle.text) // CHARS_PER_TOKEN
    longest_decode = (model.reasoning_tokens + model.answer_tokens) / model.decode_tps
    floor = len(modes) * prefix_tokens / model.prefill_tps + longest_decode
    ideal_hit = (sum(prompt_tokens) - len(modes) * prefix_tokens) / sum(prompt_tokens)

    print(f"Synthesis benchmark: {len(requests)} prompts, bundle of {bundle.estimated_tokens:,} "
          f"tokens ({len(bundle.papers)} papers), prefill {model.prefill_tps:,.0f} tok/s, decode "
          f"{model.decode_tps:g} tok/s/request, {'cache-blind' if model.cache_blind else 'cache-aware'}"
          f" scheduling; times in model seconds")
    rows = [
        ("project synthesis stage (prefill gate on)", gated),
        ("project synthesis stage (prefill gate off)", ungated),
        ("floor: each prefix prefilled once + longest decode", floor),
        ("sequential client, notebook prompt layout", seq),
    ]
    for label, value in rows:
        print(f"  {label:<52} {value:8.1f} s")
    print(f"  {'wall time / floor':<52} {gated / floor:8.2f}x   (target <= 1.20)")
    print(f"  {'sequential / project':<52} {seq / gated:8.2f}x   (target >= 2.50)")
    print(f"  {'prefill gate off / on':<52} {ungated / gated:8.2f}x")
    print(f"  {'prompt tokens from the cache (gate on)':<52} {hit:8.1%}   "
          f"(ideal {ideal_hit:.1%}; gate off {hit_ungated:.1%})")


if __name__ == "__main__":
    main()
