"""Each paper's own page across editions, made from the published records alone.

An edition's paper pages show the paper as that edition saw it; a reader searching for a title
wants one page. That page is rebuilt from every edition's record whenever any edition is
rendered, so it is the same whichever edition was rendered last, and it lists them all.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ..evidence.checks import ClaimCheck, EvidenceFigure
from .history import by_paper
from .record import EditionRecord, RecordPaper
from .record_entries import STATUS_LABELS
from .values import Brief, Revision
from .withdrawn import withdrawn_now


@dataclass(frozen=True)
class Seen:
    """One edition a paper appeared in, with what that edition said of it."""

    edition: str
    number: int
    slug: str
    arxiv_id: str
    status_label: str
    cited_by: tuple[tuple[str, str, int], ...]  # (page stem, page title, sentences)
    themes: tuple[str, ...]


@dataclass(frozen=True)
class HomeRevision:
    """A new version of the paper, as the edition that carried it found it."""

    edition: str
    arxiv_id: str
    slug: str  # its page in that edition
    revision: Revision  # what it replaces and its abstract's word diff


@dataclass(frozen=True)
class HomeClaim:
    """A checked sentence of the synthesis that cites the paper, once, with every page it
    stands on (one sentence found alike on several pages is said once)."""

    claim: ClaimCheck
    pages: tuple[tuple[str, str], ...]  # (page stem in its edition, page title)

    @property
    def mark(self) -> str:
        """The mark its sentence carries on the page ("✓ backed", "○ quote found"…)."""
        return self.claim.mark.text


@dataclass(frozen=True)
class HomeEvidence:
    """What the newest edition that checked claims about the paper found for each of them."""

    record: EditionRecord  # to name the papers a sentence cites
    claims: tuple[HomeClaim, ...]

    @property
    def edition(self) -> str:
        return self.record.edition

    @property
    def figure(self) -> EvidenceFigure:
        """Its sentences counted, as every count is."""
        return EvidenceFigure.of(c.claim for c in self.claims)


@dataclass(frozen=True)
class PaperHome:
    paper: RecordPaper  # as its newest edition has it
    authors: str
    tldr: str  # the newest brief's
    tldr_edition: str
    tldr_slug: str
    editions: tuple[Seen, ...]  # newest first
    # Later papers that build on it: (edition, their name, their page in that edition, the
    # sentence that names it).
    followed_by: tuple[tuple[str, str, str, str], ...] = ()
    withdrawn: str = ""  # arXiv's withdrawal notice, where its latest version is withdrawn
    revisions: tuple[HomeRevision, ...] = ()  # its new versions as editions found them
    brief: Brief | None = None  # the newest brief, of the edition `tldr_edition`
    evidence: HomeEvidence | None = None  # None: no edition checked a sentence about it


MAX_HOME_CLAIMS = 12  # a paper cited all over one edition: its page stays readable


def _authors(authors: Sequence[str], limit: int = 10) -> str:
    shown = ", ".join(authors[:limit])
    return shown + (" et al." if len(authors) > limit else "")


def paper_homes(records: Sequence[EditionRecord], papers: Collection[str] | None = None
                ) -> list[PaperHome]:
    """The pages of `papers` (ids without version; None: every paper of any record)."""
    homes = []
    newest_first = sorted(records, key=lambda r: r.edition, reverse=True)
    withdrawn = withdrawn_now(records)
    for base_id, appearances in by_paper(newest_first).items():
        if papers is not None and base_id not in papers:
            continue
        gone = withdrawn.get(base_id)
        # A withdrawn version's abstract is the notice: the page shows the last version that
        # was a paper (the notice stands in its banner), and no brief of the notice.
        kept = [(r, p) for r, p in appearances if gone is None or p.arxiv_id != gone.arxiv_id]
        newest = (kept or appearances)[0][1]
        tldr = next(((text, r.edition, p.slug) for r, p in kept
                     if (text := r.tldr(p.number))), ("", "", ""))
        brief = next((b for r, p in kept if (b := r.briefs.get(p.number))), None)
        evidence = next((e for r, p in kept if (e := _evidence(r, p.number))), None)
        homes.append(PaperHome(
            paper=newest, authors=_authors(newest.authors), tldr=tldr[0],
            tldr_edition=tldr[1], tldr_slug=tldr[2],
            editions=tuple(Seen(
                edition=r.edition, number=p.number, slug=p.slug, arxiv_id=p.arxiv_id,
                status_label=STATUS_LABELS.get(p.status, p.status),
                cited_by=tuple((page.stem, page.title, count)
                               for page, count in r.cited_by(p.number)),
                themes=tuple(r.themes_of(p.number))) for r, p in appearances),
            followed_by=tuple(
                (r.edition, by.name or by.title, by.slug, f.quote)
                for r in newest_first if r.continuity for f in r.continuity.followups
                if f.earlier == base_id and (by := r.paper_of(f.number)) is not None),
            withdrawn=gone.notice if gone else "",
            revisions=tuple(
                HomeRevision(r.edition, now.arxiv_id, now.slug, rev)
                for r in newest_first if r.continuity for rev in r.continuity.revised
                if (now := r.paper_of(rev.number)) is not None and now.base_id == base_id),
            brief=brief, evidence=evidence))
    return homes


def _evidence(record: EditionRecord, number: int) -> HomeEvidence | None:
    """The checked sentences of `record` citing paper `number`, in page order, each one once
    (by its words, its verdict and its quote)."""
    if record.checks is None:
        return None
    titles = {page.stem: page.title for page in record.pages}
    stems: dict[str, str] = {prompt.name: prompt.page for prompt in record.prompts
                             if prompt.page}
    found: dict[tuple[str, str, str], tuple[ClaimCheck, list[tuple[str, str]]]] = {}
    for name, checks in record.checks.items():
        stem = stems.get(name, "")
        for claim in checks if stem else ():
            if number not in claim.papers:
                continue
            key = (" ".join(claim.sentence.casefold().split()), claim.verdict, claim.quote)
            pages = found.setdefault(key, (claim, []))[1]
            if (page := (stem, titles.get(stem, stem))) not in pages:
                pages.append(page)
    claims = tuple(HomeClaim(claim, tuple(pages)) for claim, pages in found.values())
    return HomeEvidence(record, claims[:MAX_HOME_CLAIMS]) if claims else None
