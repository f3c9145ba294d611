"""A reader's fortnight, on fixed objects: two weekly editions and a published question.

Edition 1 covers PagedAttention, SpecDecode and KVQuant. Edition 2 brings PagedAttention in a
revised version, KVQuant in a version that withdraws it, and two new papers: TreeDraft (a
follow-up of SpecDecode, by its arXiv id) and Chunked Prefill. The answers are written the
way DeepSeek-V4-Flash writes them (sections, a table, "Paper 3 (PagedAttention)", lists), and
the evidence is every kind a run meets: quotes found and judged to back, partly back or not
back their sentence, a judgement that came back empty, a quote from the wrong paper, a quote
not in the paper (the withdrawn version no longer says it), a sentence citing two papers with
a quote from only one, a phantom citation ("Papers 1 and 9"), a comparison whose "Disagrees:"
line the digest reads, and a question over the archive.

Everything goes through the product's own code (request builders, the evidence requests and
judgements a run makes, the checks, assembly, the record), with the model's answers given
here by request and the clock fixed: the input of the surface-by-surface golden files and of
the one-verdict-everywhere tests.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path

from generator.archive.history import History
from generator.archive.question_record import QuestionRecord
from generator.archive.record import EditionRecord
from generator.ask.archive import fitted_bundle, gather
from generator.ask.index import Hit
from generator.completions import Completion, PromptRequest, SynthesisResult, Usage
from generator.config import Config
from generator.config.prompts import DeepDivePrompt
from generator.edition.assemble import assemble
from generator.edition.inputs import EditionInputs
from generator.edition.model import Edition
from generator.evidence.follow_ups import FollowUps
from generator.kinds import ASK, BRIEF, EVIDENCE, JUDGE
from generator.papers import (
    Bundle,
    FetchResult,
    FullText,
    Lookup,
    NumberedPaper,
    Paper,
    Source,
)
from generator.pipeline.ask import question_record
from generator.prompts.builders import build_requests
from generator.prompts.kinds import BUILTIN_KINDS
from generator.synthesis.batch import FollowUp

FIRST, SECOND = "2026-11-30", "2026-12-07"
ASKED_AT = "2026-12-08T09:00:00+00:00"
QUESTION = "Which papers speed up decoding at small batch sizes, and do they agree?"


def _paper(arxiv_id: str, title: str, authors: tuple[str, ...], day: str, abstract: str,
           withdrawn: bool = False) -> Paper:
    return Paper(arxiv_id, title, authors, day, day, abstract, ("cs.LG", "cs.DC"),
                 f"https://arxiv.org/abs/{arxiv_id}",
                 None if withdrawn else f"https://arxiv.org/pdf/{arxiv_id}")


PAGED = _paper(
    "2611.00101v1", "PagedAttention: Virtual Memory for the KV Cache", ("Ada Kwon", "Bo Li"),
    "2026-11-20",
    "We present PagedAttention, an attention algorithm that stores the key-value cache in "
    "fixed-size blocks, as an operating system pages virtual memory. It keeps KV-cache "
    "fragmentation under 4% and raises serving throughput by 2.2x over contiguous allocation "
    "at the same latency.")
SPEC = _paper(
    "2611.00102v1", "SpecDecode: Speculative Decoding at Scale", ("Cy Chen", "Di Park"),
    "2026-11-21",
    "SpecDecode drafts several tokens with a small model and verifies them in one pass of the "
    "target model. At batch size 1 it cuts decoding latency by 2.8x, but the gain shrinks as "
    "the batch grows and vanishes at batch size 32.")
QUANT = _paper(
    "2611.00103v1", "KVQuant: 4-bit Quantization of the KV Cache", ("Eve Zhou",),
    "2026-11-22",
    "KVQuant quantizes the key-value cache to 4 bits with per-channel scales. It keeps "
    "perplexity within 0.1 of FP16 while cutting cache memory by 3.7x, which lets a single "
    "GPU hold contexts of one million tokens.")
PAGED_V2 = replace(
    PAGED, arxiv_id="2611.00101v2", updated="2026-12-01",
    abstract="We present PagedAttention, an attention algorithm that stores the key-value "
             "cache in fixed-size blocks, as an operating system pages virtual memory. It "
             "keeps KV-cache fragmentation under 4% and raises serving throughput by 2.4x over "
             "contiguous allocation at the same latency, and adds copy-on-write sharing of "
             "blocks between sequences.",
    abs_url="https://arxiv.org/abs/2611.00101v2", pdf_url="https://arxiv.org/pdf/2611.00101v2")
WITHDRAWAL = ("This paper has been withdrawn by the authors due to an error in the perplexity "
              "evaluation.")
QUANT_GONE = replace(QUANT, arxiv_id="2611.00103v2", updated="2026-12-02", abstract=WITHDRAWAL,
                     abs_url="https://arxiv.org/abs/2611.00103v2", pdf_url=None)
TREE = _paper(
    "2612.00201v1", "TreeDraft: Tree-Shaped Drafts for Speculative Decoding",
    ("Fay Gupta", "Gil Ortiz"), "2026-12-03",
    "TreeDraft extends SpecDecode (arXiv:2611.00102) with tree-shaped drafts that the target "
    "model verifies in one pass. It accepts 3.1 tokens per step on average and cuts latency by "
    "3.4x at batch size 1, but at batch size 64 it is 18% slower than plain decoding.")
CHUNK = _paper(
    "2612.00202v1", "Chunked Prefill for Long Prompts", ("Hal Ito",), "2026-12-04",
    "We split long prompts into chunks and interleave their prefill with ongoing decoding. On "
    "32k-token prompts, time to first token drops by 41% while decoding throughput stays "
    "within 5% of a decode-only batch.")

NAMES = {PAGED.base_id: "PagedAttention", SPEC.base_id: "SpecDecode",
         QUANT.base_id: "KVQuant", TREE.base_id: "TreeDraft", CHUNK.base_id: "Chunked Prefill"}

# The answers, by request name, for each edition.
FIRST_ANSWERS = {
    "research-map": (
        "## Field overview\n\n"
        "Three papers, one theme: serving large models within a GPU's memory. Paper 1 "
        "(PagedAttention) keeps KV-cache fragmentation under 4% by paging the cache. Paper 2 "
        "(SpecDecode) cuts decoding latency by 2.8× at batch size 1. Paper 3 (KVQuant) cuts "
        "cache memory by 3.7× with 4-bit keys and values.\n"),
    "serving-at-scale": (
        "### Memory\n\nPaper 1 (PagedAttention) raises serving throughput by 2.2× over "
        "contiguous allocation.\n"),
    "thinking-off": "## Conclusion\n\nAt batch size 1, Paper 2 (SpecDecode) wins.\n",
    "thinking-on": "## Verdict\n\nPaper 2 (SpecDecode) for latency, Paper 1 (PagedAttention) "
                   "for throughput.\n",
}
SECOND_ANSWERS = {
    "research-map": (
        "## Field overview\n\n"
        "This edition's four papers split into two lines of work: making decoding faster and "
        "making the KV cache cheaper. The speculative line is carried by Paper 1 (TreeDraft), "
        "which extends earlier speculative decoding with tree-shaped drafts and reports 3.4× "
        "lower latency at batch size 1. Paper 2 (Chunked Prefill) attacks the prefill side "
        "instead, cutting time to first token by 41% on 32k-token prompts. Papers 1 and 9 "
        "agree that speculation pays off at every batch size.\n\n"
        "## Memory\n\n"
        "| Paper | Idea | Headline figure |\n|---|---|---|\n"
        "| Paper 3 (PagedAttention) | KV cache in fixed-size blocks | 2.4× throughput |\n"
        "| Paper 4 (KVQuant) | 4-bit KV cache | 3.7× less memory |\n\n"
        "Paper 3 (PagedAttention) keeps fragmentation under 4% by paging the KV cache. Paper 4 "
        "(KVQuant) cuts cache memory by 5×, though its authors have since withdrawn it.\n\n"
        "## Open problems\n\n"
        "Paper 1 (TreeDraft) and Paper 2 (Chunked Prefill) both leave large batches open: "
        "TreeDraft is 18% slower at batch size 64. Neither measures energy.\n"),
    "serving-at-scale": (
        "### Latency\n\n"
        "For latency at small batches, Paper 1 (TreeDraft) is the clear choice: it accepts 3.1 "
        "tokens per step on average. Paper 3 (PagedAttention) adds copy-on-write sharing of "
        "blocks between sequences, which halves the latency of every request.\n\n"
        "### Throughput\n\n"
        "- At large batches Paper 2 (Chunked Prefill) keeps decoding throughput within 5% "
        "while it prefills.\n"),
    "thinking-off": (
        "## Analysis\n\n"
        "At batch size 1, speculative decoding wins: Paper 1 (TreeDraft) cuts latency by "
        "3.4×.\n\n"
        "## Conclusion\n\n"
        "Paper 2 (Chunked Prefill) accepts 3.1 tokens per step.\n"),
    "thinking-on": (
        "## Reasoning summary\n\n"
        "Latency and throughput pull apart as the batch grows.\n\n"
        "## Verdict\n\n"
        "It depends on the batch: Paper 1 (TreeDraft) for latency at batch size 1 and Paper 3 "
        "(PagedAttention) for throughput at large batches.\n"),
    "since-last-edition": (
        "## What is new\n\n"
        "Paper 1 (TreeDraft) builds directly on SpecDecode from the previous edition and "
        "reports a larger latency gain at batch size 1. Paper 3 (PagedAttention) is revised "
        "with a higher throughput figure of 2.4×.\n\n"
        "## What is contradicted\n\n"
        "Paper 1 (TreeDraft) finds speculation 18% slower at batch size 64.\n\n"
        "Disagrees: Paper 1 with [research-map#2]\n"),
}
ANSWER = (
    "Two lines of work speed up decoding at small batches. Paper 1 (TreeDraft) accepts 3.1 "
    "tokens per step and cuts latency by 3.4× at batch size 1. Paper 2 (SpecDecode) cuts "
    "decoding latency by 2.8× at batch size 1. They agree that the gain shrinks at large "
    "batches: Paper 1 (TreeDraft) is 18% slower at batch size 64. Paper 3 (PagedAttention) "
    "reaches 9× throughput.\n")

# Quotes the model gives, by a part of the claim's sentence and the paper it is asked for;
# a (sentence, paper) with none gets an empty quote ("no passage of it supports the claim").
QUOTES: dict[tuple[str, str], str] = {
    ("keeps KV-cache fragmentation", PAGED.base_id): "It keeps KV-cache fragmentation under 4%",
    ("2.8× at batch size 1", SPEC.base_id): "At batch size 1 it cuts decoding latency by 2.8x",
    ("3.7× with 4-bit", QUANT.base_id): "while cutting cache memory by 3.7x",
    ("2.2× over", PAGED.base_id): "raises serving throughput by 2.2x over contiguous allocation",
    ("Paper 2 (SpecDecode) wins", SPEC.base_id): "At batch size 1 it cuts decoding latency",
    ("for latency, Paper 1", SPEC.base_id): "At batch size 1 it cuts decoding latency by 2.8x",
    ("for latency, Paper 1", PAGED.base_id): "raises serving throughput by 2.2x over contiguous",
    ("3.4× lower latency", TREE.base_id): "cuts latency by 3.4x at batch size 1",
    ("41% on 32k-token", CHUNK.base_id): "On 32k-token prompts, time to first token drops by 41%",
    ("Papers 1 and 9", TREE.base_id): "accepts 3.1 tokens per step on average",
    ("2.4× throughput", PAGED.base_id): "raises serving throughput by 2.4x over contiguous",
    ("3.7× less memory", QUANT.base_id): "while cutting cache memory by 3.7x",  # v2: withdrawn
    ("keeps fragmentation under 4%", PAGED.base_id): "It keeps KV-cache fragmentation under 4%",
    ("cuts cache memory by 5×", QUANT.base_id): "It keeps KV-cache fragmentation under 4%",
    ("18% slower at batch size 64", TREE.base_id): "at batch size 64 it is 18% slower than plain "
                                                   "decoding",
    ("accepts 3.1 tokens per step on average", TREE.base_id): "It accepts 3.1 tokens per step on "
                                                              "average",
    ("copy-on-write", PAGED.base_id): "adds copy-on-write sharing of blocks between sequences",
    ("within 5% while", CHUNK.base_id): "decoding throughput stays within 5% of a decode-only "
                                        "batch",
    ("cuts latency by 3.4×.", TREE.base_id): "cuts latency by 3.4x at batch size 1",
    ("Chunked Prefill) accepts 3.1", CHUNK.base_id): "It accepts 3.1 tokens per step on average",
    ("for latency at batch size 1 and", TREE.base_id): "cuts latency by 3.4x at batch size 1",
    ("for latency at batch size 1 and", PAGED.base_id): "raises serving throughput by 2.4x over "
                                                        "contiguous allocation",
    ("larger latency gain", TREE.base_id): "cuts latency by 3.4x at batch size 1",
    ("higher throughput figure", PAGED.base_id): "raises serving throughput by 2.4x over "
                                                 "contiguous allocation",
    ("finds speculation 18% slower", TREE.base_id): "at batch size 64 it is 18% slower than "
                                                    "plain decoding",
    ("Disagrees:", TREE.base_id): "at batch size 64 it is 18% slower than plain decoding",
    ("accepts 3.1 tokens per step and cuts", TREE.base_id): "It accepts 3.1 tokens per step on "
                                                            "average and cuts latency by 3.4x at "
                                                            "batch size 1",
    ("SpecDecode) cuts decoding latency", SPEC.base_id): "At batch size 1 it cuts decoding "
                                                         "latency by 2.8x",
    ("is 18% slower at batch size 64. Paper 3", TREE.base_id): "at batch size 64 it is 18% "
                                                               "slower",
    ("They agree", TREE.base_id): "at batch size 64 it is 18% slower than plain decoding",
    ("9× throughput", PAGED.base_id): "raises serving throughput ninefold in every setting",
}
# The judge's verdict on a claim, by a part of its sentence: "supports" where none is given;
# None: the judgement leaves that claim out (it comes back with no verdict on it).
VERDICTS: dict[str, str | None] = {
    "41% on 32k-token": "partly",
    "copy-on-write": "does_not",
    "within 5% while": None,
    "They agree": "does_not",
    "SpecDecode) cuts decoding latency": "partly",
}
REASONS = {"supports": "The quote states the sentence's figure.",
           "partly": "The quote states only part of the sentence.",
           "does_not": "The quote says something else."}


def config() -> Config:
    """The settings `digest init` writes, with one deep dive and no theme map."""
    base = Config(path=Path("config.toml"), registry=BUILTIN_KINDS)
    prompts = replace(base.prompts, deep_dives=(DeepDivePrompt(
        "Serving at scale", "Which approach should a team serving chat models adopt first?"),),
        themes=replace(base.prompts.themes, enabled=False))
    return replace(base, prompts=prompts,
                   llm=replace(base.llm, thinking_extra_body={"thinking": True}))


def _sentence_of(line: str) -> str:
    return line.split(") ", 1)[1] if ") " in line else line


def evidence_answer(request: PromptRequest, papers: dict[int, Paper],
                    quotes: dict[tuple[str, str], str] | None = None) -> Completion:
    """The quotes a model gives for a check: one entry per claim and cited paper."""
    quotes = QUOTES if quotes is None else quotes
    entries = []
    for number, cited, sentence in re.findall(r"^\[(\d+)\] \(cites ([^)]*)\) (.*)$",
                                              request.messages[-1].content, re.M):
        for paper in (int(n) for n in re.findall(r"Paper (\d+)", cited)):
            base = papers[paper].base_id if paper in papers else ""
            quote = next((q for (part, b), q in quotes.items() if part in sentence and b == base),
                         "")
            entries.append({"claim": int(number), "paper": paper, "quote": quote})
    return Completion(request.name, "m", json.dumps({"claims": entries}), "", "stop",
                      Usage(prompt_tokens=2400, completion_tokens=90, cached_tokens=2048))


def judgement_answer(request: PromptRequest) -> Completion:
    """A verdict for each claim judged, as VERDICTS says (one left out on purpose)."""
    out = []
    for line in request.messages[-1].content.splitlines():
        if not line.startswith('{"claim"'):
            continue
        item = json.loads(line)
        verdict = next((v for part, v in VERDICTS.items() if part in item["sentence"]),
                       "supports")
        if verdict is not None:
            out.append({"claim": item["claim"], "verdict": verdict, "reason": REASONS[verdict]})
    return Completion(request.name, "m", json.dumps({"claims": out}), "", "stop",
                      Usage(prompt_tokens=180, completion_tokens=30))


def answered(requests: list[PromptRequest], answers: dict[str, str],
             papers: dict[int, Paper], follow: FollowUp,
             quotes: dict[tuple[str, str], str] | None = None
             ) -> tuple[list[PromptRequest], list[Completion]]:
    """Every request answered, and the evidence checks and judgements a run would make of
    the answers (FollowUps, as answer_all asks them), answered in turn."""
    asked: list[PromptRequest] = []
    got: list[Completion] = []
    queue = list(requests)
    while queue:
        request = queue.pop(0)
        if request.kind == EVIDENCE:
            completion = evidence_answer(request, papers, quotes)
        elif request.kind == BRIEF:
            paper = papers[request.subject or 0]
            completion = Completion(request.name, "m", json.dumps({
                "tldr": f"{paper.title.split(':')[0]}, in one line.", "problem": "Serving cost.",
                "method": "See the abstract.", "result": "As the abstract says.",
                "limitations": "One setting.", "name": NAMES.get(paper.base_id, "")}),
                "", "stop", Usage(prompt_tokens=900, completion_tokens=80))
        elif request.kind == JUDGE:
            completion = judgement_answer(request)
        else:
            completion = Completion(request.name, "deepseek-ai/DeepSeek-V4-Flash",
                                    answers[request.name],
                                    "First the batch size, then the memory." if request.thinking
                                    else "", "stop",
                                    Usage(prompt_tokens=3100, completion_tokens=640,
                                          cached_tokens=2816,
                                          reasoning_tokens=400 if request.thinking else None),
                                    latency_s=14.2, ttft_s=0.6)
        asked.append(request)
        got.append(completion)
        queue += follow(request, completion)
    return asked, got


def edition_of(name: str, papers: tuple[Paper, ...], answers: dict[str, str],
               published: list[EditionRecord], lookup: Lookup | None = None,
               quotes: dict[tuple[str, str], str] | None = None) -> Edition:
    """An edition assembled as a build assembles it, at a fixed time (each paper's brief
    giving it the name NAMES has for it, where it has one)."""
    settings = config()
    sources = tuple(Source(p, FullText("not_requested")) for p in papers)
    bundle = Bundle(tuple(NumberedPaper(i + 1, s.paper, s.full_text, 0)
                          for i, s in enumerate(sources)), "THE BUNDLE")
    history = History(sorted(published, key=lambda r: r.edition, reverse=True))
    requests = [r for r in build_requests(settings, bundle, history)
                if r.name in answers or r.kind == BRIEF]
    numbered = {p.number: p.paper for p in bundle.papers}
    asked, got = answered(requests, answers, numbered, FollowUps(settings, bundle), quotes)
    synthesis = SynthesisResult("deepseek-ai/DeepSeek-V4-Flash", tuple(asked), tuple(got),
                                len(bundle.text), 7200, 41.5, server="SGLang")
    fetch = FetchResult("cat:cs.LG AND abs:inference", 20, f"{name}T05:00:00+00:00", sources,
                        lookup=lookup)
    inputs, facts = EditionInputs.of_stages(fetch, bundle, synthesis, kinds=settings.registry)
    edition = assemble(name, "Efficient LLM Inference", inputs, facts, published,
                       built_at=f"{name}T06:00:00+00:00", kinds=settings.registry)
    return edition


@dataclass(frozen=True)
class Fortnight:
    first: Edition
    second: Edition
    question: QuestionRecord


def fortnight() -> Fortnight:
    """The two editions and the question, as a reader meets them on Monday."""
    first = edition_of(FIRST, (PAGED, SPEC, QUANT), FIRST_ANSWERS, [])
    second = edition_of(SECOND, (TREE, CHUNK, PAGED_V2, QUANT_GONE), SECOND_ANSWERS,
                        [first.record])
    return Fortnight(first, second, ask({FIRST: first.record, SECOND: second.record}))


def ask(records: dict[str, EditionRecord]) -> QuestionRecord:
    """The question, answered over three papers the archive's index found."""
    settings = config()
    hits = [Hit(p.base_id, -1.0, ()) for p in (TREE, SPEC, PAGED)]
    found = gather(hits, records, {}, lambda edition, arxiv_id: "")
    bundle = fitted_bundle(found, settings.ask.excerpt_chars, None)
    requests = build_requests(settings, bundle, question=QUESTION)
    numbered = {p.number: p.paper for p in bundle.papers}
    asked, got = answered(requests, {"ask": ANSWER}, numbered, FollowUps(settings, bundle))
    result = SynthesisResult("deepseek-ai/DeepSeek-V4-Flash", tuple(asked), tuple(got),
                             len(bundle.text), 3000, 9.0, server="SGLang")
    assert any(r.kind == ASK for r in asked)
    return question_record(settings, QUESTION, found, result, bundle, ASKED_AT,
                           (SECOND, FIRST))
