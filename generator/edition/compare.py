"""The thinking comparison at a glance: what each answer concludes and where the two agree.

Two long answers side by side cannot be compared by eye on a phone (or on a laptop: each runs
to thousands of pixels). This reads both mechanically, with no request of its own: each
answer's conclusion (the section a model heads "Conclusion", "Bottom line", "Verdict"... or
else its last paragraph), the papers each cites (both, or only one), and how many of each
answer's cited claims its quotes back (`EvidenceFigure`). The full answers stay below it.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ..archive.overview import overview_text
from ..archive.prose import unique_sentences
from ..evidence.checks import ClaimCheck, EvidenceFigure
from ..evidence.claims import CITE_RE, SENTENCE_RE
from ..evidence.claims import numbers as cited_numbers
from ..text.safe_text import separate_blocks

_CONCLUDING_RE = re.compile(
    r"conclu|bottom line|verdict|summary|recommend|takeaway|in short|when to use",
    re.IGNORECASE)
_HEADING_RE = re.compile(r"^#{1,6}\s+(.*)$", re.MULTILINE)
_ITEM_RE = re.compile(r"^(?:[-*+]|\d{1,9}[.)])[ \t]+")
MAX_SENTENCES = 2
MAX_POINTS = 5


@dataclass(frozen=True)
class Side:
    """One answer as the comparison shows it."""

    conclusion: str  # its concluding sentences, citing papers as "Paper N" ("" if it failed)
    cites: tuple[int, ...]  # the bundle's papers it cites, in number order
    figure: EvidenceFigure | None  # its cited claims, counted (None: not checked)
    points: tuple[str, ...] = ()  # the list the conclusion gives, an item each, as plain text


@dataclass(frozen=True)
class Compared:
    off: Side
    on: Side

    @property
    def both(self) -> tuple[int, ...]:
        """The papers both answers cite: where they draw on the same work."""
        return tuple(n for n in self.off.cites if n in self.on.cites)

    @property
    def only_off(self) -> tuple[int, ...]:
        return tuple(n for n in self.off.cites if n not in self.on.cites)

    @property
    def only_on(self) -> tuple[int, ...]:
        return tuple(n for n in self.on.cites if n not in self.off.cites)


def compare(off: tuple[str, str], on: tuple[str, str], papers: Collection[int],
            checks: Sequence[ClaimCheck] | None) -> Compared:
    """`off` and `on`: (request name, answer text) without and with thinking; `checks` the
    page's verdicts (None: no evidence was asked)."""
    return Compared(_side(*off, papers, checks), _side(*on, papers, checks))


def _side(name: str, text: str, papers: Collection[int],
          checks: Sequence[ClaimCheck] | None) -> Side:
    cites = sorted({n for m in CITE_RE.finditer(text) for n in cited_numbers(m.group(2))
                    if n in papers})
    own = [c for c in checks or () if c.id.startswith(f"{name}#")]
    lead, points = concluding(text)
    return Side(lead, tuple(cites), EvidenceFigure.of(own) if checks is not None else None,
                points)


def conclusion(text: str) -> str:
    """The answer's concluding sentences as plain text (citations kept as "Paper N")."""
    return concluding(text)[0]


def concluding(text: str) -> tuple[str, tuple[str, ...]]:
    """The answer's concluding sentences, and the points of the list it concludes with (each
    a plain line: a list stays a list, never "it concludes: - one - two")."""
    if not text.strip():
        return "", ()
    sections = _HEADING_RE.split(text)
    # split() alternates text, heading, text...: the last section a heading calls concluding.
    body = next((body for heading, body in reversed(list(zip(sections[1::2], sections[2::2],
                                                                strict=False)))
                 if _CONCLUDING_RE.search(heading) and body.strip()), None)
    blocks = [b for b in "\n".join(separate_blocks((body or text).strip().split("\n")))
              .split("\n\n") if b.strip()]
    if body is None:
        prose = [i for i, b in enumerate(blocks) if not b.lstrip().startswith(("#", "|", "```"))]
        if not prose:
            return "", ()
        last = prose[-1]
        # A closing list with the line that leads into it ("In short:").
        start = last - 1 if (_is_list(blocks[last]) and last and not _is_list(blocks[last - 1])
                             and blocks[last - 1].rstrip().endswith(":")) else last
        blocks = blocks[start:last + 1]
    lead = next((b for b in blocks if not _is_list(b)
                 and not b.lstrip().startswith(("#", "|", "```"))), "")
    items = next((_items(b) for b in blocks if _is_list(b)), [])
    plain = _plain(lead)
    sentences = [s for s in SENTENCE_RE.split(plain) if s.strip()]
    points = unique_sentences(p for p in map(_plain, items) if p)
    return " ".join(sentences[:MAX_SENTENCES]).strip(), tuple(points[:MAX_POINTS])


def _plain(block: str) -> str:
    return overview_text(f"## Overview\n\n{block}", limit=2000) if block.strip() else ""


def _is_list(block: str) -> bool:
    return _ITEM_RE.match(block.lstrip()) is not None


def _items(block: str) -> list[str]:
    """A list block's top-level items, each with its continuation lines (nested items go)."""
    items: list[str] = []
    for line in block.split("\n"):
        if _ITEM_RE.match(line):
            items.append(_ITEM_RE.sub("", line, count=1))
        elif items and line.strip() and not _ITEM_RE.match(line.lstrip()):
            items[-1] += " " + line.strip()
    return items
