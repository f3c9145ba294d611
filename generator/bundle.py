"""The bundle stage: number the papers and join them into one research bundle.

The bundle is the shared prefix of every synthesis prompt, so it depends only on the papers:
the same papers give byte-identical text, which keeps both our cache and the server's
prefix cache warm.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from .models import Bundle, NumberedPaper, Source

log = logging.getLogger(__name__)


def build_bundle(sources: Sequence[Source]) -> Bundle:
    """Number `sources` Paper 1..N in fetch order and format them as one Markdown document."""
    numbered = tuple(
        NumberedPaper(
            number=i,
            paper=s.paper,
            full_text=s.full_text,
            excerpt_chars=len(s.full_text.text) if s.full_text.status == "ok" else 0,
        )
        for i, s in enumerate(sources, start=1)
    )
    blocks = [
        f"# Research bundle\n\n{len(numbered)} papers from arXiv, newest first. "
        "Cite them as Paper 1 ... Paper {0}.".format(len(numbered))
    ]
    blocks.extend(_format(p) for p in numbered)
    bundle = Bundle(papers=numbered, text="\n\n".join(blocks) + "\n")
    log.info(
        "bundle: %d papers, %d with full text, %d characters (~%d tokens)",
        len(numbered),
        sum(1 for p in numbered if p.excerpt_chars),
        bundle.chars,
        bundle.estimated_tokens,
    )
    return bundle


def _format(item: NumberedPaper) -> str:
    paper = item.paper
    lines = [
        f"## Paper {item.number}: {paper.title}",
        "",
        f"- arXiv id: {paper.arxiv_id}",
        f"- Authors: {paper.short_authors()}",
        f"- Submitted: {paper.published}",
        f"- Categories: {', '.join(paper.categories)}",
        "",
        "### Abstract",
        "",
        paper.abstract,
    ]
    text = item.full_text
    if text.status == "ok":
        lines += [
            "",
            f"### Full-text excerpt ({len(text.text)} characters from {text.pages} of "
            f"{text.total_pages} pages)",
            "",
            text.text,
        ]
    return "\n".join(lines)
