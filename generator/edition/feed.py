"""An Atom feed of the editions, so readers can follow the digest without email."""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import urljoin
from xml.etree import ElementTree

from .. import store
from ..safe_text import clean
from .model import EditionRecord

_ATOM = "http://www.w3.org/2005/Atom"
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
    paragraph = next((p for p in body.strip().split("\n\n") if p.strip()), "")
    plain = " ".join(_MARKUP_RE.sub("", paragraph).split())
    return plain if len(plain) <= limit else plain[: limit - 1].rsplit(" ", 1)[0] + "…"


def atom_feed(title: str, site_url: str, records: Sequence[EditionRecord], limit: int = 50) -> str:
    """One entry per edition, newest first. Links are absolute when `site_url` is set."""
    base = site_url.rstrip("/") + "/" if site_url else ""
    ElementTree.register_namespace("", _ATOM)

    def element(parent: ElementTree.Element, tag: str, text: str | None = None,
                **attrs: str) -> ElementTree.Element:
        child = ElementTree.SubElement(parent, f"{{{_ATOM}}}{tag}",
                                       {k: clean(v) for k, v in attrs.items()})
        if text is not None:
            child.text = clean(text)  # XML 1.0 cannot carry control characters at all
        return child

    feed = ElementTree.Element(f"{{{_ATOM}}}feed")
    element(feed, "title", title)
    element(feed, "id", base or f"urn:research-digest:{title}")
    element(feed, "updated", records[0].built_at if records else "1970-01-01T00:00:00+00:00")
    element(feed, "link", href=urljoin(base, store.FEED) if base else store.FEED, rel="self")
    element(feed, "link", href=base or "index.html", rel="alternate")
    element(feed, "generator", "Research Digest")
    for record in records[:limit]:
        edition = record.edition
        link = urljoin(base, store.edition_url(edition)) if base else store.edition_url(edition)
        entry = element(feed, "entry")
        element(entry, "title", f"{title}: edition {edition}")
        element(entry, "id", link if base else f"urn:research-digest:{title}:{edition}")
        element(entry, "link", href=link, rel="alternate")
        element(entry, "updated", record.built_at)
        element(entry, "author").append(_name(f"{{{_ATOM}}}name", record.model))
        summary = (f"{len(record.papers)} papers ({len(record.new_papers)} new). "
                   f"{record.overview}").strip()
        element(entry, "summary", summary, type="text")
    return ElementTree.tostring(feed, encoding="unicode", xml_declaration=True) + "\n"


def _name(tag: str, text: str) -> ElementTree.Element:
    node = ElementTree.Element(tag)
    node.text = clean(text) or "Research Digest"
    return node
