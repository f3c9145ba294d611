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

from ..errors import UsageError
from ..papers import valid_arxiv_id
from ..store.cache import atomic_write_text
from ..store.codec import CodecError, from_data, to_data
from ..store.jsonfile import ABSENT, JSONFileError, load_json
from .github import Found, GitHubError

Kind = Literal["more", "less"]
KINDS: tuple[Kind, ...] = ("more", "less")
FILE = "feedback.json"
# 2: read issues (and a mark's issue) name their repository; 1 had issue numbers alone.
FORMAT = 2
READABLE = (1, 2)
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
    repo: str = ""  # the repository of that issue (owner/name)


@dataclass(frozen=True, order=True)
class ReadIssue:
    """An issue whose mark was read, in its repository: the same number in another repository
    (after [feedback] github_repo changed) is another issue."""

    repo: str
    number: int


@dataclass(frozen=True)
class Marks:
    marks: tuple[Mark, ...] = ()
    # Every issue whose mark was read: never applied again (a later mark of the same paper,
    # from the command line say, is not undone by an old issue read again).
    read: tuple[ReadIssue, ...] = ()
    format: int = 1  # a file without one is of format 1; `save_marks` writes FORMAT

    def was_read(self, repo: str, number: int) -> bool:
        return ReadIssue(repo, number) in self.read

    def with_read(self, repo: str, number: int) -> Marks:
        return replace(self, read=tuple(sorted({*self.read, ReadIssue(repo, number)})))

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


@dataclass(frozen=True)
class _Stored:
    """The file as written: format 1's read issues are numbers alone."""

    marks: tuple[Mark, ...] = ()
    read: tuple[ReadIssue | int, ...] = ()
    format: int = 1


def base_id(arxiv_id: str) -> str:
    """The id without its version (and without an "arXiv:" in front)."""
    text = arxiv_id.strip()
    if text.lower().startswith("arxiv:"):
        text = text[len("arxiv:"):]
    return _VERSION_RE.sub("", text)


def new_mark(arxiv_id: str, kind: str, source: str, issue: int | None = None,
             repo: str = "") -> Mark:
    """A mark, checked: an arXiv id and "more" or "less"."""
    base = base_id(arxiv_id)
    if not valid_arxiv_id(base):
        raise FeedbackError(f"{arxiv_id!r} is not an arXiv id (like 2611.00001 or hep-th/9901001)")
    if kind not in KINDS:
        raise FeedbackError(f"a mark is 'more' or 'less', not {kind!r}")
    return Mark(base, kind, source, datetime.now(UTC).date().isoformat(), issue, repo)


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


def load_marks(path: Path, repo: str = "") -> Marks:
    """The marks file (none yet: no marks); a mangled one names the file and the field.

    `repo` is the configured [feedback] github_repo: the issues a file of format 1 says were
    read (numbers alone) are taken as that repository's, and so are those of its marks
    (written again in format 2 by the next command that saves the file, so the attribution is
    the one of the repository configured then)."""
    try:
        data = load_json(path, missing=ABSENT)
    except JSONFileError as err:
        raise FeedbackError(f"{err}; fix or remove it") from err
    if data is ABSENT:  # `null` is no marks file: named below, like any other odd content
        return Marks()
    try:
        stored = from_data(_Stored, data)
    except CodecError as err:
        raise FeedbackError(f"{path} is not a marks file: {err}") from err
    if stored.format not in READABLE:
        raise FeedbackError(f"{path} has marks format {stored.format}; this version reads "
                            f"{', '.join(map(str, READABLE))}: upgrade research-digest")
    # A hand edit or a merge may leave a versioned id, a bad one or a paper twice: one mark a
    # paper, by its id without version, the last written counting.
    kept: dict[str, Mark] = {}
    for index, mark in enumerate(stored.marks):
        base = base_id(mark.arxiv_id)
        if not valid_arxiv_id(base):
            raise FeedbackError(f"{path}: marks[{index}].arxiv_id: {mark.arxiv_id!r} is not an "
                                "arXiv id")
        if mark.issue is not None and not mark.repo:
            mark = replace(mark, repo=repo)
        kept.pop(base, None)
        kept[base] = replace(mark, arxiv_id=base)
    read: set[ReadIssue] = set()
    for index, entry in enumerate(stored.read):
        number = entry if isinstance(entry, int) else entry.number
        if number <= 0:
            raise FeedbackError(f"{path}: read[{index}]: {number} is not an issue number")
        read.add(ReadIssue(repo, number) if isinstance(entry, int) or not entry.repo
                 else entry)
    return Marks(tuple(sorted(kept.values(), key=lambda m: m.arxiv_id)), tuple(sorted(read)),
                 stored.format)


def save_marks(path: Path, marks: Marks) -> None:
    """Write the marks (atomically), in this version's format."""
    marks = replace(marks, read=tuple(sorted(set(marks.read))), format=FORMAT)
    atomic_write_text(path, json.dumps(to_data(marks), indent=2, ensure_ascii=False) + "\n")


class IssueSource(Protocol):
    """The repository's issues, as `digest feedback pull` needs them (github.GitHubIssues)."""

    @property
    def repo(self) -> str: ...

    def open_issues(self, in_title: str) -> Found: ...

    def close(self, number: int, comment: str) -> None: ...


@dataclass(frozen=True)
class Pulled:
    added: tuple[Mark, ...]  # the marks read, in the order of their issues
    ignored: tuple[int, ...]  # open issues whose title is a mark of nothing we know (left open)
    closed: tuple[int, ...]  # the issues closed (their marks in the file)
    left: int = 0  # marks' issues beyond the page cap: the next pull reads them


def pull(source: IssueSource, path: Path, *, close: bool = True) -> Pulled:
    """Read the marks from the repository's open issues (a mark is in the title, so an issue
    a reader could not label counts too), keep them in the marks file, then close each read
    issue with a comment. The file is written before any issue is closed (a close that fails
    loses no mark), and an issue is applied once: read again, it is only closed. With
    `close` False, nothing is closed (`close_read` does it once the file is safe).

    The caller holds the workspace lock: two pulls at once would both thank every reader,
    and a pull beside `digest feedback add` would write over its mark."""
    repo = source.repo
    marks = load_marks(path, repo)
    added: list[Mark] = []
    ignored: list[int] = []
    found = source.open_issues(TAG)
    for issue in sorted(found.issues, key=lambda i: i.number):  # oldest first: the last counts
        mark_of = parse_mark(issue.title)
        if mark_of is None:
            if TAG in issue.title.casefold():
                ignored.append(issue.number)  # says it is a mark but is not one we read
            continue
        if marks.was_read(repo, issue.number):
            continue
        mark = new_mark(mark_of[0], mark_of[1], "site", issue.number, repo)
        earlier = marks.get(mark.arxiv_id)
        # Issues come newest first, a page cap leaving the oldest for the next pull: an older
        # issue read later never undoes the mark of a newer one of the same repository.
        newer = (earlier is not None and earlier.repo == repo and earlier.issue is not None
                 and earlier.issue > issue.number)
        marks = marks if newer else marks.with_mark(mark)
        marks = marks.with_read(repo, issue.number)
        added.append(mark)
    if added or marks.format != FORMAT:
        save_marks(path, marks)
    closed: tuple[int, ...] = ()
    if close:
        try:
            closed = close_read(source, marks, found)
        except GitHubError as err:
            raise type(err)(f"{err} (the marks read are kept in {path.name}; the next pull "
                            "closes their issues)") from err
    return Pulled(tuple(added), tuple(ignored), closed, found.left)


def close_read(source: IssueSource, marks: Marks, found: Found | None = None
               ) -> tuple[int, ...]:
    """Close every open issue whose mark the file has read, with a comment saying so."""
    closed = []
    for issue in (source.open_issues(TAG) if found is None else found).issues:
        mark_of = parse_mark(issue.title)
        if mark_of is None or not marks.was_read(source.repo, issue.number):
            continue
        source.close(issue.number, f"Thank you: arXiv {mark_of[0]} is marked “{mark_of[1]} "
                     "like this”. The next edition's triage reads it. (research-digest)")
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
