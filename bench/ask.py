"""Benchmark: `digest ask` over a year of editions: retrieval, the index's cost, one question's.

    python bench/ask.py [--editions 52] [--papers 20] [--repeat 30] [--scale 0.5]

A synthetic archive of `--editions` weekly records of `--papers` papers each (LLM-serving
titles, abstracts, briefs and checked claims drawn from one vocabulary), with planted answers:
for each of twelve questions, five papers across the year that are about its subject, said in
one place only (the title, the abstract, the brief or one checked claim) and in other word
forms than the question's ("evicting" for "eviction"); one of them is seen in three editions (a
revision), which must count once. Measured side by side in one run:

- recall@10 of the planted papers, the index (SQLite FTS5, BM25) against plain substring search
  (each question's words looked up in every paper's text, papers ranked by words found);
- the index built from scratch and updated after one new edition, and a question's median and
  p95 latency, each against the real alternative: reading every record per question;
- one question's cost on bench/latency_server.py's SGLang-shaped server at the settings
  `digest init` writes (config.toml): requests, prompt tokens served from the server's cache,
  and wall time against its floor (the answer's prefill and decode, then its checks'), in the
  model's seconds. The bundle is the archive's records alone (no cached full text).

See docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.latency_server import Model, ServerProcess  # noqa: E402
from bench.synthesis import floor  # noqa: E402
from generator.archive.history import read_record  # noqa: E402
from generator.archive.record import EditionRecord, RecordPaper  # noqa: E402
from generator.archive.values import Brief  # noqa: E402
from generator.ask.index import ArchiveIndex, Hit, paper_document, question_terms  # noqa: E402
from generator.config import load_config  # noqa: E402
from generator.evidence.checks import ClaimCheck  # noqa: E402
from generator.papers import paper_slug  # noqa: E402
from generator.pipeline.ask import ask_stage  # noqa: E402
from generator.pipeline.services import BASE_URL_ENV, make_services, workspace_cache  # noqa: E402
from generator.prompts.kinds import BUILTIN_KINDS  # noqa: E402

TOPICS = ("attention kernels", "KV-cache paging", "quantized weights", "continuous batching",
          "request scheduling", "tensor parallelism", "pipeline parallelism", "CPU offloading",
          "mixture-of-experts routing", "structured sparsity", "kernel fusion",
          "long-context serving", "multi-tenant fairness", "tail latency", "GPU utilisation",
          "prefill chunking", "model distillation", "compiler autotuning", "memory bandwidth",
          "energy per token")
VERBS = ("improves", "reduces", "measures", "revisits", "accelerates", "stabilises", "profiles")
TARGETS = ("chat traffic", "batch inference", "edge devices", "multi-GPU nodes", "serverless",
           "retrieval pipelines", "agents", "code assistants")

# (the question's subject, the planted papers' words for it): another form of each word.
PLANTED = (
    ("speculative decoding", "speculatively decoded drafts"),
    ("radix tree prefix sharing", "prefixes shared in a radix-tree"),
    ("KV cache eviction", "evicting KV-cache entries"),
    ("FP8 quantization", "FP8-quantized activations"),
    ("disaggregated prefill", "prefill disaggregation across nodes"),
    ("LoRA adapter serving", "serving many LoRA adapters"),
    ("grammar constrained decoding", "decoding constrained by a grammar"),
    ("prompt caching", "cached prompts"),
    ("flash attention", "FlashAttention kernels"),
    ("hallucination detection", "detecting hallucinations"),
    ("watermarking generated text", "watermarks in generated text"),
    ("carbon footprint", "carbon footprints of inference"),
)
PLACES = ("title", "abstract", "brief", "claim", "abstract")


def sentence(rng: random.Random) -> str:
    return (f"We {rng.choice(VERBS)} {rng.choice(TOPICS)} and {rng.choice(TOPICS)} for "
            f"{rng.choice(TARGETS)}, with {rng.randint(2, 60)}% gains on "
            f"{rng.choice(TOPICS)}.")


def synthetic_archive(docs: Path, editions: int, per: int, seed: int = 7
                      ) -> dict[str, set[str]]:
    """Write the records; returns each question's planted papers (base ids)."""
    rng = random.Random(seed)
    start = date(2025, 12, 1)
    names = [(start + timedelta(weeks=w)).isoformat() for w in range(editions)]
    planted: dict[str, set[str]] = {q: set() for q, _ in PLANTED}
    slots = rng.sample([(e, n) for e in range(editions) for n in range(1, per + 1)],
                       5 * len(PLANTED))
    plan = {slot: (q, words, PLACES[i % 5])
            for i, (slot, (q, words)) in enumerate(zip(slots, [p for p in PLANTED for _ in range(5)],
                                                        strict=True))}
    # The first planted paper of the first question is revised twice: seen in three editions.
    first = min(slot for slot, plant in plan.items() if plant[0] == PLANTED[0][0]
                and slot[0] + 2 < editions and (slot[0] + 1, slot[1]) not in plan
                and (slot[0] + 2, slot[1]) not in plan)
    revision = {(first[0] + k, first[1]): (first, f"v{k + 1}") for k in (1, 2)}
    for e, edition in enumerate(names):
        papers, briefs, claims = [], {}, []
        for n in range(1, per + 1):
            origin, version = revision.get((e, n), ((e, n), "v1"))
            base = f"25{origin[0]:02d}.{origin[1]:05d}"
            title = f"{rng.choice(TOPICS).title()} {rng.choice(VERBS)} {rng.choice(TARGETS)}"
            abstract = " ".join(sentence(rng) for _ in range(4))
            brief = Brief(sentence(rng), sentence(rng), sentence(rng), sentence(rng), "Few.")
            claim = f"Paper {n} {rng.choice(VERBS)} {rng.choice(TOPICS)}."
            if origin in plan:
                question, words, place = plan[origin]
                planted[question].add(base)
                if place == "title":
                    title = f"{words.title()} for {rng.choice(TARGETS)}"
                elif place == "abstract":
                    abstract += f" Our method rests on {words}."
                elif place == "brief":
                    brief = Brief(f"A study of {words}.", brief.problem, brief.method,
                                  brief.result, brief.limitations)
                else:
                    claim = f"Paper {n} shows that {words} pay off."
            arxiv_id = base + version
            papers.append(RecordPaper(n, arxiv_id, base, paper_slug(arxiv_id), title,
                                      "new" if version == "v1" else "updated",
                                      ("A. Author", "B. Writer"), edition, ("cs.LG",), abstract,
                                      f"https://arxiv.org/abs/{arxiv_id}", name=title[:40]))
            briefs[n] = brief
            claims.append(ClaimCheck(claim, (n,), "supported", " ".join(abstract.split()[:12]),
                                     n, "", f"research-map#{n}"))
        record = EditionRecord(edition, "Synthetic Digest", f"{edition}T06:00:00+00:00",
                               tuple(papers), (), names={p.number: p.name for p in papers},
                               briefs=briefs, checks={"research-map": tuple(claims)})
        path = docs / "editions" / edition / "edition.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record.to_json()), encoding="utf-8")
    return planted


def questions() -> list[str]:
    return [f"What have we seen on {q}, and do the papers agree?" for q, _ in PLANTED]


def files(docs: Path) -> list[tuple[str, Path]]:
    return sorted((p.parent.name, p) for p in docs.glob("editions/*/edition.json"))


def substring_search(docs: Path, question: str, limit: int) -> list[str]:
    """The real alternative: read every record, and rank every paper by how many of the
    question's words its text contains (newest edition first among equals)."""
    terms = question_terms(question)
    best: dict[str, tuple[int, str]] = {}
    for _, path in files(docs):
        record = read_record(path)
        for paper in record.papers:
            text = " ".join(paper_document(record, paper).values()).casefold()
            score = sum(1 for t in terms if t in text)
            if score and (paper.base_id not in best or best[paper.base_id][0] < score):
                best[paper.base_id] = (score, record.edition)
    ranked = sorted(best, key=lambda b: (-best[b][0], best[b][1]), reverse=False)
    return ranked[:limit]


def recall(found: list[str], planted: set[str]) -> float:
    return len(set(found) & planted) / len(planted)


def timed(work: Callable[[], object], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        out.append(time.perf_counter() - started)
    return out


def p95(values: list[float]) -> float:
    return sorted(values)[max(0, int(len(values) * 0.95) - 1)]


def one_question_cost(docs: Path, scale: float) -> None:
    """One question at the defaults against the latency-modelled SGLang server."""
    workspace = docs.parent
    shutil.copy(ROOT / "config.toml", workspace / "config.toml")
    model = Model(scale=scale)
    server = ServerProcess(model, "deepseek-ai/DeepSeek-V4-Flash").start()
    try:
        config = load_config(workspace / "config.toml", registry=BUILTIN_KINDS)
        services = make_services(config, {BASE_URL_ENV: server.base_url}, workspace_cache(config))
        services.chat.served_models()  # type: ignore[attr-defined]  # warm the client
        server.reset()
        started = time.perf_counter()
        asked = ask_stage(config, services, questions()[2])
        wall = (time.perf_counter() - started) / scale
        stats = server.stats
    finally:
        server.stop()
    assert asked.result is not None and asked.record is not None
    chain, prefills = floor(asked.result, model)
    bound = max(chain, prefills)
    checks = sum(1 for r in asked.result.requests if r.kind == "evidence")
    print(f"One question at the defaults ({len(asked.record.papers)} papers read, answer of "
          f"{model.answer_tokens} tokens; prefill {model.prefill_tps:,.0f} tok/s, decode "
          f"{model.decode_tps:g} tok/s; model seconds)")
    print(f"  {'requests: the answer + its evidence checks':<58} 1 + {checks}")
    print(f"  {'prompt tokens (served from the server cache)':<58} {stats.prompt_tokens:,} "
          f"({stats.cached_tokens / stats.prompt_tokens:.1%})")
    print(f"  {'wall time':<58} {wall:8.1f} s   {wall / bound:5.2f}x floor")
    print(f"  {'floor: the answer, then its checks side by side':<58} {bound:8.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--editions", type=int, default=52)
    parser.add_argument("--papers", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=30, help="timed runs of each question set")
    parser.add_argument("--scale", type=float, default=0.5,
                        help="real seconds per model second for the latency server")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory() as folder:
        docs = Path(folder) / "site_src"
        planted = synthetic_archive(docs, args.editions, args.papers)
        asked = questions()
        index = ArchiveIndex(Path(folder) / ".cache" / "archive-index.sqlite")
        def rebuild() -> None:
            index.path.unlink(missing_ok=True)
            index.update(files(docs), read_record)

        build = timed(rebuild, 3)
        by_index = [[h.base_id for h in index.search(q, 10)] for q in asked]
        by_substring = [substring_search(docs, q, 10) for q in asked]
        ours = statistics.mean(recall(f, planted[q]) for f, (q, _) in
                               zip(by_index, PLANTED, strict=True))
        theirs = statistics.mean(recall(f, planted[q]) for f, (q, _) in
                                 zip(by_substring, PLANTED, strict=True))
        extra = docs / "editions" / "2026-12-07"
        shutil.copytree(docs / "editions" / sorted(p.name for p in
                                                   (docs / "editions").iterdir())[-1], extra)
        record = json.loads((extra / "edition.json").read_text(encoding="utf-8"))
        record["edition"] = "2026-12-07"
        (extra / "edition.json").write_text(json.dumps(record), encoding="utf-8")
        started = time.perf_counter()
        update = index.update(files(docs), read_record)
        incremental = time.perf_counter() - started
        assert update.added == ("2026-12-07",) and update.kept == args.editions
        query = timed(lambda: [index.search(q, 10) for q in asked], args.repeat)
        scan = timed(lambda: [substring_search(docs, q, 10) for q in asked],
                     max(3, args.repeat // 10))
        per_query = [t / len(asked) for t in query]
        per_scan = [t / len(asked) for t in scan]
        hits: list[Hit] = index.search(asked[0], 10)
        revised = [h for h in hits if len(h.editions) > 1]
        total = args.editions * args.papers
        print(f"Ask benchmark: {args.editions} editions x {args.papers} papers ({total:,} "
              f"paper records), {len(asked)} questions, 5 planted papers each")
        print(f"  {'recall@10, index (FTS5, BM25)':<58} {ours:8.2f}   (target >= 0.90)")
        print(f"  {'recall@10, plain substring search':<58} {theirs:8.2f}")
        missed = [f"{q} ({recall(f, planted[q]):.1f})" for f, (q, _) in
                  zip(by_index, PLANTED, strict=True) if recall(f, planted[q]) < 1]
        print(f"  {'index: questions below full recall':<58} {', '.join(missed) or 'none'}")
        print(f"  {'a paper of three editions counted once':<58} "
              f"{'yes' if revised and len(revised[0].editions) == 3 else 'NO'}")
        scan_median = statistics.median(per_scan)
        build_time = min(build)
        print(f"  {'index built from scratch':<58} {build_time * 1000:8.1f} ms   "
              f"{build_time / scan_median:5.1f}x one question by reading every record")
        print(f"  {'index updated after one new edition':<58} {incremental * 1000:8.1f} ms   "
              f"{incremental / build_time:5.3f}x a build from scratch")
        print(f"  {'question, index: median / p95':<58} "
              f"{statistics.median(per_query) * 1000:6.2f} / {p95(per_query) * 1000:.2f} ms")
        print(f"  {'question, reading every record: median / p95':<58} "
              f"{scan_median * 1000:6.1f} / {p95(per_scan) * 1000:.1f} ms")
        print(f"  {'reading every record / index (median)':<58} "
              f"{scan_median / statistics.median(per_query):8.1f}x")
        one_question_cost(docs, args.scale)


if __name__ == "__main__":
    main()
