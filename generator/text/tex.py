"""TeX math in untrusted text: MathML for pages, plain Unicode for titles and the feed.

Titles, abstracts and model answers write math as TeX (`$\\omega$Test`, `$$\\frac{a}{b}$$`).
Pages get MathML made here at build time (no math CDN, readable offline) with the TeX kept
as its annotation; places that hold plain text only (a browser tab, a link's tooltip, an Atom
summary) get the formula spelt in Unicode ("ωTest", "(a)/(b)").
"""

from __future__ import annotations

import html
import logging
import re
from collections.abc import Callable
from xml.etree import ElementTree

from latex2mathml.converter import convert_to_element

log = logging.getLogger(__name__)

# Display math first ($$…$$, \[…\]), then inline (\(…\), $…$). A `$` opens math only when
# followed by a non-space and closes only after a non-space, not before a digit: pandoc's rule,
# which keeps "costs $5 and $10" as text.
MATH_RE = re.compile(
    r"(?<!\\)\$\$(?P<d1>[^$]{1,2000}?)(?<!\\)\$\$"
    r"|\\\[(?P<d2>.{1,2000}?)\\\]"
    r"|\\\((?P<i1>[^\n]{1,400}?)\\\)"
    r"|(?<![\\$\w])\$(?![\s$])(?P<i2>[^$\n]{1,400}?)(?<![\s\\])\$(?!\d)",
    re.DOTALL,
)
_MATHML_NS = "{http://www.w3.org/1998/Math/MathML}"
_MATHML_TEXT_RE = re.compile(r">([^<]+)<")
_OPEN_RE = re.compile(r"^(<math\b[^>]*>)(.*)(</math>)$", re.DOTALL)
_SUPERSCRIPTS = str.maketrans("0123456789+-−=()n", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁻⁼⁽⁾ⁿ")
_SUBSCRIPTS = str.maketrans("0123456789+-−=()", "₀₁₂₃₄₅₆₇₈₉₊₋₋₌₍₎")


# Every character Markdown (and its extensions) could read as syntax inside a line, as a
# character reference: the TeX annotation holds the formula as written, links and attribute
# lists included. (Text here never starts a line, and `&` and `#` stay: they spell the
# references latex2mathml writes.)
_MARKDOWN_SYNTAX = {ch: f"&#{ord(ch)};" for ch in "\\`*_{}[]()!|~^$"}
_MARKDOWN_SYNTAX_RE = re.compile("[" + re.escape("".join(_MARKDOWN_SYNTAX)) + "]")


def _markdown_inert(markup: str) -> str:
    """Text inside MathML elements must not be read as Markdown (emphasis, escapes, links)."""
    return _MATHML_TEXT_RE.sub(
        lambda m: ">" + _MARKDOWN_SYNTAX_RE.sub(lambda c: _MARKDOWN_SYNTAX[c.group(0)],
                                                m.group(1)) + "<",
        markup)


_NAME_RE = re.compile(r"[a-z][a-z0-9-]*\Z")


def _element(latex: str, display: bool) -> ElementTree.Element | None:
    try:
        element: ElementTree.Element = convert_to_element(
            latex, display="block" if display else "inline")
    except Exception as err:  # latex2mathml raises many kinds on bad input; none may stop a build
        log.debug("leaving math as text: %r (%s)", latex, err)
        return None
    return element


def _text(value: str | None) -> str:
    """Element text as characters: latex2mathml writes symbols as entity strings ("&#x0003C;")
    and copies `\\text{}` content as it is, so both spellings are decoded here, once."""
    return html.unescape(value or "")


def _serialise(element: ElementTree.Element) -> str:
    """MathML markup in which every text and attribute value is escaped.

    latex2mathml's own `convert` serialises and then unescapes the whole string (to turn its
    entity strings back into references), which also turns `\\text{<script>}` into a live
    tag. Here each text is decoded once and escaped once, so no text can become markup.
    """
    tag = element.tag.rpartition("}")[2]
    if not _NAME_RE.match(tag):
        return html.escape(_text(element.text), quote=False)
    attrs = "".join(f' {name}="{html.escape(_text(value), quote=True)}"'
                    for name, value in element.attrib.items() if _NAME_RE.match(name))
    inner = html.escape(_text(element.text), quote=False)
    inner += "".join(_serialise(child) + html.escape(_text(child.tail), quote=False)
                     for child in element)
    return f"<{tag}{attrs}>{inner}</{tag}>"


def _convert(latex: str, display: bool) -> str | None:
    element = _element(latex, display)
    return None if element is None else _serialise(element)


def mathml(latex: str, display: bool = False) -> str | None:
    """One formula as MathML in a span, with its TeX as the annotation (None: not TeX).

    The span keeps the formula inside its paragraph: Python-Markdown would otherwise take a
    line that starts with <math> for a block of raw HTML and break the paragraph there.
    """
    markup = _convert(latex.strip(), display)
    if markup is None:
        return None
    parts = _OPEN_RE.match(markup)
    if parts:
        source = html.escape(" ".join(latex.split()), quote=False)
        markup = (f'{parts.group(1)}<semantics>{parts.group(2)}'
                  f'<annotation encoding="application/x-tex">{source}</annotation>'
                  f'</semantics>{parts.group(3)}')
    kind = "digest-math digest-math-display" if display else "digest-math"
    return f'<span class="{kind}">{_markdown_inert(markup)}</span>'


def formula(match: re.Match[str]) -> tuple[str, bool]:
    """The TeX of a MATH_RE match, and whether it is display math."""
    tex = next(g for g in match.group("d1", "d2", "i1", "i2") if g is not None)
    return tex, match.group("d1") is not None or match.group("d2") is not None


def replace_math(text: str, convert: Callable[[str, bool], str | None]) -> str:
    """`text` with every formula replaced by `convert(tex, display)`; kept where that is None."""
    def one(match: re.Match[str]) -> str:
        replaced = convert(*formula(match))
        return match.group(0) if replaced is None else replaced

    return MATH_RE.sub(one, text)


def math_text(latex: str) -> str | None:
    """A formula as plain Unicode text ("O(m·t)", "(a+b)/2"); None when it is not TeX."""
    root = _element(latex.strip(), False)
    return None if root is None else _spell(root).strip()


def _spell(element: ElementTree.Element) -> str:
    tag = element.tag.removeprefix(_MATHML_NS)
    children = [_spell(child) for child in element]
    if tag in ("mi", "mn", "mo", "mtext", "ms"):
        return _text("".join(element.itertext()))
    if tag == "mfrac" and len(children) == 2:
        return f"{_group(children[0])}/{_group(children[1])}"
    if tag == "msqrt":
        return f"√{_group(''.join(children))}"
    if tag == "mroot" and len(children) == 2:
        return f"{_script(children[1], _SUPERSCRIPTS, '^')}√{_group(children[0])}"
    if tag in ("msup", "mover") and len(children) == 2:
        return children[0] + _script(children[1], _SUPERSCRIPTS, "^")
    if tag in ("msub", "munder") and len(children) == 2:
        return children[0] + _script(children[1], _SUBSCRIPTS, "_")
    if tag in ("msubsup", "munderover") and len(children) == 3:
        return (children[0] + _script(children[1], _SUBSCRIPTS, "_")
                + _script(children[2], _SUPERSCRIPTS, "^"))
    if tag == "mspace":
        return " "
    if tag == "mtr":
        return " ".join(children) + "; "
    return "".join(children)


def _group(text: str) -> str:
    return text if len(text) <= 1 or text.isalnum() else f"({text})"


def _script(text: str, table: dict[int, int], marker: str) -> str:
    mapped = text.translate(table)
    if mapped and all(ord(ch) in table.values() for ch in mapped):
        return mapped
    return f"{marker}{text}" if len(text) == 1 else f"{marker}({text})"


def plain_math(text: str) -> str:
    """`text` with each formula spelt in Unicode: for titles, tooltips and the feed."""
    return replace_math(text, lambda tex, _display: math_text(tex))
