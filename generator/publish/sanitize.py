"""The sanitizer: every page body's HTML cut down to what our templates and extensions make.

A MkDocs plugin (`digest-sanitize`: `digest site` and `digest serve` add it whatever mkdocs.yml
says). It is the second line of defence: text is escaped where it enters, and the finished
site is checked once more (`inert.check_site`) whether or not this plugin ran.

Removing markup must never remove text: a `<script>` or `<title>` that slipped through would
take the rest of the page with it as its "content", and the page would be quietly cut short.
So each page's text is compared before and after, and a page that lost any fails the build.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import nh3
from mkdocs.exceptions import PluginError
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


# Elements whose text a browser never shows on the page (outside SVG and MathML).
_HIDDEN = {"script", "style", "title", "textarea", "template", "noscript", "xmp", "noembed",
           "noframes", "iframe"}
_FOREIGN = {"svg", "math"}


class _Text(HTMLParser):
    """The text of an HTML fragment: all of it, or (`shown_only`) what a reader sees.

    Used on our own output: the page as Markdown made it (where a `<script>` is text that
    should have been escaped), and the sanitized page (which html5ever wrote, well nested).
    """

    def __init__(self, shown_only: bool) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._open: list[str] = []
        self._shown_only = shown_only

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in _VOID:
            self._open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in self._open:
            del self._open[len(self._open) - 1 - self._open[::-1].index(tag):]

    def handle_data(self, data: str) -> None:
        if (not self._shown_only or not any(t in _HIDDEN for t in self._open)
                or any(t in _FOREIGN for t in self._open)):
            self.parts.append(data)

    @classmethod
    def of(cls, markup: str, *, shown_only: bool) -> str:
        reader = cls(shown_only)
        reader.feed(markup)
        if reader.rawdata:  # an unclosed <script> or <style>: the rest of the page is its text
            reader.parts.append(reader.rawdata)
        else:
            reader.close()
        return "".join("".join(reader.parts).split())


_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
         "track", "wbr"}


def lost_text(before: str, after: str) -> str | None:
    """Text of `before` (a page as Markdown made it) that `after` no longer shows, or None."""
    given = _Text.of(before, shown_only=False)
    shown = _Text.of(after, shown_only=True)
    if given == shown:
        return None
    at = next((i for i, (a, b) in enumerate(zip(given, shown, strict=False)) if a != b),
              min(len(given), len(shown)))
    return given[max(0, at - 30):at + 50] or "(the end of the page)"


class SanitizePlugin(BasePlugin):  # type: ignore[type-arg,no-untyped-call]
    """Runs every page's HTML through `sanitize_html` after the Markdown is converted; under
    `mkdocs serve` also checks the built site as `digest site` does, and refuses to serve it."""

    serving = False

    def on_startup(self, *, command: str, dirty: bool) -> None:
        self.serving = command == "serve"

    def on_page_content(self, html: str, *, page: Any, **kwargs: Any) -> str:
        clean = sanitize_html(html)
        lost = lost_text(html, clean)
        if lost is not None:
            raise PluginError(
                f"{page.file.src_uri}: the sanitizer would remove text from this page (near "
                f"{lost!r}): it holds markup that hides what follows it, so the page was not "
                "built. Render the edition again with this version (`digest render --all`).")
        return clean

    def on_post_build(self, *, config: Any) -> None:
        if not self.serving:
            return  # `digest site` checks its staging folder before it publishes anything
        from .inert import check_site

        site_dir = Path(config.site_dir)
        problems = check_site(site_dir, base_path=urlsplit(config.site_url or "/").path or "/")
        if not problems:
            return
        for path in {p.path for p in problems}:
            (site_dir / path).unlink(missing_ok=True)  # never served, even for a moment
        shown = "".join(f"\n  {p}" for p in problems[:20])
        raise PluginError(f"the site holds {len(problems)} live element(s) or attribute(s) "
                          f"that could run code; those pages are not served.{shown}")
