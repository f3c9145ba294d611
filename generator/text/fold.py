"""Letters as a reader sees them: what untrusted text is compared as, wherever the digest decides
something from it (a long copy of a paper, a quote's match, a paper's name).

A model (or a paper) can write a word so that it reads the same and compares differently:
compatibility forms (ligatures, full-width letters, mathematical letters: NFKC folds them),
invisible characters inside a word (zero-width spaces and joiners, soft hyphens, bidi marks),
Cyrillic and Greek letters that look Latin ("trаnsformer" with a Cyrillic а), and HTML
character references ("&#116;he", which a page shows as "the"). `fold` undoes all four, so a
225-word copy written that way is still a copy, and a quote still the paper's.
"""

from __future__ import annotations

import html
import re
import unicodedata

# Format characters a page shows as nothing (Unicode's Default_Ignorable code points that
# occur in text): removed, so "trans\u200bformer" is "transformer".
_INVISIBLE = ("\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180e\u180f"
              "\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2060\u2061"
              "\u2062\u2063\u2064\u2066\u2067\u2068\u2069\u206a\u206b\u206c\u206d\u206e"
              "\u206f\u3164\ufeff\uffa0" + "".join(chr(c) for c in range(0xFE00, 0xFE10)))
# Letters of other scripts drawn like Latin ones (Unicode's confusables.txt, the single-letter
# Cyrillic and Greek look-alikes): read as the Latin letter they pass for.
_LOOK_ALIKES = {
    "а": "a", "е": "e", "ѕ": "s", "і": "i", "ј": "j", "о": "o", "р": "p", "с": "c",
    "у": "y", "х": "x", "ԁ": "d", "һ": "h", "ӏ": "l", "ԛ": "q", "ԝ": "w", "ѵ": "v", "ү": "y",
    "ɡ": "g", "ɑ": "a", "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O",
    "Р": "P", "С": "C", "Т": "T", "Х": "X", "Ѕ": "S", "І": "I", "Ј": "J", "Ү": "Y", "Ԛ": "Q",
    "Ԝ": "W", "ο": "o", "ν": "v", "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I",
    "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X"}
_TABLE = str.maketrans({c: None for c in _INVISIBLE} | _LOOK_ALIKES)
# A character reference, as a browser reads one: "&#116;", "&#x74;", "&amp;".
ENTITY_RE = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")


def fold(text: str) -> str:
    """`text` as it reads: character references resolved, NFKC, invisible characters removed,
    look-alike letters made Latin (case kept)."""
    if "&" in text:
        text = ENTITY_RE.sub(lambda m: html.unescape(m.group(0)), text)
    return unicodedata.normalize("NFKC", text).translate(_TABLE)


def fold_piece(piece: str) -> str:
    """One character, or one character reference, folded (for code that maps folded text
    back to where it stands)."""
    if piece.startswith("&") and len(piece) > 1:
        piece = html.unescape(piece)
    return unicodedata.normalize("NFKC", piece).translate(_TABLE)


def pieces(text: str) -> list[tuple[str, int]]:
    """`text` cut into characters and character references, each with where it starts."""
    if "&" not in text:
        return [(char, at) for at, char in enumerate(text)]
    found: list[tuple[str, int]] = []
    at = 0
    for match in ENTITY_RE.finditer(text):
        found += [(char, i) for i, char in enumerate(text[at:match.start()], at)]
        found.append((match.group(0), match.start()))
        at = match.end()
    found += [(char, i) for i, char in enumerate(text[at:], at)]
    return found
