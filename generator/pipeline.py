"""The digest pipeline: fetch → bundle → synthesize → render → site, reading top to bottom.

Each stage reads what the previous one recorded in the cache, so the CLI can run one stage at a
time and an interrupted build resumes where it stopped. External services are built once, in
`make_services`, the only place that reads the environment.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from .arxiv_source import ArxivSource, HttpSession, PdfDownloader, RateLimiter
from .bundle import build_bundle
from .cache import Cache, completion_key
from .config import Config
from .errors import ServerUnavailableError, UsageError
from .fetch import FetchSettings, run_fetch
from .llm_client import ChatClient
from .models import Bundle, FetchResult, PromptRequest, SynthesisResult
from .prompts import build_requests
from .render import (EDITION_RE, default_template_dir, load_records, make_environment,
                     render_edition, write_pages)
from .server import ServerProbe
from .site import build_site
from .synthesis import OnDone, load_synthesis, run_synthesis, save_synthesis

log = logging.getLogger(__name__)

DEFAULT_API_KEY = "not-needed"  # SGLang ignores the key, but the openai client insists on one


@dataclass(frozen=True)
class Services:
    """The clients a run talks through; tests build them against local servers."""

    source: ArxivSource
    downloader: PdfDownloader
    chat: ChatClient
    probe: ServerProbe
    cache: Cache


@dataclass(frozen=True)
class BuildReport:
    edition: str
    papers: int
    full_text: int
    missing_full_text: int
    failed_prompts: tuple[str, ...]
    sent_prompts: int
    site_dir: Path | None


def today() -> str:
    return datetime.now(UTC).date().isoformat()


def check_edition(edition: str) -> str:
    if not EDITION_RE.match(edition):
        raise UsageError(
            f"invalid edition name {edition!r}: use a date such as 2026-12-02 (letters, digits, "
            "'.', '_' and '-' only)"
        )
    return edition


def make_services(config: Config, environ: Mapping[str, str]) -> Services:
    """Build the clients for a run. The API key comes from the environment and goes nowhere else."""
    session = HttpSession(timeout=config.arxiv.timeout_seconds)
    limiter = RateLimiter(config.arxiv.delay_seconds)
    api_key = environ.get(config.llm.api_key_env) or DEFAULT_API_KEY
    return Services(
        source=ArxivSource(session, config.arxiv.api_url, limiter),
        downloader=PdfDownloader(session, limiter, int(config.arxiv.max_pdf_mb * 1_000_000)),
        chat=ChatClient(
            config.llm.base_url,
            config.llm.model,
            api_key,
            timeout=config.llm.timeout_seconds,
            max_retries=config.llm.max_retries,
        ),
        probe=ServerProbe(session, config.llm.base_url, api_key),
        cache=Cache(config.cache_dir),
    )


def wait_for_server(services: Services, timeout: float,
                    on_progress: Callable[[float, str], None] | None = None) -> None:
    """Wait for a starting server (SGLang takes minutes to load a model) instead of failing."""
    if not services.probe.wait_ready(timeout, on_progress):
        raise ServerUnavailableError(
            f"the LLM server at {services.chat.base_url} was not ready after {timeout:g} s; "
            "check its log, or wait longer with a larger --wait-for-server")


def fetch_stage(config: Config, services: Services, edition: str, *, refresh: bool = False) -> FetchResult:
    a = config.arxiv
    settings = FetchSettings(a.query, a.max_papers, a.full_text_papers, a.max_abstract_chars,
                             a.max_pdf_chars)
    return run_fetch(edition, settings, services.source, services.downloader, services.cache,
                     refresh=refresh)


def _fetched(cache: Cache, edition: str) -> FetchResult:
    result = cache.get_fetch(edition)
    if result is None:
        raise UsageError(f"edition {edition} has not been fetched yet: run `digest fetch` first "
                         "(or `digest build`)")
    return result


def prepare(config: Config, fetch: FetchResult) -> tuple[Bundle, list[PromptRequest]]:
    bundle = build_bundle(fetch.sources)
    if not bundle.papers:
        return bundle, []  # nothing to synthesize: the edition says no papers matched
    return bundle, build_requests(config.prompts, bundle, config.llm.thinking_extra_body)


def all_cached(config: Config, services: Services, edition: str) -> bool:
    """Whether this edition's every prompt already has a cached answer (so no server is needed)."""
    fetch = services.cache.get_fetch(edition)
    if fetch is None:
        return False
    _, requests = prepare(config, fetch)
    return all(services.cache.get_completion(completion_key(services.chat.model, r))
               for r in requests)


def synthesize_stage(
    config: Config, services: Services, edition: str, *, on_done: OnDone | None = None
) -> SynthesisResult:
    bundle, requests = prepare(config, _fetched(services.cache, edition))
    result = run_synthesis(
        requests, services.chat, services.cache,
        bundle_chars=bundle.chars, bundle_tokens=bundle.estimated_tokens,
        max_concurrency=config.llm.max_concurrency, on_done=on_done,
    )
    save_synthesis(services.cache, edition, result)
    return result


def render_stage(config: Config, cache: Cache, edition: str) -> None:
    fetch = _fetched(cache, edition)
    synthesis = load_synthesis(cache, edition)
    if synthesis is None:
        raise UsageError(f"edition {edition} has no synthesis yet: run `digest synthesize` first "
                         "(or `digest build`)")
    bundle, _ = prepare(config, fetch)
    env = make_environment(config.workspace)
    rendered = render_edition(env, edition, config.digest.title, fetch, bundle, synthesis,
                              load_records(config.docs_dir))
    write_pages(config.docs_dir, rendered)
    log.info("rendered %d page(s) for edition %s", len(rendered.pages), edition)


def skeleton_dir() -> Path:
    """The default config.toml and mkdocs.yml of a new workspace."""
    packaged = default_template_dir().parent / "skeleton"
    return packaged if packaged.is_dir() else Path(__file__).resolve().parent.parent


def site_stage(config: Config) -> Path:
    build_site(config.mkdocs_yml, config.docs_dir, config.site_dir, config.digest.title,
               fallback_yml=skeleton_dir() / "mkdocs.yml")
    return config.site_dir


def run(
    config: Config,
    services: Services,
    edition: str,
    *,
    refresh: bool = False,
    on_done: OnDone | None = None,
) -> BuildReport:
    """Run every stage for one edition under the workspace lock."""
    with services.cache.lock():
        if not all_cached(config, services, edition):
            services.chat.check_ready()  # before arXiv is asked or anything is written
        fetch = fetch_stage(config, services, edition, refresh=refresh)
        synthesis = synthesize_stage(config, services, edition, on_done=on_done)
        render_stage(config, services.cache, edition)
        site_dir = site_stage(config)
    statuses = [s.full_text.status for s in fetch.sources]
    return BuildReport(
        edition=edition,
        papers=len(fetch.sources),
        full_text=statuses.count("ok"),
        missing_full_text=statuses.count("missing"),
        failed_prompts=tuple(c.name for c in synthesis.completions if not c.ok),
        sent_prompts=sum(1 for c in synthesis.completions if c.ok and not c.from_cache),
        site_dir=site_dir,
    )
