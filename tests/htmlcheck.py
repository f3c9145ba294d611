"""Find live HTML in a fragment, judged as a browser parses it (html5lib, via generator.publish.inert)."""

from __future__ import annotations

from generator.publish.inert import live_in_fragment


def live_problems(html: str) -> list[str]:
    """Every element or attribute in `html` that could run script or load something."""
    return live_in_fragment(html)


def elements(html: str) -> list[tuple[str, dict[str, str]]]:
    """(tag, attributes) of every element of a fragment, in document order."""
    import html5lib

    tree = html5lib.parseFragment(html, treebuilder="etree", namespaceHTMLElements=False)
    return [(str(e.tag).rsplit("}", 1)[-1], dict(e.attrib)) for e in tree.iter()
            if isinstance(e.tag, str) and e is not tree]
