"""Papers by name: "PagedAttention", not "Paper 6", wherever the digest shows a synthesis.

"Paper N" is the bundle's numbering: it means nothing outside the bundle and changes between
editions. A paper's short name comes only from its own title: the system or method name the
title gives ("FastKV: …"), or the name its brief uses where the title itself carries it and no
other paper's title does (a paper that merely compares against PagedAttention is never named
"PagedAttention"), or a nickname the answers gave it that its own title or abstract uses.
Otherwise its name is its whole title up to 50 characters, else its first words. A name is
never a word of the bundle's own ("Paper 3"), and no two papers share one, so a citation of a
paper always reads as that paper.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence

from ..evidence.naming import (
    CITE_RE,
    GENERIC,
    find_citations,
    squashed,
    title_name,
    usable,
    uses,
)
from ..papers import NumberedPaper
from .prose import papers_once

MAX_NAME_CHARS = 40
MAX_LINK_CHARS = 50  # link text inline: a longer title is cited by its first words
_SHORT_STOP = {"a", "an", "the", "of", "for", "and", "in", "on", "with", "to", "via", "by",
               "at", "from", "as", "is", "are", "or"}


def short_name(title: str, brief_name: str = "", other_titles: Sequence[str] = (),
               nicknames: Sequence[str] = (), text: str = "") -> str:
    """The name a reader recognises the paper by: its title's own name, else the brief's name
    where this title carries it and no other title does, else a name the answers gave it that
    its own title or abstract (`text`) uses, else the whole title where that is short, else
    its first words."""
    whole = " ".join(title.split())
    named = title_name(whole)
    if named:
        return named
    name = " ".join(brief_name.split()).strip(" .,:;\"'“”")
    if (usable(name) and _uses(whole, name)
            and not any(_uses(other, name) for other in other_titles)):
        return name
    if len(whole) <= MAX_LINK_CHARS:
        return whole
    said = f"{whole} {text}"
    for nickname in nicknames:
        if usable(nickname) and _uses(said, nickname) \
                and not any(_uses(other, nickname) for other in other_titles):
            return nickname
    return first_words(whole)


def first_words(title: str, most: int = MAX_NAME_CHARS) -> str:
    """A long title's first words, at most `most` characters, ending on a word that carries
    meaning ("Agent-Assisted Side-Channel Attacks", never "… Attacks on")."""
    words: list[str] = []
    for word in title.split():
        if len(" ".join([*words, word])) > most and words:
            break
        words.append(word)
    while len(words) > 1 and words[-1].lower().strip(",:;") in _SHORT_STOP:
        words.pop()
    return " ".join(words).rstrip(",:;")


def _restates(given: str, name: str) -> bool:
    """Whether a parenthetical only says the name again (or the title it was cut from)."""
    given, name = squashed(given), squashed(name)
    return given == name or (len(name) >= 4 and given.startswith(name))


def _uses(text: str, name: str) -> bool:
    return uses(text, name)


def given_names(answers: Iterable[str], numbers: Iterable[int]) -> dict[int, list[str]]:
    """The names the answers give each paper after its number ("Paper 4 (MOCAP)"), in the
    order they first give them."""
    wanted = set(numbers)
    found: dict[int, list[str]] = {}
    for answer in answers:
        for citation in find_citations(answer):
            for number, given in citation.given:
                if number in wanted and given not in found.setdefault(number, []):
                    found[number].append(given)
    return found


def paper_names(papers: Sequence[NumberedPaper], brief_names: Mapping[int, str],
                nicknames: Mapping[int, Sequence[str]] | None = None) -> dict[int, str]:
    """A distinct name for each paper of the bundle, by number. Papers that would share a name
    are each named by their whole title (and arXiv id, where the titles are the same too); a
    title that reads as a citation ("Paper 1") names its paper by arXiv id. `nicknames`: the
    names the answers gave each paper, for a paper whose title gives none."""
    titles = {item.number: " ".join(item.paper.title.split()) for item in papers}
    names = {}
    for item in papers:
        others = [t for n, t in titles.items() if n != item.number]
        names[item.number] = short_name(titles[item.number],
                                        brief_names.get(item.number, ""), others,
                                        (nicknames or {}).get(item.number, ()),
                                        item.paper.abstract)
    shared = Counter(name.lower() for name in names.values())
    for item in papers:
        if shared[names[item.number].lower()] > 1:
            names[item.number] = titles[item.number]
    shared = Counter(name.lower() for name in names.values())
    for item in papers:
        name = names[item.number]
        if CITE_RE.search(name) or name.lower() in GENERIC:  # a title such as "Paper 1"
            names[item.number] = f"arXiv {item.paper.arxiv_id}"
        elif shared[name.lower()] > 1:  # two papers of the same title
            names[item.number] = f"{name} (arXiv {item.paper.arxiv_id})"
    return names


def cited_parts(text: str, names: Mapping[int, str]) -> list[tuple[str, int | None]]:
    """Plain text cut where it cites papers: (text, None) between citations, (name, number)
    for each paper cited, so a page, the mail or the feed can make each name a link. Every
    numbered form a model writes ("Paper 3", "Papers 1, 8 and 9", "**Papers:** 1 (A), 4 (B)")
    becomes the papers' names, once: the name the text gives a number after it ("Paper 3
    (FlashDecoding)", "(Paper 5, RLM-Cascade)") is not said again. Numbers outside the bundle
    stay text."""
    parts: list[tuple[str, int | None]] = []
    last = 0
    text = papers_once(text, {n: (name,) for n, name in names.items()})  # never X and X
    for citation in find_citations(text):
        if not citation.numbers or any(n not in names for n in citation.numbers):
            continue
        parts.append((text[last:citation.start], None))
        last = citation.end
        given = dict(citation.given)
        if citation.listed:
            parts.append((citation.prefix, None))
        for index, number in enumerate(citation.numbers):
            if index:
                parts.append((" and " if index == len(citation.numbers) - 1
                              and not citation.listed else ", ", None))
            parts.append((names[number], number))
            if citation.listed and number in given and not _restates(given[number],
                                                                        names[number]):
                parts.append((f" ({given[number]})", None))
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
