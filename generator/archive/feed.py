"""An Atom feed of the editions, so readers can follow the digest without email."""

from __future__ import annotations

import hashlib
import html
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from urllib.parse import urljoin, urlsplit
from xml.etree import ElementTree

from .. import store
from ..store.cache import atomic_write_text
from ..text.safe_text import clean, excerpt, text_of
from .history import History
from .lead import lead_parts, parts_html, parts_text, since_lines, without_subject
from .names import name_citations
from .news import News
from .question_record import QuestionRecord
from .record import EditionRecord
from .record_parts import FeedStamps

_ATOM = "http://www.w3.org/2005/Atom"


def feed_digest(record: EditionRecord) -> str:
    """What a feed entry shows of an edition's record: its `updated` moves only when this does."""
    shown = {
        "title": record.title, "overview": record.overview_named,
        "papers": [(p.arxiv_id, p.title, p.status, record.tldr(p.number) or None)
                   for p in record.papers],
        "picks": [(pick.arxiv_id, pick.name, pick.why) + ((pick.claim.quote,) if pick.backed
                                                          and pick.claim else ())
                  for pick in record.picks],
        "pages": [(page.stem, page.title) for page in record.pages],
        "evidence": evidence_line(record),
        **({"since": since_lines(record)} if record.continuity else {}),
    }
    return hashlib.sha256(json.dumps(shown, sort_keys=True, ensure_ascii=False).encode()
                          ).hexdigest()[:16]


def stamps(record: EditionRecord, previous: EditionRecord | None) -> FeedStamps:
    """The record's feed stamps: first published, and last changed in what the feed shows."""
    digest = feed_digest(record)
    before = previous.feed if previous else None
    return FeedStamps(
        digest=digest,
        published=before.published if before else (previous.built_at if previous
                                                    else record.built_at),
        updated=before.updated if before and before.digest == digest else record.built_at)


def _tag_authority(site_url: str) -> tuple[str, str]:
    """The tag: URI's authority and path prefix: the site's host and path, or a placeholder
    name for a site without a URL (whose feed is read locally)."""
    parts = urlsplit(site_url)
    if parts.hostname:
        return parts.hostname, parts.path.rstrip("/") + "/"
    return "research-digest.invalid", "/"


def archive_feed(title: str, site_url: str, history: History) -> str:
    """The digest's feed: every edition's record and every published question, as the run's
    history holds them (the render, `ask --publish` and the site all make it here)."""
    return atom_feed(title, site_url, history.records, questions=history.questions)


def write_feed(docs_dir: Path, title: str, site_url: str, history: History) -> bool:
    """Write the feed where what is there differs from what the history makes of it (a
    question published, the site's address changed); whether it was written."""
    path = docs_dir / store.FEED
    text = archive_feed(title, site_url, history)
    try:
        if path.read_bytes() == text.encode("utf-8"):  # whatever bytes are there: compared
            return False
    except OSError:
        pass
    atomic_write_text(path, text)
    return True


def atom_feed(title: str, site_url: str, records: Sequence[EditionRecord], limit: int = 50,
              questions: Sequence[QuestionRecord] = ()) -> str:
    """One entry per edition, newest first, then one per published question (`digest ask
    --publish`). Links are absolute when `site_url` is set.

    Ids are tag: URIs (RFC 4151) from the site's address and the edition's date, so renaming
    the digest changes no id; an entry's `updated` changes only when what it shows changes.
    """
    base = site_url.rstrip("/") + "/" if site_url else ""
    authority, prefix = _tag_authority(site_url)
    ElementTree.register_namespace("", _ATOM)

    def element(parent: ElementTree.Element, tag: str, text: str | None = None,
                **attrs: str) -> ElementTree.Element:
        child = ElementTree.SubElement(parent, f"{{{_ATOM}}}{tag}",
                                       {k: clean(v) for k, v in attrs.items()})
        if text is not None:
            child.text = clean(text)  # XML 1.0 cannot carry control characters at all
        return child

    def url(path: str) -> str:
        return urljoin(base, path) if base else path

    oldest = min((r.edition[:10] for r in records), default="2000-01-01")
    feed = ElementTree.Element(f"{{{_ATOM}}}feed")
    element(feed, "title", text_of(title))
    element(feed, "id", f"tag:{authority},{_tag_date(oldest)}:{prefix}{store.FEED}")
    element(feed, "updated", max([*(_updated(r) for r in records),
                                  *(q.asked_at for q in questions[:limit])],
                                 default="1970-01-01T00:00:00+00:00"))
    element(feed, "link", href=url(store.FEED), rel="self")
    element(feed, "link", href=base or "index.html", rel="alternate")
    element(feed, "generator", "Research Digest")
    for record in records[:limit]:
        edition = record.edition
        entry = element(feed, "entry")
        element(entry, "title", entry_title(title, record))
        element(entry, "id", f"tag:{authority},{_tag_date(edition)}:{prefix}editions/{edition}")
        element(entry, "link", href=url(store.edition_url(edition)), rel="alternate")
        element(entry, "published", record.feed.published if record.feed else record.built_at)
        element(entry, "updated", _updated(record))
        element(entry, "author").append(_name(f"{{{_ATOM}}}name", record.model))
        lead = parts_text(lead_parts(record)) or f"{News.of(record).sentence}."
        summary = f"{lead} {text_of(record.overview_named)}".strip()
        element(entry, "summary", summary, type="text")
        element(entry, "content", _content(record, summary, url), type="html")
    for question in questions[:limit]:
        entry = element(feed, "entry")
        element(entry, "title", f"{text_of(title)}, question: {text_of(question.question)}")
        element(entry, "id", f"tag:{authority},{_tag_date(question.asked_at)}:{prefix}"
                             f"{question.page.removesuffix('.md')}")
        element(entry, "link", href=url(store.built(question.page)), rel="alternate")
        element(entry, "published", question.asked_at)
        element(entry, "updated", question.asked_at)
        element(entry, "author").append(_name(f"{{{_ATOM}}}name", question.model))
        answer = text_of(name_citations(question.answer.completion.content, question.names))
        element(entry, "summary", excerpt(" ".join(answer.split())), type="text")
        element(entry, "content", _question_content(question, answer, url), type="html")
    return ElementTree.tostring(feed, encoding="unicode", xml_declaration=True) + "\n"


def entry_title(title: str, record: EditionRecord) -> str:
    """An entry's title says what is in it: the edition and its picks by name (or how many
    papers it has when nothing was picked)."""
    head = f"{text_of(title)}, {record.edition}"
    names = [text_of(pick.name) for pick, _ in record.picked]
    if names:
        return f"{head}: {', '.join(names)}"
    return f"{head}: {News.of(record).sentence}"


def evidence_line(record: EditionRecord) -> str:
    """The edition's evidence figure as a sentence, for the feed and the mail ("" without one)."""
    figure = record.evidence_figure
    return f"Evidence: {figure.sentence}" if figure else ""


def _updated(record: EditionRecord) -> str:
    return record.feed.updated if record.feed else record.built_at


def _tag_date(edition: str) -> str:
    day = edition[:10]
    return day if re.fullmatch(r"\d{4}-\d{2}-\d{2}", day) else "2000-01-01"


def _content(record: EditionRecord, summary: str, url: Callable[[str], str]) -> str:
    """The entry as HTML (all text escaped): the summary and the evidence figure, the picks
    with why they matter, each new paper with its TL;DR, then the synthesis pages."""
    by_number = {p.number: p for p in record.papers}

    def link(number: int) -> str | None:
        paper = by_number.get(number)
        return url(store.paper_home_url(paper.base_slug)) if paper else None

    def linked(pieces: Sequence[tuple[str, int | None]]) -> str:
        return parts_html(pieces, link)

    parts = [f"<p>{linked(lead_parts(record)) or html.escape(summary)}</p>"]
    evidence = evidence_line(record)
    if evidence:
        parts.append(f"<p>{html.escape(evidence)}</p>")
    since = since_lines(record)
    if since and record.continuity:
        parts.append(f"<p>Since edition {html.escape(record.continuity.previous)}:</p><ul>"
                     + "".join(f"<li>{html.escape(text_of(line))}</li>" for line in since)
                     + "</ul>")
    if record.picked:
        parts.append("<p>Editor's picks:</p><ol>")
        for pick, paper in record.picked:
            href = html.escape(link(paper.number) or "", quote=True)
            why = linked(without_subject(record.cited_parts(pick.why), pick.number))
            backing = (f" (quote found in the paper: “{html.escape(text_of(excerpt(pick.claim.quote)))}”)"
                       if pick.backed and pick.claim is not None
                       else " (no quote found in the paper)"
                       if record.checks is not None else "")
            parts.append(f'<li><a href="{href}">{html.escape(text_of(pick.name))}</a>'
                         + (f": {why}" if why else "") + backing + "</li>")
        parts.append("</ol>")
    if record.overview:
        parts.append(f"<p>The field in this edition: {linked(record.overview_parts)}</p>")
    if record.new_papers:
        parts.append("<p>New in this edition:</p><ul>")
        for paper in record.new_papers:
            href = html.escape(link(paper.number) or "", quote=True)
            tldr = text_of(record.tldr(paper.number))
            parts.append(f'<li><a href="{href}">{html.escape(text_of(paper.title))}</a>'
                         + (f": {html.escape(tldr)}" if tldr else "") + "</li>")
        parts.append("</ul>")
    if record.pages:
        pages = [(url(store.built(store.edition_page(record.edition, page.stem))), page.title)
                 for page in record.pages]
        parts.append("<p>Synthesis: " + " · ".join(
            f'<a href="{html.escape(href, quote=True)}">{html.escape(text_of(name))}</a>'
            for href, name in pages) + "</p>")
    return "".join(parts)


def _question_content(question: QuestionRecord, answer: str, url: Callable[[str], str]) -> str:
    """A question's entry as HTML (all text escaped): the question, the start of its answer,
    its evidence figure and the papers it read, each linked to its own page."""
    parts = [f"<p>Asked of the archive: {html.escape(text_of(question.question))}</p>",
             f"<p>{html.escape(excerpt(' '.join(answer.split())))}</p>"]
    figure = question.evidence_figure
    if figure:
        parts.append(f"<p>Evidence: {html.escape(figure.sentence)}</p>")
    if question.papers:
        parts.append("<p>Papers the answer read:</p><ul>")
        for paper in question.papers:
            href = html.escape(url(store.paper_home_url(paper.base_slug)), quote=True)
            flag = " (⚠ withdrawn)" if paper.withdrawn else ""
            parts.append(f'<li><a href="{href}">{html.escape(text_of(paper.name))}</a>{flag}, '
                         f"in {html.escape(', '.join(paper.editions))}</li>")
        parts.append("</ul>")
    return "".join(parts)


def _name(tag: str, text: str) -> ElementTree.Element:
    node = ElementTree.Element(tag)
    node.text = clean(text) or "Research Digest"
    return node
