"""Load config.toml into frozen dataclasses (schema.py), reporting every problem at once.

Every table is checked against its dataclass, each bad key named by its dotted path; the
checks of values beyond their types are in checks.py. The registry of kinds a run knows is
given by the caller (the CLI gives the built-in kinds, generator.prompts.kinds), and each
registered kind's own table is read into `Config.kinds`.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..kinds import KindRegistry
from ..store.userfile import UserFileError, read_user_file
from .checks import check_values
from .read import build, describe, unknown
from .readers import ChatSettings as ChatSettings
from .readers import EmailSettings as EmailSettings
from .readers import FeedbackSettings as FeedbackSettings
from .schema import SECTIONS
from .schema import ArxivSettings as ArxivSettings
from .schema import AskSettings as AskSettings
from .schema import BriefSettings as BriefSettings
from .schema import Config as Config
from .schema import ContinuitySettings as ContinuitySettings
from .schema import DigestSettings as DigestSettings
from .schema import EvidenceSettings as EvidenceSettings
from .schema import LlmSettings as LlmSettings
from .schema import PathSettings as PathSettings
from .schema import TriageSettings as TriageSettings

MAX_CONFIG_BYTES = 4 * 1024 * 1024  # the longest config.toml with every prompt written out is ~60 KB
SITE_URL_ENV = "DIGEST_SITE_URL"  # overrides [digest] site_url (the workflow's Pages URL)


def load_config(path: str | Path, environ: Mapping[str, str] | None = None, *,
                registry: KindRegistry) -> Config:
    """Read and validate a config file; raise ConfigError listing every problem found.

    `environ`, where given, may set the site's URL (`DIGEST_SITE_URL`): a GitHub Pages
    workflow knows it only when it runs. `registry`: the kinds of prompt the run knows; each
    one's settings table is read from the file."""
    path = Path(path)
    shown = str(path)
    try:
        raw = tomllib.loads(read_user_file(path, MAX_CONFIG_BYTES).decode("utf-8"))
    except FileNotFoundError as err:
        raise ConfigError(
            shown, [f"file not found (create one with `digest init {path.parent}`)"]) from err
    except UnicodeDecodeError as err:
        raise ConfigError(shown, [f"not UTF-8 text: {err}"]) from err
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(shown, [f"TOML syntax error: {err}"]) from err
    except UserFileError as err:
        raise ConfigError(shown, [str(err)]) from err
    except RecursionError as err:  # tomllib recurses into nested arrays and inline tables
        raise ConfigError(shown, ["nests tables or arrays too deeply to read"]) from err

    problems: list[str] = []
    if environ and environ.get(SITE_URL_ENV):
        digest = raw.setdefault("digest", {})
        if isinstance(digest, dict):
            digest["site_url"] = environ[SITE_URL_ENV]
    kinds = _kind_settings(raw, problems, registry)
    sections: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in SECTIONS:
            problems.append(unknown(key, SECTIONS))
            continue
        if not isinstance(value, dict):
            problems.append(f"{key}: expected a table ([{key}]), got {describe(value)}")
            continue
        sections[key] = build(SECTIONS[key], value, key, problems)

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
