"""What counts as a citing sentence, shared by the stages that need it.

The synthesis stage asks for evidence behind each citing sentence of an answer; the render
stage links the same sentences and shows the evidence beside them. Both find the sentences
here, through the same Markdown pass (`safe_text.md_model`), so they always agree on them. A
sentence cites a paper by its number, in any form a model writes (naming.py), or by a name the
answer gave it (or its title's own name): "MOCAP is designed for…" is a claim about MOCAP.
"""

from __future__ import annotations

import functools
import html
import re
import unicodedata
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from ..text.safe_text import md_model
from .naming import CITE_RE as CITE_RE
from .naming import NUMBER_RE as NUMBER_RE
from .naming import answer_names, find_citations, named_in, names_pattern
from .naming import cited_numbers as cited_numbers
from .naming import numbers as numbers

SENTENCE_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z*(\[\"“])|\n+")
# A short parenthesis right after a full stop that ends its line or is followed by the next
# sentence: the citation of the sentence before it ("…beyond a single node. (Paper 15)").
_TRAILING_RE = re.compile(r"\([^()\n]{1,120}\)[.!?]?(?=[ \t]*(?:\n|$)|\s+[A-Z*(\[\"“])")
# A heading line of model Markdown: it carries links, never a claim (the body makes them).
HEADING_RE = re.compile(r"^\s{0,3}#{1,6}\s")
# What a line that only names or lists papers says besides the names: words like these.
_LISTING_WORDS = frozenset({"paper", "papers", "see", "also", "and", "e", "g", "eg", "cf", "i",
                            "ie", "etc", "including", "namely", "both", "all"})
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


def cited(sentence: str, valid: Collection[int]) -> list[int]:
    """The papers of `valid` that a sentence cites, each once, in order."""
    return [n for n in cited_numbers(sentence) if n in valid]


def sentences(segment: str) -> list[tuple[str, str]]:
    """A text segment as (sentence, the separator after it) pairs; joined, they are the segment."""
    out: list[tuple[str, str]] = []
    last = 0
    for match in SENTENCE_RE.finditer(segment):
        if match.start() < last:
            continue  # inside a trailing citation taken into the sentence before it
        end = match.start()
        if "\n" not in match.group(0):
            trailing = _TRAILING_RE.match(segment, match.end())
            if trailing is not None and not _says_something(trailing.group(0)[1:-1], {}):
                end = trailing.end()
        if end == match.start():
            out.append((segment[last:end], match.group(0)))
            last = match.end()
            continue
        gap = re.match(r"\s*", segment[end:])
        width = gap.end() if gap else 0
        out.append((segment[last:end], segment[end:end + width]))
        last = end + width
    out.append((segment[last:], ""))
    return out


def headed(segment: str) -> list[tuple[str, str, bool]]:
    """`sentences(segment)`, each with whether it stands in a heading line (a heading's
    every sentence carries links, never a claim or a mark)."""
    out: list[tuple[str, str, bool]] = []
    heading, line_start = False, True
    for sentence, gap in sentences(segment):
        if line_start:
            heading = HEADING_RE.match(sentence) is not None
        out.append((sentence, gap, heading))
        line_start = "\n" in gap
    return out


def _says_something(sentence: str, names: Mapping[int, tuple[str, ...]]) -> bool:
    """Whether a sentence says anything besides naming or listing papers: "Papers: Kamera,
    MOCAP", "**Papers:** 1 (Kamera), 4 (MOCAP)" and "(Paper 15)" say nothing of them."""
    rest = sentence
    for citation in reversed(find_citations(rest)):
        rest = rest[:citation.start] + " " + rest[citation.end:]
    pattern, _ = names_pattern(names)
    if pattern is not None:
        rest = pattern.sub(" ", rest)
    # An ordinary word (a verb, a noun of the field): a list's names are capitalised. A
    # script without case (Chinese, Japanese) has no names told by it: its words count.
    return any(not w[:1].isupper() and w.casefold() not in _LISTING_WORDS
               for w in re.findall(r"[^\W\d_]+", rest))


def says_something(sentence: str, names: Mapping[int, tuple[str, ...]] | None = None) -> bool:
    """Whether a citing sentence is a claim: it says something of the papers it cites, where
    a heading or a line that only names or lists papers does not."""
    return not HEADING_RE.match(sentence) and _says_something(sentence, names or {})


def plain_sentence(sentence: str) -> str:
    """A sentence of escaped model Markdown as plain text, for quoting it elsewhere."""
    text = html.unescape(sentence).replace("\\{", "{").replace("]\\(", "](")
    text = re.sub(r"^\s*(?:>\s*)+", "", text)  # a blockquote's marker, not "latency > 10 ms"
    text = re.sub(r"[*_`#|]+", " ", text)
    text = re.sub(r"^\s*(?:[-+]|\d+\.)\s+", "", text)  # a list item's marker
    return " ".join(text.split())[:400]


_SPACED_STOP_RE = re.compile(r"(?<=[\w\"”’)]) +([.,;:!?])(?=[\s\"”’)]|$)")


def as_read(plain: str) -> str:
    """A plain sentence as a reader is shown it: no space left before a stop where markup
    stood ("It is *fast*." is "It is fast .", its key in the record, shown "It is fast.")."""
    return _SPACED_STOP_RE.sub(r"\1", plain)


def claims_of(answer: str, valid: Collection[int], shift: int = 1,
              names: Mapping[int, tuple[str, ...]] | None = None) -> tuple[Claim, ...]:
    """The citing sentences of a model answer, as the render stage will see them: extracted
    once per answer (its evidence requests and its verdicts both number them). `names`: the
    names by which the answer cites papers without their numbers (naming.answer_names)."""
    return _claims(answer, frozenset(valid), shift,
                   tuple(sorted((n, tuple(given)) for n, given in (names or {}).items())))


@functools.lru_cache(maxsize=256)
def _claims(answer: str, valid: frozenset[int], shift: int,
            names: tuple[tuple[int, tuple[str, ...]], ...]) -> tuple[Claim, ...]:
    found: list[Claim] = []
    by_name = dict(names)

    def collect(segment: str) -> str:
        for sentence, _, heading in headed(segment):
            every = list(dict.fromkeys([*cited_numbers(sentence),
                                        *(named_in(sentence, by_name) if by_name else ())]))
            papers = tuple(n for n in every if n in valid)
            phantoms = tuple(n for n in every if n not in valid)
            if heading or not says_something(sentence, by_name):
                continue  # a heading or a list of names: no claim
            if papers or phantoms:  # a phantom citation is a claim too: never backed
                found.append(Claim(len(found) + 1, plain_sentence(sentence), papers, phantoms))
        return segment

    md_model(answer, shift, collect, math=False)  # read for its sentences: no MathML wanted
    return tuple(found)


def answer_claims(answer: str, titles: Mapping[int, str], shift: int = 1) -> tuple[Claim, ...]:
    """An answer's claims over a bundle whose papers are `titles` (by number): the sentences
    that cite them by number or by a name the answer (or a title) gives them."""
    return claims_of(answer, titles.keys(), shift, answer_names(answer, titles))


def has_words(text: str) -> bool:
    """Whether `text` has anything a reader reads as words (a letter or a digit): a mark or a
    separator goes only where it does."""
    return any(ch.isalnum() for ch in text)


def before_stop(sentence: str, mark: str) -> str:
    """The mark inside the sentence, before its closing stop ("…gain ✓."), so a badge at the
    start of a wrapped line is never read as the start of the next sentence. A sentence with
    no words (one a rule emptied) is returned as it is: no mark stands without words."""
    if not has_words(sentence):
        return sentence
    if sentence.endswith((".", "!", "?")) and not sentence.endswith("..."):
        body = sentence.rstrip(".!? \t")  # "…gain." and "…gain.  ." alike: "…gain ✓."
        return f"{body} {mark}{sentence[len(body):].lstrip()}"
    if sentence.endswith("|"):  # a table row: in its last cell, not a cell of its own
        cell = sentence[:-1].rstrip()
        last = cell.rsplit("|", 1)[-1]
        return f"{before_stop(cell, mark) if has_words(last) else f'{cell} {mark}'} |"
    return f"{sentence} {mark}"
