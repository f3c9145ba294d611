"""Papers by name: "PagedAttention", not "Paper 6", wherever the digest shows a synthesis.

"Paper N" is the bundle's numbering: it means nothing outside the bundle and changes between
editions. A paper's short name comes only from its own title: the system or method name the
title gives ("FastKV: …"), or the name its brief uses where the title itself carries it and no
other paper's title does (a paper that merely compares against PagedAttention is never named
"PagedAttention"). Otherwise its name is its whole title, never a title cut short. A name is
never a word of the bundle's own ("Paper 3"), and no two papers share one, so a citation of a
paper always reads as that paper.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Mapping, Sequence

from ..evidence.claims import CITE_RE
from ..evidence.claims import numbers as cited_numbers
from ..models import NumberedPaper
from .prose import papers_once

MAX_NAME_CHARS = 40
_SQUASH_RE = re.compile(r"[\W_]+")
# A citation and the name or title a model may give right after it, in parentheses.
_CITE_GIVEN_RE = re.compile(CITE_RE.pattern + r"(?:\s*\((?P<given>[^()\n]{2,150})\))?")
_TITLE_WORDS = 5
_GENERIC = {"", "none", "n/a", "na", "unknown", "the paper", "this paper", "paper", "papers",
            "method", "system", "framework", "approach", "model", "abstract", "full text",
            "excerpt", "bundle", "title", "authors",
            # Heads a title has that name no system ("Position: …", "A Survey: …").
            "position", "position paper", "survey", "a survey", "review", "a review",
            "tutorial", "perspective", "technical report", "re", "note", "a note", "editorial",
            "overview", "an overview", "preprint", "erratum", "comment", "reply"}


def title_name(title: str) -> str:
    """The system or method name a title gives before its colon ("FastKV: …"), or "" (a
    colon inside a word or figure, "2:4 Sparsity", is no separator)."""
    title = " ".join(title.split())
    head = title.split(": ", 1)[0].strip() if ": " in title else ""
    return head if _usable(head) and len(head.split()) <= _TITLE_WORDS else ""


def short_name(title: str, brief_name: str = "", other_titles: Sequence[str] = ()) -> str:
    """The name a reader recognises the paper by: its title's own name, else the brief's name
    where this title carries it and no other title does, else the whole title."""
    whole = " ".join(title.split())
    named = title_name(whole)
    if named:
        return named
    name = " ".join(brief_name.split()).strip(" .,:;\"'“”")
    if (_usable(name) and _uses(whole, name)
            and not any(_uses(other, name) for other in other_titles)):
        return name
    return whole


def _usable(name: str) -> bool:
    """Short enough to be a name, and not a word of the bundle's own ("Paper 3", "Abstract")."""
    return (2 <= len(name) <= MAX_NAME_CHARS and name.lower() not in _GENERIC
            and not CITE_RE.search(name))


def _squashed(text: str) -> str:
    """Letters and digits only, lower case: "Flash-Decoding" and "flashdecoding" alike."""
    return _SQUASH_RE.sub("", text.lower())


def _restates(given: str, name: str) -> bool:
    """Whether a parenthetical only says the name again (or the title it was cut from)."""
    given, name = _squashed(given), _squashed(name)
    return given == name or (len(name) >= 4 and given.startswith(name))


def _uses(text: str, name: str) -> bool:
    """Whether `name` is a run of whole words of `text` ("Flash-Decoding" and "Flash
    Decoding" alike), not a piece of one ("GPU" is not in "GPUs")."""
    target = _squashed(name)
    words = [_squashed(word) for word in text.split()]
    return bool(target) and any("".join(words[i:j]) == target for i in range(len(words))
                                for j in range(i + 1, min(len(words), i + 8) + 1))


def paper_names(papers: Sequence[NumberedPaper], brief_names: Mapping[int, str]
                ) -> dict[int, str]:
    """A distinct name for each paper of the bundle, by number. Papers that would share a name
    are each named by their whole title (and arXiv id, where the titles are the same too); a
    title that reads as a citation ("Paper 1") names its paper by arXiv id."""
    titles = {item.number: " ".join(item.paper.title.split()) for item in papers}
    names = {}
    for item in papers:
        others = [t for n, t in titles.items() if n != item.number]
        names[item.number] = short_name(titles[item.number],
                                        brief_names.get(item.number, ""), others)
    shared = Counter(name.lower() for name in names.values())
    for item in papers:
        if shared[names[item.number].lower()] > 1:
            names[item.number] = titles[item.number]
    shared = Counter(name.lower() for name in names.values())
    for item in papers:
        name = names[item.number]
        if CITE_RE.search(name) or name.lower() in _GENERIC:  # a title such as "Paper 1"
            names[item.number] = f"arXiv {item.paper.arxiv_id}"
        elif shared[name.lower()] > 1:  # two papers of the same title
            names[item.number] = f"{name} (arXiv {item.paper.arxiv_id})"
    return names


def cited_parts(text: str, names: Mapping[int, str]) -> list[tuple[str, int | None]]:
    """Plain text cut where it cites papers: (text, None) between citations, (name, number)
    for each paper cited, so a page, the mail or the feed can make each name a link. "Paper 3"
    and "Papers 1, 8 and 9" become the papers' names; numbers outside the bundle stay text."""
    parts: list[tuple[str, int | None]] = []
    last = 0
    text = papers_once(text, {n: (name,) for n, name in names.items()})  # never X and X
    for match in _CITE_GIVEN_RE.finditer(text):
        numbers = cited_numbers(match.group(2))
        if not numbers or any(n not in names for n in numbers):
            continue
        parts.append((text[last:match.start()], None))
        last = match.end()
        given = match.group("given")
        if len(numbers) == 1:
            parts.append((names[numbers[0]], numbers[0]))
            # "Paper 3 (KV Cache Compression)" reads "KV Cache Compression", not twice.
            if given is not None and not _restates(given, names[numbers[0]]):
                parts.append((f" ({given})", None))
            continue
        for index, number in enumerate(numbers):
            if index:
                parts.append((" and " if index == len(numbers) - 1 else ", ", None))
            parts.append((names[number], number))
        if given:
            parts.append((f" ({given})", None))
    parts.append((text[last:], None))
    return [(piece, number) for piece, number in parts if piece]


WITHDRAWN_FLAG = " (⚠ withdrawn)"


def flag_withdrawn(parts: list[tuple[str, int | None]], withdrawn: Collection[int],
                   names: Mapping[int, str] | None = None) -> list[tuple[str, int | None]]:
    """`parts` with the flag after each name of a paper arXiv lists as withdrawn: a sentence
    never names one without saying so (on the site, in the mail and in the feed alike).
    `names`: where given, a withdrawn paper named in plain words (its title or short name,
    not as "Paper N") is made a name piece too, and flagged."""
    if not withdrawn:
        return parts
    spelled = {names[n]: n for n in withdrawn if names and len(names.get(n, "")) >= 4}
    # One pattern for every piece: each withdrawn paper's name, whole words, longest first.
    pattern = re.compile(r"(?<!\w)(" + "|".join(
        re.escape(name) for name in sorted(spelled, key=len, reverse=True)) + r")(?!\w)"
    ) if spelled else None
    flagged: list[tuple[str, int | None]] = []
    for piece, number in parts:
        found = ([(piece, number)] if number is not None or pattern is None
                 else _named_in(piece, pattern, spelled))
        for part in found:
            flagged.append(part)
            if part[1] is not None and part[1] in withdrawn:
                flagged.append((WITHDRAWN_FLAG, None))
    return flagged


def _named_in(text: str, pattern: re.Pattern[str], numbers: Mapping[str, int]
              ) -> list[tuple[str, int | None]]:
    """Plain `text` cut where `pattern` finds a name, each found name with its paper."""
    parts: list[tuple[str, int | None]] = []
    last = 0
    for match in pattern.finditer(text):
        parts += [(text[last:match.start()], None), (match.group(1), numbers[match.group(1)])]
        last = match.end()
    parts.append((text[last:], None))
    return [(piece, number) for piece, number in parts if piece]


def name_citations(text: str, names: Mapping[int, str]) -> str:
    """Plain text with "Paper 3" and "Papers 1, 8 and 9" read as the papers' names; numbers
    outside the bundle stay as they are."""
    return "".join(piece for piece, _ in cited_parts(text, names))
