"""The record of a published question (questions/<slug>.json): the one source of its page.

Like an edition's record it holds everything the page shows and nothing of the papers' text:
the question, the papers the answer read (with the editions that covered each and whether arXiv
lists it as withdrawn), the answer and its evidence checks as asked and answered, the verdict of
every quoted claim and which figures the papers state. `digest render --all` makes the page from
it alone, without the cache.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..evidence.checks import ClaimCheck, EvidenceFigure
from ..papers import FullText, NumberedPaper, Paper, paper_slug
from ..store.codec import CodecError, from_data, to_data
from ..store.jsonfile import JSONFileError, load_json
from ..text.safe_text import clean_data
from .record import RecordFormatError, RecordPrompt
from .record_parts import FigureFact

log = logging.getLogger(__name__)

QUESTION_FORMAT = 1
QUESTIONS = "questions"  # the folder of docs_dir that holds them
INDEX_PAGE = f"{QUESTIONS}/index.md"
_SLUG_RE = re.compile(r"^\d{4}-\d{2}-\d{2}-[a-z0-9-]{1,80}$")


@dataclass(frozen=True)
class QuestionPaper:
    """A paper the answer read, numbered as its bundle numbered it."""

    number: int
    base_id: str
    arxiv_id: str  # its newest version in the archive
    title: str
    name: str
    editions: tuple[str, ...]  # newest first
    abs_url: str = ""
    withdrawn: str = ""  # arXiv's notice, where it listed the paper as withdrawn

    @property
    def base_slug(self) -> str:
        return paper_slug(self.base_id)

    def numbered(self) -> NumberedPaper:
        """As the citation linker knows a paper: its id without version, so that a citation
        links the paper's own page (papers/<id>.md), which every edition's render keeps."""
        return NumberedPaper(self.number, Paper(self.base_id, self.title, (), "", "", "", (),
                                                self.abs_url, None), FullText("missing"), 0)


@dataclass(frozen=True)
class QuestionRecord:
    """A question, the archive it was asked of, and its checked answer."""

    slug: str
    question: str
    asked_at: str
    papers: tuple[QuestionPaper, ...]
    prompts: tuple[RecordPrompt, ...]  # the answer, then its evidence checks
    checks: tuple[ClaimCheck, ...] | None = None  # None: no evidence was asked
    figures: tuple[FigureFact, ...] = ()
    editions_read: tuple[str, ...] = ()  # the editions the index searched, newest first
    since: str = ""
    until: str = ""
    model: str = ""
    server: str = ""
    generator: str = ""
    format: int = QUESTION_FORMAT

    @property
    def answer(self) -> RecordPrompt:
        return self.prompts[0]

    @property
    def names(self) -> dict[int, str]:
        return {p.number: p.name for p in self.papers}

    @property
    def withdrawn(self) -> dict[int, str]:
        return {p.number: p.withdrawn for p in self.papers if p.withdrawn}

    @property
    def evidence_figure(self) -> EvidenceFigure | None:
        """The answer's claims counted, as every surface counts them; None where none was
        checked."""
        if not self.checks:
            return None
        return EvidenceFigure.of(self.checks)

    @property
    def page(self) -> str:
        return page_path(self.slug)

    def to_json(self) -> dict[str, Any]:
        return dict(clean_data({"format": QUESTION_FORMAT, **to_data(self)}))

    @classmethod
    def from_json(cls, data: Any, source: str) -> QuestionRecord:
        if not isinstance(data, dict):
            raise RecordFormatError(f"{source} is not a question record (a JSON object)")
        if data.get("format") != QUESTION_FORMAT:
            raise RecordFormatError(
                f"{source} has question format {data.get('format')!r}, which this version of "
                f"research-digest does not read (it reads {QUESTION_FORMAT}); upgrade "
                "research-digest, or restore the file from git")
        try:
            record = from_data(cls, data)
        except (CodecError, KeyError, TypeError, ValueError) as err:
            raise RecordFormatError(f"{source} is missing or mangles {err} (restore it from "
                                    "git, or ask the question again with --publish)") from err
        if not record.prompts or not _SLUG_RE.fullmatch(record.slug):
            raise RecordFormatError(f"{source} holds no answer, or a slug that names no page")
        return record


def page_path(slug: str) -> str:
    return f"{QUESTIONS}/{slug}.md"


def record_path(slug: str) -> str:
    return f"{QUESTIONS}/{slug}.json"


def question_slug(day: str, question: str) -> str:
    """`<date>-<the question's first words>`: readable in an address, and short."""
    words = re.sub(r"[^a-z0-9]+", "-", question.casefold()).strip("-")
    return f"{day}-{words[:60].rstrip('-') or 'question'}"


def load_questions(docs_dir: Path) -> list[QuestionRecord]:
    """Every published question, newest first; one this version cannot read stops the run,
    named (as an edition's record does)."""
    found = []
    for path in sorted((docs_dir / QUESTIONS).glob("*.json")):
        try:
            data = load_json(path)
        except JSONFileError as err:
            raise RecordFormatError(f"{err} (restore it from git)") from err
        record = QuestionRecord.from_json(data, str(path))
        if record.slug != path.stem:
            raise RecordFormatError(f"{path} records the question {record.slug!r}, not "
                                    f"{path.stem!r}")
        found.append(record)
    return sorted(found, key=lambda q: (q.asked_at, q.slug), reverse=True)


def record_text(record: QuestionRecord) -> str:
    return json.dumps(record.to_json(), indent=2, ensure_ascii=False) + "\n"
