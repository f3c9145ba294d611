"""The published record of an edition (edition.json), read back typed.

`EditionRecord` is what history, the navigation, the home page, the feed, the papers' own
pages, `skip_seen` and `render --all` know of an edition; its format version is checked when
it is read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..chat_models import UNFIT_CHECK, PromptKind
from ..config import ThinkingPrompt
from ..errors import DigestError
from ..models import paper_slug

RECORD_FORMAT = 2  # 1: the untyped record of research-digest 0.1 (same fields, read as is)
READABLE_FORMATS = (1, 2)

Status = Literal["new", "updated", "seen"]
STATUS_LABELS: dict[str, str] = {
    "new": "new in this edition",
    "updated": "a new version of a paper published before",
    "seen": "seen in an earlier edition",
}
STATUS_SECTIONS: dict[str, str] = {"new": "New", "updated": "Updated", "seen": "Seen before"}


class RecordFormatError(DigestError):
    """An edition.json this version cannot read (written by an older or newer version)."""


# The published record ---------------------------------------------------------------------------

@dataclass(frozen=True)
class RecordPaper:
    """A paper as an edition published it: enough for its page across editions."""

    number: int
    arxiv_id: str
    base_id: str
    slug: str
    title: str
    status: Status
    authors: tuple[str, ...] = ()
    published: str = ""
    categories: tuple[str, ...] = ()
    abstract: str = ""
    abs_url: str = ""
    pdf_url: str | None = None

    @property
    def base_slug(self) -> str:
        """The slug of the paper's own page across editions (papers/<slug>.md)."""
        return paper_slug(self.base_id)

    @classmethod
    def from_json(cls, p: dict[str, Any]) -> RecordPaper:
        return cls(int(p["number"]), str(p["arxiv_id"]), str(p["base_id"]), str(p["slug"]),
                   str(p["title"]), p.get("status", "new"),
                   tuple(str(a) for a in p.get("authors", ())), str(p.get("published", "")),
                   tuple(str(c) for c in p.get("categories", ())), str(p.get("abstract", "")),
                   str(p.get("abs_url", "")), p.get("pdf_url") or None)


@dataclass(frozen=True)
class RecordPage:
    """A synthesis page of an edition: its file stem and title (for the navigation)."""

    stem: str
    title: str
    kind: PromptKind


@dataclass(frozen=True)
class EditionRecord:
    """What an edition published, as the later editions, the navigation and the feed need it.

    `data` keeps the whole JSON object, so that writing a record back loses nothing.
    """

    edition: str
    title: str
    query: str
    model: str
    built_at: str
    overview: str
    papers: tuple[RecordPaper, ...]
    pages: tuple[RecordPage, ...]
    data: dict[str, Any] = field(repr=False, compare=False, default_factory=dict)

    @property
    def new_papers(self) -> tuple[RecordPaper, ...]:
        return tuple(p for p in self.papers if p.status == "new")

    def to_json(self) -> dict[str, Any]:
        return self.data

    def tldr(self, number: int) -> str:
        """The brief's one-line summary of a paper of this edition ("" without one)."""
        brief = (self.data.get("briefs") or {}).get(str(number))
        return str(brief.get("tldr", "")) if isinstance(brief, dict) else ""

    @property
    def failed_prompts(self) -> int:
        """Prompts of this edition that failed (a check that did not fit is not a failure)."""
        return sum(1 for c in self.data.get("completions") or ()
                   if isinstance(c, dict) and c.get("error")
                   and not str(c["error"]).startswith(UNFIT_CHECK))

    @property
    def interests(self) -> str:
        """What triage scored this edition's window against ("" without triage)."""
        triage = self.data.get("triage")
        return str(triage.get("interests") or "") if isinstance(triage, dict) else ""

    @property
    def picks(self) -> list[dict[str, Any]]:
        """The editor's picks (edition/picks.py), each with its paper's slugs for links."""
        by_number = {p.number: p for p in self.papers}
        out = []
        for pick in self.data.get("picks") or ():
            number = pick.get("number") if isinstance(pick, dict) else None
            paper = by_number.get(number) if isinstance(number, int) else None
            if paper is not None:
                out.append({**pick, "slug": paper.slug, "base_slug": paper.base_slug,
                            "status": paper.status})
        return out

    def themes_of(self, number: int) -> list[str]:
        return [str(t.get("name", "")) for t in self.data.get("themes") or ()
                if isinstance(t, dict) and number in (t.get("papers") or ())]

    def cited_by(self, number: int) -> list[tuple[RecordPage, int]]:
        """The synthesis pages that cite a paper of this edition, with their sentence counts."""
        out = []
        for page in self.pages:
            for entry in ((self.data.get("citations") or {}).get(page.stem) or {}).get(
                    "resolved", ()):
                if isinstance(entry, dict) and entry.get("number") == number:
                    out.append((page, int(entry.get("count", 0))))
        return out

    @classmethod
    def from_json(cls, data: Any, source: str) -> EditionRecord:
        """Read a record, checking its format; RecordFormatError names the file otherwise."""
        if not isinstance(data, dict):
            raise RecordFormatError(f"{source} is not an edition record (a JSON object)")
        version = data.get("format")
        if version not in READABLE_FORMATS:
            newer = isinstance(version, int) and version > RECORD_FORMAT
            raise RecordFormatError(
                f"{source} has record format {version!r}, which this version of research-digest "
                f"does not read (it reads {', '.join(map(str, READABLE_FORMATS))}); "
                + ("upgrade research-digest" if newer else
                   "render the edition again with `digest render --all`"))
        try:
            papers = tuple(RecordPaper.from_json(p) for p in data["papers"])
            pages: dict[str, RecordPage] = {}
            for c in data["completions"]:
                if c.get("page"):
                    stem = str(c["page"]).removesuffix(".md")
                    # Format 1 had no page titles: its thinking page had the default title.
                    title = str(c.get("page_title") or (
                        ThinkingPrompt().title if c["kind"] == "thinking" else c["title"]))
                    pages.setdefault(stem, RecordPage(stem, title, c["kind"]))
            return cls(edition=str(data["edition"]), title=str(data["title"]),
                       query=str(data.get("query", "")), model=str(data.get("model", "")),
                       built_at=str(data["built_at"]),
                       overview=str(data.get("overview", "")), papers=papers,
                       pages=tuple(pages.values()), data=data)
        except (KeyError, TypeError, ValueError) as err:
            raise RecordFormatError(f"{source} is missing or mangles {err} "
                                    "(render the edition again with `digest render --all`)") from err
