"""The reader's marks: "more like this" and "less like this", by paper, for the next triage.

Marks come from the site (a pre-filled GitHub issue, read by `digest feedback pull`), the mail
(a `mailto:` with a machine-readable subject, for readers without a GitHub account) or the
command line. They are kept in one file in the workspace (`feedback.json`, committed with
`site_src/`, never on the site), one mark per paper: the last one counts. Triage reads them
as examples in its shared instructions (`triage.system_message`); a marked paper is never
picked again.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, Protocol
from urllib.parse import quote, urlencode

from .cache import atomic_write_text
from .codec import CodecError, from_data, to_data
from .errors import UsageError
from .github import Issue
from .models import valid_arxiv_id

Kind = Literal["more", "less"]
KINDS: tuple[Kind, ...] = ("more", "less")
FILE = "feedback.json"
FORMAT = 1
# What a mark says, in an issue's title or a mail's subject: "digest-feedback more 2611.00001".
TAG = "digest-feedback"
_MARK_RE = re.compile(rf"{TAG}\s*[:\-]?\s*(more|less)\s+(?:arxiv:)?(\S+)", re.IGNORECASE)
_VERSION_RE = re.compile(r"v\d+$")


class FeedbackError(UsageError):
    """The marks file is unreadable, or a mark is not one."""


@dataclass(frozen=True)
class Mark:
    arxiv_id: str  # without version: a mark is about the paper, whatever its version
    kind: Kind
    source: str  # "site" (a GitHub issue), "mail" or "command line"
    at: str  # when it was recorded, ISO date
    issue: int | None = None  # the issue it came from


@dataclass(frozen=True)
class Marks:
    marks: tuple[Mark, ...] = ()
    # Every issue whose mark was read: never applied again (a later mark of the same paper,
    # from the command line say, is not undone by an old issue read again).
    read: tuple[int, ...] = ()
    format: int = FORMAT

    def get(self, arxiv_id: str) -> Mark | None:
        base = base_id(arxiv_id)
        return next((m for m in self.marks if m.arxiv_id == base), None)

    def with_mark(self, mark: Mark) -> Marks:
        """These marks with `mark` in place of any earlier one for its paper (the last counts)."""
        return replace(self, marks=tuple(sorted(
            [m for m in self.marks if m.arxiv_id != mark.arxiv_id] + [mark],
            key=lambda m: m.arxiv_id)))

    def without(self, arxiv_id: str) -> Marks:
        base = base_id(arxiv_id)
        return replace(self, marks=tuple(m for m in self.marks if m.arxiv_id != base))

    def of_kind(self, kind: Kind) -> tuple[Mark, ...]:
        return tuple(m for m in self.marks if m.kind == kind)


def base_id(arxiv_id: str) -> str:
    """The id without its version (and without an "arXiv:" in front)."""
    text = arxiv_id.strip()
    if text.lower().startswith("arxiv:"):
        text = text[len("arxiv:"):]
    return _VERSION_RE.sub("", text)


def new_mark(arxiv_id: str, kind: str, source: str, issue: int | None = None) -> Mark:
    """A mark, checked: an arXiv id and "more" or "less"."""
    base = base_id(arxiv_id)
    if not valid_arxiv_id(base):
        raise FeedbackError(f"{arxiv_id!r} is not an arXiv id (like 2611.00001 or hep-th/9901001)")
    if kind not in KINDS:
        raise FeedbackError(f"a mark is 'more' or 'less', not {kind!r}")
    return Mark(base, kind, source, datetime.now(UTC).date().isoformat(), issue)


def parse_mark(text: str) -> tuple[str, Kind] | None:
    """(arXiv id, kind) from an issue title or body, or a mail subject; None if it is no mark."""
    match = _MARK_RE.search(text)
    if not match:
        return None
    arxiv_id = base_id(match.group(2).strip(".,;:)\"'"))
    if not valid_arxiv_id(arxiv_id):
        return None
    return arxiv_id, match.group(1).lower()  # type: ignore[return-value]


def mark_text(arxiv_id: str, kind: Kind) -> str:
    """What a mark says, machine-readable: the id and the mark, nothing else."""
    return f"{TAG} {kind} {base_id(arxiv_id)}"


def issue_link(web_url: str, repo: str, label: str, arxiv_id: str, kind: Kind) -> str:
    """A link that opens a pre-filled issue in the digest's repository (GitHub Pages has no
    server to post to): its title and body say the mark, its label lets `pull` find it."""
    text = mark_text(arxiv_id, kind)
    query = urlencode({"title": text, "labels": label, "body": text}, quote_via=quote)
    return f"{web_url.rstrip('/')}/{repo}/issues/new?{query}"


def mail_link(address: str, arxiv_id: str, kind: Kind) -> str:
    """A `mailto:` with the mark as its subject, for readers without a GitHub account."""
    return f"mailto:{quote(address, safe='@')}?subject={quote(mark_text(arxiv_id, kind))}"


def load_marks(path: Path) -> Marks:
    """The marks file (none yet: no marks); a mangled one names the file and the field."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Marks()
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise FeedbackError(f"{path} is not readable JSON ({err}); fix or remove it") from err
    try:
        marks = from_data(Marks, data)
    except CodecError as err:
        raise FeedbackError(f"{path} is not a marks file: {err}") from err
    if marks.format != FORMAT:
        raise FeedbackError(f"{path} has marks format {marks.format}; this version reads "
                            f"{FORMAT}")
    # A hand edit or a merge may leave a versioned id, a bad one or a paper twice: one mark a
    # paper, by its id without version, the last written counting.
    kept: dict[str, Mark] = {}
    for index, mark in enumerate(marks.marks):
        base = base_id(mark.arxiv_id)
        if not valid_arxiv_id(base):
            raise FeedbackError(f"{path}: marks[{index}].arxiv_id: {mark.arxiv_id!r} is not an "
                                "arXiv id")
        kept.pop(base, None)
        kept[base] = replace(mark, arxiv_id=base)
    return replace(marks, marks=tuple(sorted(kept.values(), key=lambda m: m.arxiv_id)))


def save_marks(path: Path, marks: Marks) -> None:
    atomic_write_text(path, json.dumps(to_data(marks), indent=2, ensure_ascii=False) + "\n")


class IssueSource(Protocol):
    """The repository's issues, as `digest feedback pull` needs them (github.GitHubIssues)."""

    def open_issues(self, label: str = "") -> list[Issue]: ...

    def close(self, number: int, comment: str) -> None: ...


@dataclass(frozen=True)
class Pulled:
    added: tuple[Mark, ...]  # the marks read, in the order of their issues
    ignored: tuple[int, ...]  # open issues whose title is a mark of nothing we know (left open)
    closed: tuple[int, ...]  # the issues closed (their marks in the file)


def pull(source: IssueSource, path: Path, *, close: bool = True) -> Pulled:
    """Read the marks from the repository's open issues (a mark is in the title, so an issue
    a reader could not label counts too), keep them in the marks file, then close each read
    issue with a comment. The file is written before any issue is closed (a close that fails
    loses no mark), and an issue is applied once: read again, it is only closed. With
    `close` False, nothing is closed (`close_read` does it once the file is safe)."""
    marks = load_marks(path)
    added: list[Mark] = []
    ignored: list[int] = []
    issues = source.open_issues()
    for issue in issues:
        found = parse_mark(issue.title)
        if found is None:
            if TAG in issue.title.casefold():
                ignored.append(issue.number)  # says it is a mark but is not one we read
            continue
        if issue.number in marks.read:
            continue
        mark = new_mark(found[0], found[1], "site", issue.number)
        marks = replace(marks.with_mark(mark), read=tuple(sorted({*marks.read, issue.number})))
        added.append(mark)
    if added:
        save_marks(path, marks)
    closed = close_read(source, marks, issues) if close else ()
    return Pulled(tuple(added), tuple(ignored), closed)


def close_read(source: IssueSource, marks: Marks, issues: list[Issue] | None = None
               ) -> tuple[int, ...]:
    """Close every open issue whose mark the file has read, with a comment saying so."""
    closed = []
    for issue in source.open_issues() if issues is None else issues:
        found = parse_mark(issue.title)
        if found is None or issue.number not in marks.read:
            continue
        source.close(issue.number, f"Thank you: arXiv {found[0]} is marked “{found[1]} like "
                     "this”. The next edition's triage reads it. (research-digest)")
        closed.append(issue.number)
    return tuple(closed)


@dataclass(frozen=True)
class MarkLinks:
    """Where a reader's mark goes: from a page, a pre-filled issue in the digest's repository;
    from the mail, a `mailto:` to [feedback] email (else the same issue link)."""

    repo: str = ""
    label: str = TAG
    web_url: str = "https://github.com"
    email: str = ""

    @property
    def on_site(self) -> bool:
        return bool(self.repo)

    @property
    def in_mail(self) -> bool:
        return bool(self.email or self.repo)

    def site(self, arxiv_id: str, kind: Kind) -> str:
        return issue_link(self.web_url, self.repo, self.label, arxiv_id, kind)

    def mail(self, arxiv_id: str, kind: Kind) -> str:
        return (mail_link(self.email, arxiv_id, kind) if self.email
                else self.site(arxiv_id, kind))
