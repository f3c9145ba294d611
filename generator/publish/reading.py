"""The reading plugin: what a page needs to know of the other editions, added at build time.

A MkDocs plugin (`digest-reading`, named in mkdocs.yml and added by `digest site` when a
workspace's own mkdocs.yml lacks it). Pages are rendered once, when their edition is; which
edition is the latest is only known when the site is built, so the banner on an older
edition's pages is added here, as is the feed's auto-discovery link in every page's head.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

from mkdocs.plugins import BasePlugin, event_priority
from mkdocs.utils import get_relative_url

from .. import store
from ..store import Docs
from ..text import compiled
from .theme_files import list_installed_once

# Material's header line with the page's title (partials/header.html), and a date in it.
_TOPIC_RE = re.compile(r'(<div class="md-header__topic" data-md-component="header-topic">\s*'
                       r'<span class="md-ellipsis">)([^<]*)(</span>)')
_DATE_RE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")


class ReadingPlugin(BasePlugin):  # type: ignore[type-arg,no-untyped-call]
    """Banners on older editions' pages; a feed link in every page's head; dates whole in
    the header."""

    def __init__(self) -> None:
        self.latest: str | None = None
        # Set by `digest site` from the run's history; else (mkdocs serve) read off the folders.
        self.known_latest: str | None = None
        self.has_feed = False
        self.site_name = ""

    @event_priority(100)  # before Material's search plugin first asks the theme for templates
    def on_config(self, config: Any, **kwargs: Any) -> Any:
        # Edition names sort by date.
        self.latest = self.known_latest or max(Docs(Path(config["docs_dir"])).edition_names(),
                                               default=None)
        self.has_feed = (Path(config["docs_dir"]) / store.FEED).is_file()
        self.site_name = str(config.get("site_name") or "")
        # The digest's 404 page (publish/theme/404.html), under a workspace's own custom_dir.
        theme = config.get("theme")
        ours = str(Path(__file__).resolve().parent / "theme")
        if theme is not None and ours not in theme.dirs:
            theme.dirs.insert(1 if theme.custom_dir else 0, ours)
        if theme is not None:
            list_installed_once(theme)
        config.extra["digest_latest"] = self.latest or ""
        return config

    @event_priority(-100)  # after every other plugin has added its filters
    def on_env(self, env: Any, **kwargs: Any) -> Any:
        """The theme's templates compiled once a process (text/compiled.py), not every build:
        the cache for an Environment with this build's filters."""
        env.bytecode_cache = compiled.for_environment(env)
        return env

    def on_page_content(self, content: str, page: Any, files: Any, **kwargs: Any) -> str:
        """An older edition's page opens with a banner linking the latest edition (kept out
        of the search index, so it is not every old page's search snippet)."""
        edition = edition_of(page.file.src_uri)
        if edition is None or self.latest is None or edition >= self.latest:
            return content
        target = files.get_file_from_path(store.edition_overview(self.latest))
        if target is None:
            return content
        href = html.escape(get_relative_url(target.url, page.url), quote=True)
        return (f'<div class="admonition info digest-older" data-search-exclude>'
                f'<p class="admonition-title">An earlier edition</p>'
                f"<p>This page is from edition {html.escape(edition)}. The latest edition is "
                f'<a href="{href}">{html.escape(self.latest)}</a>.</p></div>\n{content}')

    @event_priority(-50)  # after the search plugin writes its index, before offline copies it
    def on_post_build(self, config: Any, **kwargs: Any) -> None:
        """Search results name each edition page's edition: the latest editions' pages take
        their titles from the navigation ("Research map"), alike in every week's results."""
        path = Path(config["site_dir"]) / "search" / "search_index.json"
        if not path.is_file():
            return
        data = json.loads(path.read_text(encoding="utf-8"))
        for doc in data.get("docs", []):
            location = str(doc.get("location", ""))
            edition = edition_of(location)
            title = str(doc.get("title", ""))
            if edition and "#" not in location and edition not in title:
                doc["title"] = f"{title} · {html.escape(edition)}"
        path.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")),
                        encoding="utf-8")

    def on_post_page(self, output: str, page: Any, **kwargs: Any) -> str:
        output = whole_dates(output)
        if not self.has_feed or "</head>" not in output:
            return output
        href = html.escape(get_relative_url(store.FEED, page.url or "index.html"), quote=True)
        title = html.escape(self.site_name, quote=True)
        link = f'<link rel="alternate" type="application/atom+xml" title="{title}" href="{href}">'
        head, _, rest = output.partition("</head>")
        return f"{head}{link}</head>{rest}"


def edition_of(src_uri: str) -> str | None:
    """The edition a page belongs to (None for the home page and papers' own pages)."""
    parts = src_uri.split("/")
    if len(parts) >= 3 and parts[0] == store.EDITIONS:
        return parts[1]
    return None


def whole_dates(output: str) -> str:
    """The header's page title with each date in a span that never breaks: on a phone the
    title takes two lines (digest.css), and a line break after a date's hyphen cut it."""
    return _TOPIC_RE.sub(lambda m: m.group(1) + _DATE_RE.sub(
        r'<span class="digest-date">\g<0></span>', m.group(2)) + m.group(3), output, count=1)
