"""The record of an edition (edition.json): typed, versioned, and complete.

An edition's record is the one source of everything published about it: the papers (metadata,
never their text), every prompt as asked (without its messages, which carry the bundle) and
its answer, what only the papers' text could tell (the verdict of every quoted claim, by claim
id, and which figures the papers state), and what the answers were made into (briefs, themes,
names, picks, citations). `digest render` makes pages from it alone, so a workspace without its
cache loses nothing that was published. It is read and written through `codec`, its format
checked; a record of format 2 (research-digest 0.2 and 0.3: no answers) is read and upgraded
(`record_upgrade`) as far as it goes (history, navigation, the feed), and only a render with
the cache makes it whole.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field, replace
from typing import Any

from ..completions import UNFIT_CHECK
from ..errors import DigestError
from ..evidence.checks import ClaimCheck, EvidenceFigure
from ..evidence.claims import before_stop, plain_sentence, sentences
from ..kinds import legacy_subject
from ..papers import Triage
from ..store.codec import CodecError, from_data, to_data
from ..text.safe_text import clean_data
from .names import cited_parts, flag_withdrawn, name_citations

# A paper and a prompt of the record, defined beside it; imported from here too.
from .record_entries import MAX_RECORD_ABSTRACT_CHARS as MAX_RECORD_ABSTRACT_CHARS
from .record_entries import RecordPaper as RecordPaper
from .record_entries import RecordPrompt as RecordPrompt
from .record_entries import Status as Status
from .record_parts import BundleFigures, FeedStamps, FigureFact, PageCitations, RecordPage
from .record_upgrade import RECORD_FORMAT, upgrade
from .values import Brief, Continuity, Pick, Theme

log = logging.getLogger(__name__)

READABLE_FORMATS = (1, 2, 3)  # 1 and 2: without answers (upgraded on reading)

class RecordFormatError(DigestError):
    """An edition.json this version cannot read (written by an older or newer version, or
    mangled): like a missing one, it stops the run before anything is written."""

    exit_code = 2


@dataclass(frozen=True)
class EditionRecord:
    """Everything an edition published, typed; `complete` is False for a record upgraded from a
    format without answers (it can be listed, linked and fed, not rendered again)."""

    edition: str
    title: str
    built_at: str
    papers: tuple[RecordPaper, ...]
    prompts: tuple[RecordPrompt, ...]
    format: int = RECORD_FORMAT
    query: str = ""
    fetched_at: str = ""
    generator: str = ""
    model: str = ""
    server: str = ""  # the kind of server that answered ("SGLang", "vLLM", ...), where known
    max_papers: int = 0
    bundle: BundleFigures = BundleFigures()
    synthesis_wall_time_s: float = 0.0
    # The research map's field overview, its citations kept as "Paper N" so that pages, mail
    # and feed can link each name (a record before 0.6 holds it with names, which reads alike).
    overview: str = ""
    skipped_seen: tuple[str, ...] = ()
    triage: Triage | None = None
    names: dict[int, str] = field(default_factory=dict)
    briefs: dict[int, Brief] = field(default_factory=dict)
    themes: tuple[Theme, ...] = ()
    picks: tuple[Pick, ...] = ()
    citations: dict[str, PageCitations] = field(default_factory=dict)
    # Verdicts of the quoted claims, by the answer they are in (None: no evidence was asked).
    checks: dict[str, tuple[ClaimCheck, ...]] | None = None
    figures: tuple[FigureFact, ...] = ()
    structured: dict[str, tuple[Any, ...]] = field(default_factory=dict)  # each kind's codec
    feed: FeedStamps | None = None
    continuity: Continuity | None = None  # "Since last edition" (None: not asked, or older)
    complete: bool = True
    # What the file it was read from holds that this version does not know (a newer release's
    # fields): the top-level ones are written back as they were (`kept`), and a record with
    # unknown fields deeper down is never rewritten by this version (`unknown` lists them all).
    kept: dict[str, Any] = field(default_factory=dict, compare=False,
                                 metadata={"codec": False})
    unknown: tuple[str, ...] = field(default=(), compare=False, metadata={"codec": False})
    # Its papers whose text went past what a fetch keeps (a hand edit): published cut, and the
    # file, which holds them whole, is never rewritten by a render (that would shrink it).
    trimmed: tuple[str, ...] = field(default=(), compare=False, metadata={"codec": False})

    # What history, the navigation, the feed and the mail ask of it.

    @property
    def pages(self) -> tuple[RecordPage, ...]:
        found: dict[str, RecordPage] = {}
        for p in self.prompts:
            if p.page:
                found.setdefault(p.page, RecordPage(p.page, p.page_title or p.title, p.kind))
        return tuple(found.values())

    @property
    def overview_named(self) -> str:
        """The field overview as plain text, papers by name, each checked sentence marked."""
        return name_citations(self.marked(self.overview), self.names)

    @property
    def overview_parts(self) -> list[tuple[str, int | None]]:
        """The field overview as (text, None) and (name, paper number) pieces, for links, each
        withdrawn paper's name flagged and each checked sentence marked."""
        return self.cited_parts(self.marked(self.overview))

    def marked(self, text: str) -> str:
        """`text` with each sentence the edition checked followed by its mark in words ("…
        at batch size 1 [✓ backed]."), for the mail and the feed: a sentence is never restated
        without its verdict."""
        if not self.checks:
            return text
        out = []
        for sentence, gap in sentences(text):
            check = self.check_of(plain_sentence(sentence)) if sentence.strip() else None
            out.append((before_stop(sentence.rstrip(), f"[{check.mark.text}]")
                        + sentence[len(sentence.rstrip()):]) if check else sentence)
            out.append(gap)
        return "".join(out)

    def cited_parts(self, text: str) -> list[tuple[str, int | None]]:
        """`text` cut where it cites this edition's papers (names.cited_parts), each name of
        a paper arXiv lists as withdrawn followed by the flag."""
        return flag_withdrawn(cited_parts(text, self.names), self.withdrawn_numbers,
                              self.names)

    @property
    def withdrawn_numbers(self) -> frozenset[int]:
        """This edition's papers arXiv lists as withdrawn, as far as the record knows: found
        withdrawn since (continuity), or published as the withdrawn version itself."""
        gone = {w.base_id for w in self.continuity.withdrawn} if self.continuity else set()
        return frozenset(p.number for p in self.papers
                         if p.base_id in gone or p.withdrawal_notice)

    @property
    def new_papers(self) -> tuple[RecordPaper, ...]:
        """Papers new here, a withdrawn one left out: it is news as a withdrawal."""
        gone = self.withdrawn_numbers
        return tuple(p for p in self.papers if p.status == "new" and p.number not in gone)

    @property
    def updated_papers(self) -> tuple[RecordPaper, ...]:
        """Papers here in a new version, a withdrawn one left out: a withdrawal is no update."""
        gone = self.withdrawn_numbers
        return tuple(p for p in self.papers if p.status == "updated" and p.number not in gone)

    def tldr(self, number: int) -> str:
        """The brief's one-line summary of a paper of this edition ("" without one)."""
        brief = self.briefs.get(number)
        return brief.tldr if brief else ""

    @property
    def failed_prompts(self) -> int:
        """Prompts of this edition that failed (a check that did not fit is not a failure)."""
        return sum(1 for p in self.prompts
                   if p.completion.error and not p.completion.error.startswith(UNFIT_CHECK))

    @property
    def interests(self) -> str:
        """What triage scored this edition's window against ("" without triage)."""
        return self.triage.interests if self.triage else ""

    @property
    def picked(self) -> tuple[tuple[Pick, RecordPaper], ...]:
        """The editor's picks with their papers (for links and statuses)."""
        by_number = {p.number: p for p in self.papers}
        return tuple((pick, by_number[pick.number]) for pick in self.picks
                     if pick.number in by_number)

    def check_of(self, sentence: str) -> ClaimCheck | None:
        """The check of a published sentence (as plain text, citing "Paper N"), wherever the
        edition checked it: a sentence restated elsewhere (a summary, a pick, the home page)
        is shown with the same verdict."""
        wanted = _said(sentence)
        return next((c for checks in (self.checks or {}).values() for c in checks
                     if _said(c.sentence) == wanted), None)

    def paper_of(self, number: int) -> RecordPaper | None:
        return next((p for p in self.papers if p.number == number), None)

    def themes_of(self, number: int) -> list[str]:
        return [t.name for t in self.themes if number in t.papers]

    def cited_by(self, number: int) -> list[tuple[RecordPage, int]]:
        """The synthesis pages that cite a paper of this edition, with their sentence counts."""
        return [(page, cited.count) for page in self.pages
                for cited in self.citations.get(page.stem, PageCitations()).resolved
                if cited.number == number]

    def page_checks(self, stem: str) -> tuple[ClaimCheck, ...] | None:
        """A page's claim verdicts, in its answers' order (None: none were asked)."""
        if self.checks is None:
            return None
        answers = [p.name for p in self.prompts if p.page == stem]
        if not any(name in self.checks for name in answers):
            return None
        return tuple(c for name in answers for c in self.checks.get(name, ()))

    @property
    def evidence_figure(self) -> EvidenceFigure | None:
        """The edition's claims counted, as every surface counts them; None where no evidence
        was asked or no claim was checked."""
        if self.checks is None:
            return None
        figure = EvidenceFigure.of(c for checks in self.checks.values() for c in checks)
        return figure if figure.claims else None

    @property
    def judged(self) -> bool:
        """Whether any claim's found quotes were judged (supports, partly or does not)."""
        figure = self.evidence_figure
        return bool(figure and figure.judged)

    # Reading and writing.

    def to_json(self) -> dict[str, Any]:
        known = {"format": RECORD_FORMAT, **to_data(replace(self, format=RECORD_FORMAT))}
        return known | {k: v for k, v in self.kept.items() if k not in known}

    @property
    def not_rewritable(self) -> str:
        """Why writing this record back would lose some of what its file holds ("": it
        would not, every unknown field being a top-level one, which `to_json` writes back)."""
        nested = [path for path in self.unknown if path not in self.kept]
        if nested:
            return (f"it holds {', '.join(nested[:5])}{' …' if len(nested) > 5 else ''}, "
                    "which this version does not know (a newer research-digest wrote it)")
        if self.trimmed:
            return (f"{', '.join(self.trimmed[:5])} holds text longer than a fetch keeps, "
                    "published cut")
        return ""

    def keeping(self, read: EditionRecord) -> EditionRecord:
        """This record (made anew for `read`'s edition) with what `read`'s file held that this
        version does not know, or did not publish whole."""
        return replace(self, kept=read.kept, unknown=read.unknown, trimmed=read.trimmed)

    def same_but_date(self, other: EditionRecord) -> bool:
        """Whether the two records differ in their dates (and feed stamps) only."""
        def bare(r: EditionRecord) -> EditionRecord:
            return replace(r, built_at="", feed=None, format=RECORD_FORMAT)

        return bool(to_data(bare(self)) == to_data(bare(other)))

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
        unknown: list[str] = []
        try:
            record = from_data(cls, data if version == RECORD_FORMAT else upgrade(data),
                               unknown=unknown)
        except (CodecError, KeyError, TypeError, ValueError, AttributeError) as err:
            raise RecordFormatError(f"{source} is missing or mangles {err} "
                                    "(restore it from git, or render the edition again with "
                                    "`digest render --all`)") from err
        if version != RECORD_FORMAT:
            unknown = []  # upgrade() keeps what it knows of an older format's fields
        bounded = tuple(p.bounded() for p in record.papers)
        trimmed = tuple(f"papers[{i}]" for i, (before, after)
                        in enumerate(zip(record.papers, bounded, strict=True)) if before != after)
        for where in trimmed:
            log.warning("%s: %s holds text longer than a fetch keeps (or characters it "
                        "removes): published as a fetch would have it", source, where)
        prompts = tuple(replace(p, subject=legacy_subject(p.kind, p.name, p.subject))
                        for p in record.prompts)
        return replace(record, papers=bounded, prompts=prompts, unknown=tuple(unknown),
                       trimmed=trimmed,
                       kept={k: data[k] for k in unknown if k in data and "." not in k
                             and "[" not in k})


def _said(sentence: str) -> str:
    """A sentence as compared wherever it is restated: its words, not its Markdown."""
    return " ".join(re.sub(r"[*_`#|>]+", " ", sentence).split()).casefold().rstrip(".")


def record_text(record: EditionRecord) -> str:
    """The record as its file holds it (edition.json): what a render writes."""
    return json.dumps(clean_data(record.to_json()), indent=2, ensure_ascii=False) + "\n"
