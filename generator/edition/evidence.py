"""Check the quotes a model gave as evidence, mechanically, against the papers' own text.

A quote counts only if it is in the cited paper's bundle text (abstract and excerpt), exactly or
near-exactly, after both are normalised: Unicode compatibility forms (ligatures), case,
whitespace, line-end hyphenation, quote marks and dashes. Near-exact means the quote's words,
in order, make up at least `NEAR` of a window of the paper's words of about the quote's
length (difflib's matching blocks): a dropped or changed word in a long quote passes, a
paraphrase does not. Quotes of fewer than `MIN_WORDS` words prove nothing and are not counted.
Figures in the sentence (45.8%, 1.83×) must appear in the quote or in the paper's text.
"""

from __future__ import annotations

import difflib
import json
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..claims import Claim
from ..models import Completion, NumberedPaper
from ..safe_text import clean
from .model import ClaimCheck, Verdict

NEAR = 0.9
MIN_WORDS = 4
MAX_SHOWN_WORDS = 80  # a longer "quote" is checked whole but shown cut

_QUOTES = str.maketrans({c: "'" for c in "‘’‚‛′`´"} | {c: '"' for c in "“”„‟″«»"}
                        | {c: "-" for c in "‐‑‒–—―−"} | {"×": "x"})
_HYPHENATED_RE = re.compile(r"(\w)-\s*\n\s*(\w)")
_WORD_RE = re.compile(r"[a-z0-9]+(?:[.,][0-9]+)*")
_ELLIPSIS_RE = re.compile(r"\.\s?\.\s?\.|…|\[\s*\.\.\.\s*\]")
_FIGURE_RE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s?(%|×|x(?![A-Za-z])|-fold|\s?times\b)")


def words(text: str) -> list[str]:
    """Text as the comparable words of a quote check."""
    text = unicodedata.normalize("NFKC", text).replace("\u00ad", "").translate(_QUOTES)
    return _WORD_RE.findall(_HYPHENATED_RE.sub(r"\1\2", text).lower())


@dataclass(frozen=True)
class PaperText:
    """One paper's bundle text, ready to search."""

    number: int
    words: tuple[str, ...]
    joined: str  # " w1 w2 … " for exact search
    raw: str

    @classmethod
    def of(cls, paper: NumberedPaper) -> PaperText:
        raw = f"{paper.paper.abstract}\n{paper.full_text.text[:paper.excerpt_chars]}"
        found = tuple(words(raw))
        return cls(paper.number, found, f" {' '.join(found)} ", raw)

    def holds(self, quote: Sequence[str]) -> bool:
        """Whether the quote's words are in this text, exactly or near-exactly."""
        if f" {' '.join(quote)} " in self.joined:
            return True
        if len(quote) < 6:
            return False  # too short for a fuzzy match to mean anything
        matcher = difflib.SequenceMatcher(None, self.words, quote, autojunk=False)
        starts = {max(0, block.a - block.b) for block in matcher.get_matching_blocks()
                  if block.size >= 2}
        for start in sorted(starts):
            window = self.words[start:start + len(quote) + max(2, len(quote) // 10)]
            aligned = difflib.SequenceMatcher(None, window, quote, autojunk=False)
            matched = sum(block.size for block in aligned.get_matching_blocks())
            if matched >= NEAR * len(quote) and matched >= NEAR * (len(window) - 2):
                return True
        return False


def quote_parts(quote: str) -> list[list[str]]:
    """The quote's stretches between ellipses, as words; stretches of one or two words dropped."""
    return [part for piece in _ELLIPSIS_RE.split(quote) if len(part := words(piece)) >= 3]


def check_claims(claims: Sequence[Claim], batches: Sequence[tuple[range, Completion]],
                 texts: Mapping[int, PaperText]) -> tuple[ClaimCheck, ...]:
    """A verdict for each claim from the evidence answers, each for a range of claims.

    A claim that no batch answered (one that failed, returned invalid JSON, or never ran) is
    "not checked", never "supported".
    """
    given: dict[int, tuple[int, str]] = {}
    checked: set[int] = set()
    for numbers, completion in batches:
        entries = _entries(completion)
        if entries is None:
            continue
        checked.update(numbers)
        for claim, paper, quote in entries:
            if claim in numbers and claim not in given:
                given[claim] = (paper, quote)
    return tuple(_check(c, given.get(c.number), c.number in checked, texts) for c in claims)


def _entries(completion: Completion) -> list[tuple[int, int, str]] | None:
    if not completion.ok:
        return None
    try:
        data = json.loads(completion.content)
        return [(int(e["claim"]), int(e["paper"]), clean(str(e["quote"])))
                for e in data["claims"]]
    except (ValueError, KeyError, TypeError):
        return None


def _check(claim: Claim, given: tuple[int, str] | None, checked: bool,
           texts: Mapping[int, PaperText]) -> ClaimCheck:
    def verdict(kind: Verdict, note: str, quote: str = "", found_in: int | None = None
                ) -> ClaimCheck:
        shown = quote.split()
        if len(shown) > MAX_SHOWN_WORDS:
            quote = " ".join(shown[:MAX_SHOWN_WORDS]) + " …"
        return ClaimCheck(claim.sentence, claim.papers, kind, quote, found_in, note)

    cited = ", ".join(f"Paper {n}" for n in claim.papers)
    if not checked:
        return verdict("not_checked", "")
    if given is None or not given[1].strip():
        return verdict("no_quote", f"no passage of {cited} was quoted for it")
    paper, quote = given
    parts = quote_parts(quote)
    if not parts or sum(len(p) for p in parts) < MIN_WORDS:
        return verdict("no_quote", "the quote given is too short to show anything", quote)
    order = [n for n in (paper, *claim.papers) if n in claim.papers]
    home = next((n for n in dict.fromkeys(order) if _holds(texts.get(n), parts)), None)
    if home is not None:
        missing = [f for f in _figures(claim.sentence)
                   if not (_figure_in(f, quote) or _figure_in(f, texts[home].raw))]
        if missing:
            return verdict("figure_missing", f"the quote is in Paper {home}, but "
                           f"{', '.join(missing)} appears in neither the quote nor the paper",
                           quote, home)
        return verdict("supported", f"the quote is in the text of Paper {home}", quote, home)
    other = next((n for n, text in sorted(texts.items())
                  if n not in claim.papers and _holds(text, parts)), None)
    if other is not None:
        return verdict("wrong_paper", f"the quote is from Paper {other}, not {cited}", quote,
                       other)
    return verdict("not_in_paper", f"the quote is not in the text of {cited} (nor of any other "
                   "paper of the edition)", quote)


def _holds(text: PaperText | None, parts: list[list[str]]) -> bool:
    return text is not None and all(text.holds(part) for part in parts)


def _figures(sentence: str) -> list[str]:
    return [m.group(0).strip() for m in _FIGURE_RE.finditer(sentence)]


def _figure_in(figure: str, text: str) -> bool:
    match = _FIGURE_RE.match(figure)
    if not match:
        return False
    number, unit = re.escape(match.group(1)), match.group(2).strip()
    if unit == "%":
        pattern = rf"(?<![\d.]){number}\s?(?:%|percent)"
    else:
        pattern = rf"(?<![\d.]){number}\s?(?:×|x|X|times|-fold|fold|\\times)"
    return re.search(pattern, unicodedata.normalize("NFKC", text)) is not None
