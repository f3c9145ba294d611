"""The reader's marks: "more like this" and "less like this", by paper, for next week's triage.

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
    return _VERSION_RE.sub("", arxiv_id.strip())


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
    return marks


def save_marks(path: Path, marks: Marks) -> None:
    atomic_write_text(path, json.dumps(to_data(marks), indent=2, ensure_ascii=False) + "\n")


class IssueSource(Protocol):
    """The repository's issues, as `digest feedback pull` needs them (github.GitHubIssues)."""

    def open_issues(self, label: str) -> list[Issue]: ...

    def close(self, number: int, comment: str) -> None: ...


@dataclass(frozen=True)
class Pulled:
    added: tuple[Mark, ...]  # the marks read, in the order of their issues
    ignored: tuple[int, ...]  # issues with the label that are not a mark (left open)


def pull(source: IssueSource, label: str, path: Path) -> Pulled:
    """Read the marks from the open issues with `label`, keep them in the marks file, then
    close each with a comment. The file is written before any issue is closed, so a close that
    fails loses no mark (the next pull reads that issue again: the same mark, once)."""
    marks = load_marks(path)
    added: list[Mark] = []
    ignored: list[int] = []
    for issue in source.open_issues(label):
        found = parse_mark(issue.title) or parse_mark(issue.body)
        if found is None:
            ignored.append(issue.number)
            continue
        mark = new_mark(found[0], found[1], "site", issue.number)
        marks = marks.with_mark(mark)
        added.append(mark)
    if added:
        save_marks(path, marks)
    for mark in added:
        assert mark.issue is not None
        source.close(mark.issue, f"Thank you: arXiv {mark.arxiv_id} is marked “{mark.kind} like "
                     "this”. The next edition's triage reads it. (research-digest)")
    return Pulled(tuple(added), tuple(ignored))


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
