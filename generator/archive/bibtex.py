"""The papers of an edition (or of a question's answer) as BibTeX, to paste into a bibliography.

One `@misc` entry per paper, as arXiv's own export writes one (title, authors, year, `eprint`,
`archivePrefix = {arXiv}`, `primaryClass`, the abstract page's URL) plus the version covered.
The key is the paper's arXiv id without version (`arXiv:2611.00001`), so a paper has the same
key in every edition and question, and a bibliography built from several of them holds it once.

Titles and names come from arXiv and are untrusted: each is written as plain text (TeX math
spelt in Unicode, as the feed spells it), every character TeX or BibTeX reads specially
written as the command that prints it. Braces never go unbalanced (BibTeX counts `\\{` as a
brace, so a brace is `\\textbraceleft{}`), a backslash never starts a command (`\\input` from a
title would run when the reader compiles), `%` never comments out the rest of a line, `@`
never starts an entry, and an " and " inside one name never splits it in two.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..papers import base_of
from ..text.safe_text import text_of
from .record import EditionRecord

ARXIV_ABS = "https://arxiv.org/abs/"
_SPECIAL = {
    "\\": r"\textbackslash{}", "{": r"\textbraceleft{}", "}": r"\textbraceright{}",
    "%": r"\%", "&": r"\&", "#": r"\#", "$": r"\$", "_": r"\_", "^": r"\textasciicircum{}",
    "~": r"\textasciitilde{}", "@": "{@}", "<": r"\textless{}", ">": r"\textgreater{}",
}
_SPECIAL_RE = re.compile("|".join(re.escape(c) for c in _SPECIAL))
_AND_RE = re.compile(r"\band\b|,", re.IGNORECASE)
_VERSION_RE = re.compile(r"v(\d+)$")


@dataclass(frozen=True)
class Citable:
    """What a BibTeX entry says of a paper (from an edition's record, or a question's)."""

    arxiv_id: str  # with its version where known
    title: str
    authors: tuple[str, ...] = ()
    published: str = ""  # ISO date of the first version
    categories: tuple[str, ...] = ()


def bibtex_key(arxiv_id: str) -> str:
    """The paper's key, the same in every edition: "arXiv:2611.00001" (no version)."""
    return f"arXiv:{base_of(arxiv_id)}"


def bib_text(text: str) -> str:
    """Untrusted text as a BibTeX field's words: plain, on one line, every special character
    written as the command that prints it."""
    return _SPECIAL_RE.sub(lambda m: _SPECIAL[m.group(0)], " ".join(text_of(text).split()))


def _name(author: str) -> str:
    """One author: braced whole where the name holds " and " or a comma, which BibTeX would
    read as a second author or as "Last, First"."""
    name = bib_text(author)
    return f"{{{name}}}" if _AND_RE.search(name) else name


def entry(paper: Citable) -> str:
    """One paper's entry."""
    base = base_of(paper.arxiv_id)
    version = _VERSION_RE.search(paper.arxiv_id)
    fields = [("title", f"{{{bib_text(paper.title)}}}"),  # inner braces keep its capitals
              ("author", " and ".join(_name(a) for a in paper.authors if a.strip()))]
    if paper.published[:4].isdigit():
        fields.append(("year", paper.published[:4]))
    fields += [("eprint", base), ("archivePrefix", "arXiv")]
    if paper.categories:
        fields.append(("primaryClass", bib_text(paper.categories[0])))
    if version:
        fields.append(("version", version.group(1)))
    # Made from the id, which arXiv's grammar holds to letters, digits, ".", "-" and "/".
    fields.append(("url", f"{ARXIV_ABS}{paper.arxiv_id}"))
    body = "".join(f"  {name} = {{{value}}},\n" for name, value in fields if value)
    return f"@misc{{{bibtex_key(paper.arxiv_id)},\n{body}}}\n"


def bibliography(papers: Iterable[Citable], about: str) -> str:
    """The entries of `papers` (each paper once), after a comment line saying what they are
    (`about` is ours: an edition's or a question's name, with no "@" in it)."""
    seen: set[str] = set()
    entries = []
    for paper in papers:
        key = bibtex_key(paper.arxiv_id)
        if key not in seen:
            seen.add(key)
            entries.append(entry(paper))
    head = (f"% {' '.join(about.replace('@', ' ').split())}: {len(entries)} paper"
            f"{'s' if len(entries) != 1 else ''} as BibTeX (research-digest). A paper's key is "
            "its arXiv id, the same in every edition.\n")
    return head + "\n" + "\n".join(entries)


def edition_bibtex(record: EditionRecord) -> str:
    """papers.bib of an edition: every paper of its record, by number."""
    return bibliography((Citable(p.arxiv_id, p.title, p.authors, p.published, p.categories)
                         for p in record.papers), f"Edition {record.edition}")
