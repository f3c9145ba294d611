"""The fetch stage: which papers an edition covers (the query's window, the reader's triage)
and their text.

Each stage of the conductor takes the config, the services and the run's history, and reads
what the stage before it recorded in the cache, so the CLI can run one at a time and an
interrupted build resumes where it stopped; `pipeline.run` conducts them in order.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta

from ..archive.history import History, earlier, last_edition_day, windowed_query
from ..config import Config
from ..fetch.papers import FetchSettings, OnText, run_fetch
from ..fetch.withdrawals import look_up
from ..marks import Marks, load_marks, new_mark
from ..papers import FetchResult, Paper, Triage
from ..synthesis.triage import LIBRARY, Example, run_triage, window_of
from ..text.safe_text import cut
from .library import library_shelf
from .services import Services, launch_advice_on_failure

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EditionQuery:
    """What an edition asks arXiv for: the query (with its date window) and the papers of
    earlier editions to leave out."""

    query: str
    skip: frozenset[str]


def query_for(config: Config, edition: str, history: History) -> EditionQuery:
    a = config.arxiv
    query = a.query
    try:
        day = date.fromisoformat(edition[:10])
    except ValueError:
        day = datetime.now(UTC).date()
    if a.since_last_edition:
        query = windowed_query(query, day, since=last_edition_day(history.records, edition) or (
            day - timedelta(days=7)))
    elif a.days:
        query = windowed_query(query, day, days=a.days)
    skip = frozenset(p.arxiv_id for r in earlier(history.records, edition)
                     for p in r.papers) if a.skip_seen else frozenset()
    return EditionQuery(query, skip)


def fetch_stage(config: Config, services: Services, edition: str, *, refresh: bool = False,
                on_text: OnText | None = None, history: History,
                triage: Triage | None = None) -> FetchResult:
    """The edition's papers and full text: the newest of the query, or those `triage` chose
    (judged here when [triage] is on and no triage is given, as `digest fetch` does)."""
    a = config.arxiv
    search = query_for(config, edition, history)
    settings = FetchSettings(search.query, a.max_papers, a.full_text_papers, a.max_abstract_chars,
                             a.max_pdf_chars, search.skip)
    previous = None if refresh else services.cache.get_fetch(edition)
    if triage is None and config.triage.enabled:
        triage = triage_stage(config, services, search, previous, history.before(edition))
    result = run_fetch(edition, settings, services.arxiv, services.downloader, services.cache,
                       previous=previous, on_text=on_text, triage=triage)
    if config.continuity.enabled and previous is None:
        # The papers covered lately, looked up for withdrawals once, at the edition's first
        # fetch (or --refresh): a rebuild keeps what was found, a failure included, and asks
        # arXiv nothing (nor reads a record).
        lookup = look_up(services.arxiv,
                         history.before(edition).covered(config.continuity.lookback_editions),
                         a.max_abstract_chars, None)
        if lookup != result.lookup:
            result = replace(result, lookup=lookup)
            services.cache.put_fetch(edition, result)
    return result


def triage_stage(config: Config, services: Services, search: EditionQuery,
                 previous: FetchResult | None, past: History) -> Triage:
    """Every paper of the window, judged: the window as recorded for this edition (`previous`,
    if its query and cap are the same), else listed by arXiv; the judgements from the cache
    where it has them. The reader's marks and library are shown as examples (marks from
    `past`, the editions before this one); a rebuild shows the marks and library papers the
    window was judged with, so a mark read or a paper added since changes the next edition,
    not this one (nor asks the model again)."""
    t, query = config.triage, search.query
    marks = load_marks(config.marks_file)
    marked = tuple(m.arxiv_id for m in marks.marks)
    again = previous.triage if previous and previous.triage and (
        previous.triage.query, previous.triage.max_candidates) == (query, t.max_candidates) \
        else None
    if again is not None:
        papers = window_of(again)
        marks = Marks(tuple(new_mark(s.split(":", 1)[1], s.split(":", 1)[0], "")
                            for s in again.shown), ())
        marked = again.marked
        seeds, owned = again.seeds, frozenset(again.in_library)
    else:
        shelf = library_shelf(config, services.cache, past, marks, services.arxiv)
        papers = services.arxiv.search_window(query, t.max_candidates,
                                              config.arxiv.max_abstract_chars,
                                              config.arxiv.page_size)
        seeds = shelf.shown if shelf else ()
        owned = frozenset(p.base_id for p in papers.papers if shelf and shelf.library.holds(p))
    examples = triage_examples(marks, past, config.feedback.max_examples,
                               config.feedback.example_chars)
    examples += [Example("more", p.arxiv_id, " ".join(p.title.split()),
                         cut(" ".join(p.abstract.split()), config.feedback.example_chars),
                         source=LIBRARY) for p in seeds]
    with launch_advice_on_failure(config, services):
        triage = run_triage(papers, query, t.max_candidates, t, config.arxiv.max_papers,
                            services.chat, services.cache, language=config.digest.language,
                            seen=search.skip, max_concurrency=config.llm.max_concurrency,
                            server_info=services.probe.server_info, examples=examples,
                            marked=marked, owned=owned, kinds=config.registry)
    return replace(triage, seeds=tuple(seeds))


def triage_examples(marks: Marks, history: History, most: int, chars: int) -> list[Example]:
    """The marked papers triage is shown: those an earlier edition covered (a mark of a paper
    known nowhere is kept for later), the latest marked first, at most `most`, then in a fixed
    order (by id) so that every candidate's request shares them."""
    known: dict[str, Paper] = {}
    for record in reversed(history.records):  # the newest edition's version wins
        known.update({p.base_id: p.paper for p in record.papers})
    shown = [m for m in sorted(marks.marks, key=lambda m: m.at, reverse=True)
             if m.arxiv_id in known][:most]
    return [Example(m.kind, m.arxiv_id, " ".join(known[m.arxiv_id].title.split()),
                    cut(" ".join(known[m.arxiv_id].abstract.split()), chars))
            for m in sorted(shown, key=lambda m: m.arxiv_id)]
