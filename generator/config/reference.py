"""The configuration reference, made from the config's own declarations.

Every key config.toml accepts is a field of a settings dataclass: a table of `Config`
(generator.config) or the settings of a registered kind (generator.kinds). The reference takes
each key's name, type, default and range from the field, and its description from the string
literal that follows the field in the class body (an attribute docstring, as Sphinx and
pydantic read them), so the documentation cannot disagree with the loader. docs/hooks.py puts
`reference_markdown()` into docs/configuration.md when the project's documentation is built.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import itertools
import json
import textwrap
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..kinds import KindRegistry
from . import default_prompts
from .schema import Config

# The line of docs/configuration.md that the generated reference replaces.
MARKER = "<!-- config-reference -->"


@dataclass(frozen=True)
class Option:
    """One key of config.toml, as the reference lists it."""

    key: str  # dotted, as error messages name it: "arxiv.max_papers"
    type: str
    default: str  # as TOML spells it, or where the default text lives
    range: str  # "1 to 2,000", or "" where the value has no range
    description: str


@dataclass(frozen=True)
class Table:
    """One table of config.toml (`[arxiv]`, `[prompts.thinking]`, `[[prompts.deep_dives]]`)."""

    name: str
    array: bool  # an array of tables: `[[name]]`
    description: str
    options: tuple[Option, ...]

    @property
    def header(self) -> str:
        return f"[[{self.name}]]" if self.array else f"[{self.name}]"


def field_docs(cls: type) -> dict[str, str]:
    """The attribute docstrings of a class: the string literal right after each field."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    node = ast.parse(source).body[0]
    if not isinstance(node, ast.ClassDef):
        return {}
    docs: dict[str, str] = {}
    for item, after in itertools.pairwise(node.body):
        if (isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
                and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)):
            docs[item.target.id] = " ".join(after.value.value.split())
    return docs


def tables(registry: KindRegistry) -> list[Table]:
    """Every table the loader reads, in the order `Config` declares them, then the kinds'."""
    hints = typing.get_type_hints(Config)
    found: list[Table] = []
    for item in dataclasses.fields(Config):
        hint = hints[item.name]
        if dataclasses.is_dataclass(hint) and isinstance(hint, type):
            found.extend(_tables_of(hint, item.name, array=False))
    for spec in registry.values():
        if spec.settings is not None:
            found.extend(_tables_of(spec.settings, spec.section, array=False,
                                    note=f"The settings of the `{spec.kind}` kind."))
    return found


def options(registry: KindRegistry) -> list[Option]:
    """Every key the loader accepts, each by its dotted name."""
    return [option for table in tables(registry) for option in table.options]


def _tables_of(cls: type, name: str, *, array: bool, note: str = "") -> Iterator[Table]:
    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    own: list[Option] = []
    nested: list[Table] = []
    for item in dataclasses.fields(cls):
        key = item.metadata.get("key", item.name)
        hint = hints[item.name]
        dotted = f"{name}.{key}"
        inner = _array_item(hint)
        # A table's field docstring (where it has one) says more about the table in this place.
        said = docs.get(item.name, "")
        if dataclasses.is_dataclass(hint) and isinstance(hint, type):
            nested.extend(_tables_of(hint, dotted, array=False, note=said))
        elif inner is not None:
            nested.extend(_tables_of(inner, dotted, array=True, note=said))
        else:
            own.append(Option(dotted, _type_name(hint, item), _default(item), _range(item), said))
    summary = " ".join(part for part in (_summary(cls), note) if part)
    yield Table(name, array, summary, tuple(own))
    yield from nested


def _array_item(hint: Any) -> type | None:
    """The dataclass of an array of tables (`tuple[DeepDivePrompt, ...]`), else None."""
    if typing.get_origin(hint) is tuple:
        args = typing.get_args(hint)
        if args and dataclasses.is_dataclass(args[0]) and isinstance(args[0], type):
            return args[0]
    return None


def _summary(cls: type) -> str:
    doc = cls.__doc__ or ""
    # A dataclass without a docstring gets a generated signature; that is no description.
    if not doc or doc.startswith(f"{cls.__name__}("):
        return ""
    return " ".join(inspect.cleandoc(doc).split("\n\n")[0].split())


def _type_name(hint: Any, item: dataclasses.Field[Any]) -> str:
    names = {bool: "boolean", int: "integer", float: "number", str: "string"}
    if hint is str and item.metadata.get("joins_list"):
        return "string or array of strings"
    if hint in names:
        return names[hint]
    origin = typing.get_origin(hint)
    if origin is tuple:
        return "array of strings"
    if origin is dict:
        return "table"
    return str(hint)


def _default(item: dataclasses.Field[Any]) -> str:
    if item.default is not dataclasses.MISSING:
        value = item.default
    elif item.default_factory is not dataclasses.MISSING:
        value = item.default_factory()
    else:
        return "required"
    if isinstance(value, str):
        for name, text in vars(default_prompts).items():
            if name.isupper() and text == value:
                return f"`default_prompts.{name}`"
    return f"`{_toml(value)}`"


def _toml(value: Any) -> str:
    """A value as config.toml would spell it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        if '"' in value and "'" not in value and "\n" not in value:
            return f"'{value}'"  # a TOML literal string: the quotes read as they are
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    raise TypeError(f"no TOML spelling for {value!r}")


def _range(item: dataclasses.Field[Any]) -> str:
    if "range" not in item.metadata:
        return ""
    low, high = item.metadata["range"]
    return f"{_number(low)} to {_number(high)}"


def _number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


def _anchor(dotted: str) -> str:
    return dotted.replace(".", "-")


def reference_markdown(registry: KindRegistry) -> str:
    """The reference as Markdown: a section per table, a heading per key (each its own
    search result and link target), then its type, default, range and description."""
    out: list[str] = []
    for table in tables(registry):
        if not table.options:
            continue
        out += [f"### `{table.header}` {{ #{_anchor(table.name)} }}", ""]
        if table.description:
            out += [table.description, ""]
        for option in table.options:
            facts = [f"**{option.type}**", f"default: {option.default}"]
            if option.range:
                facts.append(f"range: {option.range}")
            out += [f"#### `{option.key}` {{ #{_anchor(option.key)} }}", "",
                    " · ".join(facts), "", option.description or "(no description)", ""]
    return "\n".join(out)
