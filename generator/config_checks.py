"""The checks a config's values must pass beyond their types: ranges, URLs, paths.

Run by `config.load_config` after the schema has typed every key, so each problem names its
dotted key; all problems are reported together.
"""

from __future__ import annotations

import dataclasses
import unicodedata
from typing import TYPE_CHECKING
from urllib.parse import urlparse

if TYPE_CHECKING:
    from .config import Config


def check_values(config: Config) -> list[str]:
    """Range and consistency checks that types alone cannot express."""
    problems: list[str] = []
    a, llm, p = config.arxiv, config.llm, config.prompts

    def within(dotted: str, value: float, low: float, high: float) -> None:
        if not low <= value <= high:
            shown = value if isinstance(value, int) else f"{value:g}"
            problems.append(f"{dotted}: must be between {low:g} and {high:g}, got {shown}")

    e = config.email
    for item in dataclasses.fields(e):
        values = getattr(e, item.name)
        for value in values if isinstance(values, tuple) else (values,):
            if isinstance(value, str) and any(
                    unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in value):
                # A line break in a header value would start a header (or a message) of its
                # own; the email package refuses every kind of one (and control characters).
                problems.append(f"email.{item.metadata.get('key', item.name)}: must be one line "
                                f"(no line break or control character), got {value!r}")
                break
    if e.enabled:
        if e.security not in ("starttls", "ssl", "none"):
            problems.append(f"email.security: expected \"starttls\", \"ssl\" or \"none\", got "
                            f"{e.security!r}")
        if not e.smtp_host:
            problems.append("email.smtp_host: required when email.to is set")
        if not e.sender:
            problems.append("email.from: required when email.to is set")
        bad = [a for a in (*e.to, e.sender) if a and ("@" not in a or any(c in a for c in ",;"))]
        if bad:
            problems.append(f"email: not an email address: {', '.join(repr(a) for a in bad)}")
        within("email.smtp_port", e.smtp_port, 1, 65535)
        within("email.timeout_seconds", e.timeout_seconds, 1, 600)
    # Every number has a sane range: a huge one ends in an overflow deep inside a stage.
    within("arxiv.max_papers", a.max_papers, 1, 2000)
    within("arxiv.page_size", a.page_size, 1, 2000)
    within("arxiv.full_text_papers", a.full_text_papers, 0, 2000)
    within("arxiv.max_abstract_chars", a.max_abstract_chars, 1, 100_000)
    within("arxiv.max_pdf_chars", a.max_pdf_chars, 0, 10_000_000)
    within("arxiv.timeout_seconds", a.timeout_seconds, 0.1, 3600)
    within("arxiv.max_pdf_mb", a.max_pdf_mb, 0.1, 2000)
    within("arxiv.pdf_deadline_seconds", a.pdf_deadline_seconds, 1, 86_400)
    within("arxiv.delay_seconds", a.delay_seconds, 0, 3600)
    host = urlparse(a.api_url).hostname or ""
    if urlparse(a.api_url).scheme not in ("http", "https") or not host:
        problems.append(f"arxiv.api_url: expected an http(s) URL, got {a.api_url!r}")
    elif (host == "arxiv.org" or host.endswith(".arxiv.org")) and a.delay_seconds < 3.0:
        problems.append(
            f"arxiv.delay_seconds: arXiv's terms allow one request every 3 seconds, "
            f"got {a.delay_seconds:g}"
        )
    within("arxiv.days", a.days, 0, 36_500)
    if a.since_last_edition and a.days:
        problems.append("arxiv.days: set either days or since_last_edition, not both")
    if config.digest.site_url and urlparse(config.digest.site_url).scheme not in ("http", "https"):
        problems.append(f"digest.site_url: expected an http(s) URL, got {config.digest.site_url!r}")
    if not a.query.strip():
        problems.append("arxiv.query: must not be empty")

    if urlparse(llm.base_url).scheme not in ("http", "https"):
        problems.append(f"llm.base_url: expected an http(s) URL, got {llm.base_url!r}")
    if not config.digest.language.strip():
        problems.append("digest.language: must not be empty")
    if not llm.model.strip():
        problems.append("llm.model: must not be empty")
    within("llm.timeout_seconds", llm.timeout_seconds, 1, 86_400)
    within("llm.stall_seconds", llm.stall_seconds, 1, 86_400)
    within("llm.max_retries", llm.max_retries, 0, 20)
    within("llm.max_concurrency", llm.max_concurrency, 0, 1024)
    within("llm.context_tokens", llm.context_tokens, 0, 100_000_000)

    specs: list[tuple[str, int, float]] = [
        ("prompts.research_map", p.research_map.max_tokens, p.research_map.temperature),
        ("prompts.thinking", p.thinking.max_tokens, p.thinking.temperature),
    ]
    specs += [(f"prompts.deep_dives[{i}]", d.max_tokens, d.temperature)
              for i, d in enumerate(p.deep_dives)]
    specs += [("prompts.themes", p.themes.max_tokens, p.themes.temperature),
              ("briefs", config.briefs.max_tokens, config.briefs.temperature)]
    for dotted, max_tokens, temperature in specs:
        within(f"{dotted}.max_tokens", max_tokens, 1, 10_000_000)
        if not 0.0 <= temperature <= 2.0:
            problems.append(f"{dotted}.temperature: must be between 0 and 2, got {temperature:g}")
    within("prompts.thinking.thinking_max_tokens", p.thinking.thinking_max_tokens, 1, 10_000_000)
    if not 0.0 <= p.thinking.thinking_temperature <= 2.0:
        problems.append("prompts.thinking.thinking_temperature: must be between 0 and 2")
    within("evidence.claims_per_request", config.evidence.claims_per_request, 1, 100)
    within("evidence.max_quote_words", config.evidence.max_quote_words, 5, 500)
    if not 0.0 <= config.evidence.temperature <= 2.0:
        problems.append("evidence.temperature: must be between 0 and 2")
    triage = config.triage
    within("triage.max_candidates", triage.max_candidates, 1, 30_000)  # arXiv's own limit
    within("triage.min_score", triage.min_score, 0, 10)
    within("triage.max_tokens", triage.max_tokens, 50, 100_000)
    if not 0.0 <= triage.temperature <= 2.0:
        problems.append("triage.temperature: must be between 0 and 2")
    for i, phrase in enumerate(triage.exclude):
        if not phrase.strip():
            problems.append(f"triage.exclude[{i}]: an empty phrase would exclude every paper")
    labels = [d.label for d in p.deep_dives]
    for label in {x for x in labels if labels.count(x) > 1}:
        problems.append(f"prompts.deep_dives: the label {label!r} is used more than once")

    problems.extend(_ranges(config))
    problems.extend(_check_paths(config))
    return problems


def _ranges(config: Config) -> list[str]:
    """The ranges registered kinds declare on their settings' fields (`metadata["range"]`)."""
    from .kinds import KINDS

    problems: list[str] = []
    for kind, settings in config.kinds.items():
        for item in dataclasses.fields(settings):
            low, high = item.metadata.get("range", (None, None))
            value = getattr(settings, item.name)
            if low is not None and not low <= value <= high:
                problems.append(f"{KINDS[kind].section}.{item.name}: must be between {low:g} "
                                f"and {high:g}, got {value:g}")
    return problems


def _check_paths(config: Config) -> list[str]:
    """Folders that stay in the workspace, apart from one another and from the config file.

    The site folder is replaced wholesale and the docs folder is written into, so a site_dir
    of ".cache", "config.toml" or "../somewhere" must be refused before anything is written.
    """
    problems: list[str] = []
    workspace = config.workspace.resolve()
    folders = {"paths.docs_dir": config.docs_dir, "paths.site_dir": config.site_dir,
               "paths.cache_dir": config.cache_dir}
    for dotted, folder in folders.items():
        if folder == workspace:
            problems.append(f"{dotted}: must be a folder inside the workspace, not the workspace "
                            f"itself ({workspace})")
        elif not folder.is_relative_to(workspace) and not config.paths.allow_outside_workspace:
            problems.append(f"{dotted}: {folder} is outside the workspace {workspace}; use a "
                            "path inside it, or set paths.allow_outside_workspace = true")
        if config.path == folder or config.path.is_relative_to(folder):
            problems.append(f"{dotted}: must not be or contain the config file {config.path}")
    names = list(folders)
    for i, first in enumerate(names):
        for second in names[i + 1:]:
            a, b = folders[first], folders[second]
            if a == b or a.is_relative_to(b) or b.is_relative_to(a):
                why = (" (the cache holds full text, which must never be published)"
                       if second == "paths.cache_dir" else "")
                problems.append(f"{second}: must be separate from {first}, neither inside the "
                                f"other{why}")
    return problems
