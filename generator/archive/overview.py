"""The field in a paragraph: the research map's overview as plain text, for the home page,
the overview, the feed and the mail (and any answer's opening paragraph)."""

from __future__ import annotations

import re

from ..text.safe_text import separate_blocks
from ..text.tex import MATH_RE
from .prose import said_once

_HEADING_RE = re.compile(r"^#{1,6}\s+(.*)$", re.MULTILINE)
_MARKUP_RE = re.compile(r"[*_`#>|\[\]]+")
# The model's words to us before its answer: "Here is the research map based on the provided
# bundle…", "Sure! Below is…", "Okay, based on the 20 papers provided, …".
_PREAMBLE_RE = re.compile(
    r"^\s*(?:\*\*)?(?:here(?: is|'s| are)|below (?:is|are)|sure|certainly|of course|okay|ok|"
    r"great|absolutely|based on the (?:provided|given|supplied|attached)|i(?:'ve| have) "
    r"(?:read|analy[sz]ed|reviewed|gone through))\b[^\n]*$", re.IGNORECASE)
_ABOUT_US_RE = re.compile(r"\b(?:bundle|provided|supplied|attached|you (?:gave|shared|sent)|"
                          r"as requested|requested)\b", re.IGNORECASE)
_SENTENCE_END_RE = re.compile(r"[.!?](?:[\"”’)\]]*)(?=\s|$)")


def without_preamble(answer: str) -> str:
    """`answer` without the model's opening words to us about what we gave it ("Here is the
    research map based on the provided bundle…"): a reader never meets "the bundle". Only a
    short first paragraph that talks of the request and cites nothing goes, and only where the
    answer goes on after it."""
    head, sep, rest = answer.lstrip("\n").partition("\n\n")
    if (not sep or not rest.strip() or len(head) > 400 or "\n" in head.strip()
            or not _PREAMBLE_RE.match(head) or not _ABOUT_US_RE.search(head)
            or re.search(r"\b[Pp]apers?\s+\d", head)):
        return answer
    return rest.lstrip("\n")


def at_a_sentence(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters at the end of a sentence (never mid-clause);
    a first sentence longer than that is cut at a word, with "…"."""
    if len(text) <= limit:
        return text
    ends = [m.end() for m in _SENTENCE_END_RE.finditer(text, 0, limit)]
    if ends:
        return text[:ends[-1]]
    return text[: limit - 1].rsplit(" ", 1)[0] + "…"


def overview_text(research_map: str, limit: int = 700) -> str:
    """The research map's field overview (or its first paragraph) as plain text, cut at a
    sentence where it runs past `limit` (the pages that show it link the whole map)."""
    sections = _HEADING_RE.split(without_preamble(research_map))
    # split() alternates text, heading, text...: pick the text under an "overview" heading.
    body = sections[0]
    for heading, text in zip(sections[1::2], sections[2::2], strict=False):
        if "overview" in heading.lower():
            body = text
            break
    else:
        body = next((t for t in sections[::2] if t.strip()), "")
    # The first paragraph of text: models often run a list or a table right under it.
    blocks = "\n".join(separate_blocks(body.strip().split("\n"))).split("\n\n")
    paragraph = next((p for p in blocks if p.strip()), "")
    # Markup goes, formulas stay whole ($x_i$ keeps its underscore) for the pages and feed.
    pieces, last = [], 0
    for match in MATH_RE.finditer(paragraph):
        pieces += [_MARKUP_RE.sub("", paragraph[last:match.start()]), match.group(0)]
        last = match.end()
    pieces.append(_MARKUP_RE.sub("", paragraph[last:]))
    plain = said_once(" ".join("".join(pieces).split()))  # a sentence said twice, once
    if plain.endswith(":") and ". " in plain:
        plain = plain.rsplit(". ", 1)[0] + "."  # "Key findings:" led into a list left out
    return at_a_sentence(plain, limit)
