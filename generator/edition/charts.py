"""Inline SVG pictures drawn at build time: no script, no CDN, readable offline.

Colours come from classes styled in assets/digest.css, so the charts follow the light and dark
palettes. Every piece of text is escaped: titles are untrusted.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from html import escape as _html_escape

from ..models import Completion, NumberedPaper, PromptRequest
from ..safe_text import clean


def escape(text: str) -> str:
    """Untrusted text for SVG: cleaned of control and bidi characters, then escaped."""
    return _html_escape(clean(text))

WIDTH = 680
LABEL_W = 220


def _svg(height: int, body: list[str], label: str) -> str:
    # One line per element and no blank line: Markdown passes the block through untouched.
    return "\n".join([
        f'<div class="digest-chart"><svg viewBox="0 0 {WIDTH} {height}" width="100%" '
        f'role="img" aria-label="{escape(label)}"><title>{escape(label)}</title>',
        *body, "</svg></div>"])


def token_chart(pairs: Sequence[tuple[PromptRequest, Completion]]) -> str:
    """Completion tokens per prompt, reasoning and answer stacked; thinking prompts stand out."""
    rows = [(r, c) for r, c in pairs if c.ok and r.kind not in ("brief", "evidence")]
    if not rows:
        return ""
    most = max(c.usage.completion_tokens for _, c in rows) or 1
    scale = (WIDTH - LABEL_W - 70) / most
    body: list[str] = []
    for i, (request, completion) in enumerate(rows):
        y = 28 + i * 26
        total = completion.usage.completion_tokens
        reasoning = min(completion.usage.reasoning_tokens or 0, total)
        answer_w, reasoning_w = (total - reasoning) * scale, reasoning * scale
        kind = "thinking" if request.thinking else "plain"
        tip = (f"{request.title}: {total:,} completion tokens"
               + (f", {reasoning:,} of them reasoning" if reasoning else ""))
        body.append(f'<g><title>{escape(tip)}</title>'
                    f'<text x="{LABEL_W - 8}" y="{y + 13}" text-anchor="end" class="digest-label">'
                    f'{escape(request.title[:34])}</text>'
                    f'<rect x="{LABEL_W}" y="{y}" width="{reasoning_w:.1f}" height="18" '
                    f'class="digest-bar-reasoning"></rect>'
                    f'<rect x="{LABEL_W + reasoning_w:.1f}" y="{y}" width="{answer_w:.1f}" '
                    f'height="18" class="digest-bar-{kind}"></rect>'
                    f'<text x="{LABEL_W + reasoning_w + answer_w + 6:.1f}" y="{y + 13}" '
                    f'class="digest-label">{total:,}</text></g>')
    legend = ('<text x="0" y="14" class="digest-label">Completion tokens per prompt: '
              'reasoning (light) then answer; thinking prompts in the accent colour'
              '</text>')
    return _svg(40 + len(rows) * 26, [legend, *body], "Token spend per prompt")


def timeline(papers: Sequence[NumberedPaper]) -> str:
    """The papers' submission dates on one axis, numbered as in the bundle."""
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
    left, right = 30, WIDTH - 30
    axis_y = 40
    levels: list[list[float]] = []  # x positions taken on each row below the axis
    body = [f'<line x1="{left}" y1="{axis_y}" x2="{right}" y2="{axis_y}" class="digest-axis"></line>']
    for d, item in sorted(dated, key=lambda pair: pair[0]):
        x = left + (d - first).days / span * (right - left)
        level = next((i for i, row in enumerate(levels) if all(abs(x - o) >= 16 for o in row)),
                     len(levels))
        if level == len(levels):
            levels.append([])
        levels[level].append(x)
        y = axis_y + 16 + level * 16
        tip = f"Paper {item.number}: {item.paper.title} (submitted {d.isoformat()})"
        body.append(f'<g><title>{escape(tip)}</title><circle cx="{x:.1f}" cy="{y}" r="7" '
                    f'class="digest-dot"></circle><text x="{x:.1f}" y="{y + 3}" '
                    f'text-anchor="middle" class="digest-dot-label">{item.number}</text></g>')
    body.append(f'<text x="{left}" y="{axis_y - 8}" class="digest-label">{first.isoformat()}</text>')
    body.append(f'<text x="{right}" y="{axis_y - 8}" text-anchor="end" class="digest-label">'
                f'{last.isoformat()}</text>')
    height = axis_y + 30 + len(levels) * 16
    return _svg(height, body, "Submission dates of the papers")
