"""Themes over time: one page per theme across editions (`themes/<slug>.md`).

The theme map of each edition names its themes; the request is given the earlier editions'
names (synthesis/prompts.py), so the same theme keeps its name and its page. A theme's page
lists every edition it appeared in, newest first, with that edition's papers in it, linked to
their own pages: like a paper's own page, made from the records alone.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from .record import EditionRecord, RecordPaper
from .values import Theme

_SLUG_RE = re.compile(r"[^a-z0-9]+")


# Names Windows keeps for devices, whatever the extension: `con.md` cannot be checked out there.
_RESERVED = frozenset({"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)),
                       *(f"lpt{i}" for i in range(10))})


def theme_slug(name: str) -> str:
    """A theme's file name: its name in lower case, words joined by "-"; a name with letters
    beyond ASCII ("日本語", "Übersicht") keeps a short hash of itself, so two never share a
    page ("KV-cache" and "KV cache" do: the same theme, as do "Con" and "CON"). A name that
    Windows reserves ("CON", "aux") is never a file name of its own."""
    folded = " ".join(name.casefold().split())
    slug = _SLUG_RE.sub("-", folded).strip("-")[:80]
    if folded.isascii() and slug:
        return f"{slug}-theme" if slug in _RESERVED else slug
    squashed = _SLUG_RE.sub("", unicodedata.normalize("NFKC", folded))
    digest = hashlib.sha256(squashed.encode()).hexdigest()[:8]
    return f"{slug}-{digest}" if slug else f"theme-{digest}"


def merge_themes(themes: Sequence[Theme]) -> tuple[Theme, ...]:
    """One theme per page: themes of one edition whose names share a page ("Con", "CON") are
    one theme under the first name, with the others' descriptions and papers kept in it."""
    merged: dict[str, Theme] = {}
    for theme in themes:
        slug = theme_slug(theme.name)
        first = merged.get(slug)
        if first is None:
            merged[slug] = theme
            continue
        also = f"{theme.name}: {theme.description}" if theme.name != first.name else (
            theme.description)
        merged[slug] = Theme(first.name, " ".join(t for t in (first.description, also) if t),
                             tuple(sorted({*first.papers, *theme.papers})))
    return tuple(merged.values())


@dataclass(frozen=True)
class ThemeSeen:
    edition: str
    description: str
    papers: tuple[RecordPaper, ...]


@dataclass(frozen=True)
class ThemePage:
    slug: str
    name: str  # as the newest edition names it
    editions: tuple[ThemeSeen, ...]  # newest first


def theme_pages(records: Sequence[EditionRecord]) -> list[ThemePage]:
    """Every theme of the archive, one page each (`records` newest first)."""
    found: dict[str, list[tuple[str, ThemeSeen]]] = {}
    for record in records:
        by_number = {p.number: p for p in record.papers}
        for theme in merge_themes(record.themes):
            seen = ThemeSeen(record.edition, theme.description,
                             tuple(by_number[n] for n in theme.papers if n in by_number))
            found.setdefault(theme_slug(theme.name), []).append((theme.name, seen))
    return [ThemePage(slug, entries[0][0], tuple(seen for _, seen in entries))
            for slug, entries in sorted(found.items())]
