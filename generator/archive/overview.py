"""The field in a paragraph: the research map's overview as plain text, for the home page,
the overview, the feed and the mail (and any answer's opening paragraph)."""

from __future__ import annotations

import re

from ..text.safe_text import separate_blocks
from ..text.tex import MATH_RE
from .prose import said_once

_HEADING_RE = re.compile(r"^#{1,6}\s+(.*)$", re.MULTILINE)
_MARKUP_RE = re.compile(r"[*_`#>|\[\]]+")


def overview_text(research_map: str, limit: int = 700) -> str:
    """The research map's field overview (or its first paragraph) as plain text."""
    sections = _HEADING_RE.split(research_map)
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
    return plain if len(plain) <= limit else plain[: limit - 1].rsplit(" ", 1)[0] + "…"
