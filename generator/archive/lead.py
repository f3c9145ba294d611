"""The edition's lead: a paragraph on why this edition matters, built from its checked picks.

Made from the record alone, with no request of its own: what is new, the top pick and the
synthesis sentence (backed by a quote found in the paper) that says why it matters, the other
picks, and how many picks a quote backs. It leads the mail and the feed entry; names stay
pieces (`cited_parts`), so each reader of it can make them links of its own kind.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..evidence.checks import EvidenceFigure
from ..kinds import CHANGES
from ..text.safe_text import excerpt, text_of
from .names import name_citations
from .news import News
from .overview import overview_text
from .prose import unique_sentences, without_disagreements
from .record import EditionRecord, RecordPaper
from .values import Pick

Parts = list[tuple[str, int | None]]


def edition_counts(record: EditionRecord) -> str:
    """"2 new · 1 revised · 1 withdrawn, of 4 papers" ("" for an empty edition): the news
    as every surface counts it (`News`)."""
    return News.of(record).sentence if record.papers else ""


def lead_parts(record: EditionRecord) -> Parts:
    """The lead as (text, None) and (name, paper number) pieces; [] for an empty edition."""
    if not record.papers:
        return []
    counts = edition_counts(record)
    news = News.of(record)
    if not record.picked:
        if news.new or news.revised:
            return [(f"{counts}; none stood out enough to pick.", None)]
        return [(f"Nothing new in this edition: every one of the {len(record.papers)} papers "
                 "was covered in an earlier edition, so there are no picks.", None)]
    parts: Parts = [(f"{counts}. ", None)]
    top, _ = record.picked[0]
    why = record.cited_parts(_sentence(top.why)) if top.why else []
    parts.append(("Top pick: ", None))
    if any(number == top.number for _, number in why):  # the sentence names it: no repeat
        parts += why
    else:
        parts += [(top.name, top.number), (". " if why else ".", None), *why]
    others = [pick for pick, _ in record.picked[1:]]
    if others:
        parts.append((" Also picked: ", None))
        for index, pick in enumerate(others):
            if index:
                parts.append((" and " if index == len(others) - 1 else ", ", None))
            parts.append((pick.name, pick.number))
        parts.append((".", None))
    if record.checks is not None:
        # The picks' own sentences, counted as every count is (EvidenceFigure).
        figure = EvidenceFigure.of(pick.claim for pick, _ in record.picked if pick.claim)
        shown = len(record.picked)
        parts.append((f" Why they matter: {figure.backed} of {shown} picks backed by their "
                      "quotes." if figure.judged or not figure.found else
                      f" Why they matter: {figure.found} of {shown} picks with their quotes "
                      "found in the papers (not judged).", None))
    return parts


def pick_backing(record: EditionRecord, pick: Pick) -> str:
    """What backs a pick's reason, in words, with the quote where one was found: the line the
    mail and the chat post give under each pick (`Pick.mark`, `Pick.unbacked_note`)."""
    if pick.backed and pick.claim is not None:
        return f"{pick.mark}, its quote: “{text_of(excerpt(pick.claim.quote))}”"
    if record.checks is None:
        return "Not checked: this edition asked for no evidence."
    return f"⚠ Not backed: {pick.unbacked_note}"


def without_subject(parts: Parts, subject: int) -> Parts:
    """`parts` without a leading mention of `subject`, the paper named just before them
    ("FastKV: FastKV cuts..." reads "FastKV: cuts..."); kept where the sentence goes on to
    name others with it ("FastKV and PagedAttention...")."""
    if (len(parts) > 1 and parts[0][1] == subject
            and not parts[1][0].lstrip().startswith((",", "and ", "(", "'"))):
        return [(parts[1][0].lstrip(), None), *parts[2:]]
    return parts


def parts_text(parts: Sequence[tuple[str, int | None]]) -> str:
    """The pieces as one plain line, as a feed reader or a mail's text part shows it."""
    return " ".join("".join(text_of(piece) for piece, _ in parts).split())


def parts_html(parts: Sequence[tuple[str, int | None]], link: Callable[[int], str | None],
               style: str = "") -> str:
    """The pieces as HTML (math spelt in Unicode), every text escaped, each name a link where
    `link` gives one."""
    out = []
    for piece, number in parts:
        href = link(number) if number is not None else None
        escaped = html.escape(text_of(piece))
        out.append(f'<a href="{html.escape(href, quote=True)}"{style}>{escaped}</a>' if href
                   else escaped)
    return "".join(out)


def paper_byline(paper: RecordPaper, limit: int = 4) -> str:
    """"Ada Author, Bo Writer et al., 2026": who wrote it and when, for the mail and feed."""
    authors = list(paper.authors[:limit]) + (["et al."] if len(paper.authors) > limit else [])
    year = paper.published[:4]
    return ", ".join(authors) + (f", {year}" if year and authors else year)


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text if text.endswith((".", "!", "?")) else text + "."


@dataclass(frozen=True)
class Comparison:
    """What the leads show of the "what changed" answer: its sentences that quotes back (each
    shown with its mark), and the count of all its claims."""

    text: str  # those sentences, citing papers as "Paper N" ("" when none is backed)
    figure: EvidenceFigure | None  # all its claims (None: the edition asked for no evidence)
    page: str  # the comparison's page stem


def comparison(record: EditionRecord) -> Comparison | None:
    """The comparison as the leads show it; None where none was asked or it failed. Without
    evidence checks its first paragraph is shown, said to be unchecked."""
    prompt = next((p for p in record.prompts if p.kind == CHANGES and p.completion.ok), None)
    if prompt is None:
        return None
    checks = record.checks.get(prompt.name) if record.checks is not None else None
    if checks is None:
        return Comparison(overview_text(without_disagreements(prompt.completion.content)),
                          None, prompt.page or "")
    # Only what quotes found in the papers back, a claim judged not to be left out.
    shown = [c.sentence for c in checks if c.mark.group in ("backed", "partly", "found")]
    return Comparison(" ".join(unique_sentences(shown)), EvidenceFigure.of(checks),
                      prompt.page or "")


def since_lines(record: EditionRecord) -> list[str]:
    """"Since last edition" as plain sentences, for the mail and the feed (the pages link each
    name): follow-ups, revisions, withdrawals, themes, and the checked comparison's first
    paragraph. [] for a first edition."""
    since = record.continuity
    if since is None or not since.previous:
        return []
    names = record.names
    lines = [f"{names.get(f.number, '')} follows up {f.name} (edition {f.edition}), naming it by "
             f"its {f.by}." for f in since.followups]
    for r in since.revised:
        paper = record.paper_of(r.number)
        now = paper.arxiv_id if paper else ""
        lines.append(f"{names.get(r.number, '')} is revised: {now} replaces {r.before} "
                     f"(edition {r.edition}); its abstract "
                     + ("changed." if r.changed else "is unchanged."))
    lines += [f"Withdrawn on arXiv: {w.title} ({w.arxiv_id}): “{w.notice}”"
              for w in since.withdrawn]
    themes = [f"{label}: {', '.join(found)}" for label, found in (
        ("new themes", since.themes_new), ("continuing", since.themes_continuing),
        ("quiet since the last edition", since.themes_quiet)) if found]
    if themes:
        lines.append(_sentence("; ".join(themes)[:1].upper() + "; ".join(themes)[1:]))
    compared = comparison(record)
    if compared is not None and compared.text:
        lines.append(name_citations(record.marked(compared.text), names) + (
            " (not checked against the papers)" if compared.figure is None else
            f" (the comparison: {compared.figure.short})"))
    lines = unique_sentences(lines)
    if not lines:
        lines.append(f"Nothing continues edition {since.previous}'s papers, and none of them "
                     "was revised or withdrawn.")
    return lines
