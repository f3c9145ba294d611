"""Make untrusted text safe to put into Markdown pages.

Titles, abstracts and author names are plain text written by strangers: every character that
Markdown or HTML would interpret is escaped, and only `$…$` math is turned into MathML (by us,
at build time, so the site needs no math CDN). Model output is Markdown and keeps its
formatting, but raw HTML and script links in it are neutralised. The site stage sanitises the
final HTML as well, so a slip here still cannot produce a live element.
"""

from __future__ import annotations

import html
import logging
import re
import unicodedata
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlparse

from .tex import MATH_RE, formula, mathml, plain_math, replace_math

log = logging.getLogger(__name__)

# Characters Python-Markdown (with the tables and attr_list extensions) would interpret.
_MD_SPECIAL_RE = re.compile(r"([\\`*_{}\[\]#+|~^])")
_LINE_START_RE = re.compile(r"^(\s*)(\d+)\.(\s)|^(\s*)([-=])", re.MULTILINE)
_ACCENT_RE = re.compile(r"\\([\"'`^~])\s*\{?\s*([A-Za-z])\s*\}?")
_BRACED_ACCENT_RE = re.compile(r"\{\\([\"'`^~])\s*\{?([A-Za-z])\}?\}")
_ACCENTS = {'"': "\u0308", "'": "\u0301", "`": "\u0300", "^": "\u0302", "~": "\u0303"}
_SAFE_URL_SCHEMES = ("http", "https")
# C0 controls but tab and newline, DEL, C1 controls, lone surrogates (never valid UTF-8), the
# XML non-characters, and the bidi embeddings, overrides and isolates that reorder the text
# around them (a title could make a neighbouring line read backwards).
_UNSAFE_CHARS_RE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff\u202a-\u202e\u2066-\u2069]")


def excerpt(quote: str) -> str:
    """A quote as a piece of a longer text: "…" where it starts or stops mid-sentence."""
    quote = " ".join(quote.split())
    if not quote:
        return quote
    head = "…" if quote[0].islower() else ""
    tail = "" if quote[-1] in ".!?\"'”’)…" else "…"
    return f"{head}{quote}{tail}"


def cut(text: str, limit: int) -> str:
    """Cut `text` to at most `limit` characters at a word boundary, marking the cut."""
    if len(text) <= limit:
        return text
    head = text[: max(limit - 1, 0)]
    space = head.rfind(" ")
    if space > limit * 0.6:
        head = head[:space]
    return head.rstrip() + "…"


# A title or name longer than these is not a title or a name: it would be carried into every
# prompt (a 200 KB title once made every bundle prompt too long for the context).
MAX_TITLE_CHARS = 500
MAX_AUTHOR_CHARS = 200


def clean(text: str) -> str:
    """Untrusted text as characters every file format we write can hold and show in order.

    Applied where text enters (arXiv fields, PDF text, model answers) and again by every
    filter that puts text on a page, so a cache written by an older version is safe too.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _UNSAFE_CHARS_RE.sub("", text)


def tex_accents(text: str) -> str:
    """Turn TeX accent escapes (B\\"uttiker, {\\'e}) into the characters they stand for."""

    def combine(match: re.Match[str]) -> str:
        return unicodedata.normalize("NFC", match.group(2) + _ACCENTS[match.group(1)])

    return _ACCENT_RE.sub(combine, _BRACED_ACCENT_RE.sub(combine, text))


def escape_markdown(text: str) -> str:
    """Plain text that Markdown renders verbatim and HTML never sees as markup."""
    text = html.escape(text, quote=False)
    text = _MD_SPECIAL_RE.sub(r"\\\1", text)
    # Line starts that would make a list, heading underline or numbered list.
    return _LINE_START_RE.sub(
        lambda m: (f"{m.group(1)}{m.group(2)}\\.{m.group(3)}" if m.group(2)
                   else f"{m.group(4)}\\{m.group(5)}"),
        text,
    )


def clean_data(value: Any) -> Any:
    """JSON-ready data with every string in it cleaned (records, before they are written)."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        return {k: clean_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean_data(v) for v in value]
    return value


def md_text(text: str) -> str:
    """Untrusted plain text (a title, an abstract) as inline Markdown, with math as MathML."""
    text = tex_accents(clean(text))
    out: list[str] = []
    last = 0
    for match in MATH_RE.finditer(text):
        markup = mathml(*formula(match))
        if markup is None:
            continue  # not TeX after all: escaped with the text around it
        out.append(escape_markdown(text[last:match.start()]))
        out.append(markup)
        last = match.end()
    out.append(escape_markdown(text[last:]))
    return "".join(out)


def md_cell(text: str) -> str:
    """Untrusted text for one table cell: one line, no column breaks."""
    return md_text(" ".join(text.split()))


def plain(text: str) -> str:
    """Untrusted text as plain characters only (math spelt in Unicode): for link labels and
    headings."""
    return escape_markdown(" ".join(plain_math(tex_accents(clean(text))).split()))


def text_of(text: str) -> str:
    """Untrusted text as a feed reader or a mail client shows it: plain, with math spelt in
    Unicode (escaped where it goes into HTML, by whoever puts it there)."""
    return plain_math(tex_accents(clean(text)))


def page_title(text: str) -> str:
    """Untrusted text for a page's front-matter title: HTML-escaped once, no Markdown.

    Themes print the title raw into <title>, the header, the navigation and the search index,
    so it must arrive as inert HTML text; MkDocs never derives it from the H1 of our pages.
    """
    return html.escape(" ".join(plain_math(tex_accents(clean(text))).split()), quote=True)


_TOOLTIP_UNSAFE_RE = re.compile(r'[<>"\\\[\]`|()$]')


def tooltip(text: str) -> str:
    """Untrusted text for a Markdown link title ("…"): nothing that could end the title or link."""
    text = plain_math(tex_accents(clean(text)))
    return " ".join(_TOOLTIP_UNSAFE_RE.sub("", text).split())[:200]


def safe_url(url: str | None) -> str | None:
    """An http(s) URL fit for a Markdown link target, or None for anything else."""
    if not url:
        return None
    parsed = urlparse(url.strip())
    if parsed.scheme not in _SAFE_URL_SCHEMES or not parsed.netloc:
        return None
    return quote(url.strip(), safe=":/?&=#%~+@,;")


# A fence opener as pymdownx.superfences reads one: a language and options, or {attributes}.
# A line that merely starts with backticks is text, and gets escaped like any other.
_FENCE_RE = re.compile(
    r"^\s{0,3}(`{3,}|~{3,})[ \t]*(?:\{[^}\n]*\}|[\w#.+\-]*(?:[ \t]+[\w-]+=\"[^\"\n]*\")*)[ \t]*$")
# Python-Markdown's own rule for a code span (markdown.inlinepatterns.BACKTICK_RE), kept to one
# line: a block boundary (a heading, a list item, a table row) can end a paragraph mid-line-run,
# and text we wrongly took for code would stay unescaped. A code span that spans lines is
# escaped like text instead: it may show an entity, never live markup.
_CODE_SPAN_RE = re.compile(r"(?<!\\)(`+)([^\n]+?)(?<!`)\1(?!`)")
_HEADING_RE = re.compile(r"^(\s{0,3})(#{1,6})(\s)")
_LINK_TARGET_RE = re.compile(r"\]\(([^)]{0,300})")
# Every line of a paragraph may define a reference, not only its first: MULTILINE.
_REF_DEF_RE = re.compile(r"^(\s{0,3})\[([^\]]+)\]:([^\n]{0,300})", re.MULTILINE)
_SCHEME_RE = re.compile(r"[a-z][a-z0-9+.\-]*:")
_STRIPPED_IN_URLS_RE = re.compile(r"[\x00-\x20<>\\]")


def _unsafe_target(target: str) -> bool:
    """Whether a link target names a scheme other than http(s) or mailto, however spelt: as
    a browser reads it, with character references decoded and tabs and spaces dropped."""
    url = _STRIPPED_IN_URLS_RE.sub("", html.unescape(target)).lower()
    scheme = _SCHEME_RE.match(url)
    return scheme is not None and scheme.group(0) not in ("http:", "https:", "mailto:")


def _neutralise_inline(text: str) -> str:
    """Escape raw HTML and non-http link targets in Markdown text outside code."""
    text = text.replace("<", "&lt;")
    text = _LINK_TARGET_RE.sub(
        lambda m: "]\\(" + m.group(1) if _unsafe_target(m.group(1)) else m.group(0), text)
    text = _REF_DEF_RE.sub(
        lambda m: (m.group(1) + "\\" + m.group(0)[len(m.group(1)):]
                   if _unsafe_target(m.group(3)) else m.group(0)), text)
    # attr_list syntax ({: …} and also { …} without the colon) could set an id, class or
    # event-handler attribute on an element, and a Markdown image would make every reader's
    # browser fetch whatever the model named. A backslash-escaped brace renders as a brace.
    return text.replace("{", "\\{").replace("![", "!\\[")


_LIST_ITEM_RE = re.compile(r"^( *)(?:[-*+]|\d{1,9}\.)[ \t]+\S")
_TABLE_ROW_RE = re.compile(r"^\s{0,3}\|.*\|\s*$")
_TABLE_RULE_RE = re.compile(r"^\s{0,3}\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")


def separate_blocks(lines: list[str]) -> list[str]:
    """Lines of one run of text, written the way Python-Markdown needs them.

    Models start a list or a table right under a line of text, go on at the margin right
    after a list, and indent nested list items by two spaces; Python-Markdown wants blank
    lines around lists and tables and four spaces per level, or it runs them into the
    paragraph. All of that is put right here.
    """
    out: list[str] = []
    in_list = in_table = False
    unit = 0  # the indent of the first nested item: 2 or 3 means two-space levels
    for i, line in enumerate(lines):
        item = _LIST_ITEM_RE.match(line)
        table_start = (_TABLE_ROW_RE.match(line) is not None and i + 1 < len(lines)
                       and _TABLE_RULE_RE.match(lines[i + 1]) is not None)
        if in_list and not item and not line.startswith((" ", "\t")):
            # Text at the margin after a list: models mean a new paragraph, not a lazy
            # continuation of the last item.
            out.append("")
            in_list, unit = False, 0
        if item and not in_list and out and out[-1].strip():
            out.append("")
        if table_start and not in_table and out and out[-1].strip():
            out.append("")
        in_list = in_list or bool(item)
        in_table = (in_table or table_start) and _TABLE_ROW_RE.match(line) is not None
        indent = len(line) - len(line.lstrip(" "))
        if in_list and indent and line.strip():
            unit = unit or (indent if item else 0)
            if unit and unit < 4:
                line = " " * round(indent * 4 / unit) + line.lstrip(" ")
        out.append(line)
    return out


def _model_math(tex: str, display: bool) -> str | None:
    """A formula of neutralised model text as MathML: the escapes undone inside it first."""
    for escaped, raw in (("&lt;", "<"), ("!\\[", "!["), ("]\\(", "]("), ("\\{", "{")):
        tex = tex.replace(escaped, raw)
    return mathml(tex, display)


def _top_heading(lines: list[str]) -> int:
    """The answer's own top heading level (1 where it has none), outside code fences."""
    fence: str | None = None
    levels = []
    for line in lines:
        marker = _FENCE_RE.match(line)
        if fence is None and marker:
            fence = marker.group(1)[0] * len(marker.group(1))
        elif fence is not None:
            if re.match(rf"^\s{{0,3}}{re.escape(fence)}{re.escape(fence[0])}*[ \t]*$", line):
                fence = None
        else:
            heading = _HEADING_RE.match(line)
            if heading:
                levels.append(len(heading.group(2)))
    return min(levels, default=1)


def md_model(text: str, shift: int = 1, transform: Callable[[str], str] | None = None, *,
             math: bool = True) -> str:
    """Model output as Markdown: formatting kept, raw HTML shown as text, headings demoted.

    Our pages own the H1 (and sometimes H2 sections), so the answer's own top heading level
    becomes H(1 + `shift`) and its deeper levels follow it, never below H6 (an answer whose
    sections are H3 reads as one whose sections are H1: no fixed step turns its top level into
    tiny capitals). `transform` (citation linking) runs on the text outside code
    after it has been made inert, so whatever markup it adds is the only markup there; then
    TeX becomes MathML, unless `math` is off (a pass that only reads the text).
    """
    def inline(segment: str) -> str:
        safe = _neutralise_inline(segment)
        linked = transform(safe) if transform else safe
        return replace_math(linked, _model_math) if math else linked

    out: list[str] = []
    fence: str | None = None
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            joined = "\n".join(separate_blocks(paragraph))
            pieces: list[str] = []
            last = 0
            for match in _CODE_SPAN_RE.finditer(joined):
                pieces.append(inline(joined[last:match.start()]))
                pieces.append(match.group(0))
                last = match.end()
            pieces.append(inline(joined[last:]))
            out.append("".join(pieces))
            paragraph.clear()

    lines = clean(text).split("\n")
    top = _top_heading(lines)
    for line in lines:
        marker = _FENCE_RE.match(line)
        if fence is None and marker:
            flush()
            fence = marker.group(1)[0] * len(marker.group(1))
            out.append(line)
        elif fence is not None:
            out.append(line)
            if re.match(rf"^\s{{0,3}}{re.escape(fence)}{re.escape(fence[0])}*[ \t]*$", line):
                fence = None
        elif not line.strip():
            flush()
            out.append(line)
        else:
            paragraph.append(_HEADING_RE.sub(
                lambda m: m.group(1) + "#" * min(6, len(m.group(2)) - top + 1 + shift)
                + m.group(3), line))
    flush()
    if fence is not None:
        out.append(fence)  # close a fence the model left open, so it cannot swallow the page
    return "\n".join(out).strip()
