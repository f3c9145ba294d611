"""Check the quotes a model gave as evidence, mechanically, against the papers' own text.

A quote counts only if every part of it (the stretches between ellipses) is in the cited
paper's bundle text (abstract and excerpt), after both are normalised: Unicode compatibility
forms (ligatures), case, whitespace, line-end hyphenation, quote marks and dashes. Near-exact
forgives little more: words of the paper the quote leaves out, and small words ("the", "of")
it adds or swaps, at most one in ten. A word that carries the claim (a changed verb, a changed
number) is never forgiven, and a figure of the sentence (45.8%, 1.83×) must be in the passage
the quote matched, not merely somewhere in the quote or the paper.

A part too short to prove anything makes the quote "not checked", and so does a quote longer
than `MAX_QUOTE_WORDS`: it is refused before any matching. Matching walks out from the quote's
rarest word through an index of the paper's words, so its cost grows with the quote's length
(capped), not with its square.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

from ..completions import UNFIT_CHECK, Completion
from ..papers import NumberedPaper
from ..text.safe_text import clean, cut
from .checks import ClaimCheck, PaperQuote, Verdict, worst
from .claims import FIGURE_RE, Claim, figure_in

MIN_WORDS = 4  # a whole quote shorter than this shows nothing
MIN_PART_WORDS = 3  # nor does a part between ellipses shorter than this
MAX_QUOTE_WORDS = 150
MAX_QUOTE_CHARS = 2000
MAX_SHOWN_WORDS = 80  # a longer quote is checked whole but shown cut
MAX_SHOWN_CHARS = 600
FORGIVEN_PER_WORD = 0.1  # words left out or small words changed, per word of the quote
# Words too common to carry a claim: a quote may add, drop or swap these.
SMALL_WORDS = frozenset(
    "a an the of in on at to for and or is are was were be been by with as that this these "
    "those it its from we our which into than".split())

_QUOTES = str.maketrans({c: "'" for c in "‘’‚‛′`´"} | {c: '"' for c in "“”„‟″«»"}
                        | {c: "-" for c in "‐‑‒–—―−"} | {"×": "x"})
_HYPHENATED_RE = re.compile(r"(\w)-\s*\n\s*(\w)")
_WORD_RE = re.compile(r"[a-z0-9]+(?:[.,][0-9]+)*")
_ELLIPSIS_RE = re.compile(r"\.\s?\.\s?\.|…|\[\s*\.\.\.\s*\]")


def _normal(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).replace("\u00ad", "").translate(_QUOTES)
    return _HYPHENATED_RE.sub(r"\1\2", text).lower()


def words(text: str) -> list[str]:
    """Text as the comparable words of a quote check."""
    return _WORD_RE.findall(_normal(text))


def word_spans(text: str) -> list[tuple[str, int, int]]:
    """The comparable words of `text` (as `words` reads them, but for line-end hyphenation),
    each with where it stands in `text` itself: (word, start, end)."""
    pieces, origin = [], []
    for place, char in enumerate(text):
        piece = unicodedata.normalize("NFKC", char).replace("\u00ad", "").translate(_QUOTES)
        piece = piece.lower()
        pieces.append(piece)
        origin += [place] * len(piece)
    normal = "".join(pieces)
    return [(m.group(0), origin[m.start()], origin[m.end() - 1] + 1)
            for m in _WORD_RE.finditer(normal)]


@dataclass(frozen=True)
class PaperText:
    """One paper's bundle text, ready to search: its words, where each is, and an index."""

    number: int
    words: tuple[str, ...]
    spans: tuple[tuple[int, int], ...]  # each word's place in `normal`
    normal: str  # the normalised text the words were read from
    index: Mapping[str, tuple[int, ...]] = field(repr=False, compare=False)

    @classmethod
    def of(cls, paper: NumberedPaper) -> PaperText:
        raw = f"{paper.paper.abstract}\n{paper.full_text.text[:paper.excerpt_chars]}"
        normal = _normal(raw)
        found = [(m.group(0), m.span()) for m in _WORD_RE.finditer(normal)]
        index: dict[str, list[int]] = {}
        for position, (word, _) in enumerate(found):
            index.setdefault(word, []).append(position)
        return cls(paper.number, tuple(w for w, _ in found), tuple(s for _, s in found), normal,
                   {w: tuple(p) for w, p in index.items()})

    def find(self, quote: Sequence[str]) -> tuple[int, int] | None:
        """The paper's words [start, end) that hold the quote near-exactly, or None."""
        content = [i for i, w in enumerate(quote) if w not in SMALL_WORDS]
        if not content or any(quote[i] not in self.index for i in content):
            return None  # every word that carries meaning must be in the paper
        anchor = min(content, key=lambda i: len(self.index[quote[i]]))
        allowance = int(len(quote) * FORGIVEN_PER_WORD)
        for position in self.index[quote[anchor]]:
            ahead = _walk(quote[anchor:], self.words, position, 1, allowance)
            if ahead is None:
                continue
            end, spent = ahead
            behind = _walk(quote[:anchor][::-1], self.words, position - 1, -1, allowance - spent)
            if behind is not None:
                return behind[0] + 1, end
        return None

    def passage(self, start: int, end: int) -> str:
        """The normalised text of words [start, end), with the word after it (a "%" or a
        "percent" belongs to the number before it)."""
        last = min(end, len(self.spans) - 1)
        return self.normal[self.spans[start][0]:self.spans[last][1] + 1]


def _walk(quote: Sequence[str], text: Sequence[str], at: int, step: int, allowance: int
          ) -> tuple[int, int] | None:
    """Match `quote` against `text` from word `at` on, forwards (`step` 1) or backwards (-1):
    (the first word past the match, the forgiveness spent), or None."""
    def word(j: int) -> str | None:
        return text[j] if 0 <= j < len(text) else None

    i, j, spent = 0, at, 0
    while i < len(quote):
        if word(j) == quote[i]:
            i, j = i + 1, j + step
            continue
        skip = next((k for k in range(1, allowance - spent + 1)
                     if word(j + k * step) == quote[i]), None)
        if skip is not None:  # the quote left out words of the paper
            j, spent = j + skip * step, spent + skip
        elif quote[i] in SMALL_WORDS and spent < allowance:  # added or swapped a small word
            swapped = word(j) in SMALL_WORDS
            i, j, spent = i + 1, j + step * swapped, spent + 1
        else:
            return None
    return j, spent


def quote_parts(quote: str) -> list[list[str]]:
    """The quote's stretches between ellipses, as words (empty stretches left out)."""
    return [part for piece in _ELLIPSIS_RE.split(quote) if (part := words(piece))]


def check_claims(claims: Sequence[Claim], batches: Sequence[tuple[Collection[int], Completion]],
                 texts: Mapping[int, PaperText], alone: Collection[int] = ()
                 ) -> tuple[ClaimCheck, ...]:
    """A verdict for each claim from the evidence answers, each for a set of claims: each
    paper it cites checked against that paper's quote, the claim as the worst of them.

    A claim that no batch answered (one that failed, returned invalid JSON, or never ran) is
    "not checked", never "supported"; one citing a paper the bundle does not have is never
    sent, and stays a phantom citation.
    """
    given: dict[int, dict[int, str]] = {}  # claim -> paper -> its quote (the first given)
    checked: set[int] = set()
    unfit: set[int] = set()  # claims whose check did not fit the model's context
    for numbers, completion in batches:
        entries = _entries(completion)
        if entries is None:
            if completion.error.startswith(UNFIT_CHECK):
                unfit.update(numbers)
            continue
        checked.update(numbers)
        for claim, paper, quote in entries:
            if claim in numbers:
                given.setdefault(claim, {}).setdefault(paper, quote)
    checks = (_check(c, given.get(c.number, {}), c.number in checked, texts, c.number in unfit)
              for c in claims)
    # A claim checked without its answer's conversation (it did not fit the context) says so.
    return tuple(replace(check, note="; ".join(filter(None, (check.note, ALONE_NOTE))))
                 if claim.number in alone and claim.number in checked else check
                 for claim, check in zip(claims, checks, strict=True))


ALONE_NOTE = ("checked in a smaller conversation: the answer's did not fit the model's "
              "context, so the cited papers' text and the claim were asked about alone")


def _entries(completion: Completion) -> list[tuple[int, int, str]] | None:
    if not completion.ok:
        return None
    try:
        data = json.loads(completion.content)
        return [(int(e["claim"]), int(e["paper"]), clean(str(e["quote"])))
                for e in data["claims"]]
    except (ValueError, KeyError, TypeError, RecursionError):
        return None


@dataclass(frozen=True)
class _Part:
    """One cited paper's quote and what its check found."""

    paper: int
    verdict: Verdict
    quote: str
    found_in: int | None
    note: str
    spans: tuple[tuple[int, int], ...] = ()  # where the quote is in `found_in`'s text


def _check(claim: Claim, given: Mapping[int, str], checked: bool,
           texts: Mapping[int, PaperText], unfit: bool = False) -> ClaimCheck:
    if claim.phantoms or not claim.papers:
        absent = ", ".join(f"Paper {n}" for n in claim.phantoms)
        return ClaimCheck(claim.sentence, claim.papers, "not_checked", "", None,
                          f"it cites {absent}, which the bundle does not have",
                          phantoms=claim.phantoms)
    if unfit:
        return _whole(claim, "not_checked", "its check is too long for the model's context")
    if not checked:
        return _whole(claim, "not_checked", "the evidence request failed")
    quotes = _by_paper(claim, given)
    parts = [_part(claim, paper, quotes.get(paper, ""), texts) for paper in claim.papers]
    found = [p for p in parts if p.verdict == "supported"]
    missing = [m.group(0).strip() for m in FIGURE_RE.finditer(claim.sentence)
               if found and not any(figure_in(m.group(1), m.group(2).strip(),
                                              texts[p.found_in].passage(*span))
                                    for p in found if p.found_in is not None
                                    for span in p.spans)]
    if missing and len(found) == len(parts):  # a figure of the sentence no quote states
        first = found[0]
        parts[parts.index(first)] = replace(
            first, verdict="figure_missing",
            note=f"the quote is in Paper {first.found_in}, but {', '.join(missing)} is not in "
                 "the passage it quotes")
    head = parts[0]
    return ClaimCheck(claim.sentence, claim.papers, worst(p.verdict for p in parts),
                      _shown(head.quote), head.found_in, head.note,
                      parts=tuple(PaperQuote(p.paper, p.verdict, _shown(p.quote), p.found_in,
                                             p.note) for p in parts) if len(parts) > 1 else ())


def _whole(claim: Claim, verdict: Verdict, note: str) -> ClaimCheck:
    return ClaimCheck(claim.sentence, claim.papers, verdict, "", None, note)


def _by_paper(claim: Claim, given: Mapping[int, str]) -> dict[int, str]:
    """Each cited paper's quote; a quote given under a number the claim does not cite is
    taken as the quote of a cited paper that has none (a model that cites "Paper 2" and
    numbers its quote 3 still quotes for Paper 2), in order."""
    quotes = {paper: given[paper] for paper in claim.papers if given.get(paper, "").strip()}
    strays = [q for paper, q in given.items() if paper not in claim.papers and q.strip()]
    for paper in claim.papers:
        if paper not in quotes and strays:
            quotes[paper] = strays.pop(0)
    return quotes


def _part(claim: Claim, paper: int, quote: str, texts: Mapping[int, PaperText]) -> _Part:
    if not quote.strip():
        return _Part(paper, "no_quote", "", None, f"no passage of Paper {paper} was quoted for it")
    if len(quote) > MAX_QUOTE_CHARS or len(words(quote)) > MAX_QUOTE_WORDS:
        return _Part(paper, "not_checked", quote, None,
                     f"the quote is longer than {MAX_QUOTE_WORDS} words, too long to be a quote")
    parts = quote_parts(quote)
    if sum(len(p) for p in parts) < MIN_WORDS:
        return _Part(paper, "no_quote", quote, None,
                     "the quote given is too short to show anything")
    if any(len(p) < MIN_PART_WORDS for p in parts):
        return _Part(paper, "not_checked", quote, None,
                     f"a part of the quote has fewer than {MIN_PART_WORDS} words, too few to "
                     "show it is the paper's")
    spans = _find(texts.get(paper), parts)
    if spans is not None:
        return _Part(paper, "supported", quote, paper, f"the quote is in the text of Paper {paper}",
                     tuple(spans))
    other = next((n for n, text in sorted(texts.items())
                  if n != paper and _find(text, parts) is not None), None)
    if other is not None:
        return _Part(paper, "wrong_paper", quote, other,
                     f"the quote given for Paper {paper} is from Paper {other}")
    return _Part(paper, "not_in_paper", quote, None,
                 f"the quote is not in the text of Paper {paper} (nor of any other paper of "
                 "the edition)")


def _shown(quote: str) -> str:
    """A quote as a page shows it: a longer one is checked whole but shown cut."""
    shown = quote.split()
    if len(shown) > MAX_SHOWN_WORDS:
        quote = " ".join(shown[:MAX_SHOWN_WORDS]) + " …"
    return cut(quote, MAX_SHOWN_CHARS)


def _find(text: PaperText | None, parts: list[list[str]]) -> list[tuple[int, int]] | None:
    """Where each part of a quote is in the paper, or None if any part is not."""
    if text is None:
        return None
    spans = [text.find(part) for part in parts]
    return None if any(s is None for s in spans) else [s for s in spans if s is not None]
