"""The stages of an edition, each over the config, the services and the run's history.

Each reads what the previous one recorded in the cache, so the CLI can run one stage at a time
and an interrupted build resumes where it stopped; `pipeline.run` conducts them in order.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from ..chat_models import PromptRequest, SynthesisResult
from ..config import Config
from ..edition.history import History, earlier, last_edition_day, windowed_query
from ..edition.render import (
    default_template_dir,
)
from ..errors import ServerNotAnsweringError, UsageError
from ..evidence.follow_ups import FollowUps
from ..fetch.papers import FetchSettings, OnText, run_fetch
from ..fetch.withdrawals import look_up
from ..marks import Marks, load_marks, new_mark
from ..models import Bundle, FetchResult, Paper, Source, Triage
from ..prompts.builders import build_requests
from ..publish.site import build_site  # imports MkDocs only when a site is built
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
from ..synthesis.triage import Example, run_triage, window_of
from ..text.safe_text import cut
from .services import Services

log = logging.getLogger(__name__)


@contextlib.contextmanager
def launch_advice_on_failure(config: Config, services: Services) -> Iterator[None]:
    """When nothing answers at the server's URL, say how to start one that fits this config."""
    try:
        yield
    except ServerNotAnsweringError as err:
        from .doctor import launch_advice  # only now: it is not free to import

        raise ServerNotAnsweringError(
            f"{err}\n{launch_advice(config, services.cache, services.chat.base_url)}") from err


@dataclass(frozen=True)
class EditionQuery:
    """What an edition asks arXiv for: the query (with its date window) and the papers of
    earlier editions to leave out."""

    query: str
    skip: frozenset[str]


def query_for(config: Config, edition: str, history: History) -> EditionQuery:
    a = config.arxiv
    query = a.query
    try:
        day = date.fromisoformat(edition[:10])
    except ValueError:
        day = datetime.now(UTC).date()
    if a.since_last_edition:
        query = windowed_query(query, day, since=last_edition_day(history.records, edition) or (
            day - timedelta(days=7)))
    elif a.days:
        query = windowed_query(query, day, days=a.days)
    skip = frozenset(p.arxiv_id for r in earlier(history.records, edition)
                     for p in r.papers) if a.skip_seen else frozenset()
    return EditionQuery(query, skip)


def fetch_stage(config: Config, services: Services, edition: str, *, refresh: bool = False,
                on_text: OnText | None = None, history: History | None = None,
                triage: Triage | None = None) -> FetchResult:
    """The edition's papers and full text: the newest of the query, or those `triage` chose
    (judged here when [triage] is on and no triage is given, as `digest fetch` does)."""
    a = config.arxiv
    history = history or History.load(config.docs_dir)
    search = query_for(config, edition, history)
    settings = FetchSettings(search.query, a.max_papers, a.full_text_papers, a.max_abstract_chars,
                             a.max_pdf_chars, search.skip)
    previous = None if refresh else services.cache.get_fetch(edition)
    if triage is None and config.triage.enabled:
        triage = triage_stage(config, services, search, previous, history.before(edition))
    result = run_fetch(edition, settings, services.arxiv, services.downloader, services.cache,
                       previous=previous, on_text=on_text, triage=triage)
    if config.continuity.enabled and previous is None:
        # The papers covered lately, looked up for withdrawals once, at the edition's first
        # fetch (or --refresh): a rebuild keeps what was found, a failure included, and asks
        # arXiv nothing (nor reads a record).
        lookup = look_up(services.arxiv,
                         history.before(edition).covered(config.continuity.lookback_editions),
                         a.max_abstract_chars, None)
        if lookup != result.lookup:
            result = replace(result, lookup=lookup)
            services.cache.put_fetch(edition, result)
    return result


def triage_stage(config: Config, services: Services, search: EditionQuery,
                 previous: FetchResult | None, past: History | None = None) -> Triage:
    """Every paper of the window, judged: the window as recorded for this edition (`previous`,
    if its query and cap are the same), else listed by arXiv; the judgements from the cache
    where it has them. The reader's marks are shown as examples (from `past`, the editions
    before this one); a rebuild shows the marks the window was judged with, so a mark read
    since changes the next edition, not this one (nor asks the model again)."""
    t, query = config.triage, search.query
    past = past if past is not None else History.load(config.docs_dir)
    marks = load_marks(config.marks_file)
    marked = tuple(m.arxiv_id for m in marks.marks)
    again = previous.triage if previous and previous.triage and (
        previous.triage.query, previous.triage.max_candidates) == (query, t.max_candidates) \
        else None
    if again is not None:
        papers = window_of(again)
        marks = Marks(tuple(new_mark(s.split(":", 1)[1], s.split(":", 1)[0], "")
                            for s in again.shown), ())
        marked = again.marked
    else:
        papers = services.arxiv.search_window(query, t.max_candidates,
                                              config.arxiv.max_abstract_chars,
                                              config.arxiv.page_size)
    examples = triage_examples(marks, past, config.feedback.max_examples,
                               config.feedback.example_chars)
    with launch_advice_on_failure(config, services):
        return run_triage(papers, query, t.max_candidates, t, config.arxiv.max_papers,
                          services.chat, services.cache, language=config.digest.language,
                          seen=search.skip, max_concurrency=config.llm.max_concurrency,
                          server_info=services.probe.server_info, examples=examples,
                          marked=marked, kinds=config.registry)


def triage_examples(marks: Marks, history: History, most: int, chars: int) -> list[Example]:
    """The marked papers triage is shown: those an earlier edition covered (a mark of a paper
    known nowhere is kept for later), the latest marked first, at most `most`, then in a fixed
    order (by id) so that every candidate's request shares them."""
    known: dict[str, Paper] = {}
    for record in reversed(history.records):  # the newest edition's version wins
        known.update({p.base_id: p.paper for p in record.papers})
    shown = [m for m in sorted(marks.marks, key=lambda m: m.at, reverse=True)
             if m.arxiv_id in known][:most]
    return [Example(m.kind, m.arxiv_id, " ".join(known[m.arxiv_id].title.split()),
                    cut(" ".join(known[m.arxiv_id].abstract.split()), chars))
            for m in sorted(shown, key=lambda m: m.arxiv_id)]


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


def all_cached(config: Config, services: Services, edition: str,
               history: History | None = None) -> bool:
    """Whether this edition's every prompt already has a cached answer (so no server is needed)."""
    fetch = services.cache.get_fetch(edition)
    if fetch is None:
        return False
    plan = load_plan(services.cache, edition, list(fetch.sources), basis_of(config))
    past = (history or History.load(config.docs_dir)).before(edition)
    bundle, requests = prepare(config, fetch, plan, past)
    return _answered(services, requests, follow_ups(config, bundle))


def follow_ups(config: Config, bundle: Bundle) -> FollowUp | None:
    """What an answer brings: its evidence checks, when [evidence] is on, and what a check
    brings: the judgement of the quotes it found (`judge`)."""
    if not config.evidence.enabled:
        return None
    return FollowUps(config, bundle)


def _answered(services: Services, requests: Sequence[PromptRequest],
              follow_up: FollowUp | None = None) -> bool:
    """Whether the cache holds an answer to every one of `requests` and of their follow-ups."""
    for request in requests:
        completion = services.cache.get_completion(completion_key(services.chat.model, request))
        if completion is None:
            return False
        # And theirs: an evidence check brings the judgement of the quotes it found.
        if follow_up and not _answered(services, follow_up(request, completion), follow_up):
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
    history: History | None = None,
) -> SynthesisResult:
    fetch = _fetched(services.cache, edition)
    past = (history or History.load(config.docs_dir)).before(edition)
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
        if not _answered(services, requests):  # only then is the server asked what it does
            known = without_requests(services.probe, config.llm.model,
                                     config.llm.context_tokens, known,
                                     services.probe.server_info())
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
    width = AdaptiveWidth(known.concurrency if known.concurrency_source != "/server_info"
                          else None, ceiling=known.slots)
    with launch_advice_on_failure(config, services):
        result = run_batch(
            requests, chat, cache,
            bundle_chars=bundle.chars, bundle_tokens=bundle.estimated_tokens,
            max_concurrency=config.llm.max_concurrency, server_info=services.probe.server_info,
            prefill_gate=config.llm.prefill_gate, observer=observer, shrink=shrink,
            follow_up=follow_ups(config, bundle), formats=formats, width=width,
            kinds=config.registry,
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


def skeleton_dir() -> Path:
    """The default config.toml and mkdocs.yml of a new workspace."""
    packaged = default_template_dir().parent / "skeleton"
    return packaged if packaged.is_dir() else Path(__file__).resolve().parents[2]


def site_stage(config: Config, *, only_if_changed: bool = False,
               history: History | None = None) -> Path:
    """Build the site; with `only_if_changed`, not when it was built from these very inputs."""
    build_site(config.mkdocs_yml, config.docs_dir, config.site_dir, config.digest.title,
               fallback_yml=skeleton_dir() / "mkdocs.yml", only_if_changed=only_if_changed,
               history=history, site_url=config.digest.site_url)
    return config.site_dir
