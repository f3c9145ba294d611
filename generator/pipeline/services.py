"""The clients the digest talks through, built from the config and the environment it is given:
a run's (`make_services`), the chat webhook's (`chat_webhook`) and GitHub's issues
(`github_issues`). Every HTTP session is made here; each secret goes into its client and
nowhere else.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from urllib.parse import urlparse

import requests

from ..config import Config
from ..deadline import DeadlineAdapter, Watchdog
from ..deliver.webhook import ChatError, Webhook
from ..errors import ServerNotAnsweringError, ServerUnavailableError, UsageError
from ..fetch.arxiv_source import ArxivSource, RateLimiter, RecordingSession
from ..fetch.pdf_download import PdfDownloader
from ..marks.github import DEFAULT_API, GitHubIssues
from ..ports import ChatModel, PaperSearch, PdfSource, ServerFacts
from ..store.cache import Cache
from ..synthesis.llm_client import ChatClient
from ..synthesis.server import ServerProbe
from ..text.urls import register_secret

log = logging.getLogger(__name__)

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


@contextlib.contextmanager
def chat_webhook(config: Config, environ: Mapping[str, str]) -> Iterator[Webhook]:
    """The team chat's incoming webhook, its URL from the variable `[chat] webhook_url_env`
    names (a secret: never in config.toml, a message or a record)."""
    variable = config.chat.webhook_url_env.strip()
    url = environ.get(variable, "").strip()
    if not url:
        raise ChatError(f"the chat webhook's URL is not set: export {variable} (named by "
                        "[chat] webhook_url_env) before `digest send`; in the workflow, "
                        f"add the repository secret {variable}")
    with requests.Session() as session:
        yield Webhook(session, url, variable, deadline_s=config.chat.timeout_seconds)


@contextlib.contextmanager
def github_issues(config: Config, environ: Mapping[str, str], timeout_s: float
                  ) -> Iterator[GitHubIssues]:
    """The issues of `[feedback] github_repo`, read and closed with `GITHUB_TOKEN`."""
    repo = config.feedback.github_repo
    if not repo:
        raise UsageError(f"set [feedback] github_repo = \"owner/name\" in {config.path} to read "
                         "marks from that repository's issues (or pass --if-configured)")
    token = environ.get("GITHUB_TOKEN", "")
    if not token:
        raise UsageError("GITHUB_TOKEN is not set: the marks' issues are read and closed "
                         "with it (locally: GITHUB_TOKEN=$(gh auth token), or a fine-grained "
                         "token with Issues read and write on the repository; in a workflow: "
                         "env: GITHUB_TOKEN: ${{ github.token }})")
    with requests.Session() as session:
        yield GitHubIssues(session, environ.get("GITHUB_API_URL") or DEFAULT_API, repo, token,
                           deadline_s=timeout_s)


SITE_DEADLINE_S = 30.0  # one file of the deployed site, the whole exchange
SITE_MAX_BYTES = 32 * 1024 * 1024  # more than any record or sitemap this digest writes


@contextlib.contextmanager
def site_files(deadline_s: float = SITE_DEADLINE_S) -> Iterator[Callable[[str], bytes | None]]:
    """A reader of the deployed site's files (its sitemap, each edition's record): a file's
    bytes, or None where it is not there or not read whole within `deadline_s` (said in the
    log, in our words)."""
    watchdog = Watchdog()
    with requests.Session() as session:
        session.mount("http://", DeadlineAdapter())
        session.mount("https://", DeadlineAdapter())

        def get(url: str) -> bytes | None:
            with watchdog.exchange(deadline_s) as watch:
                try:
                    with session.get(url, timeout=(min(10.0, deadline_s), deadline_s), stream=True,
                                     headers={"User-Agent": "research-digest"}) as response:
                        if response.status_code != 200:
                            log.info("%s: HTTP %d", url, response.status_code)
                            return None
                        body = b""
                        for chunk in response.iter_content(64 * 1024):
                            body += chunk
                            if len(body) > SITE_MAX_BYTES:
                                log.warning("%s is larger than %d bytes: not read", url,
                                            SITE_MAX_BYTES)
                                return None
                        return body
                except (requests.RequestException, OSError) as err:
                    why = (f"not read whole within {deadline_s:g} s" if watch.expired()
                           else f"not read ({type(err).__name__})")
                    log.warning("%s: %s", url, why)
                    return None

        yield get
