"""The edition the documentation's screenshots show: seven real LLM-inference papers and a
scripted model whose citations are checked against them, as a real build checks them.

The papers are real arXiv papers: their ids, titles, authors, first-submission dates and
abstracts as arXiv lists them (arXiv's metadata is CC0), copied by hand from copies of arXiv's
pages, since the recorded API answers in tests/fixtures/ hold no paper on LLM inference. The
answers are written for the screenshots, as a model would write them: each sentence that cites
a paper comes with a quote copied from that paper's abstract, which the evidence check finds
there, and with the verdict the judge gives it. Nothing here is used by the tests.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from generator.models import Paper
from tests.servers.sglang import (
    Answer,
    is_evidence,
    is_judgement,
    is_structured,
    task_of,
    thinking_of,
)


@dataclass(frozen=True)
class Sample:
    """One paper of the sample edition, named by a key the scripted answers cite it by."""

    key: str
    arxiv_id: str
    title: str
    authors: tuple[str, ...]
    published: str
    categories: tuple[str, ...]
    abstract: str
    tldr: str
    result: str
    limitations: str

    def paper(self) -> Paper:
        return Paper(self.arxiv_id, self.title, self.authors, self.published, self.published,
                     self.abstract, self.categories, f"https://arxiv.org/abs/{self.arxiv_id}",
                     f"https://arxiv.org/pdf/{self.arxiv_id}")


# Newest first, as arXiv answers a query sorted by submission date.
SAMPLES = (
    Sample(
        "sarathi", "2403.02310v3",
        "Taming Throughput-Latency Tradeoff in LLM Inference with Sarathi-Serve",
        ("Amey Agrawal", "Nitin Kedia", "Ashish Panwar", "Jayashree Mohan", "Nipun Kwatra",
         "Bhargav S. Gulavani", "Alexey Tumanov", "Ramachandran Ramjee"),
        "2024-03-04", ("cs.LG", "cs.DC"),
        "Each LLM serving request goes through two phases. The first is prefill which processes "
        "the entire input prompt and produces the first output token and the second is decode "
        "which generates the rest of output tokens, one-at-a-time. Prefill iterations have high "
        "latency but saturate GPU compute due to parallel processing of the input prompt. In "
        "contrast, decode iterations have low latency but also low compute utilization because "
        "a decode iteration processes only a single token per request. This makes batching "
        "highly effective for decodes and consequently for overall throughput. However, "
        "batching multiple requests leads to an interleaving of prefill and decode iterations "
        "which makes it challenging to achieve both high throughput and low latency. We "
        "introduce an efficient LLM inference scheduler, Sarathi-Serve, to address this "
        "throughput-latency tradeoff. Sarathi-Serve introduces chunked-prefills which splits a "
        "prefill request into near equal sized chunks and creates stall-free schedules that "
        "adds new requests in a batch without pausing ongoing decodes. Stall-free scheduling "
        "unlocks the opportunity to improve throughput with large batch sizes while minimizing "
        "the effect of batching on latency. Furthermore, uniform batches in Sarathi-Serve "
        "ameliorate the imbalance between iterations resulting in minimal pipeline bubbles. Our "
        "techniques yield significant improvements in inference performance across models and "
        "hardware under tail latency constraints. For Mistral-7B on single A100 GPUs, we "
        "achieve 2.6x higher serving capacity and up to 3.7x higher serving capacity for the "
        "Yi-34B model on two A100 GPUs as compared to vLLM. When used with pipeline parallelism "
        "on Falcon-180B, Sarathi-Serve provides up to 5.6x gain in the end-to-end serving "
        "capacity. The source code for Sarathi-Serve is available at "
        "https://github.com/microsoft/sarathi-serve.",
        "Chunked prefills and stall-free batches give high throughput without the latency "
        "spikes that prefills cause in ongoing decodes.",
        "2.6x higher serving capacity for Mistral-7B on one A100 and up to 3.7x for Yi-34B on "
        "two, compared to vLLM.",
        "Measured under tail-latency limits the authors chose; the abstract gives no energy or "
        "cost figures."),
    Sample(
        "eagle", "2401.15077v3",
        "EAGLE: Speculative Sampling Requires Rethinking Feature Uncertainty",
        ("Yuhui Li", "Fangyun Wei", "Chao Zhang", "Hongyang Zhang"),
        "2024-01-26", ("cs.LG", "cs.CL"),
        "Autoregressive decoding makes the inference of Large Language Models (LLMs) "
        "time-consuming. In this paper, we reconsider speculative sampling and derive two key "
        "observations. Firstly, autoregression at the feature (second-to-top-layer) level is "
        "more straightforward than at the token level. Secondly, the inherent uncertainty in "
        "feature (second-to-top-layer) level autoregression constrains its performance. Based "
        "on these insights, we introduce EAGLE (Extrapolation Algorithm for Greater "
        "Language-model Efficiency), a simple yet highly efficient speculative sampling "
        "framework. By incorporating a token sequence advanced by one time step, EAGLE "
        "effectively resolves the uncertainty, enabling precise second-to-top-layer feature "
        "prediction with minimal overhead. We conducted comprehensive evaluations of EAGLE, "
        "including all models from the Vicuna and LLaMA2-Chat series, the MoE model Mixtral "
        "8x7B Instruct, and tasks in dialogue, code generation, mathematical reasoning, and "
        "instruction following. For LLaMA2-Chat 70B, EAGLE achieved a latency speedup ratio of "
        "2.7x-3.5x, doubled throughput, while maintaining the distribution of the generated "
        "text.",
        "Speculative sampling that drafts the model's second-to-top-layer features, not tokens, "
        "and keeps the output distribution.",
        "A 2.7x-3.5x latency speedup on LLaMA2-Chat 70B, with doubled throughput.",
        "Needs a trained draft head per target model."),
    Sample(
        "medusa", "2401.10774v3",
        "Medusa: Simple LLM Inference Acceleration Framework with Multiple Decoding Heads",
        ("Tianle Cai", "Yuhong Li", "Zhengyang Geng", "Hongwu Peng", "Jason D. Lee",
         "Deming Chen", "Tri Dao"),
        "2024-01-19", ("cs.LG", "cs.CL"),
        "Large Language Models (LLMs) employ auto-regressive decoding that requires sequential "
        "computation, with each step reliant on the previous one's output. This creates a "
        "bottleneck as each step necessitates moving the full model parameters from "
        "High-Bandwidth Memory (HBM) to the accelerator's cache. While methods such as "
        "speculative decoding have been suggested to address this issue, their implementation "
        "is impeded by the challenges associated with acquiring and maintaining a separate "
        "draft model. In this paper, we present Medusa, an efficient method that augments LLM "
        "inference by adding extra decoding heads to predict multiple subsequent tokens in "
        "parallel. Using a tree-based attention mechanism, Medusa constructs multiple candidate "
        "continuations and verifies them simultaneously in each decoding step. By leveraging "
        "parallel processing, Medusa substantially reduces the number of decoding steps "
        "required. We present two levels of fine-tuning procedures for Medusa to meet the needs "
        "of different use cases: Medusa-1: Medusa is directly fine-tuned on top of a frozen "
        "backbone LLM, enabling lossless inference acceleration. Medusa-2: Medusa is fine-tuned "
        "together with the backbone LLM, enabling better prediction accuracy of Medusa heads "
        "and higher speedup but needing a special training recipe that preserves the backbone "
        "model's capabilities. Moreover, we propose several extensions that improve or expand "
        "the utility of Medusa, including a self-distillation to handle situations where no "
        "training data is available and a typical acceptance scheme to boost the acceptance "
        "rate while maintaining generation quality. We evaluate Medusa on models of various "
        "sizes and training procedures. Our experiments demonstrate that Medusa-1 can achieve "
        "over 2.2x speedup without compromising generation quality, while Medusa-2 further "
        "improves the speedup to 2.3-3.6x.",
        "Extra decoding heads on the model itself propose several tokens, checked at once with "
        "tree attention: speculative decoding without a separate draft model.",
        "Over 2.2x speedup without loss of quality (Medusa-1); 2.3-3.6x with Medusa-2.",
        "Medusa-2 fine-tunes the backbone, so only Medusa-1 is lossless."),
    Sample(
        "distserve", "2401.09670v3",
        "DistServe: Disaggregating Prefill and Decoding for Goodput-optimized Large Language "
        "Model Serving",
        ("Yinmin Zhong", "Shengyu Liu", "Junda Chen", "Jianbo Hu", "Yibo Zhu", "Xuanzhe Liu",
         "Xin Jin", "Hao Zhang"),
        "2024-01-18", ("cs.DC",),
        "DistServe improves the performance of large language models (LLMs) serving by "
        "disaggregating the prefill and decoding computation. Existing LLM serving systems "
        "colocate the two phases and batch the computation of prefill and decoding across all "
        "users and requests. We find that this strategy not only leads to strong "
        "prefill-decoding interferences but also couples the resource allocation and "
        "parallelism plans for both phases. LLM applications often emphasize individual latency "
        "for each phase: time to first token (TTFT) for the prefill phase and time per output "
        "token (TPOT) of each request for the decoding phase. In the presence of stringent "
        "latency requirements, existing systems have to prioritize one latency over the other, "
        "or over-provision compute resources to meet both. DistServe assigns prefill and "
        "decoding computation to different GPUs, hence eliminating prefill-decoding "
        "interferences. Given the application's TTFT and TPOT requirements, DistServe "
        "co-optimizes the resource allocation and parallelism strategy tailored for each phase. "
        "DistServe also places the two phases according to the serving cluster's bandwidth to "
        "minimize the communication caused by disaggregation. As a result, DistServe "
        "significantly improves LLM serving performance in terms of the maximum rate that can "
        "be served within both TTFT and TPOT constraints on each GPU. Our evaluations show that "
        "on various popular LLMs, applications, and latency requirements, DistServe can serve "
        "7.4x more requests or 12.6x tighter SLO, compared to state-of-the-art systems, while "
        "staying within latency constraints for > 90% of requests.",
        "Prefill and decoding on separate GPUs, each sized for its own latency target (time to "
        "first token, time per output token).",
        "7.4x more requests or 12.6x tighter SLO than state-of-the-art systems, within latency "
        "limits for > 90% of requests.",
        "The KV cache crosses GPUs between the phases, so placement depends on the cluster's "
        "bandwidth."),
    Sample(
        "sglang", "2312.07104v2",
        "SGLang: Efficient Execution of Structured Language Model Programs",
        ("Lianmin Zheng", "Liangsheng Yin", "Zhiqiang Xie", "Chuyue Sun", "Jeff Huang",
         "Cody Hao Yu", "Shiyi Cao", "Christos Kozyrakis", "Ion Stoica", "Joseph E. Gonzalez",
         "Clark Barrett", "Ying Sheng"),
        "2023-12-12", ("cs.AI", "cs.PL"),
        "Large language models (LLMs) are increasingly used for complex tasks that require "
        "multiple generation calls, advanced prompting techniques, control flow, and structured "
        "inputs/outputs. However, efficient systems are lacking for programming and executing "
        "these applications. We introduce SGLang, a system for efficient execution of complex "
        "language model programs. SGLang consists of a frontend language and a runtime. The "
        "frontend simplifies programming with primitives for generation and parallelism "
        "control. The runtime accelerates execution with novel optimizations like "
        "RadixAttention for KV cache reuse and compressed finite state machines for faster "
        "structured output decoding. Experiments show that SGLang achieves up to 6.4× higher "
        "throughput compared to state-of-the-art inference systems on various large language "
        "and multi-modal models on tasks including agent control, logical reasoning, few-shot "
        "learning benchmarks, JSON decoding, retrieval-augmented generation pipelines, and "
        "multi-turn chat. The code is publicly available at "
        "https://github.com/sgl-project/sglang.",
        "A language and runtime for programs of many LLM calls: RadixAttention reuses the KV "
        "cache across calls, compressed state machines speed up structured output.",
        "Up to 6.4× higher throughput than state-of-the-art inference systems.",
        "Gains depend on how much of the prompts the calls share."),
    Sample(
        "vllm", "2309.06180v1",
        "Efficient Memory Management for Large Language Model Serving with PagedAttention",
        ("Woosuk Kwon", "Zhuohan Li", "Siyuan Zhuang", "Ying Sheng", "Lianmin Zheng",
         "Cody Hao Yu", "Joseph E. Gonzalez", "Hao Zhang", "Ion Stoica"),
        "2023-09-12", ("cs.LG", "cs.DC"),
        "High throughput serving of large language models (LLMs) requires batching "
        "sufficiently many requests at a time. However, existing systems struggle because the "
        "key-value cache (KV cache) memory for each request is huge and grows and shrinks "
        "dynamically. When managed inefficiently, this memory can be significantly wasted by "
        "fragmentation and redundant duplication, limiting the batch size. To address this "
        "problem, we propose PagedAttention, an attention algorithm inspired by the classical "
        "virtual memory and paging techniques in operating systems. On top of it, we build "
        "vLLM, an LLM serving system that achieves (1) near-zero waste in KV cache memory and "
        "(2) flexible sharing of KV cache within and across requests to further reduce memory "
        "usage. Our evaluations show that vLLM improves the throughput of popular LLMs by 2-4× "
        "with the same level of latency compared to the state-of-the-art systems, such as "
        "FasterTransformer and Orca. The improvement is more pronounced with longer sequences, "
        "larger models, and more complex decoding algorithms. vLLM's source code is publicly "
        "available at https://github.com/vllm-project/vllm",
        "PagedAttention stores the KV cache in fixed-size blocks, as an operating system pages "
        "memory; vLLM, built on it, wastes almost no KV-cache memory.",
        "2-4× the throughput of FasterTransformer and Orca at the same latency.",
        "The gain is largest with long sequences and large models; short requests gain less."),
    Sample(
        "specdec", "2211.17192v2",
        "Fast Inference from Transformers via Speculative Decoding",
        ("Yaniv Leviathan", "Matan Kalman", "Yossi Matias"),
        "2022-11-30", ("cs.LG", "cs.CL"),
        "Inference from large autoregressive models like Transformers is slow - decoding K "
        "tokens takes K serial runs of the model. In this work we introduce speculative "
        "decoding - an algorithm to sample from autoregressive models faster without any "
        "changes to the outputs, by computing several tokens in parallel. At the heart of our "
        "approach lie the observations that (1) hard language-modeling tasks often include "
        "easier subtasks that can be approximated well by more efficient models, and (2) using "
        "speculative execution and a novel sampling method, we can make exact decoding from the "
        "large models faster, by running them in parallel on the outputs of the approximation "
        "models, potentially generating several tokens concurrently, and without changing the "
        "distribution. Our method can accelerate existing off-the-shelf models without "
        "retraining or architecture changes. We demonstrate it on T5-XXL and show a 2X-3X "
        "acceleration compared to the standard T5X implementation, with identical outputs.",
        "A small model guesses several tokens, the large one checks them in one parallel pass: "
        "faster sampling with exactly the same outputs.",
        "2X-3X acceleration on T5-XXL over the standard T5X implementation, with identical "
        "outputs.",
        "Pays off only while the large model has compute to spare for the checks."),
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
        for claim, sentence in re.findall(r"^\[(\d+)\] Claim: (.*)$", task, re.MULTILINE):
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
