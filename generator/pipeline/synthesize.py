"""The synthesis stage: every prompt of an edition over its bundle, and their follow-ups
(evidence checks, judgements), answered through the synthesis package as the server allows.

`answer_all` is the one way requests reach a server: an edition's prompts and a reader's
question (`digest ask`) both go through it, with the same width, JSON, deadlines and cache.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from ..archive.history import History
from ..completions import PromptRequest, SynthesisResult
from ..config import Config
from ..errors import UsageError
from ..evidence.follow_ups import FollowUps
from ..papers import Bundle, FetchResult, Source
from ..prompts.builders import build_requests
from ..store.cache import Cache, completion_key
from ..synthesis.batch import FollowUp, Observer, run_batch
from ..synthesis.bundle import build_bundle
from ..synthesis.capabilities import (
    Capabilities,
    after_run,
    load_capabilities,
    save_capabilities,
    without_requests,
)
from ..synthesis.continuation import Continued
from ..synthesis.dispatch import AdaptiveWidth
from ..synthesis.json_answers import StructuredFormats
from ..synthesis.one_request import Shrink
from ..synthesis.planning import (
    BundlePlan,
    ContextFitter,
    bundles_for,
    load_plan,
    make_plan,
    plan_basis,
    save_plan,
)
from ..synthesis.record import load_synthesis, save_synthesis
from .services import Services, launch_advice_on_failure

log = logging.getLogger(__name__)


def _fetched(cache: Cache, edition: str) -> FetchResult:
    result = cache.get_fetch(edition)
    if result is None:
        raise UsageError(f"edition {edition} has not been fetched yet: run `digest fetch` first "
                         "(or `digest build`)")
    return result


def prepare(config: Config, fetch: FetchResult, plan: BundlePlan | None = None,
            history: History | None = None) -> tuple[Bundle, list[PromptRequest]]:
    """The edition's bundle and requests; a plan cuts the excerpts to fit the context.
    `history`: the editions before this one, for the kinds whose requests read them."""
    sources = list(fetch.sources)
    bundle, bundles = bundles_for(sources, plan)
    if not bundle.papers:
        return bundle, []  # nothing to synthesize: the edition says no papers matched
    def requests_for(b: Bundle) -> list[PromptRequest]:
        built = build_requests(config, b, history)
        if plan and plan.answer_cap:  # the context holds no more (the plan's note says so)
            return [replace(r, max_tokens=min(r.max_tokens, plan.answer_cap)) for r in built]
        return built

    requests = requests_for(bundle)
    if plan and plan.overrides:
        for cap in set(plan.overrides.values()):
            variants = {r.name: r for r in requests_for(bundles[cap])}
            requests = [variants[r.name] if plan.overrides.get(r.name) == cap else r
                        for r in requests]
    return bundle, requests


def all_cached(config: Config, services: Services, edition: str, history: History) -> bool:
    """Whether this edition's every prompt already has a cached answer (so no server is needed)."""
    fetch = services.cache.get_fetch(edition)
    if fetch is None:
        return False
    plan = load_plan(services.cache, edition, list(fetch.sources), basis_of(config))
    past = history.before(edition)
    bundle, requests = prepare(config, fetch, plan, past)
    return answered(services, requests, follow_ups(config, bundle))


def follow_ups(config: Config, bundle: Bundle) -> FollowUp:
    """What an answer brings: its continuations, where it stopped at its budget, then its
    evidence checks (of the whole answer), when [evidence] is on, and what a check brings: the
    judgement of the quotes it found (`judge`)."""
    checks = FollowUps(config, bundle) if config.evidence.enabled else None
    return Continued(config.registry, checks)


def learn_server(config: Config, services: Services, known: Capabilities) -> Capabilities:
    """What the server says of itself (its context, tokenizer and slots) beside what was
    `known` of it: asked only when a request is about to be sent, never on a cached rerun."""
    return without_requests(services.probe, config.llm.model, config.llm.context_tokens, known,
                            services.probe.server_info())


def answered(services: Services, requests: Sequence[PromptRequest],
              follow_up: FollowUp | None = None) -> bool:
    """Whether the cache holds an answer to every one of `requests` and of their follow-ups."""
    for request in requests:
        completion = services.cache.get_completion(completion_key(services.chat.model, request))
        if completion is None:
            return False
        # And theirs: an evidence check brings the judgement of the quotes it found.
        if follow_up and not answered(services, follow_up(request, completion), follow_up):
            return False
    return True


def basis_of(config: Config) -> str:
    """What an edition's context plan depends on beside its papers."""
    return plan_basis(config.llm.context_tokens, config.registry.answer_tokens(config))


def chars_per_token(config: Config, services: Services, sources: list[Source]) -> float | None:
    """The bundle's characters per token by the server's own tokenizer; None where it has none."""
    text = build_bundle(sources).text
    counts = services.probe.tokenize(config.llm.model, [text])
    return len(text) / counts[0] if counts and counts[0] else None


def synthesize_stage(
    config: Config, services: Services, edition: str, *, observer: Observer | None = None,
    history: History,
) -> SynthesisResult:
    fetch = _fetched(services.cache, edition)
    past = history.before(edition)
    sources = list(fetch.sources)
    chat, cache = services.chat, services.cache
    known = load_capabilities(cache, chat.base_url, chat.model)
    if known.tokenizer:  # straight to the endpoint found before
        services.probe.tokenizer = known.tokenizer
    basis = basis_of(config)
    saved = load_plan(cache, edition, sources, basis)
    if saved is None:
        longest = config.registry.answer_tokens(config)
        saved = make_plan(sources, None, longest, basis=basis)
        _, requests = prepare(config, fetch, saved, past)
        if not answered(services, requests):  # only then is the server asked what it does
            known = learn_server(config, services, known)
            context = known.context_tokens
            ratio = chars_per_token(config, services, sources) if context else None
            saved = make_plan(sources, context, longest, ratio, basis, config.registry.largest_answer(config))
        save_plan(cache, edition, saved)
    bundle, requests = prepare(config, fetch, saved, past)
    fitter = ContextFitter(sources, saved, lambda plan: prepare(config, fetch, plan, past)[1],
                           lambda plan: save_plan(cache, edition, plan))
    result, known = answer_all(config, services, known, requests, bundle, observer,
                               shrink=fitter.shrink)
    previous = load_synthesis(cache, edition)
    # Answers all from the cache keep the server that wrote them (a switch since changes none).
    cached = previous is not None and previous.server and all(c.from_cache
                                                              for c in result.completions)
    result = replace(result, server=previous.server if cached and previous else known.server)
    if previous is None or not _same_answers(previous, result):
        save_synthesis(cache, edition, result)
    # Otherwise every answer came from the cache: the record keeps the figures of the run that
    # produced them (wall time, latencies), so the pages a rebuild renders do not change.
    return result


def answer_all(config: Config, services: Services, known: Capabilities,
               requests: Sequence[PromptRequest], bundle: Bundle, observer: Observer | None,
               shrink: Shrink | None = None) -> tuple[SynthesisResult, Capabilities]:
    """Every request over `bundle` and its evidence checks, answered through the synthesis
    stage as this server allows (what was `known` of it: the JSON way, the width it settled
    at, its slots), and what the answers taught of the server (remembered for the next run).
    An edition's prompts and a reader's question (`digest ask`) both go through here."""
    chat, cache = services.chat, services.cache
    formats = StructuredFormats(known.structured)
    width = AdaptiveWidth(None if known.stated else known.concurrency, ceiling=known.slots)
    with launch_advice_on_failure(config, services):
        result = run_batch(
            requests, chat, cache,
            bundle_chars=bundle.chars, bundle_tokens=bundle.estimated_tokens,
            max_concurrency=config.llm.max_concurrency, server_info=services.probe.server_info,
            prefill_gate=config.llm.prefill_gate, observer=observer, shrink=shrink,
            follow_up=follow_ups(config, bundle), formats=formats, width=width,
            load=services.probe.load, kinds=config.registry,
        )
    if any(not c.from_cache for c in result.completions):
        learnt = after_run(known, formats, width.settled if width.used else None,
                           result.completions)
        if learnt != known:
            save_capabilities(cache, chat.base_url, chat.model, learnt)
        known = learnt
    return result, known


def _same_answers(previous: SynthesisResult, result: SynthesisResult) -> bool:
    """Whether `result` is `previous` answered again from the cache, prompt for prompt."""
    def answers(r: SynthesisResult) -> list[tuple[str, str, str, str]]:
        return [(c.name, c.content, c.reasoning, c.error) for c in r.completions]

    return (all(c.from_cache for c in result.completions) and answers(previous) == answers(result)
            and previous.server == result.server)


