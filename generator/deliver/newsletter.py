"""The edition as a newsletter: one email with a plain-text and an HTML part.

Built from the edition's record, the same one the home page and the feed are built from: its
picks (by name, with why they matter), its new papers with their TL;DRs, the field in a
paragraph, and links to every synthesis page and paper page on the published site. The HTML is
what mail clients render: one column at most 640 px wide, inline styles only, no script, no
stylesheet, font or image from elsewhere, math spelt in Unicode as in the feed, colours that
read on a light or a dark background. Every untrusted text is escaped once.
"""

from __future__ import annotations

import hashlib
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate
from urllib.parse import urlsplit

from .. import store
from ..archive.feed import evidence_line
from ..archive.lead import (
    edition_counts,
    lead_parts,
    paper_byline,
    parts_html,
    parts_text,
    pick_backing,
    since_lines,
    without_subject,
)
from ..archive.record import EditionRecord, RecordPaper
from ..config import EmailSettings
from ..errors import UsageError
from ..marks import MarkLinks
from ..text.safe_text import safe_url, text_of

WIDTH = 640
# A {pick} and what joins it to the rest (before it or after it), dropped when nothing was picked.
_PICK_RE = re.compile(r"\s*[:·—–-]\s*\{pick\}|\s*\(\{pick\}\)|\{pick\}\s*[:·—–-]?\s*")
_FIELD_RE = re.compile(r"\{(title|edition|pick)\}")
_TEXT, _MUTED, _LINK = "#1f2328", "#57606a", "#0b57d0"  # 4.5:1 or more on white
_LINK_ATTRS = f' class="dm-link" style="color:{_LINK}"'
# Clients that honour prefers-color-scheme (Apple Mail, iOS, some webmail) show the dark
# colours, 7:1 or more on #0d1117; the others keep the inline light ones.
_DARK = ("@media (prefers-color-scheme: dark){.dm-page{background:#0d1117 !important}"
         ".dm-text{color:#e6edf3 !important}.dm-muted{color:#a8b3bf !important}"
         ".dm-link{color:#8cc4ff !important}}")
OWN_MARKUP = f"<style>{_DARK}</style>"  # the one live element of ours the mail may carry


@dataclass(frozen=True)
class Newsletter:
    subject: str
    text: str
    html: str
    site_url: str
    edition: str


def page_url(site_url: str, path: str) -> str:
    """A Markdown page's absolute URL on the published site (`store.built`)."""
    return site_url.rstrip("/") + "/" + store.built(path)


def message_id(site_url: str, edition: str, address: str) -> str:
    """One per edition and reader, stable, so that a resend threads with the first message.
    Only a header: what was sent is recorded by edition and address (`mail.SendRecord`)."""
    host = urlsplit(site_url).hostname or "research-digest.invalid"
    digest = hashlib.sha256(f"{edition}\n{address.lower()}".encode()).hexdigest()[:16]
    return f"<digest-{edition}.{digest}@{host}>"


def subject_line(template: str, title: str, edition: str, pick: str) -> str:
    """The mail's subject: `template` with {title}, {edition} and {pick} (the top pick's
    name, so the inbox says what is in it; dropped with what joins it when nothing was picked)."""
    if not pick:
        template = _PICK_RE.sub("", template)
    values = {"title": title, "edition": edition, "pick": pick}
    # One pass: a name or title that itself reads "{edition}" is not filled in again.
    subject = _FIELD_RE.sub(lambda m: values[m.group(1)], template)
    return " ".join(subject.split())[:200] or f"{title} · {edition}"


def newsletter(title: str, record: EditionRecord, site_url: str,
               settings: EmailSettings, marks: MarkLinks | None = None) -> Newsletter:
    """The edition's newsletter; refused without `site_url` (its links must be absolute).
    `marks`: where each paper's "more/less like this" goes ([feedback]; none by default)."""
    marks = marks or MarkLinks()
    if not site_url:
        raise UsageError("an email's links must be absolute: set [digest] site_url in "
                         "config.toml (or DIGEST_SITE_URL) to where the site is published")
    edition = record.edition
    url = {"home": page_url(site_url, store.HOME),
           "edition": page_url(site_url, store.edition_overview(edition))}
    picked = record.picked
    subject = subject_line(settings.subject, text_of(title), edition,
                           text_of(picked[0][0].name) if picked else "")
    papers = {p.number: p for p in record.papers}
    new = record.new_papers
    pages = [(text_of(p.title), page_url(site_url, store.edition_page(edition, p.stem)))
             for p in record.pages]

    def paper_url(number: int) -> str | None:
        paper = papers.get(number)
        return page_url(site_url, store.paper_page(edition, paper.slug)) if paper else None

    def marked(paper: RecordPaper) -> tuple[str, str]:
        """The paper's marks for next week's triage: (a text line, HTML), or ("", "")."""
        if not marks.in_mail:
            return "", ""
        more, less = marks.mail(paper.arxiv_id, "more"), marks.mail(paper.arxiv_id, "less")
        return (f"More like this: {more} · Less like this: {less}",
                f' · <a href="{html.escape(more, quote=True)}"{_LINK_ATTRS}>More like this</a>'
                f' · <a href="{html.escape(less, quote=True)}"{_LINK_ATTRS}>Less like this</a>')

    def linked(parts: Sequence[tuple[str, int | None]]) -> tuple[str, str]:
        """(plain text, HTML with each name a link to its paper's page)."""
        return parts_text(parts), parts_html(parts, paper_url, _LINK_ATTRS)

    evidence = evidence_line(record)
    counts = edition_counts(record)
    summary = f"Edition {edition}" + (f": {counts}" if counts else "")
    lines = [text_of(title), summary, *([evidence] if evidence else []), url["edition"], ""]
    blocks: list[str] = [
        f'<h1 class="dm-text" style="font-size:24px;line-height:1.3;margin:0 0 4px;'
        f'color:{_TEXT}">{html.escape(text_of(title))}</h1>',
        f'<p class="dm-muted" style="margin:0 0 16px;color:{_MUTED};font-size:14px">Edition '
        f'<a href="{html.escape(url["edition"])}"{_LINK_ATTRS}>{html.escape(edition)}</a>'
        + (f": {html.escape(counts)}" if counts else "")
        + (f'<br>{html.escape(evidence)}' if evidence else "") + '</p>']
    # The lead: the best new papers, each with why it matters, before anything else.
    if picked:
        lines += ["EDITOR'S PICKS", ""]
        blocks.append(_heading("Editor's picks"))
        items = []
        for index, (pick, paper) in enumerate(picked, start=1):
            name, link = text_of(pick.name), paper_url(pick.number) or url["edition"]
            why, why_html = linked(without_subject(record.cited_parts(pick.why),
                                                   pick.number))
            backing = pick_backing(record, pick)
            about = _about(paper)
            label = "" if paper.status == "new" else " (revised: a new version)"
            mark_text, mark_html = marked(paper)
            lines += [f"{index}. {name}{label}" + (f": {why}" if why else ""), f"   {backing}",
                      f"   {about}", f"   {link}", *([f"   {mark_text}"] if mark_text else [])]
            items.append(
                f'<li style="margin:0 0 14px"><a href="{html.escape(link)}"{_LINK_ATTRS}>'
                f'<strong>{html.escape(name)}</strong></a>{html.escape(label)}'
                + (f": {why_html}" if why else "")
                + f'<br><span class="dm-muted" style="color:{_MUTED};font-size:14px">'
                f'{html.escape(backing)}<br>{_about_html(paper)}{mark_html}</span></li>')
        lines.append("")
        blocks.append(f'<ol style="margin:0 0 20px;padding-left:22px">{"".join(items)}</ol>')
    elif lead := parts_text(lead_parts(record)):  # why nothing was picked
        lines += [lead, ""]
        blocks.append(f'<p style="margin:0 0 20px">{html.escape(lead)}</p>')
    since = [text_of(line) for line in since_lines(record)]
    if since and record.continuity:
        heading = f"Since edition {record.continuity.previous}"
        lines += [heading.upper(), "", *(f"- {line}" for line in since), ""]
        blocks += [_heading(heading), '<ul style="margin:0 0 20px;padding-left:22px">' + "".join(
            f'<li style="margin:0 0 8px">{html.escape(line)}</li>' for line in since) + "</ul>"]
    overview, overview_html = linked(record.overview_parts)
    if overview:
        lines += ["THE FIELD IN THIS EDITION", "", overview, ""]
        blocks += [_heading("The field in this edition"),
                   f'<p style="margin:0 0 20px">{overview_html}</p>']
    shown = {pick.number for pick, _ in picked}
    also = [paper for paper in new if paper.number not in shown]  # each paper said once
    if also:
        heading = "Also new" if picked else "New papers"
        lines += [heading.upper(), ""]
        blocks.append(_heading(heading))
        items = []
        for paper in also:
            tldr, link = text_of(record.tldr(paper.number)), paper_url(paper.number) or ""
            mark_text, mark_html = marked(paper)
            lines += [f"- {text_of(paper.title)}" + (f": {tldr}" if tldr else ""),
                      f"  {_about(paper)}", f"  {link}", *([f"  {mark_text}"] if mark_text else [])]
            items.append(f'<li style="margin:0 0 12px"><a href="{html.escape(link)}"'
                         f'{_LINK_ATTRS}>{html.escape(text_of(paper.title))}</a>'
                         + (f"<br>{html.escape(tldr)}" if tldr else "")
                         + f'<br><span class="dm-muted" style="color:{_MUTED};font-size:14px">'
                         f'{_about_html(paper)}{mark_html}</span></li>')
        lines.append("")
        blocks.append(f'<ul style="margin:0 0 20px;padding-left:22px">{"".join(items)}</ul>')
    if pages:
        lines += ["READ ON THE SITE", ""] + [f"- {name}: {link}" for name, link in pages] + [""]
        blocks += [_heading("Read on the site"),
                   '<ul style="margin:0 0 20px;padding-left:22px">' + "".join(
                       f'<li><a href="{html.escape(link)}"{_LINK_ATTRS}>'
                       f'{html.escape(name)}</a></li>' for name, link in pages) + "</ul>"]
    lines += [f"All editions: {url['home']}"]
    if settings.unsubscribe:
        lines += [f"Unsubscribe: {settings.unsubscribe}"]
    footer = (f'<p class="dm-muted" style="margin:24px 0 0;font-size:13px;color:{_MUTED}">'
              f'<a href="{html.escape(url["home"])}"{_LINK_ATTRS}>All editions</a>'
              + (f' · <a href="{html.escape(settings.unsubscribe)}"{_LINK_ATTRS}>'
                 'Unsubscribe</a>' if _safe_link(settings.unsubscribe) else "")
              + " · Thank you to arXiv for use of its open access interoperability.</p>")
    body = "".join(blocks) + footer
    document = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        '<meta name="color-scheme" content="light dark">'
        '<meta name="supported-color-schemes" content="light dark">'
        f'<title>{html.escape(subject)}</title>{OWN_MARKUP}</head>'
        '<body class="dm-page" style="margin:0;padding:0;background:#ffffff">'
        f'<div class="dm-page dm-text" style="max-width:{WIDTH}px;margin:0 auto;padding:16px;'
        f'background:#ffffff;color:{_TEXT};font-family:-apple-system,Segoe UI,Helvetica,Arial,'
        f'sans-serif;font-size:16px;line-height:1.5;overflow-wrap:anywhere">{body}</div>'
        '</body></html>')
    return Newsletter(subject, "\n".join(lines) + "\n", document, site_url, edition)


def _about(paper: RecordPaper) -> str:
    """"Ada Author, Bo Writer et al., 2026 · arXiv 2611.00001v1: https://arxiv.org/abs/…"."""
    link = _abs(paper)
    arxiv = f"arXiv {text_of(paper.arxiv_id)}" + (f": {link}" if link else "")
    return " · ".join(x for x in (text_of(paper_byline(paper)), arxiv) if x)


def _about_html(paper: RecordPaper) -> str:
    byline, link = html.escape(text_of(paper_byline(paper))), _abs(paper)
    label = f"arXiv {html.escape(text_of(paper.arxiv_id))}"
    arxiv = (f'<a href="{html.escape(link, quote=True)}"{_LINK_ATTRS}>{label}</a>' if link
             else label)
    return f"{byline} · {arxiv}" if byline else arxiv


def _abs(paper: RecordPaper) -> str:
    """The paper's abstract page on arXiv (never the API's host, never its PDF)."""
    return safe_url(paper.abs_url) or safe_url(f"https://arxiv.org/abs/{paper.arxiv_id}") or ""


def _heading(text: str) -> str:
    return (f'<h2 class="dm-text" style="font-size:18px;margin:24px 0 8px;color:{_TEXT}">'
            f"{html.escape(text)}</h2>")


def _safe_link(value: str) -> bool:
    return value.lower().startswith(("https://", "http://", "mailto:"))


def as_message(letter: Newsletter, settings: EmailSettings, to: str) -> EmailMessage:
    """The MIME message for one reader: multipart/alternative, text first (clients show the
    last they can)."""
    message = EmailMessage()
    message["Subject"] = letter.subject
    message["From"] = settings.sender
    message["To"] = to
    message["Date"] = formatdate(localtime=False)
    message["Message-ID"] = message_id(letter.site_url, letter.edition, to)
    if _safe_link(settings.unsubscribe):
        message["List-Unsubscribe"] = f"<{settings.unsubscribe}>"
    message.set_content(letter.text)
    message.add_alternative(letter.html, subtype="html")
    return message
