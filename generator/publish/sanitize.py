"""The sanitizer: every page body's HTML cut down to what our templates and extensions make.

A MkDocs plugin (`digest-sanitize`, named in mkdocs.yml, so `digest serve` runs it too). It is
the second line of defence: text is escaped where it enters, and the finished site is checked
once more (`inert.check_site`) whether or not this plugin ran.
"""

from __future__ import annotations

from typing import Any

import nh3
from mkdocs.plugins import BasePlugin

# What our templates and Markdown extensions produce; anything else in a page is removed.
_MATHML_TAGS = {
    "math", "semantics", "annotation", "mrow", "mi", "mo", "mn", "ms", "mtext", "mspace",
    "msub", "msup", "msubsup", "mfrac", "msqrt", "mroot", "mover", "munder", "munderover",
    "mtable", "mtr", "mtd", "mstyle", "mpadded", "mphantom", "menclose", "mfenced", "merror",
}
_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt",
    "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "ins", "kbd", "li", "mark", "ol", "p",
    "pre", "s", "small", "span", "strong", "sub", "summary", "sup", "table", "tbody", "td",
    "tfoot", "th", "thead", "tr", "u", "ul",
} | _MATHML_TAGS | {"svg", "g", "rect", "line", "circle", "text", "title"}
# data-search-exclude keeps charts and paper lists out of the search index (Material reads it).
_GENERIC_ATTRS = {"class", "id", "title", "lang", "dir", "data-search-exclude"}
_ATTRS: dict[str, set[str]] = {
    "a": {"href"},
    "span": {"tabindex"},  # an evidence mark: focusable, so a tap opens its quote
    "details": {"open"},
    "th": {"align", "style"},
    "td": {"align", "style"},
    "ol": {"start"},
    "math": {"xmlns", "display"},
    **{tag: {"mathvariant", "stretchy", "fence", "separator", "lspace", "rspace", "accent",
             "accentunder", "displaystyle", "scriptlevel", "columnalign", "rowalign",
             "linethickness", "width", "height", "depth", "notation", "encoding", "movablelimits",
             "symmetric", "largeop", "minsize", "maxsize", "form"}
       for tag in _MATHML_TAGS - {"math"}},
}
_SVG_ATTRS = {"svg": {"viewBox", "width", "height", "role", "aria-label"},
              "rect": {"x", "y", "width", "height"}, "line": {"x1", "y1", "x2", "y2"},
              "circle": {"cx", "cy", "r"}, "text": {"x", "y", "text-anchor"}}
_ATTRS.update(_SVG_ATTRS)
_ATTRS = {tag: _GENERIC_ATTRS | _ATTRS.get(tag, set()) for tag in _TAGS}


def sanitize_html(html: str) -> str:
    """Remove any element or attribute a page could use to run code (the last line of defence)."""
    return str(nh3.clean(
        html,
        tags=_TAGS,
        attributes=_ATTRS,
        url_schemes={"http", "https", "mailto"},
        link_rel=None,
        strip_comments=True,
        filter_style_properties={"text-align"},
    ))


class SanitizePlugin(BasePlugin):  # type: ignore[type-arg,no-untyped-call]
    """Runs every page's HTML through `sanitize_html` after the Markdown is converted."""

    def on_page_content(self, html: str, **kwargs: Any) -> str:
        return sanitize_html(html)
