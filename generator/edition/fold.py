"""Long answers folded by section on a phone: each long section's body in a collapsible block.

The thinking page's two answers run to many phone screens; the second is then found only by
scrolling. (The research map is never folded: read first, its marks in view, as the deep
dives are.) Each long section keeps its heading
(the table of contents, links and search find it) and its body goes into a pymdownx.details
block of class `digest-fold`, closed: a phone shows the first section whole (the page's
opening, read first), then the other headings one under the other, a tap opens one.
digest.css shows the bodies open and the fold's summary not at all on a laptop, where the
page reads as before. The text is the already linked, inert Markdown: nothing here
makes HTML of it; the summary's words are ours.
"""

from __future__ import annotations

import re

_FENCE_RE = re.compile(r"^\s*(```|~~~)")
_HEADING_RE = re.compile(r"^(#{1,6})\s+\S")
MIN_WORDS = 100  # a shorter section stays as it is
_WORD_RE = re.compile(r"\w+")
# What a reader does not read as words: tags, link targets and their tooltips, evidence boxes.
_UNREAD_RE = re.compile(r'<span class="digest-ev-box"[^>]*>.*?</span></span>|<[^>]+>'
                        r'|\]\([^)\s]*(?:\s+"[^"]*")?\)')


def fold_sections(markdown: str, min_words: int = MIN_WORDS) -> str:
    """`markdown` with the body of each section of its top heading level but the first longer
    than `min_words` folded under that heading; unchanged where it has fewer than two
    sections."""
    lines = markdown.split("\n")
    heads = _headings(lines)
    if not heads:
        return markdown
    level = min(depth for _, depth in heads)
    starts = [index for index, depth in heads if depth == level]
    if len(starts) < 2:
        return markdown
    out = lines[:starts[0]]
    for start, end in zip(starts, [*starts[1:], len(lines)], strict=True):
        body = lines[start + 1:end]
        words = len(_WORD_RE.findall(_UNREAD_RE.sub(" ", " ".join(body))))
        if words < min_words or start == starts[0]:
            out += lines[start:end]
            continue
        kept = "\n".join(body).strip("\n").split("\n")
        out += [lines[start], "", f'??? digest-fold "Read this section ({words} words)"', ""]
        out += [f"    {line}" if line.strip() else "" for line in kept]
        out.append("")
    return "\n".join(out)


def _headings(lines: list[str]) -> list[tuple[int, int]]:
    """(line index, level) of each heading outside code fences."""
    found, fence = [], ""
    for index, line in enumerate(lines):
        match = _FENCE_RE.match(line)
        if match:
            fence = "" if fence == match.group(1) else (fence or match.group(1))
            continue
        heading = _HEADING_RE.match(line)
        if heading and not fence:
            found.append((index, len(heading.group(1))))
    return found
