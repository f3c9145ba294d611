"""Structured answers: per-paper briefs and the theme map, as JSON validated against a schema.

The schemas are sent to the server as `response_format` (SGLang constrains decoding to them);
where a server does not support that, the same schema is asked for in words and the answer is
parsed and validated here. The validator covers the subset of JSON Schema these schemas use.
"""

from __future__ import annotations

import copy
import json
import re
from collections import OrderedDict
from typing import Any

from ..text.safe_text import clean_data, cut

_FENCE_RE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)
# Caps for what a schema leaves open: a structured value is published, and a model (or a
# server's grammar gone wrong) can return a megabyte where a sentence was asked for.
MAX_STRING_CHARS = 4000
MAX_ITEMS = 500


class InvalidAnswer(ValueError):
    """The answer is not JSON, or not JSON of the expected shape."""


def response_format(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The OpenAI `response_format` that asks the server for JSON matching `schema`."""
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


class _Parsed:
    """Answers already parsed, by text and schema (the newest few hundred): an answer is
    parsed where it arrives, and the edition reads that value instead of parsing again."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.values: OrderedDict[tuple[str, str], Any] = OrderedDict()
        self.misses = 0  # answers actually parsed

    def get(self, text: str, schema: dict[str, Any]) -> Any:
        key = (text, json.dumps(schema, sort_keys=True))
        if key in self.values:
            self.values.move_to_end(key)
            return copy.deepcopy(self.values[key])
        self.misses += 1
        value = _parse(text, schema)
        self.put(text, schema, value)
        return copy.deepcopy(value)

    def put(self, text: str, schema: dict[str, Any], value: Any) -> None:
        self.values[(text, json.dumps(schema, sort_keys=True))] = copy.deepcopy(value)
        while len(self.values) > self.size:
            self.values.popitem(last=False)

    def clear(self) -> None:
        self.values.clear()
        self.misses = 0


PARSED = _Parsed(256)


def parse_answer(text: str, schema: dict[str, Any]) -> Any:
    """The JSON value in a model's answer (bare, or in a ```json fence), validated; each caller
    gets its own copy of the value."""
    return PARSED.get(text, schema)


def _parse(text: str, schema: dict[str, Any]) -> Any:
    candidates = [text.strip(), *(m.strip() for m in _FENCE_RE.findall(text))]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start:end + 1])
    error = "no JSON object in the answer"
    for candidate in candidates:
        try:
            # strict=False: raw newlines and tabs inside strings, as grammar-constrained
            # decoding often writes them, are read as the characters they are.
            data = bounded(clean_data(json.loads(candidate, strict=False)), schema)
        except ValueError as err:
            error = f"not valid JSON ({err})"
            continue
        except RecursionError:  # "[[[[…" from a model: no answer, never a traceback
            error = "not valid JSON (nested too deeply)"
            continue
        problems = validate(data, schema)
        if problems:
            raise InvalidAnswer("the JSON does not match the schema: " + "; ".join(problems[:5]))
        return data
    raise InvalidAnswer(error)


def bounded(value: Any, schema: dict[str, Any]) -> Any:
    """`value` with every string cut to its `maxLength` and every array to its `maxItems`
    (or to the caps above where the schema gives none): too long is cut, never published.

    JSON escapes are decoded by then, so `clean_data` has already removed lone surrogates
    ("\\ud800"), controls and bidi overrides that the answer's text did not show.
    """
    kind = schema.get("type")
    if kind == "string" and isinstance(value, str):
        return cut(value, int(schema.get("maxLength", MAX_STRING_CHARS)))
    if kind == "array" and isinstance(value, list):
        items = schema.get("items", {})
        return [bounded(v, items) for v in value[:int(schema.get("maxItems", MAX_ITEMS))]]
    if kind == "object" and isinstance(value, dict):
        properties = schema.get("properties", {})
        return {k: bounded(v, properties.get(k, {})) for k, v in value.items()}
    return value


def validate(value: Any, schema: dict[str, Any], path: str = "$") -> list[str]:
    """Problems with `value` against `schema` (type, required, properties, items, minItems,
    minimum and maximum)."""
    kind = schema.get("type")
    checks: dict[str, type | tuple[type, ...]] = {
        "object": dict, "array": list, "string": str, "integer": int, "number": (int, float),
        "boolean": bool}
    if kind in checks and (not isinstance(value, checks[kind]) or (
            kind in ("integer", "number") and isinstance(value, bool))):
        return [f"{path} should be {'an' if kind in ('object', 'array', 'integer') else 'a'} {kind}"]
    problems: list[str] = []
    if kind == "object":
        properties = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                problems.append(f"{path}.{key} is missing")
        for key, item in value.items():
            if key in properties:
                problems += validate(item, properties[key], f"{path}.{key}")
            elif schema.get("additionalProperties") is False:
                problems.append(f"{path}.{key} is not allowed")
    elif kind == "array":
        if len(value) < schema.get("minItems", 0):
            problems.append(f"{path} should have at least {schema['minItems']} item(s)")
        for i, item in enumerate(value):
            problems += validate(item, schema.get("items", {}), f"{path}[{i}]")
    elif kind == "string" and not value.strip() and schema.get("minLength", 1) > 0:
        problems.append(f"{path} is empty")  # unless the schema allows it (minLength 0)
    elif kind == "integer" and "minimum" in schema and value < schema["minimum"]:
        problems.append(f"{path} should be at least {schema['minimum']}")
    elif kind == "integer" and "maximum" in schema and value > schema["maximum"]:
        problems.append(f"{path} should be at most {schema['maximum']}")
    return problems


def schema_instruction(schema: dict[str, Any]) -> str:
    """The schema in words, for servers that cannot constrain the answer themselves."""
    return ("Answer with one JSON object and nothing else (no prose, no code fence), matching "
            f"this JSON Schema:\n{json.dumps(schema, indent=1)}")
