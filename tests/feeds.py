"""Atom feeds shaped like arXiv's, for entries the recorded fixtures do not have."""

from __future__ import annotations

from dataclasses import dataclass, field
from xml.sax.saxutils import escape, quoteattr


@dataclass(frozen=True)
class Entry:
    arxiv_id: str
    title: str
    summary: str = "An abstract."
    authors: tuple[str, ...] = ("A. Author",)
    published: str = "2026-11-30T10:00:00Z"
    categories: tuple[str, ...] = field(default=("cs.LG",))


def atom_feed(entries: list[Entry]) -> bytes:
    """An export-API response with these entries, in order (XML escaping done here)."""
    parts = ['<?xml version="1.0" encoding="UTF-8"?>\n'
             '<feed xmlns="http://www.w3.org/2005/Atom" '
             'xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/" '
             'xmlns:arxiv="http://arxiv.org/schemas/atom">\n'
             '<id>https://arxiv.org/api/test</id><title>arXiv Query</title>'
             '<updated>2026-12-01T00:00:00Z</updated>\n'
             f'<opensearch:totalResults>{len(entries)}</opensearch:totalResults>\n'
             '<opensearch:startIndex>0</opensearch:startIndex>\n'
             f'<opensearch:itemsPerPage>{len(entries)}</opensearch:itemsPerPage>\n']
    for e in entries:
        authors = "".join(f"<author><name>{escape(a)}</name></author>" for a in e.authors)
        cats = "".join(f"<category term={quoteattr(c)} scheme=\"http://arxiv.org/schemas/atom\"/>"
                       for c in e.categories)
        parts.append(
            f"<entry><id>http://arxiv.org/abs/{escape(e.arxiv_id)}</id>"
            f"<title>{escape(e.title)}</title><updated>{e.published}</updated>"
            f"<summary>{escape(e.summary)}</summary><published>{e.published}</published>"
            f"<link href={quoteattr('https://arxiv.org/abs/' + e.arxiv_id)} rel=\"alternate\" "
            "type=\"text/html\"/>"
            f"<link title=\"pdf\" href={quoteattr('https://arxiv.org/pdf/' + e.arxiv_id)} "
            "rel=\"related\" type=\"application/pdf\"/>"
            f"{authors}{cats}</entry>\n")
    parts.append("</feed>\n")
    return "".join(parts).encode("utf-8")
