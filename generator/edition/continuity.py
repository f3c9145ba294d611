"""Since last edition: what an edition says about the ones before it.

All of it is computed from the typed archive (the earlier editions' records) and this
edition's own inputs, with no request of its own: the papers here that name one covered
before (follow-ups, found in their abstract, comment or text, with the sentence that names
it), the papers here in a new version (their abstract's word diff against the version covered
before), what the withdrawal lookup of the fetch found, which themes are new, continue or
went quiet, and the comparison answer's disagreements, each with both quotes. A text-only
finding (a follow-up) is a fact of the papers' text: the record keeps it (`PaperFacts`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

from ..archive.names import name_citations
from ..archive.prose import DISAGREES_RE
from ..archive.record import EditionRecord, RecordPaper, Status
from ..archive.theme_pages import theme_slug
from ..archive.values import Continuity, Disagreement, FollowUp, Revision, Theme
from ..evidence.checks import ClaimCheck
from ..evidence.claims import CITE_RE
from ..evidence.claims import numbers as cited_numbers
from ..evidence.naming import common
from ..fetch.withdrawals import withdrawal_notice
from ..papers import Lookup, NumberedPaper, Withdrawal

MAX_QUOTE_CHARS = 300
MIN_TITLE_CHARS = 24  # a shorter title ("Attention") is too common to name a paper
MIN_NAME_CHARS = 4
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+|\n")  # a line is a title, a heading, a sentence


def earlier_papers(records: Sequence[EditionRecord]) -> list[tuple[RecordPaper, str]]:
    """Every paper the earlier editions covered, once, with the last edition that did
    (`records` newest first)."""
    seen: dict[str, tuple[RecordPaper, str]] = {}
    for record in records:
        for paper in record.papers:
            seen.setdefault(paper.base_id, (paper, record.edition))
    return list(seen.values())


def find_follow_ups(papers: Sequence[NumberedPaper], statuses: Mapping[int, Status],
                    text_of: Callable[[int], str],
                    earlier: Sequence[tuple[RecordPaper, str]]) -> tuple[FollowUp, ...]:
    """The new papers that name an earlier one: by arXiv id, by its whole title, or by the
    short name its title gives ("FastKV"), each with the sentence that does. One pass over each
    text per way of naming (a year of earlier papers is one alternation, not a regex each)."""
    # Any earlier paper, in this window again or not; a paper never follows up itself.
    candidates = list(earlier)
    if not candidates:
        return ()
    by_id = {paper.base_id: (paper, edition) for paper, edition in candidates}
    ids = _alternation(by_id, r"(?<![\w.])(", r")(?:v\d+)?(?![\d])")
    by_title = {_folded(paper.title): paper for paper, _ in candidates
                if len(paper.title) >= MIN_TITLE_CHARS and not _common(paper.title)}
    by_name = {name: paper for paper, _ in candidates if (name := _short_name(paper))}
    names = _alternation(by_name, r"(?<![\w-])(", r")(?![\w-])") if by_name else None
    found = []
    for item in papers:
        if statuses.get(item.number) != "new":
            continue
        text = text_of(item.number)
        folded = _folded(text)
        hits: dict[str, tuple[str, int, int]] = {}  # earlier id -> (how, start, end)
        for match in ids.finditer(text):
            hits.setdefault(match.group(1), ("arXiv id", match.start(), match.end()))
        for title, paper in by_title.items():
            if paper.base_id not in hits and title in folded:
                at = re.search(r"\s+".join(map(re.escape, paper.title.split())), text, re.I)
                if at:
                    hits[paper.base_id] = ("title", at.start(), at.end())
        for match in names.finditer(text) if names else ():
            hits.setdefault(by_name[match.group(1)].base_id, ("name", match.start(), match.end()))
        hits.pop(item.paper.base_id, None)
        for base, (by, start, end) in sorted(hits.items()):
            paper, edition = by_id[base]
            found.append(FollowUp(item.number, base, paper.title, paper.name or paper.title,
                                  edition, _sentence_at(text, start, end), by))
    return tuple(found)


def _alternation(words: Mapping[str, object], before: str, after: str) -> re.Pattern[str]:
    """One pattern for all of `words`, the longest first (so "FastKV-2" wins over "FastKV")."""
    escaped = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    return re.compile(f"{before}{escaped}{after}")


def _folded(text: str) -> str:
    return " ".join(text.casefold().split())


def _short_name(paper: RecordPaper) -> str:
    """The paper's short name where it is one (not its whole title, not an arXiv id, not a
    phrase of the field's common words)."""
    name = " ".join(paper.name.split())
    title = " ".join(paper.title.split())
    return name if (name and name != title and len(name) >= MIN_NAME_CHARS
                    and not name.startswith("arXiv") and not _common(name)
                    and not _plain_phrase(name)) else ""


def _words(text: str) -> list[str]:
    return re.findall(r"[\w'-]+", text)


def _common(text: str) -> bool:
    """Whether every word of `text` is one of the field's common words."""
    return common(text)


def _plain_phrase(name: str) -> bool:
    """Whether a name of several words is an ordinary phrase ("Sparse Expert Routing"): no
    capital inside a word, no digit, nothing a reader would take for a paper's own name."""
    words = _words(name)
    return len(words) > 1 and all(re.fullmatch(r"[A-Z]?[a-z]+", w) for w in words)


def _sentence_at(text: str, start: int, end: int) -> str:
    """The sentence of `text` around [start, end), on one line, at most MAX_QUOTE_CHARS."""
    bounds = [0, *(m.end() for m in _SENTENCE_END_RE.finditer(text)), len(text)]
    first = max(b for b in bounds if b <= start)
    last = min((b for b in bounds if b >= end), default=len(text))
    if last - first > MAX_QUOTE_CHARS:  # a long sentence: the stretch around the name, marked
        first = max(first, start - MAX_QUOTE_CHARS // 2)
        last = min(last, first + MAX_QUOTE_CHARS)
        return "…" + " ".join(text[first:last].split()[1:-1]) + "…"
    return " ".join(text[first:last].split())


def revisions(papers: Sequence[NumberedPaper], statuses: Mapping[int, Status],
              earlier: Sequence[tuple[RecordPaper, str]], withdrawn: Collection[str] = ()
              ) -> tuple[Revision, ...]:
    """The papers here in a new version, each with its abstract's word diff against the
    version covered last (a version that withdraws the paper is said as a withdrawal)."""
    before = {paper.base_id: (paper, edition) for paper, edition in earlier}
    found = []
    for item in papers:
        if (statuses.get(item.number) != "updated" or item.paper.base_id not in before
                or item.paper.base_id in withdrawn):
            continue
        old, edition = before[item.paper.base_id]
        found.append(Revision(item.number, old.arxiv_id, edition,
                              word_diff(old.abstract, item.paper.abstract)))
    return tuple(found)


def word_diff(old: str, new: str) -> tuple[tuple[str, str], ...]:
    """Runs of words kept ("="), gone ("-") and new ("+"), in reading order."""
    a, b = old.split(), new.split()
    runs: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op in ("delete", "replace"):
            runs.append(("-", " ".join(a[i1:i2])))
        if op in ("insert", "replace"):
            runs.append(("+", " ".join(b[j1:j2])))
        if op == "equal":
            runs.append(("=", " ".join(a[i1:i2])))
    return tuple(runs)


def theme_changes(themes: Sequence[Theme], previous: EditionRecord | None
                  ) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(new, continuing, gone quiet) theme names against the previous edition's, a theme
    being the same when its page is (theme_pages.theme_slug)."""
    names = [t.name for t in themes]
    if previous is None:
        return (), (), ()
    before = {theme_slug(t.name) for t in previous.themes}
    now = {theme_slug(n) for n in names}
    return (tuple(n for n in names if theme_slug(n) not in before),
            tuple(n for n in names if theme_slug(n) in before),
            tuple(t.name for t in previous.themes if theme_slug(t.name) not in now))


def disagreements(answer: str, checks: Sequence[ClaimCheck] | None,
                  earlier: Iterable[EditionRecord], papers: Iterable[int]
                  ) -> tuple[Disagreement, ...]:
    """The comparison's "Disagrees: Paper N with [claim id]" lines, each with the new paper's
    quote (from this answer's evidence check) beside the earlier claim's (from its record):
    only where both quotes were found in their papers (a disagreement resting on an unfound
    quote is not published as one)."""
    numbers = set(papers)
    claims = {c.id: (c, r) for r in earlier for cs in (r.checks or {}).values() for c in cs}
    found = []
    for match in DISAGREES_RE.finditer(answer):
        cited = [n for m in CITE_RE.finditer(match.group(1)) for n in cited_numbers(m.group(2))
                 if n in numbers]
        earlier_claim = claims.get(match.group(2))
        if not cited or earlier_claim is None:
            continue
        check = next((c for c in checks or () if cited[0] in c.papers
                      and "disagree" in c.sentence.lower()), None)
        old, record = earlier_claim
        if check is None or check.verdict != "supported" or old.verdict != "supported":
            continue  # shown only with both sides backed by a quote found in the paper
        found.append(Disagreement(
            cited[0], " ".join(match.group(0).split()), check.quote if check else "",
            check.verdict if check else "not_checked", match.group(2),
            name_citations(old.sentence, record.names),
            old.quote if old.verdict == "supported" else "", record.edition))
    return tuple(found)


def continuity(papers: Sequence[NumberedPaper], statuses: Mapping[int, Status],
               themes: Sequence[Theme], prior: Sequence[EditionRecord],
               follow_ups: Callable[[Sequence[tuple[RecordPaper, str]]], tuple[FollowUp, ...]],
               lookup: Lookup | None,
               comparison: tuple[str, Sequence[ClaimCheck] | None] | None) -> Continuity:
    """The edition's "Since last edition" (`prior`: the editions before it, newest first;
    `follow_ups`: the papers' text asked which earlier papers it names (`PaperFacts`);
    `comparison`: the what-changed answer and its verdicts, where one was asked)."""
    previous = prior[0] if prior else None
    if previous is None:
        return Continuity()
    earlier = earlier_papers(prior)
    covered = {paper.base_id for paper, _ in earlier}
    new, continuing, quiet = theme_changes(themes, previous)
    # Only papers the archive still holds (an edition taken off the site takes its papers'
    # pages with it): a follow-up or a withdrawal of one of those would link nowhere.
    withdrawn = tuple(w for w in (lookup.withdrawn if lookup else ()) if w.base_id in covered)
    # A withdrawing version in this edition's own window is a withdrawal too, looked up or not.
    looked = {w.base_id for w in withdrawn}
    withdrawn += tuple(
        Withdrawal(item.paper.base_id, item.paper.arxiv_id, item.paper.title, notice)
        for item in papers if statuses.get(item.number) == "updated"
        and item.paper.base_id in covered and item.paper.base_id not in looked
        and (notice := withdrawal_notice(item.paper)))
    return Continuity(
        previous=previous.edition,
        followups=tuple(f for f in follow_ups(earlier) if f.earlier in covered),
        revised=revisions(papers, statuses, earlier, {w.base_id for w in withdrawn}),
        withdrawn=withdrawn, looked_up=lookup.ids if lookup else (),
        lookup_error=lookup.error if lookup else "",
        themes_new=new, themes_continuing=continuing, themes_quiet=quiet,
        # The comparison was given the previous edition's claims: ids are looked up there.
        disagreements=disagreements(comparison[0], comparison[1], [previous],
                                    (p.number for p in papers)) if comparison else ())
