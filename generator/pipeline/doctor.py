"""`digest doctor`: check the server and arXiv before a run spends anything on them.

Each check gives a verdict (ok, warning, problem, or info for what could not be checked) and
what to do about it. Servers other than SGLang get what can be checked through the plain
OpenAI endpoints, and "info" for the rest: never a false alarm.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import requests

from ..config import Config
from ..errors import ArxivError
from ..ports import ChatModel, Fleet, PaperSearch, RouterWorker, ServerFacts
from ..store.cache import Cache
from ..synthesis.bundle import build_bundle
from ..synthesis.capabilities import (
    Capabilities,
    load_capabilities,
    save_capabilities,
    structured_and_usage,
    without_requests,
)
from ..synthesis.dispatch import stated_running
from ..synthesis.launch import reasoning_parser_for, router_commands, sglang_command
from ..synthesis.planning import PROMPT_OVERHEAD_TOKENS, load_plan
from ..synthesis.router import ROUTER_NAMES, SGLANG_ROUTER
from ..synthesis.server_errors import NOT_CONNECTED
from ..text.urls import redact_url
from .check import Check, Verdict
from .doctor_thinking import check_thinking, check_thinking_off

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BundleSize:
    tokens: int
    source: str  # where the figure comes from, for the report


def bundle_size(config: Config, cache: Cache, probe: ServerFacts | None = None) -> BundleSize:
    """The last edition's bundle size if one was fetched, else an estimate from the config.

    Counted by the server's tokenizer where `probe` reaches one that has `/v1/tokenize`, else
    at the rate that tokenizer measured for that edition's plan, else estimated: the same
    counts that the synthesis stage fits its bundle with.
    """
    for edition in sorted(cache.editions_with("fetch"), reverse=True):
        fetched = cache.get_fetch(edition)
        if not (fetched and fetched.sources):
            continue
        sources = list(fetched.sources)
        bundle = build_bundle(sources)
        counts = probe.tokenize(config.llm.model, [bundle.text]) if probe else None
        if counts:
            return BundleSize(counts[0], f"the bundle of edition {edition}, counted by the server")
        plan = load_plan(cache, edition, sources)
        if plan and plan.chars_per_token:
            return BundleSize(plan.tokens(bundle.chars),
                              f"the bundle of edition {edition}, at its measured token rate")
        return BundleSize(bundle.estimated_tokens, f"the bundle of edition {edition}, estimated")
    a = config.arxiv
    # No more papers get their full text than an edition holds.
    full_texts = min(a.full_text_papers, a.max_papers)
    chars = a.max_papers * (min(a.max_abstract_chars, 1500) + 400) + full_texts * a.max_pdf_chars
    return BundleSize(math.ceil(chars / 4), "an estimate from [arxiv] in config.toml")


def needed_context(config: Config, bundle_tokens: int) -> int:
    return bundle_tokens + PROMPT_OVERHEAD_TOKENS + config.registry.answer_tokens(config)


def suggested_context(needed: int) -> int:
    """Room for a fifth more than needed, rounded up to a multiple of 1024."""
    return math.ceil(needed * 1.2 / 1024) * 1024


def launch_command(config: Config, cache: Cache, base_url: str) -> str:
    """The SGLang command for this workspace: its model, port, context length and key."""
    context = suggested_context(needed_context(config, bundle_size(config, cache).tokens))
    return sglang_command(config.llm.model, base_url, context, config.llm.api_key_env)


def router_launch(config: Config, cache: Cache, base_url: str, workers: int) -> list[str]:
    """`workers` SGLang workers for this workspace and SGLang's router in front of them."""
    context = suggested_context(needed_context(config, bundle_size(config, cache).tokens))
    return router_commands(config.llm.model, base_url, workers, context, config.llm.api_key_env)


def launch_advice(config: Config, cache: Cache, base_url: str) -> str:
    """What to do when nothing answers at the server's URL."""
    return (f"Start SGLang with:\n  {launch_command(config, cache, base_url)}\n"
            "or point [llm] base_url in config.toml (or the DIGEST_LLM_BASE_URL environment "
            "variable) at a running OpenAI-compatible server. `digest doctor` checks the server; "
            "`--wait-for-server SECONDS` waits for one that is still loading.")


def _unreachable(err: Exception) -> str:
    """Why a server did not answer, in our words (not an exception's class name)."""
    if isinstance(err, requests.Timeout):
        return "no answer in time: is it still loading the model?"
    if isinstance(err, requests.ConnectionError):
        return NOT_CONNECTED
    return "its answer is not an OpenAI-compatible API's"


def run_doctor(config: Config, probe: ServerFacts, chat: ChatModel, source: PaperSearch,
               cache: Cache) -> list[Check]:
    checks: list[Check] = []
    llm = config.llm
    try:
        models = probe.models()
    except (requests.RequestException, ValueError) as err:
        status = getattr(getattr(err, "response", None), "status_code", None)
        reason = f"HTTP {status}" if status else _unreachable(err)
        fleet = probe.fleet() if status else None  # SGLang's router, with no worker to ask?
        if fleet is not None:
            checks.extend(check_fleet(config, fleet))
        else:
            checks.append(Check("server", "problem", f"{chat.base_url} does not answer ({reason})",
                                f"start SGLang: {launch_command(config, cache, chat.base_url)}"))
        checks.append(check_arxiv(config, source))
        return checks
    checks.append(Check("server", "ok", f"{chat.base_url} answers"))

    served = [m.id for m in models]
    if llm.model in served:
        checks.append(Check("model", "ok", f"serves {llm.model}"))
    else:
        checks.append(Check("model", "problem",
                            f"does not serve {llm.model}; it serves: {', '.join(served) or 'nothing'}",
                            "set [llm] model in config.toml to one of these"))

    info = probe.server_info()
    fleet = probe.fleet() if info is None or info.get("router") else None
    if fleet is not None:
        checks.extend(check_fleet(config, fleet))
    found = without_requests(probe, llm.model, llm.context_tokens,
                             load_capabilities(cache, chat.base_url, llm.model), info)
    if llm.model in served:
        found = structured_and_usage(chat, found)
    save_capabilities(cache, chat.base_url, llm.model, found)
    # What was found, in words; the context, the router (check_fleet) and, on SGLang, the cache
    # report get checks of their own.
    skip = {"context", "router", *({"prefix-cache report"} if found.limits else ())}
    checks.extend(Check(what, "info", words) for what, words in found.lines() if what not in skip)
    checks.append(check_context(config, cache, found, probe))
    if found.structured == "":
        checks.append(Check("structured output", "warning",
                            "the server constrains no JSON: briefs, themes, triage and evidence "
                            "answers are validated and asked for again when invalid",
                            "a server with json_schema or json_object support (SGLang, vLLM, "
                            "llama.cpp) answers them in one go"))
    if fleet is not None:
        checks.extend(fleet_sglang_checks(config, fleet))
    elif info is None:
        checks.append(Check("sglang", "info",
                            "no /server_info: not SGLang, so its prefix cache, cache report, "
                            "schedule policy and reasoning parser cannot be checked"))
    else:
        checks.extend(check_sglang(config, info))
    if llm.model in served:
        checks.append(check_thinking(config, chat))
        checks.append(check_thinking_off(config, chat))
    checks.append(check_arxiv(config, source))
    return checks


# Workers named one by one in doctor's report; a larger fleet's others are counted by kind.
SHOWN_WORKERS = 8


def check_fleet(config: Config, fleet: Fleet) -> list[Check]:
    """A router: which one (and its version, where it says it), how many workers it has
    healthy, and each worker by its limits (the router's labels or its own settings), or that
    they cannot be known from here; past SHOWN_WORKERS, the rest counted alike."""
    healthy, total = len(fleet.healthy), len(fleet.workers)
    router = ROUTER_NAMES.get(fleet.kind, ROUTER_NAMES[""]) + (
        f", version {fleet.version}" if fleet.version else "")
    setup = f"`digest server-command --router {max(total, 2)}` prints a measured setup"
    if not healthy:
        return [Check("router", "problem",
                      f"{router}, with no healthy worker ({healthy} of {total} listed)",
                      f"start the workers ({setup}); `--wait-for-server SECONDS` waits for one")]
    checks = [Check("router", "ok" if healthy == total else "warning",
                    f"{router}, {healthy} of {total} worker(s) healthy; it does not say its "
                    "routing policy", setup if healthy == total else
                    "see the router's log for the workers it cannot reach")]
    if fleet.kind == SGLANG_ROUTER:
        checks.append(Check("router version", "info", "sglang-router is the older name of "
                            "SGLang's router (last release January 2026)",
                            "today's is the Shepherd Model Gateway: pip install smg, then "
                            "`smg launch` with the same options"))
    described = [(n, *_worker_line(w)) for n, w in enumerate(fleet.workers, start=1)]
    checks.extend(Check(f"worker {n}", verdict, words)
                  for n, verdict, words in described[:SHOWN_WORKERS])
    rest = described[SHOWN_WORKERS:]
    if rest:
        alike: dict[str, int] = {}
        for _, verdict, words in rest:
            kind = words.split(": ", 1)[-1]
            kind = f"with {kind}" if verdict == "ok" else kind
            alike[kind] = alike.get(kind, 0) + 1
        shown = "; ".join(f"{count:,} {kind}" for kind, count in
                          sorted(alike.items(), key=lambda item: -item[1])[:4])
        more = len(alike) - 4
        checks.append(Check(f"workers {SHOWN_WORKERS + 1}-{total}", "info",
                            f"{len(rest):,} more: {shown}"
                            + (f"; and {more} other kind(s)" if more > 0 else "")))
    return checks


def _worker_line(worker: RouterWorker) -> tuple[Verdict, str]:
    url = redact_url(worker.url)
    settings = worker.settings
    if not worker.healthy:
        return "warning", f"{url}: not healthy"
    if settings is None:
        return "info", (f"{url}: its limits are not listed by the router and its /server_info "
                        "cannot be read from here, so its limits and settings are not known; "
                        "the digest starts at 2 prompts at a time and widens while answers "
                        "come back clean")
    info = dict(settings)
    running, context = stated_running(info), info.get("context_length")
    at_once = f"{running} requests at once" if running else "no stated limit"
    shown = f"{context:,}-token context" if isinstance(context, int) else "no context"
    return "ok", f"{url}: {at_once}, {shown}"


def fleet_sglang_checks(config: Config, fleet: Fleet) -> list[Check]:
    """The SGLang checks on each worker behind the router: one line where every worker gives
    the same answer, else one per worker."""
    read = [(n, dict(w.info)) for n, w in enumerate(fleet.workers, start=1) if w.info is not None]
    per_worker = [(n, check_sglang(config, info)) for n, info in read]
    checks: list[Check] = []
    for index, first in enumerate(per_worker[0][1] if per_worker else []):
        same = [found[index] for _, found in per_worker]
        if all(c == first for c in same):
            every = ("every worker" if len(same) == len(fleet.healthy) else
                     f"every worker of the {len(same)} read") if len(same) > 1 \
                else f"worker {per_worker[0][0]}"
            checks.append(Check(first.name, first.verdict, f"{first.detail} ({every})",
                                first.advice))
        else:
            checks.extend(Check(f"{c.name}, worker {n}", c.verdict, c.detail, c.advice)
                          for (n, _), c in zip(per_worker, same, strict=True))
    unread = [n for n, w in enumerate(fleet.workers, start=1) if w.healthy and w.info is None]
    if unread:
        numbers = ", ".join(str(n) for n in unread[:SHOWN_WORKERS]) + (
            f" and {len(unread) - SHOWN_WORKERS:,} more" if len(unread) > SHOWN_WORKERS else "")
        checks.append(Check("sglang", "info",
                            f"worker(s) {numbers} not read from here: their prefix cache, "
                            "cache report, schedule policy and reasoning parser are not known"))
    return checks


def check_context(config: Config, cache: Cache, found: Capabilities,
                  probe: ServerFacts | None = None) -> Check:
    size = bundle_size(config, cache, probe)
    needed = needed_context(config, size.tokens)
    context = found.context_tokens
    if not context:
        return Check("context", "info",
                     f"the server does not report its context length; a prompt needs about "
                     f"{needed:,} tokens ({size.source})",
                     "set [llm] context_tokens in config.toml to check it")
    detail = (f"{context:,} tokens (from {found.context_source}); the longest request needs "
              f"about {needed:,} ({size.tokens:,} for {size.source} plus the longest answer or "
              "evidence check)")
    if context < needed:
        return Check("context", "problem", detail,
                     f"start the server with {context_flag(found, suggested_context(needed))}, "
                     "or lower [arxiv] max_pdf_chars / full_text_papers")
    if context < needed * 1.1:
        return Check("context", "warning", detail + ": little headroom",
                     f"consider {context_flag(found, suggested_context(needed))}")
    return Check("context", "ok", detail)


def context_flag(found: Capabilities, tokens: int) -> str:
    """How the server found sets its context length, on its own command line."""
    if found.limits and found.router_workers is not None:
        return f"--context-length {tokens} on every worker (SGLang)"
    if found.limits:
        return f"--context-length {tokens} (SGLang)"
    return {"vllm": f"--max-model-len {tokens} (vLLM)",
            "llama.cpp": f"-c {tokens} (llama-server)",
            "llama-cpp-python": f"--n_ctx {tokens} (llama-cpp-python)"}.get(
        found.tokenizer or "", f"a context of {tokens} tokens (its own setting for it), and set "
                               f"[llm] context_tokens = {tokens}")


def check_sglang(config: Config, info: dict[str, Any]) -> list[Check]:
    checks: list[Check] = []
    if info.get("disable_radix_cache"):
        checks.append(Check("prefix cache", "problem",
                            "the radix cache is off: every prompt prefills the whole bundle again",
                            "restart SGLang without --disable-radix-cache"))
    else:
        checks.append(Check("prefix cache", "ok", "the radix cache is on"))
    if info.get("enable_cache_report"):
        checks.append(Check("cache report", "ok", "cached tokens are reported"))
    else:
        checks.append(Check("cache report", "warning",
                            "cache reporting is off: the run figures cannot show prefix-cache hits",
                            "restart SGLang with --enable-cache-report"))
    policy = info.get("schedule_policy")
    if policy == "lpm":
        checks.append(Check("schedule policy", "ok", "lpm (longest prefix match)"))
    else:
        checks.append(Check("schedule policy", "warning",
                            f"{policy or 'unknown'}: prompts that share the bundle may not be "
                            "scheduled together", "restart SGLang with --schedule-policy lpm"))
    parser = info.get("reasoning_parser")
    wanted = reasoning_parser_for(config.llm.model)
    if parser:
        checks.append(Check("reasoning parser", "ok", str(parser)))
    elif wanted:
        checks.append(Check("reasoning parser", "warning",
                            "none: thinking text will be mixed into the answers",
                            f"restart SGLang with --reasoning-parser {wanted}"))
    else:  # a model without a thinking mode SGLang knows of needs none: no false alarm
        checks.append(Check("reasoning parser", "info",
                            f"none, and {config.llm.model} has no reasoning parser that SGLang "
                            "knows of; the thinking check below says whether it thinks at all"))
    return checks


def check_arxiv(config: Config, source: PaperSearch) -> Check:
    try:
        papers = source.search(config.arxiv.query, 1, 200)
    except ArxivError as err:
        return Check("arxiv", "problem", str(err))
    if not papers:
        return Check("arxiv", "warning", f"{config.arxiv.api_url} answers, but the query matches "
                     "no papers", "check [arxiv] query")
    return Check("arxiv", "ok", f"{config.arxiv.api_url} answers; newest match: "
                 f"{papers[0].arxiv_id}")
