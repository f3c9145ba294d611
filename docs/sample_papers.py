"""The papers of the documentation's sample edition (docs/sample_edition.py): seven real
LLM-inference papers, their ids, titles, authors, first-submission dates and abstracts as arXiv
lists them (arXiv's metadata is CC0), copied by hand from copies of arXiv's pages, since the
recorded API answers in tests/fixtures/ hold no paper on LLM inference. The TL;DR, result and
limitations of each are the scripted model's brief of it, written from the abstract."""

from __future__ import annotations

from dataclasses import dataclass

from generator.papers import Paper


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
