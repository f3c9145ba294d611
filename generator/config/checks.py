"""The checks a config's values must pass beyond their types: ranges, URLs, paths.

Run by `config.load_config` after the schema has typed every key, so each problem names its
dotted key; all problems are reported together.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from urllib.parse import urlparse

from ..marks.github import valid_repo
from .read import out_of_range
from .readers import CHAT_FORMATS
from .schema import Config

_ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_values(config: Config) -> list[str]:
    """Range and consistency checks that types alone cannot express."""
    problems: list[str] = []
    a, llm, p = config.arxiv, config.llm, config.prompts

    problems.extend(_ranges(config))
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
    f = config.feedback
    if f.github_repo and not valid_repo(f.github_repo):
        problems.append(f"feedback.github_repo: expected owner/name, got {f.github_repo!r}")
    if urlparse(f.github_url).scheme != "https" or not urlparse(f.github_url).hostname:
        problems.append(f"feedback.github_url: expected an https URL, got {f.github_url!r}")
    if f.email and ("@" not in f.email or any(c in f.email for c in ",;?&\n\r ")):
        problems.append(f"feedback.email: not an email address: {f.email!r}")
    if not f.label.strip() or any(c in f.label for c in ",\n\r"):
        problems.append(f"feedback.label: one label, no comma or line break, got {f.label!r}")
    problems.extend(_chat(config))
    host = urlparse(a.api_url).hostname or ""
    if urlparse(a.api_url).scheme not in ("http", "https") or not host:
        problems.append(f"arxiv.api_url: expected an http(s) URL, got {a.api_url!r}")
    elif (host == "arxiv.org" or host.endswith(".arxiv.org")) and a.delay_seconds < 3.0:
        problems.append(
            f"arxiv.delay_seconds: arXiv's terms allow one request every 3 seconds, "
            f"got {a.delay_seconds:g}"
        )
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

    triage = config.triage
    for i, phrase in enumerate(triage.exclude):
        if not phrase.strip():
            problems.append(f"triage.exclude[{i}]: an empty phrase would exclude every paper")
    labels = [d.label for d in p.deep_dives]
    for label in {x for x in labels if labels.count(x) > 1}:
        problems.append(f"prompts.deep_dives: the label {label!r} is used more than once")

    problems.extend(_check_paths(config))
    return problems


def _chat(config: Config) -> list[str]:
    """[chat]: a known format, and the name of an environment variable, never the URL itself
    (which is a secret, so it is never repeated in the problem either)."""
    c, problems = config.chat, []
    if c.format not in CHAT_FORMATS:
        problems.append(f"chat.format: expected {', '.join(repr(f) for f in CHAT_FORMATS)}, "
                        f"got {c.format!r}")
    name = c.webhook_url_env.strip()
    if "://" in name or "/" in name:
        problems.append("chat.webhook_url_env: names the environment variable that holds the "
                        "webhook's URL, not the URL itself, which is a secret: put the URL in "
                        "an environment variable (a repository secret in the workflow), name "
                        "that variable here, and take the URL out of this file")
    elif name and not _ENV_NAME_RE.fullmatch(name):
        problems.append(f"chat.webhook_url_env: expected the name of an environment variable "
                        f"(letters, digits and _), got {name!r}")
    return problems


def _ranges(config: Config) -> list[str]:
    """Every number has a sane range, declared on its field (`config_read.ranged`): a huge one
    ends in an overflow deep inside a stage. The built-in tables and each registered kind's."""
    problems: list[str] = []
    for item in dataclasses.fields(config):
        value = getattr(config, item.name)
        if dataclasses.is_dataclass(value):
            problems.extend(out_of_range(value, item.name))
    for kind, settings in config.kinds.items():
        problems.extend(out_of_range(settings, config.registry[kind].section))
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
