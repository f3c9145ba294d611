"""One reader for every JSON file the digest keeps or is sent (records, marks, send records,
caches, GitHub's answers): bounded in size and depth, finite numbers only, and every failure a
`JSONFileError` naming the file in our words, never a traceback.

`json.loads` alone accepts `NaN` and `Infinity`, recurses until Python gives up on deeply nested
input, and turns a 5,000-digit number into a ValueError of its own: each would reach the user as
a traceback or, worse, as a figure on a page.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from ..errors import DigestError
from .userfile import UserFileError, read_user_file

MAX_DEPTH = 64  # no file the digest writes nests deeper than about 8
MAX_BYTES = 64 * 1024 * 1024  # a year's record is ~150 KB; a cache entry of full text ~2 MB


class JSONFileError(DigestError):
    """A JSON file (or answer) that cannot be read as data: the message names it and why."""


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a finite number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]} is not a finite number")
    return value


def parse_json(text: str | bytes, source: str, *, max_depth: int = MAX_DEPTH,
               max_bytes: int = MAX_BYTES) -> Any:
    """`text` parsed, or JSONFileError naming `source` (a path or a URL) and what is wrong."""
    if len(text) > max_bytes:
        raise JSONFileError(f"{source} is larger than {max_bytes // (1024 * 1024)} MB; "
                            "it is not a file this version wrote")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as err:
            raise JSONFileError(f"{source} is not UTF-8 text (byte {err.start})") from err
    deepest = _depth(text)
    if deepest > max_depth:
        raise JSONFileError(f"{source} nests {deepest} levels deep (at most {max_depth} are "
                            "read); it is not a file this version wrote")
    try:
        return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except json.JSONDecodeError as err:
        raise JSONFileError(f"{source} is not valid JSON (line {err.lineno}, column "
                            f"{err.colno}: {err.msg})") from err
    except (ValueError, RecursionError) as err:  # NaN, 1e999, a 5,000-digit integer
        raise JSONFileError(f"{source} holds a number this version does not read: "
                            f"{str(err)[:80]}") from err


# What `load_json(path, missing=ABSENT)` returns for a file that does not exist: not None,
# which is what a file holding JSON `null` (an odd file, to be named) parses to.
ABSENT: Any = object()


def load_json(path: Path, *, max_depth: int = MAX_DEPTH, max_bytes: int = MAX_BYTES,
              missing: Any = ..., root: Path | None = None) -> Any:
    """The file's data; `missing` (if given) where it does not exist, else JSONFileError, as
    for a file that cannot be read or parsed (or is a link out of `root`)."""
    try:
        raw = read_bounded(path, max_bytes, root=root)
    except FileNotFoundError:
        if missing is not ...:
            return missing
        raise JSONFileError(f"{path} does not exist") from None
    return parse_json(raw, str(path), max_depth=max_depth, max_bytes=max_bytes)


def read_bounded(path: Path, max_bytes: int = MAX_BYTES, *, root: Path | None = None) -> bytes:
    """A JSON file's bytes, read once as a regular file (store/userfile.py); JSONFileError
    where it is too large, unreadable, not a regular file or a link out of `root`
    (FileNotFoundError where it does not exist: the caller says what that means)."""
    try:
        return read_user_file(path, max_bytes, root=root)
    except UserFileError as err:
        raise JSONFileError(f"{err}; it is not a file this version wrote") from err


_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]++")


def _depth(text: str) -> int:
    """How deeply `text` nests arrays and objects (brackets inside strings not counted)."""
    if "[" not in text and "{" not in text:
        return 0
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))  # both in C: fast on 2 MB
    level = deepest = 0
    for char in brackets:
        if char in "[{":
            level += 1
            if level > deepest:
                deepest = level
        else:
            level -= 1
    return deepest
