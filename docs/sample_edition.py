"""The scripted model of the documentation's sample edition: its answers about the seven real
LLM-inference papers of docs/sample_papers.py, checked as a real build checks them.

The answers are written for the screenshots, as a model would write them: each sentence that
cites a paper comes with a quote copied from that paper's abstract, which the evidence check
finds there, and with the verdict the judge gives it. Nothing here is used by the tests.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from sample_papers import SAMPLES  # beside this file

from tests.servers.sglang import (
    Answer,
    is_evidence,
    is_judgement,
    is_structured,
    task_of,
    thinking_of,
)


@dataclass(frozen=True)
class Line:
    """A sentence of the scripted answers, the paper it cites, the quote the evidence check
    returns for it (copied from that paper's abstract) and the judge's verdict."""

    text: str  # "{vllm}" stands for "Paper N", the paper's number in the bundle
    quote: str
    verdict: str = "supports"

    def is_in(self, sentence: str) -> bool:
        """Whether a claim's sentence is this line's (its words after the citation)."""
        return self.text.split("}", 1)[1][:30] in sentence


FIELD = (
    Line("{vllm} stores the KV cache in fixed-size blocks, the way an operating system pages "
         "memory, and reports 2-4× the throughput of FasterTransformer and Orca at the same "
         "latency.",
         "improves the throughput of popular LLMs by 2-4× with the same level of latency "
         "compared to the state-of-the-art systems, such as FasterTransformer and Orca"),
    Line("{sglang} reuses the KV cache across the calls of a program and reports up to 6.4× "
         "higher throughput than other inference systems.",
         "SGLang achieves up to 6.4× higher throughput compared to state-of-the-art inference "
         "systems"),
    Line("{specdec} makes decoding faster by running the large model in parallel on a small "
         "model's guesses, without changing the output distribution.",
         "by running them in parallel on the outputs of the approximation models, potentially "
         "generating several tokens concurrently, and without changing the distribution"),
    Line("{eagle} drafts features rather than tokens and reports a 2.7x-3.5x latency speedup "
         "on LLaMA2-Chat 70B.",
         "For LLaMA2-Chat 70B, EAGLE achieved a latency speedup ratio of 2.7x-3.5x"),
    Line("{distserve} runs prefill and decoding on different GPUs, so that neither phase "
         "slows the other.",
         "DistServe assigns prefill and decoding computation to different GPUs, hence "
         "eliminating prefill-decoding interferences"),
)
THEMES_LINES = (
    Line("{medusa} drops the separate draft model: extra decoding heads on the model itself "
         "predict several tokens in parallel.",
         "adding extra decoding heads to predict multiple subsequent tokens in parallel"),
    Line("{sarathi} splits each prefill into chunks and adds new requests to a running batch "
         "without pausing ongoing decodes.",
         "splits a prefill request into near equal sized chunks and creates stall-free "
         "schedules that adds new requests in a batch without pausing ongoing decodes"),
)
DEEP = (
    Line("{medusa} is lossless in both of its fine-tuning modes.",
         "Medusa-1: Medusa is directly fine-tuned on top of a frozen backbone LLM, enabling "
         "lossless inference acceleration", "partly"),
    Line("{sarathi} reports 2.6x higher serving capacity than vLLM for Mistral-7B on a "
         "single A100.",
         "For Mistral-7B on single A100 GPUs, we achieve 2.6x higher serving capacity"),
    Line("{distserve} serves 7.4x more requests than state-of-the-art systems.",
         "DistServe can serve 7.4x more requests or 12.6x tighter SLO, compared to "
         "state-of-the-art systems"),
    Line("{vllm} also shares KV-cache blocks within and across requests.",
         "flexible sharing of KV cache within and across requests to further reduce memory "
         "usage"),
    Line("{sglang} reports its 6.4× gain on multi-turn chat alone.",
         "SGLang achieves up to 6.4× higher throughput compared to state-of-the-art inference "
         "systems on various large language and multi-modal models", "does_not"),
)
LINES = (*FIELD, *THEMES_LINES, *DEEP)


def numbers(body: dict[str, Any]) -> dict[str, int]:
    """The bundle's number of each sample paper, read from its "## Paper N: title" lines."""
    found = {}
    for number, title in re.findall(r"^## Paper (\d+): (.*)$", str(body["messages"][1]["content"]),
                                    re.MULTILINE):
        for sample in SAMPLES:
            if sample.title.startswith(title.strip()[:40]):
                found[sample.key] = int(number)
    return found


def said(line: Line, cited: dict[str, int]) -> str:
    return line.text.format(**{k: f"Paper {n}" for k, n in cited.items()})


def research_map(cited: dict[str, int]) -> str:
    return (
        "## Field overview\n\n"
        "This edition's papers attack the two costs of serving a large model: the memory its "
        "KV cache takes, and the one-token-at-a-time decode loop. "
        + " ".join(said(line, cited) for line in FIELD) + "\n\n"
        "## Research themes\n\n"
        "**KV-cache memory.** PagedAttention and SGLang treat the cache as memory to page "
        "and share, not as one buffer per request. " + said(DEEP[3], cited) + "\n\n"
        "**Speculative decoding.** Guess several tokens, check them in one pass. "
        + said(THEMES_LINES[0], cited) + "\n\n"
        "**Scheduling prefill and decode.** Keep the compute-heavy prefill from stalling the "
        "latency-bound decode. " + said(THEMES_LINES[1], cited) + "\n\n"
        "## Chronological progression\n\n"
        "Speculative decoding came first, in 2022; paging the KV cache and reusing it across "
        "calls followed in 2023. In early 2024 the drafts moved into the model (Medusa, EAGLE) "
        "and the schedulers split prefill from decode (DistServe, Sarathi-Serve).\n\n"
        "## Open problems\n\n"
        "- How speculation behaves at large batch sizes, where the spare compute runs out.\n"
        "- Moving the KV cache between GPUs when prefill and decode run apart.\n\n"
        "## Ready to deploy\n\n"
        "1. A paged KV cache (PagedAttention), in every major serving engine.\n"
        "2. Chunked prefills (Sarathi-Serve), a scheduler setting.\n"
        "3. Prefix reuse (SGLang), for agents and multi-turn chat.\n")


def deep_dive(task: str, cited: dict[str, int]) -> str:
    if "memory-management" in task:
        return ("## Memory management\n\n" + said(FIELD[0], cited) + " " + said(DEEP[3], cited)
                + " " + said(FIELD[1], cited) + "\n\nThe speculative papers add little memory: "
                "Medusa's heads and EAGLE's draft sit on the model itself.\n")
    if "benchmarks" in task:
        return ("## Benchmarks and metrics\n\n" + said(DEEP[1], cited) + " "
                + said(DEEP[2], cited) + " " + said(FIELD[3], cited) + " " + said(DEEP[4], cited)
                + "\n\nMissing: energy, cost per token, and behaviour under failures.\n")
    return ("## Engineering roadmap\n\n1. A paged KV cache first: " + said(FIELD[0], cited)
            + "\n2. Then chunked prefills: " + said(THEMES_LINES[1], cited)
            + "\n3. Then speculation, where batches are small: " + said(DEEP[0], cited) + "\n")


def thinking(cited: dict[str, int]) -> Answer:
    content = ("Speculative decoding wins while the GPU has compute to spare, at small batches; "
               "continuous batching wins once the batch fills the GPU. "
               + said(FIELD[2], cited) + " " + said(THEMES_LINES[1], cited)
               + " For bursty traffic: batch always, and speculate only below a batch size "
               "you measure; the bundle gives no such threshold.\n")
    return Answer(content=content, reasoning=(
        "Speculation spends compute to save serial steps; batching spends memory to fill the "
        "GPU. They compete for the same compute."))


def brief(body: dict[str, Any]) -> Answer:
    first = str(body["messages"][1]["content"]).split("\n", 1)[0].split(": ", 1)[-1]
    sample = next(s for s in SAMPLES if s.title.startswith(first.strip()[:40]))
    return Answer(json.dumps({
        "tldr": sample.tldr, "problem": sample.abstract.split(". ")[0] + ".",
        "method": sample.tldr, "result": sample.result, "limitations": sample.limitations}))


def responder(body: dict[str, Any]) -> Answer:
    """Answers for every request of the sample edition, as the SGLang-shaped test server
    would send them."""
    if is_evidence(body):
        task = next(str(m["content"]) for m in body["messages"] if "Evidence check." in m["content"])
        entries = []
        for claim, paper, sentence in re.findall(r"^\[(\d+)\] \(cites Paper (\d+)[^)]*\) (.*)$",
                                                 task, re.MULTILINE):
            line = next((ln for ln in LINES if ln.is_in(sentence)), None)
            entries.append({"claim": int(claim), "paper": int(paper),
                            "quote": line.quote if line else ""})
        return Answer(json.dumps({"claims": entries}))
    if is_judgement(body):
        task = next(str(m["content"]) for m in body["messages"] if "Support check." in m["content"])
        verdicts = []
        listed = task.split("Claims:\n", 1)[-1].split("\n\n", 1)[0]  # a JSON line a claim
        for entry in (json.loads(ln) for ln in listed.splitlines() if ln.startswith("{")):
            claim, sentence = entry["claim"], str(entry["sentence"])
            line = next((ln for ln in LINES if ln.is_in(sentence)), None)
            verdict = line.verdict if line else "does_not"
            verdicts.append({"claim": int(claim), "verdict": verdict, "reason": {
                "supports": "The quote states it, figures included.",
                "partly": "The quote says so of Medusa-1 only.",
                "does_not": "The quote is about something else."}[verdict]})
        return Answer(json.dumps({"claims": verdicts}))
    if is_structured(body):
        task = str(body["messages"][1]["content"]).rsplit("\n---\n", 1)[-1]
        if '"themes"' in task:
            cited = numbers(body)
            return Answer(json.dumps({"themes": [
                {"name": "KV-cache memory", "description": "Paging and sharing the KV cache.",
                 "papers": [cited["vllm"], cited["sglang"]]},
                {"name": "Speculative decoding",
                 "description": "Several tokens guessed, checked in one pass.",
                 "papers": [cited["specdec"], cited["medusa"], cited["eagle"]]},
                {"name": "Scheduling prefill and decode",
                 "description": "Keeping prefills from stalling decodes.",
                 "papers": [cited["distserve"], cited["sarathi"]]}]}))
        return brief(body)
    cited = numbers(body)
    if thinking_of(body):
        return thinking(cited)
    task = task_of(body)
    if "Write a research map" in task:
        return Answer(research_map(cited))
    if "memory-management" in task or "benchmarks" in task or "roadmap" in task:
        return Answer(deep_dive(task, cited))
    return Answer(thinking(cited).content)
