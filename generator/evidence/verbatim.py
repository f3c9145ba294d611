"""Full text is never published: a long word-for-word copy of a paper's text is cut from an answer.

The records and pages hold the papers' metadata, never their text (arXiv's terms; docs say so),
yet a model may copy a page of the excerpt it was shown into its answer. Any run of an answer
longer than the longest quote the evidence checks take (`MAX_QUOTE_WORDS` words) that is word
for word a paper's full text is replaced by a short note in our words; its quotes and its own
sentences stay. The abstract, which every page shows anyway, is never cut. Words are compared
as the quote checks compare them (case, quote marks, dashes, ligatures), so a copy is found
whatever its typography. This runs once, where the answers are recorded, so every surface
(pages, record, feed, mail, terminal, --json) shows the same cut text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..models import NumberedPaper
from .quotes import MAX_QUOTE_WORDS, word_spans, words

MAX_RUN_WORDS = MAX_QUOTE_WORDS  # a longer run copied from a paper is republishing, not quoting
# A paper's words are indexed at every _STEP-th word: any run of at least 2 * _STEP - 1 words
# (far fewer than MAX_RUN_WORDS) holds one indexed stretch whole, so none is missed.
_STEP = 16
_MAX_CANDIDATES = 64  # places a stretch is tried at (boilerplate repeats; a copy is one of them)


@dataclass(frozen=True)
class _Source:
    arxiv_id: str
    words: tuple[str, ...]
    abstract: str  # its abstract's words, space-joined and padded: a run in it is no copy


@dataclass(frozen=True)
class _Run:
    start: int  # the answer's words [start, end)
    end: int
    source: _Source


def note(chars: int, arxiv_id: str) -> str:
    """What stands in the place of a cut copy (no "Paper N": it is no claim to check)."""
    return (f"[… {chars:,} characters copied word for word from the full text of arXiv "
            f"{arxiv_id} cut: the digest does not republish papers' full text]")


class FullTexts:
    """The papers' full texts (what the model was shown beyond the abstract), indexed to find
    long copies of them in an answer."""

    def __init__(self, papers: Sequence[NumberedPaper]) -> None:
        self._sources = [
            _Source(p.paper.arxiv_id, tuple(words(p.full_text.text)),
                    f" {' '.join(words(p.paper.abstract))} ")
            for p in papers if p.full_text.text]
        self._index: dict[tuple[str, ...], list[tuple[_Source, int]]] | None = None

    def _stretches(self) -> dict[tuple[str, ...], list[tuple[_Source, int]]]:
        if self._index is None:
            self._index = {}
            for source in self._sources:
                for at in range(0, len(source.words) - _STEP + 1, _STEP):
                    self._index.setdefault(source.words[at:at + _STEP], []).append((source, at))
        return self._index

    def cut(self, text: str, *, in_strings: bool = False) -> str:
        """`text` with every long copy of a paper's full text replaced by a note; `in_strings`:
        a JSON answer, whose copies are cut within one string each (so it still parses)."""
        if not self._sources or not text:
            return text
        spans = word_spans(text)
        if len(spans) <= MAX_RUN_WORDS:
            return text
        segments, first = [], 0
        for place in range(1, len(spans) + 1):
            if place == len(spans) or (in_strings and '"' in text[spans[place - 1][2]:
                                                                   spans[place][1]]):
                segments.append((first, place))
                first = place
        runs = [run for lo, hi in segments for run in self._runs([w for w, _, _ in spans], lo, hi)]
        for run in reversed(runs):
            start, end = spans[run.start][1], spans[run.end - 1][2]
            text = text[:start] + note(end - start, run.source.arxiv_id) + text[end:]
        return text

    def _runs(self, answer: list[str], lo: int, hi: int) -> list[_Run]:
        """The copies in the answer's words [lo, hi), in order, none overlapping."""
        found: list[_Run] = []
        stretches = self._stretches()
        at = lo
        while at + _STEP <= hi:
            best: _Run | None = None
            for source, place in stretches.get(tuple(answer[at:at + _STEP]), [])[
                    :_MAX_CANDIDATES]:
                start, back = at, place
                floor = found[-1].end if found else lo
                while start > floor and back > 0 and answer[start - 1] == source.words[back - 1]:
                    start, back = start - 1, back - 1
                end, ahead = at + _STEP, place + _STEP
                while end < hi and ahead < len(source.words) and answer[end] == source.words[ahead]:
                    end, ahead = end + 1, ahead + 1
                if best is None or end - start > best.end - best.start:
                    best = _Run(start, end, source)
            if (best is not None and best.end - best.start > MAX_RUN_WORDS
                    and f" {' '.join(answer[best.start:best.end])} " not in best.source.abstract):
                found.append(best)
                at = best.end
            else:
                at += 1
        return found
