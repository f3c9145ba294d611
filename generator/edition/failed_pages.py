"""A page that could not be made: said on the page itself, in our words, not the edition's end.

Model text reaches every page, and a fault it trips in one template (or a workspace's own
template that breaks at run time) must not cost the week: the page becomes a short page that
says it failed and why, the rest of the edition is published, the run report lists it, the
command exits 1 naming it (as for a failed prompt), and the next run makes it again (the
render's fingerprint is not written while a page failed).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import jinja2

from ..archive.record import EditionRecord
from ..errors import DigestError
from ..text.safe_text import md_text

log = logging.getLogger(__name__)

# What rendering text can raise: our own errors, a template's, and the faults of code over
# text (an index past its end, a value of the wrong type). Anything else is not a page's.
PAGE_FAULTS: tuple[type[Exception], ...] = (
    DigestError, jinja2.TemplateError, LookupError, ValueError, TypeError, AttributeError,
    ArithmeticError)


@dataclass(frozen=True)
class FailedPage:
    """A page (or a file of the edition: the feed, the BibTeX) that could not be made."""

    path: str  # relative to docs_dir
    why: str  # in our words


def why_failed(err: Exception) -> str:
    """What stopped a page, in our words: our own message, or the fault named as a bug."""
    if isinstance(err, DigestError):
        return str(err)
    said = " ".join(str(err).split())[:200]
    return (f"an internal fault ({type(err).__name__}{': ' + said if said else ''}) that "
            "research-digest should not have; please report it")


def failure_page(title: str, failed: FailedPage, edition: str) -> str:
    """The Markdown that stands for a page that could not be made."""
    log.error("the page %s of edition %s could not be made: %s", failed.path, edition,
              failed.why)
    return (f"# {md_text(title)}\n\n"
            f"**This page could not be made in this run.** What stopped it: {md_text(failed.why)}.\n\n"
            f"The rest of edition {edition} is published, and its run report lists this page. "
            "The next `digest build` (or `digest render`) makes it again.\n")


class PagesFailed(DigestError):
    """Pages of a render that could not be made: the rest was written. The command exits 1
    naming them; the caller may go on (the build still builds the site)."""

    exit_code = 1

    def __init__(self, edition: str, failed: tuple[FailedPage, ...],
                 record: EditionRecord | None = None) -> None:
        self.edition = edition
        self.failed = failed
        self.record = record  # the edition's record, as written
        names = ", ".join(f.path for f in failed)
        super().__init__(f"{len(failed)} page(s) of edition {edition} could not be made: "
                         f"{names}. Each says so on the site and the rest is published; run "
                         "the same command again to make them again")


class SurfaceFailed(DigestError):
    """A surface outside the site (the mail, the chat post) that could not be made: nothing
    of it was sent, the other surfaces go on, and the next `digest send` tries it again."""

    exit_code = 1

    def __init__(self, surface: str, edition: str, err: Exception) -> None:
        super().__init__(f"the {surface} of edition {edition} could not be made: "
                         f"{why_failed(err)}; nothing of it was sent, and the next "
                         "`digest send` tries it again")
