"""`digest ask`: a question answered from the archive, its citing sentences checked.

The index (ask/index.py) finds the papers; the records of the editions that covered them say
what the digest knows of each (ask/archive.py); the question goes to the server as a request of
the "ask" kind over that bundle, through the same synthesis stage as an edition's prompts (the
cache, the width, the deadlines, its evidence checks as follow-ups), so any server that builds an
edition answers questions, and the same question over the same papers costs nothing twice.
Nothing relevant in the archive: nothing is sent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from .. import __version__
from ..archive.history import History, read_record
from ..archive.prose import read_away
from ..archive.question_record import QuestionPaper, QuestionRecord, question_slug
from ..archive.record import EditionRecord, RecordPrompt
from ..ask.archive import ArchivePaper, fitted_bundle, gather
from ..ask.index import ArchiveIndex, Hit, IndexUpdate
from ..completions import PromptRequest, SynthesisResult
from ..config import Config
from ..edition.assemble import synthesis_pages
from ..edition.facts import TextFacts
from ..errors import UsageError
from ..evidence.naming import answer_names
from ..evidence.requests import check_tokens
from ..kinds import ASK
from ..papers import Bundle
from ..prompts.builders import build_requests
from ..store import Docs
from ..synthesis.batch import Observer
from ..synthesis.capabilities import load_capabilities, save_capabilities
from ..synthesis.continuation import with_continuations
from ..synthesis.planning import DEFAULT_CHARS_PER_TOKEN, ESTIMATE_SAFETY, PROMPT_OVERHEAD_TOKENS
from .services import Services
from .synthesize import answer_all, answered, learn_server

log = logging.getLogger(__name__)

INDEX_FILE = "archive-index.sqlite"  # in the cache folder: rebuilt from the records at will


@dataclass(frozen=True)
class Asked:
    """What `digest ask` found: the record of its answer (None: nothing relevant, nothing
    sent), why not, and what the index did."""

    record: QuestionRecord | None
    nothing: str = ""
    index: IndexUpdate = IndexUpdate()
    requests_sent: int = 0
    result: SynthesisResult | None = None


def archive_index(config: Config, services: Services) -> tuple[ArchiveIndex, IndexUpdate]:
    """The archive's index, brought up to date with the committed records (only new or
    changed ones are read); a missing record beside its pages stops it, named."""
    History.load(config.docs_dir).check_complete()
    index = ArchiveIndex(services.cache.root / INDEX_FILE)
    files = [(path.parent.name, path) for path in Docs(config.docs_dir).record_paths()]
    return index, index.update(files, read_record)


def ask_stage(config: Config, services: Services, question: str, *, since: str = "",
              until: str = "", papers: int | None = None, observer: Observer | None = None,
              now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> Asked:
    """Answer `question` from the editions in [since, until]; the record is not written here
    (`--publish` writes it, with its page)."""
    question = " ".join(question.split())
    if not question:
        raise UsageError("the question is empty: `digest ask \"what have we seen on ...?\"`")
    index, update = archive_index(config, services)
    editions = [e for e in index.editions() if (not since or e >= since)
                and (not until or e[:len(until)] <= until)]
    if not editions:
        return Asked(None, _no_editions(since, until), update)
    hits = index.search(question, papers or config.ask.papers, since, until)
    if not hits:
        return Asked(None, f"Nothing in the archive ({len(editions)} edition(s), "
                           f"{editions[0]} to {editions[-1]}) matches the question's words; no "
                           "request was sent. Ask with other words, or a wider --since/--until.",
                     update)
    found = _papers(config, services, index, hits)
    result, bundle = _answer(config, services, question, found, observer)
    asked_at = now().isoformat(timespec="seconds")
    record = question_record(config, question, found, result, bundle, asked_at,
                             tuple(reversed(editions)), since, until)
    sent = sum(1 for c in result.completions if not c.from_cache)
    return Asked(record, "", update, sent, result)


def question_record(config: Config, question: str, found: Sequence[ArchivePaper],
                    result: SynthesisResult, bundle: Bundle, asked_at: str,
                    editions_read: tuple[str, ...], since: str = "", until: str = ""
                    ) -> QuestionRecord:
    """The record of a question answered over the papers `found`: its answer's claims checked
    and decided once, as an edition's are, and the figures the papers state written down."""
    pairs = with_continuations(result.pairs())  # an answer continued past its budget, whole
    facts = TextFacts(bundle.papers, config.registry)
    checks = facts.checks(pairs)
    # Checked as they came (their evidence numbered the claims so), recorded without long
    # copies of a paper's full text: the record, the page and the terminal show the same.
    pairs, checks = facts.uncopied(pairs, checks)
    listed = tuple(QuestionPaper(n, p.base_id, p.paper.arxiv_id, p.paper.title, p.name,
                                 p.editions, p.paper.abs_url, p.withdrawn)
                   for n, p in enumerate(found, start=1))
    # An answer citing no paper had nothing to check: (), not None ("evidence is off").
    answered = any(r.kind == ASK and c.ok for r, c in pairs)
    # A sentence the page drops for reading (a paper agreeing with itself) keeps no verdict.
    names = {p.number: p.name for p in listed}
    answer = next((c.content for r, c in pairs if r.kind == ASK and c.ok), "")
    given = answer_names(answer, {p.number: p.title for p in listed})
    ask_checks = (tuple(c for c in (checks or {}).get("ask", ())
                        if not read_away(c.sentence, names, given))
                  if checks is not None or (config.evidence.enabled and answered) else None)
    # Linked once with the papers' text, so that the figures they state are written down.
    synthesis_pages([p.numbered() for p in listed], pairs, {}, names,
                    {"ask": ask_checks} if ask_checks is not None else None, facts,
                    config.registry, {p.number: p.withdrawn for p in listed if p.withdrawn},
                    link_prefix="../papers/")
    return QuestionRecord(
        slug=question_slug(asked_at[:10], question), question=question, asked_at=asked_at,
        papers=listed,
        prompts=tuple(RecordPrompt.of(r, c, "question" if r.kind == ASK else None)
                      for r, c in pairs),
        checks=ask_checks,
        figures=facts.recorded(), editions_read=editions_read, since=since,
        until=until, model=result.model, server=result.server, generator=__version__)


def _no_editions(since: str, until: str) -> str:
    if since or until:
        return (f"No edition of the archive is in the window asked for ({since or 'the first'} "
                f"to {until or 'the last'}); no request was sent.")
    return ("The archive has no edition yet (`digest build` makes the first); no request was "
            "sent.")


def _papers(config: Config, services: Services, index: ArchiveIndex, hits: list[Hit]
            ) -> list[ArchivePaper]:
    """The hits with what every edition that covered them says (only those records read)."""
    covering = index.covering([h.base_id for h in hits])
    docs = Docs(config.docs_dir)
    records: dict[str, EditionRecord] = {}
    for edition in sorted({e for editions in covering.values() for e in editions}):
        path = docs.edition_folder(edition) / "edition.json"
        records[edition] = read_record(path)
    fetched: dict[str, dict[str, str]] = {}

    def full_text(edition: str, arxiv_id: str) -> str:
        if edition not in fetched:
            fetch = services.cache.get_fetch(edition)
            fetched[edition] = {s.paper.arxiv_id: s.full_text.text for s in
                                (fetch.sources if fetch else ()) if s.full_text.status == "ok"}
        return fetched[edition].get(arxiv_id, "")

    return gather(hits, records, index.withdrawn(), full_text)


def _answer(config: Config, services: Services, question: str, found: list[ArchivePaper],
            observer: Observer | None) -> tuple[SynthesisResult, Bundle]:
    """The ask request and its evidence checks, answered (from the cache where it can)."""
    chat, cache = services.chat, services.cache
    known = load_capabilities(cache, chat.base_url, chat.model)
    excerpt = config.ask.excerpt_chars

    def requests_for(budget: int | None) -> tuple[Bundle, list[PromptRequest]]:
        bundle = fitted_bundle(found, excerpt, budget)
        return bundle, build_requests(config, bundle, question=question)

    context = config.llm.context_tokens or known.context_tokens
    bundle, requests = requests_for(_budget(config, context))
    if context is None and not answered(services, requests):
        known = learn_server(config, services, known)
        if known.context_tokens:
            save_capabilities(cache, chat.base_url, chat.model, known)
            bundle, requests = requests_for(_budget(config, known.context_tokens))
    result, known = answer_all(config, services, known, requests, bundle, observer)
    return replace(result, server=known.server), bundle


def _budget(config: Config, context: int | None) -> int | None:
    """The characters the archive bundle may take in `context` tokens: the answer, its
    longest evidence check and the prompt's own text stay free."""
    if not context:
        return None
    free = (context - config.ask.max_tokens - check_tokens(config.evidence)
            - PROMPT_OVERHEAD_TOKENS)
    return max(0, int(free * DEFAULT_CHARS_PER_TOKEN * ESTIMATE_SAFETY))

