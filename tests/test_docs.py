"""The project's documentation: the configuration reference lists every key the loader
accepts, each with its description, and the pages build with `mkdocs build --strict`."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generator import config as config_module
from generator.config import load_config
from generator.config.read import ranged
from generator.config.reference import MARKER, options, reference_markdown
from generator.config.schema import SECTIONS
from generator.kinds import KindSpec
from generator.prompts.kinds import BUILTIN_KINDS

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class GlossarySettings:
    """A glossary of the bundle's terms."""

    enabled: bool = True
    """Ask for the glossary."""
    max_terms: int = ranged(12, 1, 100)
    """Terms listed at most."""


GLOSSARY = KindSpec("glossary", None, None, True, lambda c: [400],
                    settings=GlossarySettings, section="prompts.glossary")


def accepted_keys(cls: type, prefix: str) -> list[str]:
    """Every dotted key the loader reads into `cls`, walked from the declarations as
    config_read.build walks them (tables, arrays of tables, a field's TOML `key`)."""
    keys: list[str] = []
    hints = typing.get_type_hints(cls)
    for item in dataclasses.fields(cls):
        dotted = f"{prefix}.{item.metadata.get('key', item.name)}"
        hint = hints[item.name]
        args = typing.get_args(hint)
        if dataclasses.is_dataclass(hint) and isinstance(hint, type):
            keys += accepted_keys(hint, dotted)
        elif (typing.get_origin(hint) is tuple and args and isinstance(args[0], type)
              and dataclasses.is_dataclass(args[0])):
            keys += accepted_keys(args[0], dotted)
        else:
            keys.append(dotted)
    return keys


def every_accepted_key() -> list[str]:
    return [key for section, cls in SECTIONS.items()
            for key in accepted_keys(cls, section)]


def test_every_config_key_is_in_the_reference_with_a_description() -> None:
    reference = reference_markdown(BUILTIN_KINDS)
    keys = every_accepted_key()
    assert len(keys) > 80 and "email.from" in keys and "prompts.deep_dives.label" in keys
    missing = [key for key in keys if f"#### `{key}`" not in reference]
    assert missing == []
    assert sorted(o.key for o in options(BUILTIN_KINDS)) == sorted(keys)
    undescribed = [o.key for o in options(BUILTIN_KINDS) if not o.description]
    assert undescribed == [], "add a docstring under each of these fields in generator/config/schema.py"


def test_the_reference_gives_types_defaults_and_ranges_from_the_fields() -> None:
    reference = reference_markdown(BUILTIN_KINDS)
    assert ("#### `arxiv.max_papers` { #arxiv-max_papers }\n\n"
            "**integer** · default: `20` · range: 1 to 2,000\n\n"
            "Papers per edition, newest submission first") in reference
    assert "**table** · default: `{chat_template_kwargs = {thinking = true}}`" in reference
    assert "#### `prompts.research_map.instruction` { #prompts-research_map-instruction }\n\n" \
           "**string** · default: `default_prompts.RESEARCH_MAP`" in reference
    assert "### `[[prompts.deep_dives]]`" in reference
    assert "#### `prompts.deep_dives.label` { #prompts-deep_dives-label }\n\n" \
           "**string** · default: required" in reference
    assert "**string or array of strings** · default: `\"\"`" in reference  # triage.interests


def test_a_kinds_settings_table_is_in_the_reference_of_its_registry() -> None:
    reference = reference_markdown(BUILTIN_KINDS.with_kinds(GLOSSARY))
    assert "### `[prompts.glossary]`" in reference
    assert "A glossary of the bundle's terms. The settings of the `glossary` kind." in reference
    assert ("#### `prompts.glossary.max_terms` { #prompts-glossary-max_terms }\n\n"
            "**integer** · default: `12` · range: 1 to 100\n\nTerms listed at most.") in reference
    assert "prompts.glossary" not in reference_markdown(BUILTIN_KINDS)


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a TOML basic string (\uXXXX escapes)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    return "[" + ", ".join(_toml(v) for v in value) + "]"


def test_every_key_of_the_reference_is_one_the_loader_accepts(tmp_path: Path) -> None:
    # Each key of the reference, set to its declared default, in one file the loader takes
    # without a problem: the reference names no key the loader would call unknown.
    registry = BUILTIN_KINDS.with_kinds(GLOSSARY)
    defaults = config_module.Config(path=tmp_path / "config.toml", registry=BUILTIN_KINDS)
    lines: list[str] = []
    tables: dict[str, list[str]] = {}
    for option in options(registry):
        table, key = option.key.rsplit(".", 1)
        tables.setdefault(table, []).append(key)
    for table, keys in tables.items():
        if table == "prompts.deep_dives":
            for dive in defaults.prompts.deep_dives:
                lines += ["[[prompts.deep_dives]]"]
                lines += [f"{k} = {_toml(getattr(dive, k))}" for k in keys]
            continue
        holder: Any = GlossarySettings() if table == "prompts.glossary" else defaults
        if holder is defaults:
            for part in table.split("."):
                holder = getattr(holder, part)
        names = {f.metadata.get("key", f.name): f.name for f in dataclasses.fields(holder)}
        lines.append(f"[{table}]")
        lines += [f"{k} = {_toml(getattr(holder, names[k]))}" for k in keys]
    (tmp_path / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    loaded = load_config(tmp_path / "config.toml", registry=registry)
    assert loaded.arxiv == defaults.arxiv and loaded.email == defaults.email
    assert loaded.kinds["glossary"] == GlossarySettings()


def test_the_docs_build_strictly_with_the_generated_reference(tmp_path: Path) -> None:
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert page.count(MARKER) == 1
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f",
         str(ROOT / "mkdocs.docs.yml"), "-d", str(tmp_path / "site")],
        capture_output=True, text=True, cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, timeout=120)
    assert built.returncode == 0, built.stdout + built.stderr
    html = (tmp_path / "site" / "configuration" / "index.html").read_text(encoding="utf-8")
    assert MARKER not in html
    for key in every_accepted_key():
        assert f'id="{key.replace(".", "-")}"' in html, key
    # The pages' scripts are not published; the screenshots are, and stay small.
    assert not list((tmp_path / "site").rglob("*.py"))
    for image in ("edition-laptop.png", "edition-phone.png"):
        assert (tmp_path / "site" / "images" / image).stat().st_size < 200_000


def test_the_readme_is_short_and_its_links_into_the_docs_resolve() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 170
    linked = re.findall(r"\]\((docs/[^)#\s]+)", readme)
    assert linked, "the README links into docs/"
    assert [path for path in linked if not (ROOT / path).is_file()] == []
    pages = {p.name for p in (ROOT / "docs").glob("*.md")}
    assert {f"docs/{name}" for name in pages} - set(linked) <= {"docs/index.md"}


# A path of ours the docs name: a top folder of the repository, then a file name with a suffix.
_OUR_PATH_RE = re.compile(r"`((?:generator|templates|skeleton|tests|bench|docs|\.ci|\.github)"
                          r"/[\w./-]*\w)`")


def test_every_code_path_the_docs_name_exists() -> None:
    """The docs' signposts ("Code: `generator/edition/render.py`", the layout table) point at
    files and folders that exist: a module moved without its pointer fails here."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    missing = sorted(f"{page.name}: {path}" for page in pages
                     for path in _OUR_PATH_RE.findall(page.read_text(encoding="utf-8"))
                     if "*" not in path and "<" not in path and not (ROOT / path).exists())
    assert missing == []
    named = [p for page in pages for p in _OUR_PATH_RE.findall(page.read_text(encoding="utf-8"))]
    assert len(named) > 20  # the pattern still finds the docs' pointers
