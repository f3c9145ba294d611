"""The papers of an edition: search arXiv, then download and extract the first N papers' PDFs.

The search result for an edition is recorded in the cache, so rerunning an edition (after a
crash, or to apply a template change) neither queries arXiv again nor changes its papers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from ..errors import PdfTextError
from ..papers import FetchResult, FullText, Paper, Source, Triage
from ..ports import PaperSearch, PdfSource
from ..store.cache import Cache
from .code import FIRST_PAGE_CHARS, code_links
from .pdf_text import extract_text

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FetchSettings:
    query: str
    max_papers: int
    full_text_papers: int
    max_abstract_chars: int
    max_pdf_chars: int
    skip: frozenset[str] = frozenset()  # arXiv ids (with version) to leave out: seen before


def run_fetch(
    edition: str,
    settings: FetchSettings,
    source: PaperSearch,
    downloader: PdfSource,
    cache: Cache,
    *,
    previous: FetchResult | None = None,
    on_text: OnText | None = None,
    triage: Triage | None = None,
) -> FetchResult:
    """Papers for `edition`, with full text for the first `full_text_papers` where possible:
    the papers `triage` selected, or else the newest `max_papers` of the query. `previous` is
    what the cache recorded for the edition (None: ask arXiv again)."""
    if triage is not None:
        papers = triage.selected_papers()  # the best get the full text and the lowest numbers
        fetched_at = datetime.now(UTC).isoformat(timespec="seconds")
        skipped: tuple[str, ...] = ()
        if previous and previous.triage == triage:
            fetched_at = previous.fetched_at
    elif previous and previous.query == settings.query and previous.max_papers == settings.max_papers \
            and previous.triage is None:
        log.info("reusing the arXiv results recorded for edition %s", edition)
        papers = [s.paper for s in previous.sources]
        fetched_at, skipped = previous.fetched_at, previous.skipped
    else:
        found = source.search(settings.query, settings.max_papers, settings.max_abstract_chars)
        found = list({p.arxiv_id: p for p in found}.values())  # arXiv pages can overlap
        papers = [p for p in found if p.arxiv_id not in settings.skip]
        skipped = tuple(p.arxiv_id for p in found if p.arxiv_id in settings.skip)
        if skipped:
            log.info("left out %d paper(s) published in earlier editions", len(skipped))
        fetched_at = datetime.now(UTC).isoformat(timespec="seconds")

    wanted = papers[: settings.full_text_papers]
    texts = fetch_full_texts(wanted, settings.max_pdf_chars, downloader, cache, on_text=on_text)
    sources = [with_code(Source(p, texts.get(p.arxiv_id, FullText(status="not_requested"))))
               for p in papers]
    result = FetchResult(settings.query, settings.max_papers, fetched_at, tuple(sources), skipped,
                         triage, previous.lookup if previous else None)
    cache.put_fetch(edition, result)
    return result


def with_code(source: Source) -> Source:
    """The source with the repositories its paper names in its abstract, comment or first page."""
    text = source.full_text.text[:FIRST_PAGE_CHARS] if source.full_text.text else ""
    code = code_links(source.paper.abstract, source.paper.comment, text)
    return replace(source, paper=replace(source.paper, code=code)) if code else source


OnText = Callable[[Paper, FullText, bool], None]  # paper, its text, whether it came from the cache


def fetch_full_texts(
    papers: list[Paper], max_chars: int, downloader: PdfSource, cache: Cache,
    *, on_text: OnText | None = None, workers: int | None = None,
) -> dict[str, FullText]:
    """Full text for each paper: downloads one at a time (arXiv's terms), while the PDFs already
    in hand are extracted in a thread meanwhile."""
    texts: dict[str, FullText] = {}
    pending: dict[Future[FullText], Paper] = {}
    # A caller that reports each text (`on_text`: the CLI's progress) reports the failures too:
    # the log then keeps them at INFO, so a person sees each event once.
    missing = log.info if on_text else log.warning

    def finish(paper: Paper, text: FullText, from_cache: bool = False) -> None:
        texts[paper.arxiv_id] = text
        if on_text:
            on_text(paper, text, from_cache)

    def collect(future: Future[FullText]) -> None:
        paper = pending.pop(future)
        try:
            text = future.result()
        except PdfTextError as err:
            missing("no full text for %s: %s", paper.arxiv_id, err)
            text = FullText(status="missing", reason=str(err))
        except Exception as err:  # a worker that died (out of memory, a crash in a parser)
            missing("no full text for %s: extraction failed (%s)", paper.arxiv_id, err)
            finish(paper, FullText(status="missing", reason=f"the text extraction failed ({err})"))
            return
        # Extraction is deterministic for these bytes, so its failures are cached as well.
        cache.put_text(paper.arxiv_id, max_chars, text)
        finish(paper, text)

    todo: list[Paper] = []
    for paper in papers:
        cached = cache.get_text(paper.arxiv_id, max_chars)
        if cached is not None:
            finish(paper, cached, True)
        elif not paper.pdf_url:
            finish(paper, FullText(status="missing", reason="arXiv lists no PDF for this paper"))
        else:
            todo.append(paper)
    if not todo:
        return texts
    # One extraction thread overlaps each PDF's text with the next download, which arXiv's
    # spacing (one request every three seconds) makes the slower of the two anyway. A process
    # pool extracted faster in isolation but cost a process start per build, and on two cores
    # did not make a build faster (bench/extraction.py measures extraction alone).
    with ThreadPoolExecutor(max_workers=workers or 1) as pool:
        for paper in todo:
            data = cache.get_pdf(paper.arxiv_id)
            if data is None:
                try:
                    log.info("downloading the PDF of %s", paper.arxiv_id)
                    data = downloader.download(str(paper.pdf_url))
                except PdfTextError as err:
                    # Not cached: a download can succeed next time.
                    missing("no full text for %s: %s", paper.arxiv_id, err)
                    finish(paper, FullText(status="missing", reason=str(err)))
                    continue
                cache.put_pdf(paper.arxiv_id, data)
            pending[pool.submit(extract_text, data, max_chars)] = paper
            for future in [f for f in pending if f.done()]:
                collect(future)
        for future in as_completed(list(pending)):
            collect(future)
    return texts
