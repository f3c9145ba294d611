"""The bundle: number the papers and join them into one research bundle.

The bundle is the shared prefix of every synthesis prompt, so it depends only on the papers:
the same papers give byte-identical text, which keeps both our cache and the server's
prefix cache warm.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence

from ..papers import Bundle, NumberedPaper, Source
from ..text.safe_text import MAX_AUTHOR_CHARS, MAX_TITLE_CHARS, cut

log = logging.getLogger(__name__)


def build_bundle(sources: Sequence[Source], excerpt_cap: int | None = None) -> Bundle:
    """Number `sources` Paper 1..N in fetch order and format them as one Markdown document.

    `excerpt_cap` limits every full-text excerpt to that many characters (to fit a context).
    A bundle is made once for its sources and cap: the stages of a run (the cached check, the
    plan, the synthesis, the render) all ask for the same one.
    """
    return _bundle(tuple(sources), excerpt_cap)


@functools.lru_cache(maxsize=8)
def _bundle(sources: tuple[Source, ...], excerpt_cap: int | None) -> Bundle:
    numbered = tuple(
        NumberedPaper(
            number=i,
            paper=s.paper,
            full_text=s.full_text,
            excerpt_chars=_excerpt_len(s, excerpt_cap),
        )
        for i, s in enumerate(sources, start=1)
    )
    blocks = [
        f"# Research bundle\n\n{len(numbered)} papers from arXiv, newest first. "
        "Cite them as Paper 1 ... Paper {0}.".format(len(numbered))
    ]
    blocks.extend(paper_section(p) for p in numbered)
    bundle = Bundle(papers=numbered, text="\n\n".join(blocks) + "\n")
    log.info(
        "bundle: %d papers, %d with full text, %d characters (~%d tokens)",
        len(numbered),
        sum(1 for p in numbered if p.excerpt_chars),
        bundle.chars,
        bundle.estimated_tokens,
    )
    return bundle


def _excerpt_len(source: Source, cap: int | None) -> int:
    if source.full_text.status != "ok":
        return 0
    length = len(source.full_text.text)
    return length if cap is None else min(length, cap)


def fair_excerpt_cap(lengths: Sequence[int], budget_chars: int) -> int | None:
    """The largest per-excerpt cap whose capped lengths fit `budget_chars`; None if all fit.

    Water-filling: short excerpts stay whole and the long ones share what is left equally.
    """
    if sum(lengths) <= budget_chars:
        return None
    remaining, left = max(budget_chars, 0), len(lengths)
    for length in sorted(lengths):
        share = remaining // left
        if length > share:
            return share
        remaining -= length
        left -= 1
    return remaining


def paper_section(item: NumberedPaper) -> str:
    """One paper of the bundle: heading, metadata, abstract and excerpt."""
    paper = item.paper
    lines = [
        f"## Paper {item.number}: {cut(paper.title, MAX_TITLE_CHARS)}",
        "",
        f"- arXiv id: {paper.arxiv_id}",
        f"- Authors: {cut(paper.short_authors(), 5 * MAX_AUTHOR_CHARS)}",
        f"- Submitted: {paper.published}",
        f"- Categories: {', '.join(paper.categories)}",
        "",
        "### Abstract",
        "",
        paper.abstract,
    ]
    text = item.full_text
    if item.excerpt_chars:
        lines += [
            "",
            f"### Full-text excerpt ({item.excerpt_chars} characters from {text.pages} of "
            f"{text.total_pages} pages)",
            "",
            text.text[: item.excerpt_chars],
        ]
    return "\n".join(lines)
