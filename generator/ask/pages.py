"""A question's page, the list of questions, and the answer as the terminal shows it, all made
from the question's record alone (so `digest render --all` needs no cache)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import jinja2

from .. import store
from ..archive.bibtex import Citable, bibliography
from ..archive.feed import write_feed
from ..archive.history import History
from ..archive.names import name_citations
from ..archive.question_record import (
    INDEX_PAGE,
    QUESTIONS,
    QuestionRecord,
    record_path,
    record_text,
)
from ..archive.record import EditionRecord, RecordPaper, Status
from ..archive.record_parts import FigureFact
from ..archive.values import FollowUp
from ..completions import Completion, PromptRequest
from ..config import Config
from ..edition.assemble import synthesis_pages
from ..edition.facts import Checks
from ..edition.model import SynthesisPage
from ..edition.render import make_environment, remove_stale, render_template, with_title
from ..evidence.checks import KEY, ClaimCheck
from ..evidence.claims import before_stop, plain_sentence, sentences
from ..kinds import EVIDENCE, KindRegistry
from ..papers import NumberedPaper
from ..store.cache import atomic_write_text
from ..text.safe_text import safe_url, text_of

log = logging.getLogger(__name__)


class RecordedQuestionFacts:
    """What the papers' text told the question's answer, as its record wrote it down."""

    def __init__(self, record: QuestionRecord) -> None:
        self._record = record
        self._figures = {(f.paper, f.number, f.unit): f.found for f in record.figures}

    def states(self, number: int, figure: str, unit: str) -> bool:
        return self._figures.get((number, figure, unit), False)

    def checks(self, pairs: Sequence[tuple[PromptRequest, Completion]]) -> Checks | None:
        return None if self._record.checks is None else {"ask": self._record.checks}

    def recorded(self) -> tuple[FigureFact, ...]:
        return self._record.figures

    def uncopied(self, pairs: Sequence[tuple[PromptRequest, Completion]],
                 checks: Checks | None
                 ) -> tuple[list[tuple[PromptRequest, Completion]], Checks | None]:
        return list(pairs), checks  # the record's answers were cut when it was written

    def follow_ups(self, papers: Sequence[NumberedPaper], statuses: Mapping[int, Status],
                   earlier: Sequence[tuple[RecordPaper, str]]) -> tuple[FollowUp, ...]:
        return ()


@dataclass(frozen=True)
class Site:
    """What the site has now that a question's page links: editions and papers' own pages (an
    edition taken off the site takes them along; the page then names them unlinked, or links
    the paper's arXiv page), and each paper as its newest edition cites it (BibTeX)."""

    editions: frozenset[str]
    papers: frozenset[str]  # base ids with a page of their own
    citable: Mapping[str, Citable] = field(default_factory=dict, compare=False, hash=False)

    @classmethod
    def of(cls, records: Sequence[EditionRecord]) -> Site:
        citable: dict[str, Citable] = {}
        for record in records:  # newest first: the newest edition's version of each paper
            for p in record.papers:
                citable.setdefault(p.base_id, Citable(p.arxiv_id, p.title, p.authors,
                                                      p.published, p.categories))
        return cls(frozenset(r.edition for r in records),
                   frozenset(p.base_id for r in records for p in r.papers), citable)


def bibtex_path(record: QuestionRecord) -> str:
    """The BibTeX of the papers a question's answer read, beside its page."""
    return f"{QUESTIONS}/{record.slug}.bib"


def question_bibtex(record: QuestionRecord, site: Site) -> str:
    """The papers the answer read as BibTeX, each as its newest edition has it (keys are the
    editions' keys); a paper whose editions all left the site, by its title and id alone."""
    return bibliography((site.citable.get(p.base_id) or Citable(p.arxiv_id, p.title)
                         for p in record.papers), f"Papers read to answer question {record.slug}")


def question_view(record: QuestionRecord, kinds: KindRegistry, site: Site | None = None
                  ) -> SynthesisPage:
    """The answer linked (each citation to the paper's own page) and its sentences marked."""
    facts = RecordedQuestionFacts(record)
    pairs = [(p.request, p.completion) for p in record.prompts]
    gone = {p.number: safe_url(p.abs_url) or f"https://arxiv.org/abs/{p.arxiv_id}"
            for p in record.papers
            if site is not None and p.base_id not in site.papers}
    pages, _ = synthesis_pages([p.numbered() for p in record.papers], pairs, {}, record.names,
                               facts.checks(pairs), facts, kinds, record.withdrawn,
                               link_prefix="../papers/", links=gone, marks_page="../marks.md")
    return pages[0][0]


def question_page(env: jinja2.Environment, record: QuestionRecord, kinds: KindRegistry,
                  site: Site | None = None) -> str:
    page = question_view(record, kinds, site)
    checks_sent = sum(1 for p in record.prompts if p.kind == EVIDENCE)
    everything = Site(frozenset(record.editions_read), frozenset(p.base_id for p in
                                                                 record.papers))
    return with_title(f"Question: {record.question}",
                      render_template(env, "question.md.j2", record=record, page=page,
                                      checks_sent=checks_sent, site=site or everything))


def question_pages(env: jinja2.Environment, records: Sequence[QuestionRecord],
                   kinds: KindRegistry, site: Site | None = None) -> dict[str, str]:
    """Every question's page and the list of them, by path under docs_dir."""
    pages = {record.page: question_page(env, record, kinds, site) for record in records}
    pages |= {bibtex_path(record): question_bibtex(record, site or Site(frozenset(),
                                                                         frozenset()))
              for record in records}
    if records:
        pages[INDEX_PAGE] = with_title("Questions", render_template(
            env, "questions.md.j2", questions=records))
    return pages


def write_questions(docs_dir: Path, env: jinja2.Environment, records: Sequence[QuestionRecord],
                    kinds: KindRegistry, site: Site, new: QuestionRecord | None = None
                    ) -> list[str]:
    """Write `new`'s record (first: a page is never there without its source), then every
    question's page and the list; pages no record makes any more are removed."""
    written = []
    if new is not None:
        atomic_write_text(docs_dir / record_path(new.slug), record_text(new))
        written.append(record_path(new.slug))
    pages = question_pages(env, records, kinds, site)
    for path, text in pages.items():
        atomic_write_text(docs_dir / path, text)
        written.append(path)
    remove_stale(docs_dir / QUESTIONS, {docs_dir / p for p in pages})
    for stale in (docs_dir / QUESTIONS).glob("*.bib"):
        if stale.relative_to(docs_dir).as_posix() not in pages:
            stale.unlink()
    return written


def _same_answer(a: QuestionRecord, b: QuestionRecord) -> bool:
    """Whether `b` is `a` answered again (from the cache): the same papers, answers, verdicts."""
    def shown(q: QuestionRecord) -> tuple[object, ...]:
        return (q.papers, [(p.name, p.completion.content) for p in q.prompts], q.checks,
                q.model)

    return shown(a) == shown(b)


def terminal_answer(record: QuestionRecord) -> str:
    """The answer as plain text: papers by name, each citing sentence followed by what its
    check found, then the papers with their editions and the evidence figure."""
    completion = record.answer.completion
    if not completion.ok:
        return f"The answer failed: {completion.error}"
    verdicts = {c.sentence: c for c in record.checks or ()}
    names = record.names
    flagged = {n: f"{name} (⚠ withdrawn)" for n, name in names.items()
               if n in record.withdrawn}
    lines = []
    for paragraph in completion.content.split("\n"):
        out = []
        for sentence, gap in sentences(paragraph):
            check = _check_of(sentence, verdicts)
            shown = name_citations(sentence, names | flagged)
            out.append((before_stop(shown.rstrip(), f"[{check.mark.text}]")
                        + shown[len(shown.rstrip()):] if check else shown) + gap)
        lines.append("".join(out))
    papers = [f"  {p.number}. {p.name}" + (" (⚠ withdrawn)" if p.withdrawn else "")
              + f", in edition{'s' if len(p.editions) != 1 else ''} {', '.join(p.editions)}"
              for p in record.papers]
    figure = record.evidence_figure
    evidence = (f"Evidence: {figure.sentence}\nMarks: {KEY}" if figure else
                "Evidence: no sentence of the answer cites a paper." if record.checks == ()
                else "Evidence: not checked ([evidence] is off).")
    cut = ([f"The model stopped at the {record.answer.max_tokens:,}-token limit, so the "
            "answer is cut off: raise [ask] max_tokens in config.toml for the whole of it.", ""]
           if completion.truncated else [])
    return "\n".join([text_of("\n".join(lines)).strip(), "", *cut, "Papers read:", *papers,
                      "", evidence])


def _check_of(sentence: str, verdicts: Mapping[str, ClaimCheck]) -> ClaimCheck | None:
    return verdicts.get(plain_sentence(sentence))


def publish_question(config: Config, record: QuestionRecord) -> list[str]:
    """Keep the question (its record, committed like an edition's), write its page, the list
    of questions and the feed again; the site is built by `digest site`. Another question of
    the same day and words takes a numbered slug; the same question asked again replaces its
    record (an answer from the cache is the same answer)."""
    docs = config.docs_dir
    history = History.load(docs)
    existing = {q.slug: q for q in history.questions}
    slug, n = record.slug, 2
    while slug in existing and existing[slug].question != record.question:
        slug, n = f"{record.slug}-{n}", n + 1
    record = replace(record, slug=slug)
    kept = existing.get(slug)
    if kept is not None and _same_answer(kept, record):
        record = kept  # asked again and answered from the cache: the first answer's figures
    questions = sorted([*(q for q in existing.values() if q.slug != slug), record],
                       key=lambda q: (q.asked_at, q.slug), reverse=True)
    env = make_environment(config.workspace)
    history = history.with_questions(questions)
    written = write_questions(docs, env, questions, config.registry, Site.of(history.records),
                              new=record)
    write_feed(docs, config.digest.title, config.digest.site_url, history)
    return [*written, store.FEED]
