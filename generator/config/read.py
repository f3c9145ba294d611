"""Reading TOML tables into the config's dataclasses: one problem per bad key, each naming
the dotted key, what was expected and what was found."""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import types
import typing
from typing import Any

from ..text.urls import URL_RE, host_only


def ranged(default: float, low: float, high: float) -> Any:
    """A number field and the range its value must lie in (checked with every other value)."""
    return dataclasses.field(default=default, metadata={"range": (low, high)})


def out_of_range(settings: Any, prefix: str) -> list[str]:
    """The fields of a settings dataclass (and of those it holds) outside their `ranged`
    range, each by its dotted key."""
    problems: list[str] = []
    for item in dataclasses.fields(settings):
        dotted = f"{prefix}.{item.metadata.get('key', item.name)}"
        value = getattr(settings, item.name)
        if "range" in item.metadata:
            low, high = item.metadata["range"]
            if not low <= value <= high:
                shown = value if isinstance(value, int) else f"{value:g}"
                problems.append(f"{dotted}: must be between {low:g} and {high:g}, got {shown}")
        elif dataclasses.is_dataclass(value):
            problems.extend(out_of_range(value, dotted))
        elif isinstance(value, tuple):
            for i, one in enumerate(value):
                if dataclasses.is_dataclass(one):
                    problems.extend(out_of_range(one, f"{dotted}[{i}]"))
    return problems


def build(cls: type, table: dict[str, Any], prefix: str, problems: list[str]) -> Any:
    """Make a `cls` from a TOML table, appending one problem per bad key; None if any failed."""
    hints = typing.get_type_hints(cls)
    # By the key config.toml uses: a field's own name, or its "key" (`from`, a Python keyword).
    fields = {f.metadata.get("key", f.name): f for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    ok = True
    for key, value in table.items():
        dotted = f"{prefix}.{key}"
        if key not in fields:
            problems.append(unknown(dotted, fields))
            ok = False
            continue
        name = fields[key].name
        joiner = fields[key].metadata.get("joins_list")
        if joiner and isinstance(value, list) and all(isinstance(v, str) for v in value):
            value = joiner.join(v.strip() for v in value if v.strip())
        converted = _convert(hints[name], value, dotted, problems)
        if converted is _INVALID:
            ok = False
        else:
            kwargs[name] = converted
    for key, f in fields.items():
        if f.name not in kwargs and f.default is dataclasses.MISSING and (
            f.default_factory is dataclasses.MISSING
        ):
            problems.append(f"{prefix}.{key}: required key is missing")
            ok = False
    return cls(**kwargs) if ok else None


_INVALID = object()


def _convert(hint: Any, value: Any, dotted: str, problems: list[str]) -> Any:
    origin = typing.get_origin(hint)
    if hint is bool:
        if isinstance(value, bool):
            return value
    elif hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if not math.isfinite(value):
                problems.append(f"{dotted}: expected a finite number, got {value}")
                return _INVALID
            return float(value)
    elif hint is str:
        if isinstance(value, str):
            return value
    elif origin is dict:
        if isinstance(value, dict):
            return value
    elif origin is tuple:
        (item_type, _) = typing.get_args(hint)
        if item_type is str:
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                return tuple(value)
            problems.append(f"{dotted}: expected an array of strings, got {describe(value)}")
            return _INVALID
        if isinstance(value, list) and all(isinstance(v, dict) for v in value):
            items = [build(item_type, v, f"{dotted}[{i}]", problems) for i, v in enumerate(value)]
            return _INVALID if any(i is None for i in items) else tuple(items)
        problems.append(f"{dotted}: expected an array of tables ([[{dotted}]]), got {describe(value)}")
        return _INVALID
    elif dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if isinstance(value, dict):
            built = build(hint, value, dotted, problems)
            return _INVALID if built is None else built
        problems.append(f"{dotted}: expected a table ([{dotted}]), got {describe(value)}")
        return _INVALID
    elif isinstance(hint, types.UnionType):
        raise TypeError(f"unsupported schema type for {dotted}")
    problems.append(f"{dotted}: expected {_type_name(hint)}, got {describe(value)}")
    return _INVALID


def _type_name(hint: Any) -> str:
    names = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
    if hint in names:
        return names[hint]
    if typing.get_origin(hint) is dict:
        return "a table"
    return str(hint)


def describe(value: Any) -> str:
    kinds = {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
             list: "an array", dict: "a table"}
    kind = kinds.get(type(value), type(value).__name__)
    # A URL is shown as its scheme and host alone: a value put where it does not belong (a
    # webhook's URL in a list) may be a secret, and its path is the secret part.
    text = URL_RE.sub(lambda m: host_only(m.group(0)), json.dumps(value, default=str))
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{kind} ({text})"


def unknown(dotted: str, known: typing.Iterable[str]) -> str:
    *parent, key = dotted.split(".")
    message = f"{dotted}: unknown key"
    close = difflib.get_close_matches(key, list(known), n=1)
    if close:
        message += f" (did you mean '{'.'.join([*parent, close[0]])}'?)"
    return message
