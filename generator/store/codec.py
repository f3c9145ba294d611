"""One dataclass ⇄ JSON codec, driven by the type hints, for every record the digest keeps.

A record is a tree of frozen dataclasses, tuples, dicts, literals and plain values; `to_data`
makes it JSON-ready and `from_data` reads it back to the same value, checking each field's type
on the way, so a mangled file is named by the path of the field it mangles (`papers[3].title`).
A field equal to its default is left out, which keeps records small and lets a later version add
a field with a default without a new format. A field declared with `metadata={"codec": False}`
is neither written nor read (what a run knows about a file, not what the file holds), and
`from_data` can list the fields of the data that no class declares (`unknown=`), so a reader
of a file a newer version wrote can tell what it would drop by writing it back.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

from ..errors import DigestError

T = TypeVar("T")


class CodecError(ValueError):
    """Data that is not the value its type says, with the path of the field that is wrong."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path or 'the record'}: {message}")
        self.path = path


def to_data(value: Any) -> Any:
    """`value` as JSON-ready data: dataclasses as objects (defaults left out), tuples as lists."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {}
        for f in _fields(type(value)):
            if not f.metadata.get("codec", True):
                continue
            item = getattr(value, f.name)
            if _is_default(f, item):
                continue
            out[f.name] = to_data(item)
        return out
    if isinstance(value, tuple | list):
        return [to_data(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): to_data(v) for k, v in value.items()}
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise TypeError(f"{type(value).__name__} has no record form")


def from_data(kind: type[T], data: Any, path: str = "", *,
              unknown: list[str] | None = None) -> T:
    """`data` read as a `kind` (a dataclass, usually); CodecError names what does not fit.

    `unknown`, where given, receives the path of every key of an object that its dataclass
    does not declare (`papers[2].reviewed`): data this version would not write back."""
    return typing.cast(T, _read(kind, data, path, unknown))


@functools.cache
def _fields(cls: type) -> tuple[dataclasses.Field[Any], ...]:
    return tuple(f for f in dataclasses.fields(cls) if f.init)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _is_default(f: dataclasses.Field[Any], value: Any) -> bool:
    if f.default is not dataclasses.MISSING:
        return bool(value == f.default) and type(value) is type(f.default)
    if f.default_factory is not dataclasses.MISSING:
        return bool(value == f.default_factory())
    return False


def _read(kind: Any, data: Any, path: str, unknown: list[str] | None = None) -> Any:
    origin = get_origin(kind)
    if kind is Any:
        return data
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        return _read_dataclass(kind, data, path, unknown)
    if origin in (Union, types.UnionType):
        options = get_args(kind)
        if data is None and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            trial: list[str] | None = [] if unknown is not None else None
            try:
                value = _read(option, data, path, trial)
            except CodecError as err:
                errors.append(err)
                continue
            if unknown is not None and trial:  # only the option that was read
                unknown.extend(trial)
            return value
        raise errors[0] if len(errors) == 1 else CodecError(
            path, f"{_shown(data)} is none of {_name(kind)}")
    if origin is Literal:
        if data not in get_args(kind) or isinstance(data, bool) != any(
                isinstance(a, bool) for a in get_args(kind)):
            raise CodecError(path, f"{_shown(data)} is not one of {list(get_args(kind))}")
        return data
    if origin in (tuple, list):
        if not isinstance(data, list):
            raise CodecError(path, f"expected a list, found {_shown(data)}")
        args = get_args(kind)
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(args) != len(data):
                raise CodecError(path, f"expected {len(args)} items, found {len(data)}")
            return tuple(_read(a, d, f"{path}[{i}]", unknown)
                         for i, (a, d) in enumerate(zip(args, data, strict=True)))
        item = args[0] if args else Any
        items = [_read(item, d, f"{path}[{i}]", unknown) for i, d in enumerate(data)]
        return tuple(items) if origin is tuple else items
    if origin is dict or kind is dict:
        if not isinstance(data, dict):
            raise CodecError(path, f"expected an object, found {_shown(data)}")
        key_kind, value_kind = get_args(kind) or (str, Any)
        out = {}
        for key, value in data.items():
            where = f"{path}[{key!r}]"
            if key_kind is int:
                try:
                    read_key: Any = int(key)
                except ValueError:
                    raise CodecError(where, "expected a number as key") from None
            else:
                read_key = key
            out[read_key] = _read(value_kind, value, where, unknown)
        return out
    if kind is float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise CodecError(path, f"expected a number, found {_shown(data)}")
        return float(data)
    if kind in (int, str, bool):
        if not isinstance(data, kind) or (kind is int and isinstance(data, bool)):
            raise CodecError(path, f"expected {kind.__name__}, found {_shown(data)}")
        return data
    if kind is type(None):
        if data is not None:
            raise CodecError(path, f"expected null, found {_shown(data)}")
        return None
    raise TypeError(f"{_name(kind)} has no record form")  # a programming error, not bad data


def _read_dataclass(cls: type, data: Any, path: str, unknown: list[str] | None) -> Any:
    if not isinstance(data, dict):
        raise CodecError(path, f"expected an object ({cls.__name__}), found {_shown(data)}")
    hints = _hints(cls)
    values = {}
    fields = [f for f in _fields(cls) if f.metadata.get("codec", True)]
    if unknown is not None:
        declared = {f.name for f in fields}
        unknown.extend(f"{path}.{key}" if path else str(key)
                       for key in data if key not in declared)
    for f in fields:
        where = f"{path}.{f.name}" if path else f.name
        if f.name in data:
            values[f.name] = _read(hints[f.name], data[f.name], where, unknown)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise CodecError(where, "is missing")
    try:
        return cls(**values)
    except (DigestError, ValueError, TypeError) as err:  # a value its class refuses
        raise CodecError(path, str(err)) from err


def _name(kind: Any) -> str:
    return getattr(kind, "__name__", None) or str(kind).replace("typing.", "")


def _shown(data: Any) -> str:
    text = repr(data)
    return text if len(text) <= 40 else text[:37] + "..."
