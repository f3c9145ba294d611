"""Inline SVG pictures drawn at build time: no script, no CDN, readable offline.

Colours come from classes styled in assets/digest.css, so the charts follow the light and dark
palettes. Every piece of text is escaped: titles are untrusted.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import date
from html import escape as _html_escape

from ..completions import Completion, PromptRequest
from ..kinds import BRIEF, EVIDENCE, JUDGE
from ..papers import NumberedPaper
from ..text.safe_text import clean


def escape(text: str) -> str:
    """Untrusted text for SVG: cleaned of control and bidi characters, then escaped."""
    return _html_escape(clean(text))

# Narrow enough that on a phone (about 350 px of text column) 13-unit text stays 11 px or
# more; digest.css caps the width on a laptop so the text does not grow past about 16 px.
WIDTH = 480


def _svg(height: int, body: list[str], label: str) -> str:
    # One line per element and no blank line: Markdown passes the block through untouched.
    # data-search-exclude: the labels and tooltips are not prose for the search index.
    return "\n".join([
        f'<div class="digest-chart" data-search-exclude><svg viewBox="0 0 {WIDTH} {height}" '
        f'width="100%" role="img" aria-label="{escape(label)}"><title>{escape(label)}</title>',
        *body, "</svg></div>"])


def _legend(y: int, entries: Sequence[tuple[str, str]]) -> str:
    """Swatches drawn with the chart's own classes, so the legend is right in every palette."""
    parts, x = [], 0
    for css, text in entries:
        parts.append(f'<rect x="{x}" y="{y - 11}" width="12" height="12" class="{css}"></rect>'
                     f'<text x="{x + 17}" y="{y}" class="digest-label">{escape(text)}</text>')
        x += 17 + 9 * len(text) + 18
    return "<g>" + "".join(parts) + "</g>"


def token_chart(pairs: Sequence[tuple[PromptRequest, Completion]]) -> str:
    """Completion tokens per prompt, reasoning and answer stacked, every figure written out."""
    rows = [(r, c, c.usage.completion_tokens) for r, c in pairs
            if c.ok and r.kind not in (BRIEF, EVIDENCE, JUDGE)
            and c.usage.completion_tokens is not None]
    if not rows:
        return ""  # the server reported no token counts: nothing to draw
    most = max(total for _, _, total in rows) or 1
    scale = (WIDTH - 70) / most
    series = [("digest-bar-reasoning", "reasoning", any(c.usage.reasoning_tokens for _, c, _ in rows)),
              ("digest-bar-plain", "answer", any(not r.thinking for r, _, _ in rows)),
              ("digest-bar-thinking", "answer with thinking on", any(r.thinking for r, _, _ in rows))]
    body = [_legend(16, [(css, name) for css, name, drawn in series if drawn])]
    for i, (request, completion, total) in enumerate(rows):
        y = 44 + i * 40
        reasoning = min(completion.usage.reasoning_tokens or 0, total)
        answer_w, reasoning_w = (total - reasoning) * scale, reasoning * scale
        kind = "thinking" if request.thinking else "plain"
        figure = f"{total:,}" + (f" ({reasoning:,} reasoning)" if reasoning else "")
        body.append(f'<g><text x="0" y="{y}" class="digest-label">'
                    f'{escape(request.title[:56])}</text>'
                    f'<rect x="0" y="{y + 6}" width="{reasoning_w:.1f}" height="16" '
                    f'class="digest-bar-reasoning"></rect>'
                    f'<rect x="{reasoning_w:.1f}" y="{y + 6}" width="{answer_w:.1f}" '
                    f'height="16" class="digest-bar-{kind}"></rect>'
                    f'<text x="{WIDTH}" y="{y}" text-anchor="end" class="digest-label">'
                    f'{figure}</text></g>')
    return _svg(36 + len(rows) * 40, body, "Completion tokens per prompt")


def timeline(papers: Sequence[NumberedPaper], statuses: Mapping[int, str],
             withdrawn: Collection[int] = ()) -> str:
    """The papers' submission dates on one axis, coloured by status (new, updated, seen
    before, or withdrawn: a withdrawing version is no update)."""
    statuses = {n: "withdrawn" if n in withdrawn else s for n, s in statuses.items()}
    dated = []
    for item in papers:
        try:
            dated.append((date.fromisoformat(item.paper.published), item))
        except ValueError:
            continue
    if not dated:
        return ""
    first, last = min(d for d, _ in dated), max(d for d, _ in dated)
    span = max((last - first).days, 1)
    left, right = 14, WIDTH - 14
    axis_y = 40
    levels: list[list[float]] = []  # x positions taken on each row below the axis
    body = [f'<line x1="{left}" y1="{axis_y}" x2="{right}" y2="{axis_y}" class="digest-axis"></line>',
            f'<text x="0" y="{axis_y - 10}" class="digest-label">{first.isoformat()}</text>',
            f'<text x="{WIDTH}" y="{axis_y - 10}" text-anchor="end" class="digest-label">'
            f'{last.isoformat()}</text>']
    for d, item in sorted(dated, key=lambda pair: pair[0]):
        x = left + (d - first).days / span * (right - left)
        level = next((i for i, row in enumerate(levels) if all(abs(x - o) >= 22 for o in row)),
                     len(levels))
        if level == len(levels):
            levels.append([])
        levels[level].append(x)
        y = axis_y + 20 + level * 22
        status = statuses.get(item.number, "new")
        # No number on the dot (numbers mean nothing outside the bundle, and read at 9 px on a
        # phone): the dot's colour is its status, its tooltip its title.
        tip = f"{item.paper.title} (submitted {d.isoformat()}, {status})"
        body.append(f'<g><title>{escape(tip)}</title><circle cx="{x:.1f}" cy="{y}" r="10" '
                    f'class="digest-dot digest-dot-{status}"></circle></g>')
    height = axis_y + 20 + len(levels) * 22 + 18
    shown = [s for s in ("new", "updated", "seen", "withdrawn") if s in statuses.values()]
    body.append(_legend(height - 4, [(f"digest-dot digest-dot-{s}", _STATUS_WORDS[s])
                                     for s in shown]))
    return _svg(height + 4, body, "Submission dates of the papers, by status")


_STATUS_WORDS = {"new": "new", "updated": "revised", "seen": "seen before",
                 "withdrawn": "withdrawn on arXiv"}
