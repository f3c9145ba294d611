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
    """Every entry of `text`, in order (`@comment`, `@preamble` and `@string` are not)."""
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
        key_match = re.compile(r"[^\s,{}()]*").match(self.text, self.at)
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
            name = self._name(f"a field name in {where}").lower()
            self._expect("=", f"{where}, field {name!r}")
            fields[name] = self._value(close, f"{where}, field {name!r}")
        return BibEntry(kind, key, fields, number, self._line(start))

    def _value(self, close: str, where: str) -> str:
        """One value: `{...}`, `"..."`, a number or a macro, joined by `#`."""
        parts: list[str] = []
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
                parts.append(word if word.isdigit() else self.macros.get(word.lower(), word))
            self._space()
            if self.at < len(self.text) and self.text[self.at] == "#":
                self.at += 1
                continue
            return "".join(parts)

    def _braced(self, where: str) -> str:
        start, depth = self.at, 0
        for index in range(self.at, len(self.text)):
            char = self.text[index]
            if char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    self.at = index + 1
                    return self.text[start + 1:index]
        raise BibSyntaxError(f"{where}: a {{ at line {self._line(start)} is never closed")

    def _quoted(self, where: str) -> str:
        start, depth = self.at, 0
        for index in range(self.at + 1, len(self.text)):
            char = self.text[index]
            if char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
            elif char == '"' and depth == 0:
                self.at = index + 1
                return self.text[start + 1:index]
        raise BibSyntaxError(f"{where}: a \" at line {self._line(start)} is never closed")

    def _skip_to(self, close: str, start: int) -> None:
        depth = 0
        for index in range(self.at, len(self.text)):
            char = self.text[index]
            if char == "{":
                depth += 1
            elif char == "}" and depth:
                depth -= 1
            elif char == close and depth == 0:
                self.at = index + 1
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
        while self.at < len(self.text) and self.text[self.at].isspace():
            self.at += 1

    def _line(self, index: int) -> int:
        return self.text.count("\n", 0, index) + 1
