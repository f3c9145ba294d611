"""Full text is never published: a long word-for-word copy of a paper's text is cut from an answer.

The records and pages hold the papers' metadata, never their text (arXiv's terms; docs say so),
yet a model may copy a page of the excerpt it was shown into its answer. Any stretch of an answer
longer than the longest quote the evidence checks take (`MAX_QUOTE_WORDS` words of the paper) that
copies a paper's full text is replaced by a short note in our words; its quotes and its own
sentences stay. A copy need not be unbroken: a word changed, a citation marker dropped or a
"(Paper 1)" added every hundred words still publishes the paper, so exact matches of the same
paper a few words apart are chained into one copy. The abstract, which every page shows anyway,
is never cut, nor counted. Words are compared as the quote checks compare them (case, quote marks,
dashes, ligatures), so a copy is found whatever its typography. This runs once, where the answers
are recorded, so every surface (pages, record, feed, mail, terminal, --json) shows the same text.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

from ..papers import NumberedPaper
from .quotes import MAX_QUOTE_WORDS, word_spans, words

MAX_RUN_WORDS = MAX_QUOTE_WORDS  # a longer copy of a paper is republishing, not quoting
# A paper's words are indexed in stretches of _STEP words, one at every _STEP-th word: any match
# of at least 2 * _STEP - 1 words holds one indexed stretch whole, so none is missed. A copy
# edited every twenty words (a numbered list, a citation per sentence) is still found in pieces.
_STEP = 8
_MIN_MATCH = 16  # words: shorter matches are common phrases, not pieces of a copy
_MAX_CANDIDATES = 64  # places a stretch is tried at (boilerplate repeats; a copy is one of them)
_GAP = 3  # words skipped or added between two matches that still make one copy
# Extension steps an answer may spend per word before each stretch is tried at fewer places:
# text that repeats (table rows) would otherwise cost candidates x run length per run.
_WORK_PER_WORD = 64
_FEW_CANDIDATES = 4
# JSON escapes glue to the next word ("\nword" reads as "nword"): blanked, same length.
_ESCAPE_RE = re.compile(r'\\(?:[nrtbf"/\\]|u[0-9a-fA-F]{4})')
_FENCED_RE = re.compile(r"\A\s*```[a-z]*\n(.*)\n```\s*\Z", re.DOTALL)


@dataclass(frozen=True)
class _Source:
    arxiv_id: str
    words: tuple[str, ...]
    abstract: tuple[str, ...]


@dataclass(frozen=True)
class _Match:
    """Answer words [start, end) equal to the paper's words from `at` on."""
    source: int
    start: int
    end: int
    at: int

    @property
    def diagonal(self) -> int:
        return self.at - self.start

    @property
    def stop(self) -> int:
        """Where it ends in the paper's words."""
        return self.at + self.end - self.start


def note(chars: int, arxiv_id: str) -> str:
    """What stands in the place of a cut copy (no "Paper N": it is no claim to check; no quote
    mark, backslash or line break: it may stand inside a JSON string)."""
    return (f"[… {chars:,} characters copied word for word from the full text of arXiv "
            f"{arxiv_id} cut: the digest does not republish papers' full text]")


def json_like(text: str) -> bool:
    """Whether an answer is JSON (bare or in a code fence), so copies are cut inside its strings
    only; Markdown that merely opens with "[" or a fence is prose."""
    fenced = _FENCED_RE.match(text)
    try:
        json.loads(fenced.group(1) if fenced else text)
    except ValueError:
        return False
    return True


def _outside(inside: Sequence[tuple[int, int]], lo: int, hi: int) -> list[tuple[int, int]]:
    """[lo, hi) less the sorted, disjoint ranges `inside`."""
    left = []
    for a, b in inside:
        if b <= lo or a >= hi:
            continue
        if a > lo:
            left.append((lo, a))
        lo = max(lo, b)
    if lo < hi:
        left.append((lo, hi))
    return left


def _follows(first: _Match, then: _Match) -> bool:
    """Whether `then` continues the copy `first` ends: a few words skipped or added on either
    side, both sides moving on."""
    return (abs(then.start - first.end) <= _GAP and abs(then.at - first.stop) <= _GAP
            and then.end > first.end and then.stop > first.stop)


class FullTexts:
    """The papers' full texts (what the model was shown beyond the abstract), indexed to find
    long copies of them in an answer."""

    def __init__(self, papers: Sequence[NumberedPaper]) -> None:
        self._sources = [_Source(p.paper.arxiv_id, tuple(words(p.full_text.text)),
                                 tuple(words(p.paper.abstract)))
                         for p in papers if p.full_text.text]
        self._index: dict[tuple[str, ...], list[tuple[int, int]]] | None = None
        self._abstracts: dict[int, list[tuple[int, int]]] = {}
        # Words compared while extending matches, over every cut so far: bounded by about
        # _WORK_PER_WORD a word of answer, whatever the text repeats (a test holds it there).
        self.work = 0

    def _stretches(self) -> dict[tuple[str, ...], list[tuple[int, int]]]:
        if self._index is None:
            self._index = {}
            for n, source in enumerate(self._sources):
                for at in range(0, len(source.words) - _STEP + 1, _STEP):
                    self._index.setdefault(source.words[at:at + _STEP], []).append((n, at))
        return self._index

    def cut(self, text: str, *, in_strings: bool = False) -> str:
        """`text` with every long copy of a paper's full text replaced by a note; `in_strings`:
        a JSON answer, whose copies are cut inside its strings only (so it still parses)."""
        if not self._sources or not text:
            return text
        read = _ESCAPE_RE.sub(lambda m: " " * len(m.group(0)), text) if in_strings else text
        spans = word_spans(read)
        if len(spans) <= MAX_RUN_WORDS:
            return text
        quotes = [at for at, char in enumerate(read) if char == '"']
        # Outside JSON strings (keys, syntax) nothing is replaced; a copy running across strings
        # is cut in each: a note spanning a closing quote would break the JSON.
        string = [not in_strings or bisect_left(quotes, start) % 2 == 1 for _, start, _ in spans]
        pieces: list[tuple[int, int, str]] = []
        for start, end, arxiv_id in self._copies([w for w, _, _ in spans]):
            at = start
            while at < end:
                last = at
                while last + 1 < end and string[last + 1] == string[at] and (
                        not in_strings or bisect_left(quotes, spans[last + 1][1])
                        == bisect_left(quotes, spans[at][1])):
                    last += 1
                if string[at]:
                    pieces.append((spans[at][1], spans[last][2], arxiv_id))
                at = last + 1
        for start, end, arxiv_id in reversed(pieces):
            text = text[:start] + note(end - start, arxiv_id) + text[end:]
        return text

    def _copies(self, answer: list[str]) -> list[tuple[int, int, str]]:
        """The answer's words [start, end) to cut, each with the paper it copies: chains of
        matches covering more than MAX_RUN_WORDS words of a paper beyond its abstract."""
        matches = sorted(self._matches(answer), key=lambda m: (m.start, m.end))
        latest: dict[tuple[int, int], int] = {}  # (source, diagonal): its last match so far
        before: list[int | None] = []
        first: list[int] = []  # where each match's best chain starts in the paper
        for n, match in enumerate(matches):
            best = None
            for shift in range(-_GAP, _GAP + 1):
                prior = latest.get((match.source, match.diagonal + shift))
                if prior is not None and _follows(matches[prior], match) and (
                        best is None or first[prior] < first[best]):
                    best = prior
            before.append(best)
            first.append(match.at if best is None else first[best])
            latest[(match.source, match.diagonal)] = n
        ends = set(range(len(matches))) - {b for b in before if b is not None}
        ranges = []
        for end in sorted(ends):
            chain = [end]
            while (prior := before[chain[-1]]) is not None:
                chain.append(prior)
            cut = self._beyond_abstract([matches[n] for n in reversed(chain)])
            if cut is not None:
                ranges.append(cut)
        merged: list[tuple[int, int, str]] = []
        for start, end, arxiv_id in sorted(ranges):
            if merged and start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(end, merged[-1][1]), merged[-1][2])
            else:
                merged.append((start, end, arxiv_id))
        return merged

    def _beyond_abstract(self, chain: list[_Match]) -> tuple[int, int, str] | None:
        """The answer's words to cut for a chain: from its first to its last word copied from
        outside the abstract, if it copies more than MAX_RUN_WORDS such words. A heading of a
        few words next to the abstract ("Abstract") stays with it."""
        source = chain[0].source
        if chain[-1].stop - chain[0].at <= MAX_RUN_WORDS:
            return None
        pieces = [(a, b) for a, b in _outside(self._abstract(source), chain[0].at,
                                               chain[-1].stop) if b - a > _GAP]
        if sum(b - a for a, b in pieces) <= MAX_RUN_WORDS:
            return None
        kept = [(max(a, m.at) - m.diagonal, min(b, m.stop) - m.diagonal)
                for m in chain for a, b in pieces if a < m.stop and b > m.at]
        if not kept:
            return None
        return kept[0][0], kept[-1][1], self._sources[source].arxiv_id

    def _abstract(self, source: int) -> list[tuple[int, int]]:
        """Where the paper's full text holds its abstract (found as copies are), gaps of a few
        words (a formula the metadata spells otherwise) closed."""
        if source not in self._abstracts:
            found: list[tuple[int, int]] = []
            for match in sorted((m for m in self._matches(list(self._sources[source].abstract))
                                 if m.source == source), key=lambda m: m.at):
                if found and match.at <= found[-1][1] + _GAP:
                    found[-1] = (found[-1][0], max(found[-1][1], match.stop))
                else:
                    found.append((match.at, match.stop))
            self._abstracts[source] = found
        return self._abstracts[source]

    def _matches(self, answer: list[str]) -> list[_Match]:
        """Every maximal exact match of at least _MIN_MATCH words between the answer and a
        paper, each found once."""
        stretches = self._stretches()
        found: list[_Match] = []
        reached: dict[tuple[int, int], int] = {}  # (source, diagonal): end of its last match
        covered = 0  # a stretch inside a match found already starts no new one
        budget = _WORK_PER_WORD * len(answer)
        for at in range(len(answer) - _STEP + 1):
            if at + _STEP <= covered:
                continue
            places = stretches.get(tuple(answer[at:at + _STEP]), [])
            for source, place in places[:_MAX_CANDIDATES if budget > 0 else _FEW_CANDIDATES]:
                if reached.get((source, place - at), -1) > at:
                    continue
                paper = self._sources[source].words
                start, back = at, place
                while start > 0 and back > 0 and answer[start - 1] == paper[back - 1]:
                    start, back = start - 1, back - 1
                end, ahead = at + _STEP, place + _STEP
                while end < len(answer) and ahead < len(paper) and answer[end] == paper[ahead]:
                    end, ahead = end + 1, ahead + 1
                budget -= end - start
                self.work += end - start
                reached[(source, place - at)] = end
                if end - start >= _MIN_MATCH:
                    covered = max(covered, end)
                    found.append(_Match(source, start, end, back))
        return found
