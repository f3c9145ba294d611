"""What counts as a citation and as a citing sentence, shared by the stages that need it.

The synthesis stage asks for evidence behind each citing sentence of an answer; the render
stage links the same sentences and shows the evidence beside them. Both find the sentences
here, through the same Markdown pass (`safe_text.md_model`), so they always agree on them.
"""

from __future__ import annotations

import functools
import html
import re
import unicodedata
from collections.abc import Collection
from dataclasses import dataclass

from ..text.safe_text import md_model

_NUM = r"\d{1,3}"
_RANGE = rf"{_NUM}(?:\s*(?:[-–—]|to)\s*{_NUM})?"
_SEP = r"\s*(?:,\s*(?:and\s+|&\s*)?|\band\s+|&\s*)"
CITE_RE = re.compile(rf"(?<![\[\w])([Pp]apers?)\s+({_RANGE}(?:{_SEP}{_RANGE})*)\b")
NUMBER_RE = re.compile(rf"({_NUM})(?:\s*(?:[-–—]|to)\s*({_NUM}))?")
SENTENCE_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z*(\[\"“])|\n+")
# A figure a sentence states: a number with a percent sign or a factor ("45.8%", "2.1×").
FIGURE_RE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s?(%|×|x(?![A-Za-z])|-fold|\s?times\b)")


def figure_in(number: str, unit: str, text: str) -> bool:
    """Whether `text` states the figure `number` with a compatible unit (any Unicode form:
    "40％" is "40%")."""
    escaped = re.escape(number)
    if unit == "%":
        pattern = rf"(?<![\d.]){escaped}\s?(?:%|percent)"
    else:
        pattern = rf"(?<![\d.]){escaped}\s?(?:×|x|X|times|-fold|fold|\\times)"
    return re.search(pattern, unicodedata.normalize("NFKC", text)) is not None


@dataclass(frozen=True)
class Claim:
    """A sentence of an answer that cites papers of the bundle."""

    number: int  # 1, 2, … in the order the answer makes them
    sentence: str  # as plain text (see `plain_sentence`)
    papers: tuple[int, ...]  # the bundle's papers it cites, in order
    phantoms: tuple[int, ...] = ()  # the numbers it cites that the bundle does not have


def numbers(spec: str) -> list[int]:
    """The paper numbers of a citation's "1, 8, 9" or "3–5" part."""
    found: list[int] = []
    for match in NUMBER_RE.finditer(spec):
        low = int(match.group(1))
        high = int(match.group(2)) if match.group(2) else low
        if high < low or high - low > 50:
            high = low
        found.extend(range(low, high + 1))
    return found


def cited(sentence: str, valid: Collection[int]) -> list[int]:
    """The papers of `valid` that a sentence cites, each once, in order."""
    return [n for n in cited_numbers(sentence) if n in valid]


def cited_numbers(sentence: str) -> list[int]:
    """Every paper number a sentence cites ("Paper N" forms), each once, in order."""
    return list(dict.fromkeys(n for m in CITE_RE.finditer(sentence)
                              for n in numbers(m.group(2))))


def sentences(segment: str) -> list[tuple[str, str]]:
    """A text segment as (sentence, the separator after it) pairs; joined, they are the segment."""
    out: list[tuple[str, str]] = []
    last = 0
    for match in SENTENCE_RE.finditer(segment):
        out.append((segment[last:match.start()], match.group(0)))
        last = match.end()
    out.append((segment[last:], ""))
    return out


def plain_sentence(sentence: str) -> str:
    """A sentence of escaped model Markdown as plain text, for quoting it elsewhere."""
    text = html.unescape(sentence).replace("\\{", "{").replace("]\\(", "](")
    text = re.sub(r"^\s*(?:>\s*)+", "", text)  # a blockquote's marker, not "latency > 10 ms"
    text = re.sub(r"[*_`#|]+", " ", text)
    text = re.sub(r"^\s*(?:[-+]|\d+\.)\s+", "", text)  # a list item's marker
    return " ".join(text.split())[:400]


def claims_of(answer: str, valid: Collection[int], shift: int = 1) -> tuple[Claim, ...]:
    """The citing sentences of a model answer, as the render stage will see them: extracted
    once per answer (its evidence requests and its verdicts both number them)."""
    return _claims(answer, frozenset(valid), shift)


@functools.lru_cache(maxsize=256)
def _claims(answer: str, valid: frozenset[int], shift: int) -> tuple[Claim, ...]:
    found: list[Claim] = []

    def collect(segment: str) -> str:
        for sentence, _ in sentences(segment):
            every = cited_numbers(sentence)
            papers = tuple(n for n in every if n in valid)
            phantoms = tuple(n for n in every if n not in valid)
            if papers or phantoms:  # a phantom citation is a claim too: never backed
                found.append(Claim(len(found) + 1, plain_sentence(sentence), papers, phantoms))
        return segment

    md_model(answer, shift, collect, math=False)  # read for its sentences: no MathML wanted
    return tuple(found)


def before_stop(sentence: str, mark: str) -> str:
    """The mark inside the sentence, before its closing stop ("…gain ✓."), so a badge at the
    start of a wrapped line is never read as the start of the next sentence."""
    if sentence[-1:] in ".!?" and not sentence.endswith("..."):
        return f"{sentence[:-1]} {mark}{sentence[-1]}"
    if sentence.endswith("|"):  # a table row: in its last cell, not a cell of its own
        return f"{sentence[:-1].rstrip()} {mark} |"
    return f"{sentence} {mark}"
