"""One fixed edition, built from plain objects: the input of the golden-file and unit tests."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from generator.archive.record import EditionRecord
from generator.completions import Completion, PromptKind, PromptRequest, SynthesisResult, Usage
from generator.config import Config
from generator.edition.assemble import assemble
from generator.edition.inputs import EditionInputs
from generator.edition.model import Edition
from generator.evidence.follow_ups import FollowUps
from generator.evidence.requests import evidence_requests
from generator.papers import Bundle, FetchResult, FullText, NumberedPaper, Paper, Source
from generator.prompts.builders import build_requests
from generator.prompts.kinds import BUILTIN_KINDS

EDITION = "2026-12-02"
BUILT_AT = "2026-12-02T06:00:00+00:00"


def paper(n: int, title: str) -> Paper:
    return Paper(f"2611.0000{n}v1", title, (f"Ada Author{n}", "Bo Writer"), "2026-11-2" + str(n),
                 "2026-11-2" + str(n), f"An abstract about {title.lower()}, with a 12% gain.",
                 ("cs.LG",), f"https://arxiv.org/abs/2611.0000{n}v1",
                 f"https://arxiv.org/pdf/2611.0000{n}v1")


PAPERS = (paper(1, "Paged Attention Revisited"), paper(2, "Speculative Decoding at Scale"),
          paper(3, "KV Cache Compression"))

ANSWERS = {
    "research-map": ("## Field overview\n\nPaper 1 and Paper 2 improve serving; Paper 3 "
                     "(KV Cache Compression) saves memory with a 12% gain.\n\n"
                     "## Open problems\n\nPaper 7 is not in the bundle. Papers 1–3 agree.\n"),
    "memory-management": "Paper 3 cuts memory by 40%. See *Paged Attention Revisited* (Paper 2).\n",
    "thinking-off": "Speculative decoding wins at low batch sizes (Paper 2).\n",
    "thinking-on": "It depends on the batch: Paper 2 for latency, Paper 1 for throughput.\n",
}


def with_thinking_body(config: Config, body: dict[str, Any], *, briefs: bool = True) -> Config:
    """`config` with this thinking switch, and briefs on or off."""
    return replace(config, llm=replace(config.llm, thinking_extra_body=body),
                   briefs=replace(config.briefs, enabled=briefs and config.briefs.enabled))


def requests_for(config: Config, bundle: Bundle) -> list[PromptRequest]:
    requests = build_requests(with_thinking_body(config, {"thinking": True}), bundle)
    keep = {"research-map", "themes", "memory-management", "benchmarks-and-metrics",
            "thinking-off", "thinking-on", "brief-1"}
    return [r for r in requests if r.name in keep]


def completion_for(request: PromptRequest) -> Completion:
    usage = Usage(prompt_tokens=900, completion_tokens=120, cached_tokens=768)
    if request.name == "benchmarks-and-metrics":
        return Completion(request.name, "m", error="HTTP 503 from http://127.0.0.1:1/v1: busy")
    if request.name == "themes":
        return Completion(request.name, "m", json.dumps({"themes": [
            {"name": "Memory", "description": "Saving memory.", "papers": [1, 3, 9]}]}), "",
            "stop", usage)
    if request.name == "brief-1":
        return Completion(request.name, "m", json.dumps({
            "tldr": "Pages for attention.", "problem": "Fragmentation.", "method": "Paging.",
            "result": "A 12% gain.", "limitations": "One GPU."}), "", "stop", usage)
    reasoning = "First Paper 1, then Paper 2." if request.thinking else ""
    return Completion(request.name, "m", ANSWERS[request.name], reasoning, "stop", usage,
                      latency_s=2.5, ttft_s=0.4)


# Evidence for three answers: supported, invented; from another paper, none; a failed request.
EVIDENCE_FOR = ("research-map", "memory-management", "thinking-off")
EVIDENCE = {
    # Claim 1 cites Papers 1-3 (a quote from each), claim 2 a phantom Paper 7 (never sent),
    # claim 3 Papers 1-3 again, with an invented quote for Paper 2 and none for the others.
    "research-map": [(1, 1, "Paged attention text with a 12% gain"),
                     (1, 2, "An abstract about speculative decoding at scale"),
                     (1, 3, "An abstract about kv cache compression"),
                     (3, 2, "Speculative decoding beats everything everywhere")],
    "memory-management": [(1, 3, "An abstract about paged attention revisited"), (2, 2, "")],
}


def evidence_for(request: PromptRequest) -> Completion:
    parent = request.name.removeprefix("evidence-").rsplit("-", 2)[0]
    if parent not in EVIDENCE:
        return Completion(request.name, "m", error="no valid structured answer after a retry")
    return Completion(request.name, "m", json.dumps({"claims": [
        {"claim": c, "paper": p, "quote": q} for c, p, q in EVIDENCE[parent]]}), "", "stop",
        Usage(prompt_tokens=1100, completion_tokens=60, cached_tokens=1024))


def judgement_for(request: PromptRequest) -> Completion:
    """Every quote found judged to support its sentence (the research map's first claim)."""
    claims = [int(n) for n in re.findall(r'^\{"claim": (\d+), ', request.messages[-1].content,
                                         re.MULTILINE)]
    return Completion(request.name, "m", json.dumps({"claims": [
        {"claim": c, "verdict": "supports", "reason": "The quote states the 12% gain."}
        for c in claims]}), "", "stop", Usage(prompt_tokens=140, completion_tokens=20))


def fixed_edition(config: Config | None = None, published: list[EditionRecord] | None = None,
                  papers: tuple[Paper, ...] = PAPERS, edition: str = EDITION) -> Edition:
    """The edition every golden file is rendered from (nothing in it depends on the clock);
    `papers` may stand in for its three papers (another version of one, say), and `edition`
    for its name (a later edition over `published`)."""
    config = config or Config(path=__import__("pathlib").Path("config.toml"), registry=BUILTIN_KINDS)
    texts = [FullText("ok", "Paged attention text with a 12% gain.", 3, 10),
             FullText("missing", reason="the PDF download failed: HTTP 404"),
             FullText("not_requested")]
    sources = tuple(Source(p, t) for p, t in zip(papers, texts, strict=True))
    bundle = Bundle(tuple(NumberedPaper(i + 1, s.paper, s.full_text, len(s.full_text.text))
                          for i, s in enumerate(sources)), "bundle text " * 100)
    requests = requests_for(config, bundle)
    completions = [completion_for(r) for r in requests]
    checks = [e for r, c in zip(requests, completions, strict=True)
              if r.name in EVIDENCE_FOR
              for e in evidence_requests(r, c, config.evidence,
                                         {p.number: p.paper.title for p in bundle.papers},
                                         kinds=BUILTIN_KINDS)]
    # The judgements of the quotes found, made as a build makes them (follow_ups.py).
    follow = FollowUps(config, bundle)
    for r, c in zip(requests, completions, strict=True):
        if r.name in EVIDENCE_FOR:
            follow(r, c)
    judges = [j for check in checks for j in follow(check, evidence_for(check))]
    requests += checks + judges
    completions += [evidence_for(r) for r in checks] + [judgement_for(r) for r in judges]
    synthesis = SynthesisResult("m", tuple(requests), tuple(completions),
                                bundle.chars, bundle.estimated_tokens, 12.5)
    fetch = FetchResult("ti:inference", 3, BUILT_AT, sources)
    return assemble(edition, "Test Digest", *EditionInputs.of_stages(
        fetch, bundle, synthesis, kinds=BUILTIN_KINDS),
                    published or [], built_at=BUILT_AT, kinds=BUILTIN_KINDS)


def one_paper_edition(title: str, authors: tuple[str, ...], abstract: str, answer: str, *,
                      site_title: str = "Digest", question: str = "") -> Edition:
    """An edition of one paper whose every page (research map, a deep dive, both thinking
    answers and their reasoning) shows `answer`: the input of the hostile-text tests."""
    one = Paper("2501.00001v1", title, authors, "2025-01-01", "2025-01-01", abstract, ("cs.LG",),
                "https://arxiv.org/abs/2501.00001v1", None)
    source = Source(one, FullText("not_requested"))
    bundle = Bundle((NumberedPaper(1, one, source.full_text, 0),), "bundle")
    pages: list[tuple[str, PromptKind, str]] = [
        ("research-map", "research_map", "Research map"), ("deep-dive-1", "deep_dive", "Deep dive"),
        ("thinking-off", "thinking", "Hard question"), ("thinking-on", "thinking", "Hard question")]
    requests = tuple(
        PromptRequest(name=name, title=title_, kind=kind, question=question, messages=(),
                      max_tokens=10, temperature=0, thinking=name == "thinking-on")
        for name, kind, title_ in pages)
    completions = tuple(Completion(name=r.name, model="m", content=answer, reasoning=answer,
                                   finish_reason="stop") for r in requests)
    synthesis = SynthesisResult("m", requests, completions, 1, 1, 0.0)
    fetch = FetchResult("q", 1, "2025-01-01T00:00:00+00:00", (source,))
    return assemble(EDITION, site_title, *EditionInputs.of_stages(
        fetch, bundle, synthesis, kinds=BUILTIN_KINDS), [],
                    built_at=BUILT_AT, kinds=BUILTIN_KINDS)
