"""The edition as a post in the team's chat: Slack's or Discord's incoming-webhook message, or a
plain JSON object for any other receiver.

Made from the edition's record, with the mail's own pieces, so the post says what the mail
says in the same words: the counts (`edition_counts`), the evidence line, the picks with the
reason each matters and the line saying what backs it (`pick_backing`: its mark, or why it is
a pick although nothing backs it), or why nothing was picked (`lead_parts`), what changed since
the last edition (`since_lines`), and the link to the edition. Every untrusted text (titles,
names, the model's sentences) is escaped for the chat's markup, so that it never becomes a
link, a mention (`@everyone`, `<!channel>`) or formatting of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .. import store
from ..archive.feed import evidence_line
from ..archive.lead import (
    edition_counts,
    lead_parts,
    parts_text,
    pick_backing,
    since_lines,
    without_subject,
)
from ..archive.record import EditionRecord
from ..errors import UsageError
from ..text.safe_text import cut, safe_url, text_of
from .newsletter import page_url

MAX_PICKS = 10  # Slack takes 50 blocks a message; an edition picks a handful
SLACK_SECTION_CHARS = 3000  # Slack's limit for a section's text
SLACK_HEADER_CHARS = 150
DISCORD_TITLE_CHARS = 256
DISCORD_DESCRIPTION_CHARS = 4096
# Discord's markdown (and its mentions, channels, emoji and timestamps), each escaped with "\".
_DISCORD_RE = re.compile(r"([\\*_~`|>\[\]()#<@:\-])")


@dataclass(frozen=True)
class PostPick:
    name: str
    title: str
    arxiv_id: str
    url: str  # the paper's page in this edition
    why: str  # one line, plain
    backing: str  # what backs it, in the mail's words
    updated: bool  # a new version of a paper covered before


@dataclass(frozen=True)
class ChatPost:
    """What a post says, as plain text pieces (each format marks them up its own way)."""

    digest: str
    edition: str
    url: str  # the edition's overview
    counts: str
    evidence: str
    lead: str  # why nothing was picked ("" when something was)
    picks: tuple[PostPick, ...]
    since_edition: str
    since: tuple[str, ...]

    @property
    def heading(self) -> str:
        return f"{self.digest} · edition {self.edition}"


def chat_post(title: str, record: EditionRecord, site_url: str) -> ChatPost:
    """The edition's post; refused without `site_url` (its links must be absolute)."""
    if not site_url:
        raise UsageError("a chat post's links must be absolute: set [digest] site_url in "
                         "config.toml (or DIGEST_SITE_URL) to where the site is published")
    edition = record.edition
    papers = {p.number: p for p in record.papers}
    picks = []
    for pick, paper in record.picked[:MAX_PICKS]:
        why = parts_text(without_subject(record.cited_parts(pick.why), pick.number))
        picks.append(PostPick(
            text_of(pick.name), text_of(paper.title), paper.arxiv_id,
            page_url(site_url, store.paper_page(edition, papers[pick.number].slug)), why,
            pick_backing(record, pick), paper.status != "new"))
    since = since_lines(record)
    return ChatPost(
        text_of(title), edition, page_url(site_url, store.edition_overview(edition)),
        edition_counts(record), evidence_line(record),
        "" if picks else parts_text(lead_parts(record)), tuple(picks),
        record.continuity.previous if since and record.continuity else "",
        tuple(text_of(line) for line in since) if record.continuity else ())


def plain_text(post: ChatPost) -> str:
    """The post as plain text: the JSON format's `text`, and what a notification shows."""
    lines = [post.heading + (f": {post.counts}" if post.counts else ""),
             *([post.evidence] if post.evidence else []), ""]
    if post.picks:
        lines += ["Editor's picks:"]
        for index, pick in enumerate(post.picks, start=1):
            lines += [f"{index}. {pick.name}{_updated(pick)}" + (f": {pick.why}" if pick.why
                                                                  else ""),
                      f"   {pick.backing}", f"   {pick.url}"]
        lines.append("")
    elif post.lead:
        lines += [post.lead, ""]
    if post.since:
        lines += [f"Since edition {post.since_edition}:", *(f"- {s}" for s in post.since), ""]
    return "\n".join([*lines, f"Read the edition: {post.url}"]) + "\n"


def payload(post: ChatPost, format: str) -> dict[str, Any]:
    """The webhook's JSON body for `format` ("slack", "discord" or "json")."""
    if format == "slack":
        return _slack(post)
    if format == "discord":
        return _discord(post)
    return {"digest": post.digest, "edition": post.edition, "url": post.url,
            "counts": post.counts, "evidence": post.evidence, "lead": post.lead,
            "picks": [{"name": p.name, "title": p.title, "arxiv_id": p.arxiv_id, "url": p.url,
                       "why": p.why, "backing": p.backing, "updated": p.updated}
                      for p in post.picks],
            "since": {"edition": post.since_edition, "lines": list(post.since)},
            "text": plain_text(post)}


def _updated(pick: PostPick) -> str:
    return " (updated: a new version)" if pick.updated else ""


def _link(url: str) -> str:
    """One of our URLs, with nothing in it that a chat's link syntax reads (|, <, >, parens)."""
    return safe_url(url) or ""


def slack_escape(text: str) -> str:
    """Text for Slack's mrkdwn: "&", "<" and ">" escaped, so no link or mention is made."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _slack(post: ChatPost) -> dict[str, Any]:
    def section(text: str) -> dict[str, Any]:
        return {"type": "section",
                "text": {"type": "mrkdwn", "text": cut(text, SLACK_SECTION_CHARS)}}

    e = slack_escape
    summary = f"<{_link(post.url)}|Edition {e(post.edition)}>" + (
        f": {e(post.counts)}" if post.counts else "") + (
        f"\n{e(post.evidence)}" if post.evidence else "")
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "emoji": False,
                                    "text": cut(post.heading, SLACK_HEADER_CHARS)}},
        section(summary)]
    if post.picks:
        blocks.append(section("*Editor's picks*"))
        blocks += [section(f"{i}. *<{_link(p.url)}|{e(p.name)}>*{e(_updated(p))}"
                           + (f": {e(p.why)}" if p.why else "") + f"\n{e(p.backing)}")
                   for i, p in enumerate(post.picks, start=1)]
    elif post.lead:
        blocks.append(section(e(post.lead)))
    if post.since:
        blocks.append(section(f"*Since edition {e(post.since_edition)}*\n"
                              + "\n".join(f"• {e(line)}" for line in post.since)))
    return {"text": e(post.heading + (f": {post.counts}" if post.counts else "")),
            "blocks": blocks, "unfurl_links": False, "unfurl_media": False}


def discord_escape(text: str) -> str:
    """Text for Discord's markdown: every character it reads escaped with a backslash."""
    return _DISCORD_RE.sub(r"\\\1", text)


def _discord(post: ChatPost) -> dict[str, Any]:
    e = discord_escape
    lines = [e(post.counts), *([e(post.evidence)] if post.evidence else []), ""]
    if post.picks:
        lines.append("**Editor's picks**")
        lines += [f"{i}. **[{e(p.name)}]({_link(p.url)})**{e(_updated(p))}"
                  + (f": {e(p.why)}" if p.why else "") + f"\n{e(p.backing)}"
                  for i, p in enumerate(post.picks, start=1)]
        lines.append("")
    elif post.lead:
        lines += [e(post.lead), ""]
    if post.since:
        lines += [f"**Since edition {e(post.since_edition)}**",
                  *(f"• {e(line)}" for line in post.since), ""]
    lines.append(f"[Read the edition]({_link(post.url)})")
    description = "\n".join(lines)
    if len(description) > DISCORD_DESCRIPTION_CHARS:
        tail = f"\n… [the rest on the site]({_link(post.url)})"
        description = description[:DISCORD_DESCRIPTION_CHARS - len(tail)].rsplit("\n", 1)[0] + tail
    # No mention of anyone, whatever the text says: the post pings nobody.
    return {"embeds": [{"title": cut(post.heading, DISCORD_TITLE_CHARS), "url": _link(post.url),
                        "description": description}],
            "allowed_mentions": {"parse": []}}
