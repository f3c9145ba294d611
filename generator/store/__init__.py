"""Where the docs folder keeps things: every path of the published Markdown, in one place.

The cache folder's layout belongs to `cache.Cache`; this is the other half. Templates link
between pages with relative paths of the same shape (`papers/<slug>.md` from an edition page).
"""

from __future__ import annotations

from pathlib import Path

from .cache import atomic_write_text
from .userfile import read_user_file

HOME = "index.md"
FEED = "feed.xml"
MARKS = "marks.md"  # how to read the evidence marks, linked from beside them
EDITIONS = "editions"
RECORD = "edition.json"
PAPERS = "papers"  # each paper's own page, the same across editions
THEMES = "themes"  # each theme's own page, across editions
RUN_REPORT = "run-report"
TRIAGE = "triage"
BIBTEX = "papers.bib"
# The editions taken off with `digest remove`, one name a line: committed with the pages, never
# published (MkDocs leaves out dotfiles), so that the workflow's restore (pipeline/restore.py)
# does not bring one back from the deployed site, which still has it until the next deploy.
REMOVED = ".removed-editions"
MAX_REMOVED_BYTES = 1024 * 1024  # a name a line: 50,000 editions taken off


def edition_dir(edition: str) -> str:
    return f"{EDITIONS}/{edition}"


def edition_overview(edition: str) -> str:
    return f"{edition_dir(edition)}/index.md"


def edition_page(edition: str, stem: str) -> str:
    return f"{edition_dir(edition)}/{stem}.md"


def edition_bibtex(edition: str) -> str:
    """Every paper of the edition as BibTeX (archive/bibtex.py), beside its overview."""
    return f"{edition_dir(edition)}/{BIBTEX}"


def paper_page(edition: str, slug: str) -> str:
    return f"{edition_dir(edition)}/papers/{slug}.md"


def theme_page(slug: str) -> str:
    """A theme's own page, whichever editions it appeared in."""
    return f"{THEMES}/{slug}.md"


def paper_home(base_slug: str) -> str:
    """A paper's own page, whichever editions it appeared in."""
    return f"{PAPERS}/{base_slug}.md"


def built(path: str) -> str:
    """A Markdown page's address in the built site, relative to its root: `.md` becomes
    `.html` (the offline plugin's links, which work on GitHub Pages too)."""
    return path.removesuffix(".md") + ".html" if path.endswith(".md") else path


def paper_home_url(base_slug: str) -> str:
    """A paper's own page's address in the built site (for the feed)."""
    return built(paper_home(base_slug))


def record(edition: str) -> str:
    return f"{edition_dir(edition)}/{RECORD}"


def edition_url(edition: str) -> str:
    """The overview's address in the built site (for the feed)."""
    return built(edition_overview(edition))


class Docs:
    """One workspace's docs folder."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def record_path(self, edition: str) -> Path:
        return self.edition_folder(edition) / RECORD

    def record_paths(self) -> list[Path]:
        return sorted((self.root / EDITIONS).glob(f"*/{RECORD}"))

    def edition_names(self) -> set[str]:
        return {path.parent.name for path in self.record_paths()}

    def folders_without_record(self) -> list[Path]:
        """Edition folders whose record is gone (a bad merge, a partial checkout): their
        pages are there, the one source of them is not."""
        folder = self.root / EDITIONS
        if not folder.is_dir():
            return []
        return sorted(p for p in folder.iterdir()
                      if p.is_dir() and not (p / RECORD).exists() and any(p.iterdir()))

    def edition_folder(self, edition: str) -> Path:
        return self.root / edition_dir(edition)

    def removed(self) -> set[str]:
        """The editions taken off on purpose (`digest remove`) and not built again since.

        Read as a regular file in docs_dir, bounded (store/userfile.py): anything else there
        (a FIFO, a link out of it, a file of megabytes) is named (UserFileError), never
        waited on or read whole."""
        try:
            data = read_user_file(self.root / REMOVED, MAX_REMOVED_BYTES, root=self.root)
        except FileNotFoundError:
            return set()
        text = data.decode("utf-8", "replace")
        return {line.strip() for line in text.splitlines() if line.strip()}

    def mark_removed(self, edition: str, removed: bool = True) -> None:
        names = self.removed() | {edition} if removed else self.removed() - {edition}
        path = self.root / REMOVED
        if names:  # replaced whole, never written through (a FIFO or a link put there)
            atomic_write_text(path, "".join(f"{n}\n" for n in sorted(names)))
        elif path.exists():
            path.unlink()
