"""The last gate before a site is published: nothing live in any file the build wrote.

Untrusted text (titles, authors, abstracts, model answers) is escaped where it enters, and the
sanitizer plugin cleans each page body. Neither covers what a theme or another site engine
prints around the body (the <head>, the navigation, the search index), and a workspace may
drop the plugin. So the finished site is parsed once more, as a browser parses it (lexbor,
through selectolax, implements the HTML5 parsing algorithm in C: the check costs a fraction
of the MkDocs build it follows), and anything that could run code or load something is
reported with its page. Liveness is never judged with regular expressions over markup.

What the theme itself puts on every page (its scripts, stylesheets, search form) is learnt
from the site's own 404 page, which carries no untrusted text; a construct is allowed on a
page only if the same construct, with its URLs resolved, is on the 404 page too.
"""

from __future__ import annotations

import json
import logging
import posixpath
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from xml.etree import ElementTree

from selectolax.lexbor import LexborHTMLParser

log = logging.getLogger(__name__)

# Live wherever they appear, theme or not: they embed, navigate or redirect the page.
_ALWAYS_LIVE_TAGS = {"iframe", "frame", "frameset", "object", "embed", "applet", "portal", "base"}
# Allowed only as the theme has them: they run code, load resources or submit data.
_GATED_TAGS = {"script", "style", "form", "input", "button", "textarea", "select", "img",
               "image", "video", "audio", "source", "track", "use", "animate", "set",
               "animatemotion", "animatetransform", "foreignobject", "handler", "listener"}
_URL_ATTRS = {"href", "src", "action", "formaction", "data", "poster", "background", "codebase",
              "cite", "longdesc", "ping", "srcset", "xlink:href", "to", "from", "values",
              "manifest", "archive", "lowsrc", "dynsrc", "icon"}
_RISKY_ATTRS = _URL_ATTRS | {"type", "rel", "http-equiv", "content", "attributename", "style"}
_INERT_SCRIPT_TYPES = {"application/json", "application/ld+json"}
_HARMLESS_RELS = {"prev", "next", "canonical", "alternate", "author", "license", "help",
                  "bookmark", "nofollow", "noopener", "noreferrer", "tag", "search", "me"}
_DANGEROUS_SCHEMES = ("javascript:", "vbscript:", "livescript:", "mocha:")
_SAFE_DATA_URL_RE = re.compile(r"data:image/(?:png|gif|jpeg|webp|avif)[;,]")
_STRIPPED_IN_URLS_RE = re.compile(r"[\t\n\r]")  # removed anywhere in a URL (WHATWG)
_C0_AND_SPACE = "".join(map(chr, range(0x21)))  # stripped from both ends of a URL (WHATWG)
_CSS_ESCAPE_RE = re.compile(r"\\([0-9a-fA-F]{1,6})\s?|\\(.)", re.DOTALL)
_CSS_COMMENT_RE = re.compile(r"/\*.*?\*/", re.DOTALL)
_CSS_LOADS_RE = re.compile(r"url\s*\(|image-set\s*\(|@import|expression\s*\(|behavior\s*:|"
                           r"-moz-binding|src\s*\(")
# String literals in the theme's inline scripts that carry the page's way to the site root.
_PATH_LITERAL_RE = re.compile(r"""(["'])(?:\.{1,2}/?)*(?:/[^"'\s]*)?\1""")
# What makes an element worth a closer look; any other element is passed over unread.
_TAGS_TO_JUDGE = _ALWAYS_LIVE_TAGS | _GATED_TAGS | {"meta", "link", "script"}
_ATTRS_TO_JUDGE = _URL_ATTRS | {"style", "srcdoc"}
_XHTML = "http://www.w3.org/1999/xhtml"
_FOREIGN_XML_NAMESPACES = (_XHTML, "http://www.w3.org/2000/svg", "http://www.w3.org/1998/Math/MathML")


@dataclass(frozen=True)
class LiveMarkup:
    """One construct that could run code or load something, and where it is."""

    path: str  # relative to the site folder
    what: str

    def __str__(self) -> str:
        return f"{self.path}: {self.what}"


def check_site(site_dir: Path, *, base_path: str = "/") -> list[LiveMarkup]:
    """Everything live in `site_dir` that the theme's 404 page does not also have.

    `base_path` is the path of the site's URL (`/repo/` on GitHub Pages), which the 404 page
    uses for its links where other pages use relative ones.
    """
    baseline: set[str] = set()
    not_found = site_dir / "404.html"
    if not_found.is_file():
        baseline = {f for f, _ in _constructs(_parse(not_found), "404.html", base_path)}
    problems: list[LiveMarkup] = []
    for path in sorted(site_dir.rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(site_dir).as_posix()
        suffix = path.suffix.lower()
        if suffix in (".html", ".htm"):
            problems += [LiveMarkup(rel, what) for fingerprint, what
                         in _constructs(_parse(path), rel, base_path)
                         if fingerprint not in baseline]
        elif suffix in (".xml", ".svg", ".xhtml"):
            problems += [LiveMarkup(rel, what) for what in _xml_problems(path)]
        elif rel in ("search/search_index.json", "search/search_index.js"):
            problems += [LiveMarkup(rel, what) for what in _search_index_problems(path)]
    return problems


def live_in_fragment(html: str, allowed: str = "") -> list[str]:
    """What is live in an HTML fragment on its own (no theme allowed): for search entries.
    `allowed`: markup of our own (the mail's constant stylesheet) that may stand in it as is."""
    known = {fp for fp, _ in _constructs(LexborHTMLParser(allowed), "fragment.html", "/")
             } if allowed else set()
    return [what for fp, what in _constructs(LexborHTMLParser(html), "fragment.html", "/")
            if fp not in known]


def _parse(path: Path) -> LexborHTMLParser:
    return LexborHTMLParser(path.read_bytes())


def _local(name: str) -> str:
    if name.startswith("{"):
        namespace, _, local = name[1:].partition("}")
        prefix = "xlink:" if namespace.endswith("/xlink") else ""
        return prefix + local.lower()
    return name.lower()


def _constructs(tree: LexborHTMLParser, page: str, base_path: str
                ) -> Iterator[tuple[str, str]]:
    """(fingerprint, description) for each live construct; an always-live one gets a
    fingerprint no baseline holds."""
    if tree.root is None:
        return
    for element in tree.root.traverse(include_text=False):
        raw_tag = element.tag
        if raw_tag is None or raw_tag[:1] in ("-", "_"):
            continue  # comments, the doctype
        tag = raw_tag.lower()
        raw = element.attributes
        # Most elements are plain text structure (p, span, li with a class): nothing to judge.
        if tag not in _TAGS_TO_JUDGE and not any(
                k.lower() in _ATTRS_TO_JUDGE or k[:2].lower() == "on" for k in raw):
            continue
        attrs = {_local(k): v or "" for k, v in raw.items()}
        shown = _describe(tag, attrs)
        for name, value in attrs.items():
            if name in _URL_ATTRS and _dangerous_url(tag, name, value):
                yield f"!{page}", f"{shown} (a script URL in {name})"
            if name == "style" and _loads(value):
                yield f"!{page}", f"{shown} (a style that loads something)"
            if name == "srcdoc":
                yield f"!{page}", f"{shown} (an embedded document)"
        if tag in _ALWAYS_LIVE_TAGS:
            yield f"!{page}", shown
            continue
        if tag == "meta" and attrs.get("http-equiv", "").strip().lower() in ("refresh", "set-cookie"):
            yield f"!{page}", shown
            continue
        handlers = sorted(n for n in attrs if n.startswith("on"))
        if tag == "script" and attrs.get("type", "").strip().lower() in _INERT_SCRIPT_TYPES:
            gated = bool(handlers)
        elif tag == "link":
            rels = set(attrs.get("rel", "").lower().split())
            gated = bool(handlers) or not rels <= _HARMLESS_RELS
        else:
            gated = tag in _GATED_TAGS or bool(handlers)
        if gated:
            yield _fingerprint(tag, attrs, element, page, base_path), shown


def _describe(tag: str, attrs: dict[str, str]) -> str:
    parts = [tag] + [f'{k}="{v[:60]}"' for k, v in attrs.items()
                     if k in _RISKY_ATTRS or k.startswith("on")]
    return "<" + " ".join(parts) + ">"


def _fingerprint(tag: str, attrs: dict[str, str], element: Any, page: str,
                 base_path: str) -> str:
    risky = []
    for name in sorted(attrs):
        if name not in _RISKY_ATTRS and not name.startswith("on"):
            continue
        value = attrs[name]
        if name in _URL_ATTRS:
            value = _site_path(value, page, base_path)
        risky.append(f"{name}={value}")
    text = ""
    if tag in ("script", "style"):
        text = _PATH_LITERAL_RE.sub('"."', (element.text(deep=True) or "").strip())
    return "\x1f".join([tag, *risky, text])


def _site_path(url: str, page: str, base_path: str) -> str:
    """A URL as a path from the site root, so the 404 page's links match the pages' links."""
    parts = urlsplit(url.strip())
    if parts.scheme or parts.netloc:
        return url.strip()
    if parts.path.startswith("/"):
        path = "/" + parts.path.removeprefix(base_path.rstrip("/") + "/").lstrip("/")
    else:
        path = posixpath.normpath(posixpath.join("/", posixpath.dirname(page), parts.path))
    return path


def _dangerous_url(tag: str, name: str, value: str) -> bool:
    """A URL a browser would run as script or open as a document, in any spelling."""
    candidates = [value] if name not in ("srcset", "values") else re.split(r"[,;]", value)
    for candidate in candidates:
        url = _STRIPPED_IN_URLS_RE.sub("", candidate).strip(_C0_AND_SPACE).lower()
        if url.startswith(_DANGEROUS_SCHEMES):
            return True
        if url.startswith("data:") and not (tag in ("img", "source")
                                             and _SAFE_DATA_URL_RE.match(url)):
            return True
    return False


def _loads(css: str) -> bool:
    """Whether CSS could load something (url(), @import, old IE bindings), escapes decoded."""
    def unescape(match: re.Match[str]) -> str:
        if match.group(1):
            code = int(match.group(1), 16)
            return chr(code) if 0 < code < 0x110000 else "\ufffd"
        return match.group(2)

    text = _CSS_ESCAPE_RE.sub(unescape, _CSS_COMMENT_RE.sub("", css)).lower()
    return bool(_CSS_LOADS_RE.search(re.sub(r"\s+", " ", text)))


def _xml_problems(path: Path) -> Iterable[str]:
    """A feed, sitemap or SVG file: well-formed, no DTD, nothing a browser would run."""
    data = path.read_bytes()
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data or b"<?xml-stylesheet" in data:
        yield "a DTD or stylesheet instruction"
    try:
        root = ElementTree.fromstring(data)
    except ElementTree.ParseError as err:
        yield f"not well-formed XML ({err})"
        return
    is_svg = path.suffix.lower() == ".svg"
    for element in root.iter():
        namespace = element.tag[1:].partition("}")[0] if element.tag.startswith("{") else ""
        tag = _local(element.tag)
        if (namespace in _FOREIGN_XML_NAMESPACES and not is_svg) or tag in _GATED_TAGS | {"script"}:
            yield f"<{tag}> in the {namespace or 'default'} namespace"
        if element.attrib.get("type") == "html" and element.text:
            # Atom's escaped HTML (a feed entry's content): feed readers render it as a page.
            yield from (f"{what} in the HTML of <{tag}>" for what in live_in_fragment(element.text))
        for name, value in element.attrib.items():
            local = _local(name)
            if local.startswith("on"):
                yield f"<{tag} {local}>"
            elif local in _URL_ATTRS and _dangerous_url(tag, local, value):
                yield f"<{tag} {local}> with a script URL"


def _search_index_problems(path: Path) -> Iterable[str]:
    """The search index: Material renders each entry's title and text as HTML."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".js":
        text = text[text.find("{"):text.rfind("}") + 1]
    try:
        docs = json.loads(text).get("docs", [])
    except ValueError as err:
        yield f"an unreadable search index ({err})"
        return
    for doc in docs:
        for field in ("title", "text"):
            for what in live_in_fragment(str(doc.get(field, ""))):
                yield f"{what} in the search entry for {str(doc.get('location', ''))[:80]}"
