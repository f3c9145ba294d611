"""Papers by name: "PagedAttention", not "Paper 6", wherever the digest shows a synthesis.

"Paper N" is the bundle's numbering: it means nothing outside the bundle and changes between
editions. Each paper gets the short name it uses for its system or method (from its brief,
kept only where the paper's own title or abstract uses it: checked like any claim), else its
title cut at the colon, else its first words.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ..claims import CITE_RE
from ..claims import numbers as cited_numbers
from ..models import NumberedPaper

MAX_NAME_CHARS = 40
_SQUASH_RE = re.compile(r"[\W_]+")
# A citation and the name or title a model may give right after it, in parentheses.
_CITE_GIVEN_RE = re.compile(CITE_RE.pattern + r"(?:\s*\((?P<given>[^()\n]{2,150})\))?")
_TITLE_WORDS = 5
_GENERIC = {"", "none", "n/a", "na", "unknown", "the paper", "this paper", "paper", "method",
            "system", "framework", "approach", "model"}


def short_name(title: str, abstract: str = "", brief_name: str = "") -> str:
    """The name a reader recognises the paper by."""
    name = " ".join(brief_name.split()).strip(" .,:;\"'“”")
    if (2 <= len(name) <= MAX_NAME_CHARS and name.lower() not in _GENERIC
            and _uses(f"{title}\n{abstract}", name)):
        return name
    title = " ".join(title.split())
    head = title.split(":", 1)[0].strip() if ":" in title else ""
    if head and len(head) <= MAX_NAME_CHARS and len(head.split()) <= _TITLE_WORDS:
        return head
    words = title.split()
    return " ".join(words[:_TITLE_WORDS]) + ("…" if len(words) > _TITLE_WORDS else "")


def _squashed(text: str) -> str:
    """Letters and digits only, lower case: "Flash-Decoding" and "flashdecoding" alike."""
    return _SQUASH_RE.sub("", text.lower())


def _restates(given: str, name: str) -> bool:
    """Whether a parenthetical only says the name again (or the title it was cut from)."""
    given, name = _squashed(given), _squashed(name)
    return given == name or (len(name) >= 4 and given.startswith(name))


def _uses(text: str, name: str) -> bool:
    return _squashed(name) in _squashed(text)


def paper_names(papers: Sequence[NumberedPaper], brief_names: Mapping[int, str]
                ) -> dict[int, str]:
    """A distinct short name for each paper of the bundle, by number."""
    names: dict[int, str] = {}
    for item in papers:
        name = short_name(item.paper.title, item.paper.abstract, brief_names.get(item.number, ""))
        if name.lower() in {n.lower() for n in names.values()}:
            name = short_name(item.paper.title)  # two papers, one method name: their titles
        if name.lower() in {n.lower() for n in names.values()}:
            name = f"{name} ({item.paper.arxiv_id})"
        names[item.number] = name
    return names


def name_citations(text: str, names: Mapping[int, str]) -> str:
    """Plain text with "Paper 3" and "Papers 1, 8 and 9" read as the papers' names; numbers
    outside the bundle stay as they are."""
    def one(match: re.Match[str]) -> str:
        numbers = cited_numbers(match.group(2))
        if not numbers or any(n not in names for n in numbers):
            return match.group(0)
        if len(numbers) == 1:
            name = names[numbers[0]]
            given = match.group("given")
            # "Paper 3 (KV Cache Compression)" reads "KV Cache Compression", not twice.
            return name if given is None or _restates(given, name) else f"{name} ({given})"
        return ", ".join(names[n] for n in numbers[:-1]) + f" and {names[numbers[-1]]}" + (
            f" ({match.group('given')})" if match.group("given") else "")

    return _CITE_GIVEN_RE.sub(one, text)


