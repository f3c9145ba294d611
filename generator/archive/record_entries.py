"""A paper and a prompt as an edition's record keeps them (record.py): the paper's metadata,
never its text, bounded to what a fetch keeps; the prompt as asked, without its messages (which
carry the bundle), with the answer it got.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from ..completions import Completion, PromptKind, PromptRequest
from ..fetch.withdrawals import MAX_NOTICE_CHARS, notice_in
from ..papers import FullText, Paper, base_of, paper_slug, valid_arxiv_id
from ..text.safe_text import MAX_AUTHOR_CHARS, MAX_TITLE_CHARS, clean, cut

# The longest abstract any fetch keeps (`[arxiv] max_abstract_chars` at its maximum): a record
# edited by hand publishes nothing a fetch could not.
MAX_RECORD_ABSTRACT_CHARS = 100_000

# A paper's state as the record keeps it; every surface calls "updated" revised (a new
# version of a paper an earlier edition covered), as archive/news.py counts it.
Status = Literal["new", "updated", "seen"]
STATUS_LABELS: dict[str, str] = {
    "new": "new in this edition",
    "updated": "revised: a new version of a paper published before",
    "seen": "seen in an earlier edition",
}
STATUS_SECTIONS: dict[str, str] = {"new": "New", "updated": "Revised", "seen": "Seen before"}



@dataclass(frozen=True)
class RecordPaper:
    """A paper as an edition published it: its metadata, never its text."""

    number: int
    arxiv_id: str
    base_id: str
    slug: str
    title: str
    status: Status
    authors: tuple[str, ...] = ()
    published: str = ""
    categories: tuple[str, ...] = ()
    abstract: str = ""
    abs_url: str = ""
    pdf_url: str | None = None
    updated: str = ""
    full_text: FullText = FullText("missing")  # how much was read; `text` is always ""
    excerpt_chars: int = 0
    name: str = ""  # the short name pages call it by
    code: tuple[str, ...] = ()  # code or data repositories the paper names
    # The version's withdrawal notice as its comment and abstract stated it ("": none). arXiv
    # often states it in the comment alone, which the record does not keep.
    notice: str = ""

    def __post_init__(self) -> None:
        # The id names files (the paper's pages, its cache entries): a record edited by hand
        # must not name one a fetch would refuse, nor a slug or base that is not the id's.
        if not valid_arxiv_id(self.arxiv_id):
            raise ValueError(f"{self.arxiv_id!r} is not an arXiv id")
        if self.base_id != base_of(self.arxiv_id) or self.slug != paper_slug(self.arxiv_id):
            raise ValueError(f"the base id {self.base_id!r} or slug {self.slug!r} is not that "
                             f"of {self.arxiv_id}")
        for url in (self.abs_url, self.pdf_url or ""):
            if url and not url.startswith(("https://", "http://")):
                raise ValueError(f"{url[:40]!r} is not a web address")

    def bounded(self) -> RecordPaper:
        """The paper with its text held to what a fetch keeps (clean, and cut to size)."""
        return replace(
            self, title=cut(clean(self.title), MAX_TITLE_CHARS),
            authors=tuple(cut(clean(a), MAX_AUTHOR_CHARS) for a in self.authors),
            abstract=cut(clean(self.abstract), MAX_RECORD_ABSTRACT_CHARS),
            name=cut(clean(self.name), MAX_TITLE_CHARS),
            notice=cut(clean(self.notice), MAX_NOTICE_CHARS))

    @property
    def withdrawal_notice(self) -> str:
        """The notice of this version ("": not withdrawn); a record written before the notice
        was kept has its abstract's."""
        return self.notice or notice_in(self.abstract)

    @property
    def base_slug(self) -> str:
        """The slug of the paper's own page across editions (papers/<slug>.md)."""
        return paper_slug(self.base_id)

    @property
    def arxiv_pdf(self) -> str:
        return self.paper.arxiv_pdf

    @property
    def paper(self) -> Paper:
        return Paper(self.arxiv_id, self.title, self.authors, self.published, self.updated,
                     self.abstract, self.categories, self.abs_url, self.pdf_url,
                     code=self.code)


@dataclass(frozen=True)
class RecordPrompt:
    """One prompt as the edition asked it (without its messages) and the answer it got."""

    name: str
    title: str
    kind: PromptKind
    completion: Completion
    question: str = ""
    max_tokens: int = 0
    temperature: float = 0.0
    thinking: bool = False
    page: str | None = None  # the stem of the page it appears on
    page_title: str = ""
    subject: int | None = None
    prompt_hash: str = ""  # PromptRequest.prompt_hash: which prompt, exactly, was answered

    @classmethod
    def of(cls, request: PromptRequest, completion: Completion, page: str | None
           ) -> RecordPrompt:
        return cls(request.name, request.title, request.kind, completion, request.question,
                   request.max_tokens, request.temperature, request.thinking, page,
                   request.page_title or request.title, request.subject, request.prompt_hash)

    @property
    def request(self) -> PromptRequest:
        """The request as the pages know it: everything but the messages."""
        return PromptRequest(self.name, self.title, self.kind, self.question, (),
                             self.max_tokens, self.temperature, self.thinking,
                             page_title=self.page_title, subject=self.subject,
                             sent_hash=self.prompt_hash)
