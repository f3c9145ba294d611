"""Reading a BibTeX file as reference managers export it (Zotero, Mendeley, JabRef, Google
Scholar), without a dependency: entries, their fields, `@string` macros and `#` joins.

BibTeX itself skips whatever stands between entries, and so does this reader; an entry that
opens and never closes, a field without its `=` or a value whose braces never balance is an
error naming the entry (its number, key and line), since what follows it cannot be trusted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NAME_RE = re.compile(r"[^\s\"#%'(),={}]+")
_MONTHS = {m: str(i) for i, m in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1)}
# LaTeX a field may carry that reads as one character: \& \% \_ \$ \# \{ \}, and ~ (a space).
_ESCAPE_RE = re.compile(r"\\([&%_$#{}])")
_KEY_RE = re.compile(r"[^\s,{}()]*")
_SPACE_RE = re.compile(r"\s*")
# A field whose value is one `{...}` without braces inside, or a number: what most fields are.
_SIMPLE_FIELD_RE = re.compile(r"([^\s\"#%'(),={}]+)\s*=\s*(?:\{([^{}]*)\}|(\d+))\s*")
_BRACE_RE = re.compile(r"[{}]")
_QUOTED_RE = re.compile(r'[{}"]')
_PAREN_RE = re.compile(r"[{})]")
# Bounds on what `@string` macros expand to: forty macros each doubling the one before are a
# 1 KB file whose last value is a terabyte. No export has a field near a million characters,
# nor macros expanding to more than a few times the file.
MAX_VALUE_CHARS = 1_000_000
MACRO_BUDGET_CHARS = 16_000_000


class BibSyntaxError(ValueError):
    """The file is not BibTeX from here on; the message names the entry and the line."""


@dataclass(frozen=True)
class BibEntry:
    kind: str  # "article", "misc", ... (lower case)
    key: str
    fields: dict[str, str]  # by lower-case name, values as written (braces kept)
    number: int  # 1 for the file's first entry
    line: int

    @property
    def where(self) -> str:
        return f"entry {self.number}" + (f" ({self.key})" if self.key else "") + \
            f", line {self.line}"


def read_bibtex(text: str) -> list[BibEntry]:
    """Every entry of `text`, in order (`@comment`, `@preamble` and `@string` are not).

    Linear in the text: every scan is a regular expression from where the last one stopped,
    and line numbers are counted on from the last one asked for."""
    return _Reader(text).entries()


def field_text(value: str) -> str:
    """A field's value as plain words: braces that protect case dropped, the one-character
    escapes read, spacing made single (TeX commands and math are left as written)."""
    text = _ESCAPE_RE.sub(lambda m: "\0" + m.group(1), value)
    text = text.replace("{", "").replace("}", "").replace("~", " ").replace("\0", "")
    return " ".join(text.split())


class _Reader:
    def __init__(self, text: str) -> None:
        self.text, self.at = text, 0
        self.macros: dict[str, str] = dict(_MONTHS)
        self.expanded = 0  # characters macros have produced so far
        self.budget = MACRO_BUDGET_CHARS + 2 * len(text)
        self._line_at, self._line_no = 0, 1

    def entries(self) -> list[BibEntry]:
        found: list[BibEntry] = []
        number = 0
        while (start := self.text.find("@", self.at)) >= 0:
            self.at = start + 1
            self._space()
            match = _NAME_RE.match(self.text, self.at)
            if not match:
                continue  # a stray "@" between entries, which BibTeX skips too
            kind = match.group(0).lower()
            self.at += len(kind)
            self._space()
            if self.at >= len(self.text) or self.text[self.at] not in "{(":
                # "@" in a comment between entries: BibTeX skips it, and so does this reader.
                continue
            close = "}" if self.text[self.at] == "{" else ")"
            self.at += 1
            if kind == "comment":
                self._skip_to(close, start)
            elif kind == "preamble":
                self._value(close, f"the @preamble at line {self._line(start)}")
                self._expect(close, f"the @preamble at line {self._line(start)}")
            elif kind == "string":
                where = f"the @string at line {self._line(start)}"
                name = self._name(f"a macro name in {where}").lower()
                self._expect("=", where)
                self.macros[name] = self._value(close, where)
                self._expect(close, where)
            else:
                number += 1
                found.append(self._entry(kind, close, number, start))
        return found

    def _entry(self, kind: str, close: str, number: int, start: int) -> BibEntry:
        self._space()
        key_match = _KEY_RE.match(self.text, self.at)
        key = key_match.group(0) if key_match else ""
        self.at += len(key)
        where = f"entry {number}" + (f" ({key})" if key else "") + f", line {self._line(start)}"
        fields: dict[str, str] = {}
        while True:
            self._space()
            if self.at >= len(self.text):
                raise BibSyntaxError(f"{where} is never closed (no {close!r} before the end of "
                                     "the file)")
            char = self.text[self.at]
            if char == close:
                self.at += 1
                break
            if char == ",":
                self.at += 1
                continue
            simple = _SIMPLE_FIELD_RE.match(self.text, self.at)
            if simple is not None and self.text.startswith((",", close), simple.end()):
                # Most fields, read in one step: no nested braces, no macro, no `#` join.
                value = simple.group(2)
                fields[simple.group(1).lower()] = (simple.group(3) if value is None
                                                   else value)
                self.at = simple.end()
                continue
            name = self._name(f"a field name in {where}").lower()
            self._expect("=", f"{where}, field {name!r}")
            fields[name] = self._value(close, f"{where}, field {name!r}")
        return BibEntry(kind, key, fields, number, self._line(start))

    def _value(self, close: str, where: str) -> str:
        """One value: `{...}`, `"..."`, a number or a macro, joined by `#`."""
        parts: list[str] = []
        size = 0
        while True:
            self._space()
            if self.at >= len(self.text):
                raise BibSyntaxError(f"{where} has no value before the end of the file")
            char = self.text[self.at]
            if char == "{":
                parts.append(self._braced(where))
            elif char == '"':
                parts.append(self._quoted(where))
            else:
                match = _NAME_RE.match(self.text, self.at)
                if not match or match.group(0) == close:
                    raise BibSyntaxError(f"{where} has no value (expected {{...}}, \"...\", a "
                                         "number or a @string name)")
                word = match.group(0).rstrip(close)
                self.at += len(word)
                value = word if word.isdigit() else self.macros.get(word.lower(), word)
                self.expanded += len(value)
                if self.expanded > self.budget:
                    raise BibSyntaxError(f"{where}: the @string macros expand to more than "
                                         f"{self.budget:,} characters in all; no library "
                                         "export is built that way")
                parts.append(value)
            size += len(parts[-1])
            if size > MAX_VALUE_CHARS:
                raise BibSyntaxError(f"{where} is longer than {MAX_VALUE_CHARS:,} characters "
                                     "(its @string macros joined by #, most likely)")
            self._space()
            if self.at < len(self.text) and self.text[self.at] == "#":
                self.at += 1
                continue
            return "".join(parts)

    def _braced(self, where: str) -> str:
        start, depth = self.at, 0
        for match in _BRACE_RE.finditer(self.text, self.at):
            if match.group() == "{":
                depth += 1
            else:
                depth -= 1
                if depth == 0:
                    index = match.start()
                    self.at = index + 1
                    return self.text[start + 1:index]
        raise BibSyntaxError(f"{where}: a {{ at line {self._line(start)} is never closed")

    def _quoted(self, where: str) -> str:
        start, depth = self.at, 0
        for match in _QUOTED_RE.finditer(self.text, self.at + 1):
            char = match.group()
            if char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
            elif depth == 0:
                index = match.start()
                self.at = index + 1
                return self.text[start + 1:index]
        raise BibSyntaxError(f"{where}: a \" at line {self._line(start)} is never closed")

    def _skip_to(self, close: str, start: int) -> None:
        depth = 0
        for match in (_BRACE_RE if close == "}" else _PAREN_RE).finditer(self.text, self.at):
            char = match.group()
            if char == "{":
                depth += 1
            elif char == "}" and depth:
                depth -= 1
            elif char == close and depth == 0:
                self.at = match.end()
                return
        raise BibSyntaxError(f"the @comment at line {self._line(start)} is never closed")

    def _name(self, what: str) -> str:
        self._space()
        match = _NAME_RE.match(self.text, self.at)
        if not match:
            raise BibSyntaxError(f"expected {what} at line {self._line(self.at)}")
        self.at += len(match.group(0))
        return match.group(0)

    def _expect(self, char: str, where: str) -> None:
        self._space()
        if not self.text.startswith(char, self.at):
            found = self.text[self.at:self.at + 1] or "the end of the file"
            raise BibSyntaxError(f"{where}: expected {char!r} at line {self._line(self.at)}, "
                                 f"found {found!r}")
        self.at += 1

    def _space(self) -> None:
        match = _SPACE_RE.match(self.text, self.at)
        if match:
            self.at = match.end()

    def _line(self, index: int) -> int:
        if index < self._line_at:  # an error's line, behind the last: count from the start
            self._line_at, self._line_no = 0, 1
        self._line_no += self.text.count("\n", self._line_at, index)
        self._line_at = index
        return self._line_no
