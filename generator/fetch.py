"""The fetch stage: search arXiv, then download and extract the first N papers' PDFs.

The search result for an edition is recorded in the cache, so rerunning an edition (after a
crash, or to apply a template change) neither queries arXiv again nor changes its papers.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime

from .arxiv_source import ArxivSource, PdfDownloader
from .cache import Cache
from .errors import PdfTextError
from .models import FetchResult, FullText, Paper, Source
from .pdf_text import extract_text

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FetchSettings:
    query: str
    max_papers: int
    full_text_papers: int
    max_abstract_chars: int
    max_pdf_chars: int


def run_fetch(
    edition: str,
    settings: FetchSettings,
    source: ArxivSource,
    downloader: PdfDownloader,
    cache: Cache,
    *,
    refresh: bool = False,
) -> FetchResult:
    """Papers for `edition`, with full text for the first `full_text_papers` where possible."""
    previous = None if refresh else cache.get_fetch(edition)
    if previous and previous.query == settings.query and previous.max_papers == settings.max_papers:
        log.info("reusing the arXiv results recorded for edition %s", edition)
        papers = [s.paper for s in previous.sources]
        fetched_at = previous.fetched_at
    else:
        papers = source.search(settings.query, settings.max_papers, settings.max_abstract_chars)
        fetched_at = datetime.now(UTC).isoformat(timespec="seconds")

    sources: list[Source] = []
    for index, paper in enumerate(papers):
        if index < settings.full_text_papers:
            full_text = full_text_for(paper, settings.max_pdf_chars, downloader, cache)
        else:
            full_text = FullText(status="not_requested")
        sources.append(Source(paper, full_text))

    result = FetchResult(settings.query, settings.max_papers, fetched_at, tuple(sources))
    cache.put_fetch(edition, result)
    return result


def full_text_for(paper: Paper, max_chars: int, downloader: PdfDownloader, cache: Cache) -> FullText:
    """The paper's text from the cache, or downloaded and extracted now; never raises."""
    cached = cache.get_text(paper.arxiv_id, max_chars)
    if cached is not None:
        return cached
    if not paper.pdf_url:
        return FullText(status="missing", reason="arXiv lists no PDF for this paper")
    data = cache.get_pdf(paper.arxiv_id)
    if data is None:
        try:
            log.info("downloading the PDF of %s", paper.arxiv_id)
            data = downloader.download(paper.pdf_url)
        except PdfTextError as err:
            # Not cached: a download can succeed next time.
            log.warning("no full text for %s: %s", paper.arxiv_id, err)
            return FullText(status="missing", reason=str(err))
        cache.put_pdf(paper.arxiv_id, data)
    try:
        text = extract_text(data, max_chars)
    except PdfTextError as err:
        log.warning("no full text for %s: %s", paper.arxiv_id, err)
        text = FullText(status="missing", reason=str(err))
    # Extraction is deterministic for these bytes, so its failures are cached as well.
    cache.put_text(paper.arxiv_id, max_chars, text)
    return text
