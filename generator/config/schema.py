"""The configuration's schema: one frozen dataclass per table of config.toml.

Each field's type, default, range (`read.ranged`) and description (the string under it, which
the configuration reference prints) is declared once, here, with the [prompts] table in
prompts.py and the [feedback] and [email] tables in readers.py; the loader (this package's
__init__) checks every table against them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..kinds import KindRegistry
from . import default_prompts
from .prompts import PromptSettings
from .read import ranged
from .readers import ChatSettings as ChatSettings
from .readers import EmailSettings as EmailSettings
from .readers import FeedbackSettings as FeedbackSettings


@dataclass(frozen=True)
class DigestSettings:
    """The digest as a whole: its title, address and language."""

    title: str = "Efficient LLM Inference"
    """The site's title, and every edition's."""
    description: str = "A periodic, LLM-synthesized digest of new arXiv papers."
    """A description of the digest, for you (nothing shows it yet)."""
    site_url: str = ""
    """Where the site is published: the feed's absolute links, the mail's links (`digest send`
    needs it), the 404 page's links and CSS on a project site. The environment variable
    `DIGEST_SITE_URL` overrides it; the workflow sets it to the Pages URL."""
    language: str = "English"
    """The language of every answer (briefs and synthesis)."""


@dataclass(frozen=True)
class ArxivSettings:
    """What each edition asks arXiv for, and how politely."""

    query: str = (
        'ti:"LLM inference" OR ti:"efficient inference" OR ti:"speculative decoding" OR '
        'ti:"continuous batching" OR ti:"KV cache" OR ti:"paged attention"'
    )
    """The arXiv API `search_query` (the default: an inference-related title query)."""
    max_papers: int = ranged(20, 1, 2000)
    """Papers per edition, newest submission first (with triage on: the best scored)."""
    full_text_papers: int = ranged(5, 0, 2000)
    """The first N papers also get their PDF text extracted."""
    max_abstract_chars: int = ranged(2000, 1, 100_000)
    """Abstracts are cut (at a word) beyond this."""
    max_pdf_chars: int = ranged(30000, 0, 10_000_000)
    """PDF pages are read until this many characters are in hand."""
    api_url: str = "https://export.arxiv.org/api/query"
    """The arXiv API's address (mirrors and tests point elsewhere)."""
    delay_seconds: float = ranged(3.0, 0, 3600)
    """The gap between arXiv requests, API or PDF (at least 3 for arxiv.org)."""
    timeout_seconds: float = ranged(30.0, 0.1, 3600)
    """Per read of an HTTP answer from arXiv's API; the whole answer must come within four
    times it (a trickled answer is cut): a stalled arXiv is a timeout, never a hang."""
    max_pdf_mb: float = ranged(50.0, 0.1, 2000)
    """Larger PDFs are skipped; the paper keeps its abstract."""
    pdf_deadline_seconds: float = ranged(120.0, 1, 86_400)
    """For a whole PDF download: a server that trickles bytes never trips the per-read timeout."""
    skip_seen: bool = False
    """Leave papers published in an earlier edition out of the bundle."""
    since_last_edition: bool = False
    """Ask arXiv only for papers submitted since the previous edition (`submittedDate:[… TO …]`)."""
    days: int = ranged(0, 0, 36_500)
    """Or only for papers submitted in the last N days (0: no window)."""
    page_size: int = ranged(2000, 1, 2000)
    """Results a request when triage lists a whole window (arXiv's most)."""


# SGLang's DeepSeek chat templates read this switch (a Qwen model's: `enable_thinking`).
THINKING_ON: dict[str, Any] = {"chat_template_kwargs": {"thinking": True}}


def _switched_off(body: dict[str, Any]) -> dict[str, Any]:
    """`body` with every `true` made `false` (nothing where no switch is true in it)."""
    def off(value: Any) -> Any:
        if value is True:
            return False
        if isinstance(value, dict):
            return {k: off(v) for k, v in value.items()}
        return value

    flipped = off(body)
    return flipped if flipped != body else {}


@dataclass(frozen=True)
class LlmSettings:
    """The OpenAI-compatible LLM server, and how the digest talks to it."""

    base_url: str = "http://localhost:30000/v1"
    """The OpenAI-compatible endpoint. The environment variable `DIGEST_LLM_BASE_URL` overrides
    it (CI keeps the address in a secret)."""
    model: str = "deepseek-ai/DeepSeek-V4-Flash"
    """The model to ask: one the server serves (`digest doctor` lists them)."""
    api_key_env: str = "SGLANG_API_KEY"
    """The environment variable holding the server's API key (`not-needed` is sent when it is
    unset); the key is never written to any file."""
    timeout_seconds: float = ranged(600.0, 1, 86_400)
    """A whole completion, from sending the request to the answer's last token, whatever the
    server sends meanwhile (tokens, keep-alive comments, nothing); the openai client's own
    timeout bounds each read."""
    stall_seconds: float = ranged(120.0, 1, 86_400)
    """A streamed answer that has begun and then sends no new token for this long is cut, and
    counted as a sign of overload (before the first token only `timeout_seconds` applies: a long
    prompt may wait and prefill for minutes)."""
    max_retries: int = ranged(2, 0, 20)
    """The client's retries on connection errors, 429 and 5xx (with backoff), where the server
    states its limits or `max_concurrency` is set; where the digest finds the width itself, a
    sign of overload is sent again by the batch, fewer at a time (up to five times), and nothing
    else is retried."""
    max_concurrency: int = ranged(0, 0, 1024)
    """Prompts in flight at once. 0: as many as the server runs (its `/server_info`; behind
    SGLang's router, the sum of its workers'), else two
    at first, one more per answer that comes back whole, half after a 429, 502-504, a dropped
    connection or a cut stream (never a 500: an invalid request is not overload); the most in
    flight with none meeting overload is remembered for the next run. Any other value is a fixed
    limit."""
    stream: bool = True
    """Stream answers: time to first token, live progress, prefill gating."""
    prefill_gate: bool = True
    """Hold the prompts that share the bundle until the first is prefilled (at most ten
    seconds), so the server prefills the bundle once."""
    context_tokens: int = ranged(0, 0, 100_000_000)
    """The model's context length; 0 asks the server (set it for a server that does not say,
    such as llama-cpp-python)."""
    thinking_extra_body: dict[str, Any] = field(
        default_factory=lambda: dict(THINKING_ON)
    )
    """How this server turns thinking on: merged into the top level of the thinking request's
    JSON. At this default, a Qwen model is sent the switch its chat template reads
    (`{chat_template_kwargs = {enable_thinking = true}}`)."""
    no_thinking_extra_body: dict[str, Any] = field(default_factory=dict)
    """How this server turns thinking off, sent with every request that does not think, so that
    no server or gateway default decides it (smg turns it on where a request does not say).
    Empty: `thinking_extra_body` with each `true` made `false`."""

    def thinking_switch(self, on: bool) -> dict[str, Any]:
        """The request body's switch that turns thinking on or off, in the form the model's
        chat template reads (SGLang's DeepSeek templates `thinking`, Qwen's `enable_thinking`;
        another server's, as configured)."""
        body = self.thinking_extra_body
        if body == THINKING_ON and "qwen" in self.model.lower():
            body = {"chat_template_kwargs": {"enable_thinking": True}}
        if on:
            return dict(body)
        return dict(self.no_thinking_extra_body) or _switched_off(body)


@dataclass(frozen=True)
class PathSettings:
    """The workspace's folders, relative to the config file: inside the workspace, apart from
    one another and from the config file."""

    docs_dir: str = "site_src"
    """The generated Markdown and every edition's record (MkDocs' `docs_dir`; commit it)."""
    site_dir: str = "site"
    """The built site."""
    cache_dir: str = ".cache"
    """PDFs, extracted text, arXiv results and every answer: what would cost time or money to
    get again (safe to delete)."""
    # The three folders must lie inside the workspace (the config file's folder) unless this
    # is true: a typo must never make a build write, or replace, a folder elsewhere.
    allow_outside_workspace: bool = False
    """Allow the three folders outside the workspace (the config file's folder)."""


@dataclass(frozen=True)
class BriefSettings:
    """A structured brief per paper (TL;DR, problem, method, headline result, limitations), from
    the paper's own section of the bundle."""

    enabled: bool = True
    """Ask for a brief of every paper."""
    instruction: str = default_prompts.BRIEF
    """The brief's task, after the paper's text."""
    max_tokens: int = ranged(800, 1, 10_000_000)
    """Each brief's budget in tokens."""
    temperature: float = ranged(0.2, 0.0, 2.0)
    """Sampling temperature."""


@dataclass(frozen=True)
class EvidenceSettings:
    """After each synthesis answer, ask for a verbatim quote behind every citing sentence."""

    enabled: bool = True
    """Check every synthesis answer's citing sentences against a verbatim quote from the cited
    paper (`false`: the figure check alone)."""
    # Small batches decode side by side: the last answer's checks, which end the stage, end
    # sooner (bench/synthesis.py's floor: 46.2 s with 3, 47.7 s with 5).
    claims_per_request: int = ranged(3, 1, 100)
    """Citing sentences per evidence request."""
    max_quote_words: int = ranged(40, 5, 500)
    """The longest quote asked for, in words."""
    temperature: float = ranged(0.0, 0.0, 2.0)
    """Sampling temperature of the evidence requests."""
    judge: bool = True
    """Judge every claim whose quote was found: does the quote support it (backed), part of it
    (partly), or not? Asked of the claim and its quote alone (`false`: marks say "quote found")."""


@dataclass(frozen=True)
class TriageSettings:
    """Score every paper of the window against the reader's interests; bundle the best.

    On when `interests` is set; without it an edition is the newest `max_papers` papers.
    """

    interests: str = field(default="", metadata={"joins_list": "; "})
    """Your interests in plain words: several lines, or a list of strings (joined by "; "). Set,
    it turns triage on: every paper of the window is scored and the best `arxiv.max_papers`
    bundled."""
    exclude: tuple[str, ...] = ()
    """Phrases: a paper whose title or abstract has one (case and spacing aside) is left out
    before any model call."""
    max_candidates: int = ranged(200, 1, 30_000)
    """Papers of the window scored at most (listed in arXiv pages of `arxiv.page_size`); the
    edition says when the cap cut the window short."""
    min_score: int = ranged(0, 0, 10)
    """A paper scored lower (0 to 10) is not bundled, even with room to spare."""
    instruction: str = default_prompts.TRIAGE
    """The triage prompt: the same for every candidate, so the server prefills it once."""
    max_tokens: int = ranged(300, 50, 100_000)
    """Each score's budget in tokens."""
    temperature: float = ranged(0.0, 0.0, 2.0)
    """Sampling temperature."""
    library: str = ""
    """Your own library, relative to this file: a BibTeX or RIS export (Zotero, Mendeley) or a
    text file of arXiv ids, one a line. Its newest papers are shown to triage as "more like
    this" examples, and a paper of the window already in it is listed, never bundled again."""
    library_examples: int = ranged(20, 0, 500)
    """The library's papers shown to triage at most, newest first."""

    @property
    def enabled(self) -> bool:
        return bool(self.interests.strip())


@dataclass(frozen=True)
class ContinuitySettings:
    """What each edition says about the ones before it ("Since last edition")."""

    enabled: bool = True
    """The withdrawal lookup and the comparison request of "Since last edition" (follow-ups,
    revisions and themes over time are read from the archive either way)."""
    lookback_editions: int = ranged(8, 0, 520)
    """Papers covered in this many editions before are looked up on arXiv for withdrawals, 100
    ids a request, at an edition's first fetch (again only with `--refresh`); 0: no lookup."""
    instruction: str = default_prompts.CHANGES
    """The comparison request ("what changed in the field")."""
    max_tokens: int = ranged(1200, 50, 100_000)
    """Its budget in tokens."""
    temperature: float = ranged(0.2, 0.0, 2.0)
    """Sampling temperature."""


@dataclass(frozen=True)
class AskSettings:
    """`digest ask`: a question answered from every committed edition's record."""

    papers: int = ranged(8, 1, 40)
    """The papers the archive's index finds most relevant that the answer reads (`--papers`)."""
    excerpt_chars: int = ranged(3000, 0, 100_000)
    """Of each paper's full text, where the cache still holds it, at most this many characters
    (fewer where the model's context is smaller); 0: the archive's record alone."""
    instruction: str = default_prompts.ASK
    """The task given after the archive bundle and before the question."""
    max_tokens: int = ranged(3000, 100, 100_000)
    """The answer's budget in tokens."""
    temperature: float = ranged(0.3, 0.0, 2.0)
    """Sampling temperature."""


@dataclass(frozen=True)
class Config:
    """A validated workspace configuration; paths are resolved against the config's folder."""

    path: Path
    digest: DigestSettings = field(default_factory=DigestSettings)
    arxiv: ArxivSettings = field(default_factory=ArxivSettings)
    llm: LlmSettings = field(default_factory=LlmSettings)
    paths: PathSettings = field(default_factory=PathSettings)
    prompts: PromptSettings = field(default_factory=PromptSettings)
    briefs: BriefSettings = field(default_factory=BriefSettings)
    evidence: EvidenceSettings = field(default_factory=EvidenceSettings)
    triage: TriageSettings = field(default_factory=TriageSettings)
    continuity: ContinuitySettings = field(default_factory=ContinuitySettings)
    ask: AskSettings = field(default_factory=AskSettings)
    feedback: FeedbackSettings = field(default_factory=FeedbackSettings)
    email: EmailSettings = field(default_factory=EmailSettings)
    chat: ChatSettings = field(default_factory=ChatSettings)
    # The settings of kinds registered beyond the built-in ones (generator.kinds), by kind.
    kinds: Mapping[str, Any] = field(default_factory=dict)
    # The kinds of prompt this run knows: the built-in ones (generator.prompts.kinds) unless
    # the caller gave more. Always given (`load_config`'s `registry`): the config is read
    # without importing what the kinds are made of.
    registry: KindRegistry = field(kw_only=True, compare=False, repr=False)

    @property
    def workspace(self) -> Path:
        return self.path.parent

    @property
    def docs_dir(self) -> Path:
        return (self.workspace / self.paths.docs_dir).resolve()

    @property
    def site_dir(self) -> Path:
        return (self.workspace / self.paths.site_dir).resolve()

    @property
    def cache_dir(self) -> Path:
        return (self.workspace / self.paths.cache_dir).resolve()

    @property
    def marks_file(self) -> Path:
        """The readers' marks (feedback.py): in the workspace, committed, never on the site."""
        return self.workspace / "feedback.json"

    @property
    def library_file(self) -> Path | None:
        """The reader's library ([triage] library), None where none is set."""
        return self.workspace / self.triage.library if self.triage.library.strip() else None

    @property
    def mkdocs_yml(self) -> Path:
        return self.workspace / "mkdocs.yml"


SECTIONS: dict[str, type] = {
    "digest": DigestSettings,
    "arxiv": ArxivSettings,
    "llm": LlmSettings,
    "paths": PathSettings,
    "prompts": PromptSettings,
    "briefs": BriefSettings,
    "evidence": EvidenceSettings,
    "triage": TriageSettings,
    "continuity": ContinuitySettings,
    "ask": AskSettings,
    "feedback": FeedbackSettings,
    "email": EmailSettings,
    "chat": ChatSettings,
}
