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
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate
from urllib.parse import urlsplit

from .. import store
from ..config import EmailSettings
from ..edition.feed import evidence_line, text_of
from ..edition.record import EditionRecord
from ..errors import UsageError

WIDTH = 640
# A {pick} and what joins it to the rest (before it or after it), dropped when nothing was picked.
_PICK_RE = re.compile(r"\s*[:·—–-]\s*\{pick\}|\s*\(\{pick\}\)|\{pick\}\s*[:·—–-]?\s*")
_FIELD_RE = re.compile(r"\{(title|edition|pick)\}")
_TEXT, _MUTED, _LINK = "#1f2328", "#57606a", "#0b57d0"  # 4.5:1 or more on white


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
               settings: EmailSettings) -> Newsletter:
    """The edition's newsletter; refused without `site_url` (its links must be absolute)."""
    if not site_url:
        raise UsageError("an email's links must be absolute: set [digest] site_url in "
                         "config.toml (or DIGEST_SITE_URL) to where the site is published")
    edition = record.edition
    url = {"home": page_url(site_url, store.HOME),
           "edition": page_url(site_url, store.edition_overview(edition))}
    picks = record.picks
    picked = record.picked
    subject = subject_line(settings.subject, text_of(title), edition,
                           text_of(picked[0][0].name) if picked else "")
    papers = {p.number: p for p in record.papers}
    new = [p for p in record.papers if p.status == "new"]
    overview = text_of(record.overview)
    pages = [(text_of(p.title), page_url(site_url, store.edition_page(edition, p.stem)))
             for p in record.pages]

    def paper_url(number: int) -> str:
        return page_url(site_url, store.paper_page(edition, papers[number].slug))

    evidence = evidence_line(record)
    lines = [text_of(title), f"Edition {edition}: {len(record.papers)} papers, {len(new)} new",
             *([evidence] if evidence else []), url["edition"], ""]
    blocks: list[str] = [
        f'<h1 style="font-size:24px;line-height:1.3;margin:0 0 4px;color:{_TEXT}">'
        f'{html.escape(text_of(title))}</h1>',
        f'<p style="margin:0 0 20px;color:{_MUTED};font-size:14px">Edition '
        f'<a href="{html.escape(url["edition"])}" style="color:{_LINK}">{html.escape(edition)}</a>'
        f': {len(record.papers)} papers, {len(new)} new'
        + (f'<br>{html.escape(evidence)}' if evidence else "") + '</p>']
    if picks:
        lines += ["EDITOR'S PICKS", ""]
        blocks.append(_heading("Editor's picks"))
        items = []
        for index, pick in enumerate(picks, start=1):
            name, why = text_of(pick.name), text_of(pick.why)
            link = paper_url(pick.number)
            score = f" (triage {pick.score}/10)" if pick.score is not None else ""
            lines += [f"{index}. {name}{score}" + (f": {why}" if why else ""), f"   {link}"]
            items.append(f'<li style="margin:0 0 10px"><a href="{html.escape(link)}" '
                         f'style="color:{_LINK};font-weight:bold">{html.escape(name)}</a>'
                         f'{html.escape(score)}' + (f": {html.escape(why)}" if why else "")
                         + "</li>")
        lines.append("")
        blocks.append(f'<ol style="margin:0 0 20px;padding-left:22px">{"".join(items)}</ol>')
    if overview:
        lines += ["THE FIELD IN THIS EDITION", "", overview, ""]
        blocks += [_heading("The field in this edition"),
                   f'<p style="margin:0 0 20px">{html.escape(overview)}</p>']
    if new:
        lines += ["NEW PAPERS", ""]
        blocks.append(_heading("New papers"))
        items = []
        for paper in new:
            tldr, link = text_of(record.tldr(paper.number)), paper_url(paper.number)
            lines += [f"- {text_of(paper.title)}" + (f": {tldr}" if tldr else ""), f"  {link}"]
            items.append(f'<li style="margin:0 0 10px"><a href="{html.escape(link)}" '
                         f'style="color:{_LINK}">{html.escape(text_of(paper.title))}</a>'
                         + (f'<br><span style="color:{_MUTED}">{html.escape(tldr)}</span>'
                            if tldr else "") + "</li>")
        lines.append("")
        blocks.append(f'<ul style="margin:0 0 20px;padding-left:22px">{"".join(items)}</ul>')
    if pages:
        lines += ["READ ON THE SITE", ""] + [f"- {name}: {link}" for name, link in pages] + [""]
        blocks += [_heading("Read on the site"),
                   '<ul style="margin:0 0 20px;padding-left:22px">' + "".join(
                       f'<li><a href="{html.escape(link)}" style="color:{_LINK}">'
                       f'{html.escape(name)}</a></li>' for name, link in pages) + "</ul>"]
    lines += [f"All editions: {url['home']}"]
    if settings.unsubscribe:
        lines += [f"Unsubscribe: {settings.unsubscribe}"]
    footer = (f'<p style="margin:24px 0 0;font-size:13px;color:{_MUTED}">'
              f'<a href="{html.escape(url["home"])}" style="color:{_LINK}">All editions</a>'
              + (f' · <a href="{html.escape(settings.unsubscribe)}" style="color:{_LINK}">'
                 'Unsubscribe</a>' if _safe_link(settings.unsubscribe) else "")
              + " · Thank you to arXiv for use of its open access interoperability.</p>")
    body = "".join(blocks) + footer
    document = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        '<meta name="color-scheme" content="light only">'
        f'<title>{html.escape(subject)}</title></head>'
        '<body style="margin:0;padding:0;background:#ffffff">'
        f'<div style="max-width:{WIDTH}px;margin:0 auto;padding:16px;background:#ffffff;'
        f'color:{_TEXT};font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;'
        f'font-size:16px;line-height:1.5;overflow-wrap:anywhere">{body}</div></body></html>')
    return Newsletter(subject, "\n".join(lines) + "\n", document, site_url, edition)


def _heading(text: str) -> str:
    return (f'<h2 style="font-size:18px;margin:24px 0 8px;color:{_TEXT}">'
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
