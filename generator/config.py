"""Load config.toml into frozen dataclasses, reporting every problem at once.

The schema is the dataclasses below: each field's type and default is declared once, and the
loader checks every table against them, naming each bad key by its dotted path; the checks of
values beyond their types are in `config_checks`.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config_checks import check_values
from .config_read import build, describe, ranged, unknown
from .errors import ConfigError
from .feedback import MarkLinks
from .kinds import BUILTIN_KINDS, KindRegistry
from .synthesis import default_prompts


@dataclass(frozen=True)
class DigestSettings:
    title: str = "Efficient LLM Inference"
    description: str = "A periodic, LLM-synthesized digest of new arXiv papers."
    site_url: str = ""  # where the site is published; the feed's links need it
    language: str = "English"  # the language of every answer


@dataclass(frozen=True)
class ArxivSettings:
    query: str = (
        'ti:"LLM inference" OR ti:"efficient inference" OR ti:"speculative decoding" OR '
        'ti:"continuous batching" OR ti:"KV cache" OR ti:"paged attention"'
    )
    max_papers: int = ranged(20, 1, 2000)
    full_text_papers: int = ranged(5, 0, 2000)
    max_abstract_chars: int = ranged(2000, 1, 100_000)
    max_pdf_chars: int = ranged(30000, 0, 10_000_000)
    api_url: str = "https://export.arxiv.org/api/query"
    delay_seconds: float = ranged(3.0, 0, 3600)
    timeout_seconds: float = ranged(30.0, 0.1, 3600)
    max_pdf_mb: float = ranged(50.0, 0.1, 2000)
    # For a whole PDF download (a trickle never times out)
    pdf_deadline_seconds: float = ranged(120.0, 1, 86_400)
    skip_seen: bool = False  # keep papers published in an earlier edition out of the bundle
    since_last_edition: bool = False  # only papers submitted since the previous edition
    days: int = ranged(0, 0, 36_500)  # or: only papers submitted in the last N days (0: no window)
    # Results a request when triage lists a whole window (arXiv's most)
    page_size: int = ranged(2000, 1, 2000)


@dataclass(frozen=True)
class LlmSettings:
    base_url: str = "http://localhost:30000/v1"
    model: str = "deepseek-ai/DeepSeek-V4-Flash"
    api_key_env: str = "SGLANG_API_KEY"
    # A whole completion, whatever the server sends meanwhile
    timeout_seconds: float = ranged(600.0, 1, 86_400)
    # A streamed answer with no new token for this long is cut
    stall_seconds: float = ranged(120.0, 1, 86_400)
    max_retries: int = ranged(2, 0, 20)
    # Prompts in flight at once; 0: as many as the server runs (its /server_info), else all.
    max_concurrency: int = ranged(0, 0, 1024)
    stream: bool = True  # stream answers: time to first token, live progress, prefill gating
    prefill_gate: bool = True  # hold prompts that share a prefix until the first is prefilled
    context_tokens: int = ranged(0, 0, 100_000_000)  # the model's context length; 0 asks the server
    # How this server turns thinking on; merged into the top level of the request JSON.
    thinking_extra_body: dict[str, Any] = field(
        default_factory=lambda: {"chat_template_kwargs": {"thinking": True}}
    )


@dataclass(frozen=True)
class PathSettings:
    docs_dir: str = "site_src"
    site_dir: str = "site"
    cache_dir: str = ".cache"
    # The three folders must lie inside the workspace (the config file's folder) unless this
    # is true: a typo must never make a build write, or replace, a folder elsewhere.
    allow_outside_workspace: bool = False


@dataclass(frozen=True)
class ResearchMapPrompt:
    title: str = "Research map"
    instruction: str = default_prompts.RESEARCH_MAP
    max_tokens: int = ranged(3000, 1, 10_000_000)
    temperature: float = ranged(0.3, 0.0, 2.0)


@dataclass(frozen=True)
class DeepDivePrompt:
    label: str
    question: str
    max_tokens: int = ranged(1200, 1, 10_000_000)
    temperature: float = ranged(0.2, 0.0, 2.0)


@dataclass(frozen=True)
class ThinkingPrompt:
    title: str = "Thinking comparison"
    question: str = default_prompts.THINKING
    max_tokens: int = ranged(1500, 1, 10_000_000)
    temperature: float = ranged(0.2, 0.0, 2.0)
    thinking_max_tokens: int = ranged(4000, 1, 10_000_000)
    thinking_temperature: float = ranged(0.6, 0.0, 2.0)


@dataclass(frozen=True)
class ThemesPrompt:
    enabled: bool = True
    instruction: str = default_prompts.THEMES
    max_tokens: int = ranged(1200, 1, 10_000_000)
    temperature: float = ranged(0.2, 0.0, 2.0)


@dataclass(frozen=True)
class BriefSettings:
    enabled: bool = True
    instruction: str = default_prompts.BRIEF
    max_tokens: int = ranged(800, 1, 10_000_000)
    temperature: float = ranged(0.2, 0.0, 2.0)


@dataclass(frozen=True)
class EvidenceSettings:
    """After each synthesis answer, ask for a verbatim quote behind every citing sentence."""

    enabled: bool = True
    # Small batches decode side by side: the last answer's checks, which end the stage, end
    # sooner (bench/synthesis.py's floor: 46.2 s with 3, 47.7 s with 5).
    claims_per_request: int = ranged(3, 1, 100)
    max_quote_words: int = ranged(40, 5, 500)
    temperature: float = ranged(0.0, 0.0, 2.0)


@dataclass(frozen=True)
class TriageSettings:
    """Score every paper of the window against the reader's interests; bundle the best.

    On when `interests` is set; without it an edition is the newest `max_papers` papers.
    """

    # The reader's interests, in plain words: a string, or a list of them (joined by "; ").
    interests: str = field(default="", metadata={"joins_list": "; "})
    exclude: tuple[str, ...] = ()  # phrases: a paper whose title or abstract has one is left out
    # Papers of the window scored at most (arXiv pages of up to 2000)
    max_candidates: int = ranged(200, 1, 30_000)
    min_score: int = ranged(0, 0, 10)  # a paper scored lower is not bundled, even with room to spare
    instruction: str = default_prompts.TRIAGE
    max_tokens: int = ranged(300, 50, 100_000)
    temperature: float = ranged(0.0, 0.0, 2.0)

    @property
    def enabled(self) -> bool:
        return bool(self.interests.strip())


@dataclass(frozen=True)
class ContinuitySettings:
    """What each edition says about the ones before it ("Since last edition")."""

    enabled: bool = True
    # Papers covered in this many editions before are looked up for withdrawals (one arXiv
    # request per 100 of them).
    lookback_editions: int = ranged(8, 0, 520)
    instruction: str = default_prompts.CHANGES
    max_tokens: int = ranged(700, 50, 100_000)
    temperature: float = ranged(0.2, 0.0, 2.0)


@dataclass(frozen=True)
class FeedbackSettings:
    """The readers' "more like this" and "less like this" marks (`digest feedback`)."""

    # The digest's repository ("owner/name"): each paper on the site offers marks that open a
    # pre-filled issue there; `digest feedback pull` reads them.
    github_repo: str = ""
    # The label the site's issue links ask for (GitHub applies it where the reader may label;
    # pull reads a mark from the title, labelled or not).
    label: str = "digest-feedback"
    github_url: str = "https://github.com"  # the web address issues are opened at
    # Where the mail's marks go (a mailto: link), for readers without a GitHub account.
    email: str = ""
    max_examples: int = ranged(20, 0, 200)  # marked papers shown to triage as examples
    example_chars: int = ranged(300, 50, 5000)  # each example's abstract cut to this

    @property
    def links(self) -> MarkLinks:
        return MarkLinks(self.github_repo, self.label, self.github_url, self.email)


def _default_deep_dives() -> tuple[DeepDivePrompt, ...]:
    return tuple(DeepDivePrompt(label, q) for label, q in default_prompts.DEEP_DIVES)


@dataclass(frozen=True)
class PromptSettings:
    system: str = default_prompts.SYSTEM
    research_map: ResearchMapPrompt = field(default_factory=ResearchMapPrompt)
    deep_dives: tuple[DeepDivePrompt, ...] = field(default_factory=_default_deep_dives)
    thinking: ThinkingPrompt = field(default_factory=ThinkingPrompt)
    themes: ThemesPrompt = field(default_factory=ThemesPrompt)


@dataclass(frozen=True)
class EmailSettings:
    """The edition as a newsletter (`digest send`); off until `to` lists an address."""

    to: tuple[str, ...] = ()
    sender: str = field(default="", metadata={"key": "from"})  # TOML: from = "..."
    subject: str = "{title} · {edition}: {pick}"  # {pick}: the top pick's name
    smtp_host: str = ""
    smtp_port: int = ranged(587, 1, 65535)
    security: str = "starttls"  # "starttls", "ssl" or "none"
    # Names of environment variables: the password never sits in config.toml.
    username_env: str = ""
    password_env: str = ""
    timeout_seconds: float = ranged(30.0, 1, 600)
    unsubscribe: str = ""  # a URL or a mailto: for the List-Unsubscribe header

    @property
    def enabled(self) -> bool:
        return bool(self.to)


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
    feedback: FeedbackSettings = field(default_factory=FeedbackSettings)
    email: EmailSettings = field(default_factory=EmailSettings)
    # The settings of kinds registered beyond the built-in ones (generator.kinds), by kind.
    kinds: Mapping[str, Any] = field(default_factory=dict)
    # The kinds of prompt this run knows (the built-in ones unless `load_config` was given more).
    registry: KindRegistry = field(default=BUILTIN_KINDS, compare=False, repr=False)

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
    def mkdocs_yml(self) -> Path:
        return self.workspace / "mkdocs.yml"


_SECTIONS: dict[str, type] = {
    "digest": DigestSettings,
    "arxiv": ArxivSettings,
    "llm": LlmSettings,
    "paths": PathSettings,
    "prompts": PromptSettings,
    "briefs": BriefSettings,
    "evidence": EvidenceSettings,
    "triage": TriageSettings,
    "continuity": ContinuitySettings,
    "feedback": FeedbackSettings,
    "email": EmailSettings,
}


SITE_URL_ENV = "DIGEST_SITE_URL"  # overrides [digest] site_url (the workflow's Pages URL)


def load_config(path: str | Path, environ: Mapping[str, str] | None = None, *,
                registry: KindRegistry = BUILTIN_KINDS) -> Config:
    """Read and validate a config file; raise ConfigError listing every problem found.

    `environ`, where given, may set the site's URL (`DIGEST_SITE_URL`): a GitHub Pages
    workflow knows it only when it runs. `registry`: the kinds of prompt the run knows; each
    one's settings table is read from the file."""
    path = Path(path)
    shown = str(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as err:
        raise ConfigError(
            shown, [f"file not found (create one with `digest init {path.parent}`)"]) from err
    except UnicodeDecodeError as err:
        raise ConfigError(shown, [f"not UTF-8 text: {err}"]) from err
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(shown, [f"TOML syntax error: {err}"]) from err

    problems: list[str] = []
    if environ and environ.get(SITE_URL_ENV):
        digest = raw.setdefault("digest", {})
        if isinstance(digest, dict):
            digest["site_url"] = environ[SITE_URL_ENV]
    kinds = _kind_settings(raw, problems, registry)
    sections: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in _SECTIONS:
            problems.append(unknown(key, _SECTIONS))
            continue
        if not isinstance(value, dict):
            problems.append(f"{key}: expected a table ([{key}]), got {describe(value)}")
            continue
        sections[key] = build(_SECTIONS[key], value, key, problems)

    config = Config(path=path.resolve(), kinds=kinds, registry=registry,
                    **{k: v for k, v in sections.items() if v is not None})
    problems.extend(check_values(config))
    if problems:
        raise ConfigError(shown, problems)
    return config


def _kind_settings(raw: dict[str, Any], problems: list[str],
                   registry: KindRegistry) -> dict[str, Any]:
    """The tables of registered kinds that declare settings, taken out of `raw` (so the fixed
    schema does not call them unknown) and read into each kind's dataclass."""
    found: dict[str, Any] = {}
    for spec in registry.values():
        if spec.settings is None:
            continue
        *parents, name = spec.section.split(".")
        holder: Any = raw
        for parent in parents:
            holder = holder.get(parent) if isinstance(holder, dict) else None
        table = holder.pop(name, None) if isinstance(holder, dict) else None
        if table is None:
            found[spec.kind] = spec.settings()
        elif not isinstance(table, dict):
            problems.append(f"{spec.section}: expected a table ([{spec.section}]), got "
                            f"{describe(table)}")
        elif (built := build(spec.settings, table, spec.section, problems)) is not None:
            found[spec.kind] = built
    return found
