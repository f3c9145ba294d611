"""The clients a run talks through, built once from the config and the environment.

`make_services` is the only place that reads the environment: the API key goes into the
clients and nowhere else.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from urllib.parse import urlparse

from ..config import Config
from ..errors import ServerNotAnsweringError, ServerUnavailableError
from ..fetch.arxiv_source import ArxivSource, RateLimiter, RecordingSession
from ..fetch.pdf_download import PdfDownloader
from ..ports import ChatModel, PaperSearch, PdfSource, ServerFacts
from ..store.cache import Cache
from ..synthesis.llm_client import ChatClient
from ..synthesis.server import ServerProbe
from ..text.urls import register_secret

DEFAULT_API_KEY = "not-needed"  # SGLang ignores the key, but the openai client insists on one
BASE_URL_ENV = "DIGEST_LLM_BASE_URL"  # overrides [llm] base_url


@dataclass(frozen=True)
class Services:
    """The clients a run talks through: the real ones from `make_services`, or in-process
    doubles (tests/doubles.py) that satisfy the same protocols."""

    arxiv: PaperSearch  # the arXiv API client (search)
    downloader: PdfSource
    chat: ChatModel
    probe: ServerFacts
    cache: Cache


def llm_base_url(config: Config, environ: Mapping[str, str]) -> str:
    """The LLM server's URL: `DIGEST_LLM_BASE_URL` (CI keeps the address in a secret, not in
    config.toml), else `[llm] base_url`."""
    return environ.get(BASE_URL_ENV) or config.llm.base_url


def workspace_cache(config: Config) -> Cache:
    """The workspace's cache: the one handle a command makes, and passes to whatever needs it
    (the services, the lock, the render, the mail's delivery record)."""
    return Cache(config.cache_dir)


def make_services(config: Config, environ: Mapping[str, str], cache: Cache) -> Services:
    """Build the clients for a run. The API key comes from the environment and goes nowhere else."""
    session = RecordingSession(timeout=config.arxiv.timeout_seconds)
    # Kept in the workspace, so that one command after another keeps arXiv's spacing too.
    limiter = RateLimiter(config.arxiv.delay_seconds, cache.rate_limit_path,
                          key=urlparse(config.arxiv.api_url).hostname or "arxiv")
    api_key = environ.get(config.llm.api_key_env, "")
    if api_key:
        register_secret(api_key)  # redacted, in any encoding, from every message, answer and log
    api_key = api_key or DEFAULT_API_KEY
    base_url = llm_base_url(config, environ)
    return Services(
        arxiv=ArxivSource(session, config.arxiv.api_url, limiter),
        downloader=PdfDownloader(session, limiter, int(config.arxiv.max_pdf_mb * 1_000_000),
                                 deadline_s=config.arxiv.pdf_deadline_seconds),
        chat=ChatClient(
            base_url,
            config.llm.model,
            api_key,
            timeout=config.llm.timeout_seconds,
            max_retries=config.llm.max_retries,
            stream=config.llm.stream,
            stall=config.llm.stall_seconds,
            thinking_off=config.llm.thinking_switch(False),
        ),
        probe=ServerProbe(session, base_url, api_key),
        cache=cache,
    )


def wait_for_server(services: Services, timeout: float,
                    on_progress: Callable[[float, str], None] | None = None) -> None:
    """Wait for a starting server (SGLang takes minutes to load a model) instead of failing."""
    if not services.probe.wait_ready(timeout, on_progress):
        raise ServerUnavailableError(
            f"the LLM server at {services.chat.base_url} was not ready after {timeout:g} s; "
            "check its log, or wait longer with a larger --wait-for-server")


@contextlib.contextmanager
def launch_advice_on_failure(config: Config, services: Services) -> Iterator[None]:
    """When nothing answers at the server's URL, say how to start one that fits this config."""
    try:
        yield
    except ServerNotAnsweringError as err:
        from .doctor import launch_advice  # only now: it is not free to import

        raise ServerNotAnsweringError(
            f"{err}\n{launch_advice(config, services.cache, services.chat.base_url)}") from err
