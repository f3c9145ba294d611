"""Find live HTML: elements and attributes that could run code or fetch from elsewhere."""

from __future__ import annotations

from html.parser import HTMLParser

# <svg> is not listed: our charts are inline SVG. A hostile one would show up by its event
# handler attributes (on*) or a script inside it, which are checked for everywhere.
DANGEROUS_TAGS = {"script", "iframe", "object", "embed", "style", "img", "form", "input",
                  "link", "meta", "base", "video", "audio", "frame", "foreignobject", "use",
                  "animate", "set", "image"}


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))


def elements(html: str) -> list[tuple[str, dict[str, str]]]:
    collector = _Collector()
    collector.feed(html)
    return collector.tags


def live_problems(html: str, allowed_tags: set[str] = frozenset()) -> list[str]:
    """Every element or attribute in `html` that could run script; empty when the HTML is inert."""
    problems = []
    for tag, attrs in elements(html):
        if tag in DANGEROUS_TAGS - allowed_tags:
            problems.append(f"<{tag}>")
        for name, value in attrs.items():
            if name.startswith("on"):
                problems.append(f"<{tag} {name}>")
            if name in ("href", "src", "action", "formaction") and value.strip().lower().startswith(
                    ("javascript:", "data:", "vbscript:")):
                problems.append(f"<{tag} {name}={value}>")
    return problems
