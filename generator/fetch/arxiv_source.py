"""Talk to arXiv's search API (through the `arxiv` package); PDFs come by fetch/pdf_download.py.

arXiv's terms allow one request every three seconds over one connection, so every request here
goes through one `RateLimiter` and one `HttpSession`, both passed in by the caller.
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import arxiv
import requests
import urllib3

from .. import __version__
from ..errors import ArxivError
from ..papers import Paper, Window, valid_arxiv_id
from ..store.cache import atomic_write_text
from ..store.jsonfile import JSONFileError, load_json
from ..text.safe_text import MAX_AUTHOR_CHARS, MAX_TITLE_CHARS, clean, cut

MAX_COMMENT_CHARS = 1000
LOOKUP_BATCH = 100  # ids in one id_list request: arXiv's page size

log = logging.getLogger(__name__)

USER_AGENT = f"research-digest/{__version__} (periodic research digests; +https://pypi.org/)"

_WS_RE = re.compile(r"\s+")
_ATOM = "{http://www.w3.org/2005/Atom}"


class HttpSession(requests.Session):
    """A requests session with a default timeout and our User-Agent, so nothing can hang."""

    def __init__(self, timeout: float, user_agent: str = USER_AGENT) -> None:
        super().__init__()
        self.timeout = timeout
        self.headers["User-Agent"] = user_agent

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("timeout", self.timeout)
        return super().request(method, url, *args, **kwargs)


class NotAnAtomFeed(requests.ConnectionError):
    """arXiv answered HTTP 200 with something else (an HTML "Rate exceeded" page, say).

    A ConnectionError, so that the `arxiv` package retries it as it retries a 503; it must
    never parse as an empty result, which would be cached as "no papers matched".
    """

    def __init__(self, url: str, body: bytes) -> None:
        self.url = url
        self.body = body
        super().__init__(f"{url} answered with something other than an Atom feed")


class RecordingSession(HttpSession):
    """Keeps the last response body: the `arxiv` package drops arXiv's error feeds, we read them.

    Requests to `feed_url` (the API's URL, which `ArxivSource` sets, with its `limiter`) carry
    our User-Agent (the package sets its own on each request), wait their turn first (every
    try, retries after an error included, is spaced as arXiv asks; the package spaces only tries
    that got an answer it could parse) and must come back as an Atom feed.
    """

    last_body: bytes = b""
    feed_url: str | None = None
    limiter: RateLimiter | None = None

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> Any:
        headers = {k: v for k, v in (kwargs.get("headers") or {}).items()
                   if k.lower() != "user-agent"}
        kwargs["headers"] = headers  # ours, from the session, not the arxiv package's
        if self.limiter is not None and self.feed_url and str(url).startswith(self.feed_url):
            self.limiter.wait()
        response = super().request(method, url, *args, **kwargs)
        if not kwargs.get("stream"):
            self.last_body = response.content
            if (self.feed_url and str(url).startswith(self.feed_url)
                    and response.status_code == 200 and not is_atom_feed(response.content)):
                raise NotAnAtomFeed(self.feed_url, response.content)
        return response


def is_atom_feed(body: bytes) -> bool:
    """Whether `body` is an Atom feed document (what arXiv's API answers, errors included)."""
    try:
        return ElementTree.fromstring(body).tag == f"{_ATOM}feed"
    except ElementTree.ParseError:
        return False


def error_feed_message(body: bytes) -> str | None:
    """The message of an arXiv error feed (a single entry titled "Error"), if `body` is one."""
    if b"/api/errors" not in body:
        return None
    try:
        root = ElementTree.fromstring(body)
    except ElementTree.ParseError:
        return None
    for entry in root.iter(f"{_ATOM}entry"):
        if "/api/errors" in (entry.findtext(f"{_ATOM}id") or ""):
            return clean_text(entry.findtext(f"{_ATOM}summary") or "unknown error")
    return None


class RateLimiter:
    """Spaces requests to one host at least `delay` seconds apart (start to start).

    With a `state_file`, the time of the last request is kept on disk too, so that commands
    run one after another (`digest doctor`, then `digest build`) honour the spacing as well.
    """

    def __init__(self, delay: float, state_file: Path | None = None, key: str = "arxiv", *,
                 clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.delay = delay
        self._last: float | None = None  # wall-clock seconds: comparable across processes
        self._lock = threading.Lock()
        self._state_file = state_file
        self._key = key
        self._clock, self._sleep = clock, sleep

    def wait(self) -> None:
        with self._lock:
            last = max(filter(None, (self._last, self._shared_last())), default=None)
            if last is not None:
                # A clock set back would leave `last` in the future: never wait past one delay.
                remaining = min(last + self.delay - self._clock(), self.delay)
                if remaining > 0:
                    log.debug("waiting %.1fs before the next arXiv request", remaining)
                    self._sleep(remaining)
            self._record()

    def _record(self) -> None:
        self._last = self._clock()
        if self._state_file is None:
            return
        times = self._shared_times()
        times[self._key] = self._last
        try:
            atomic_write_text(self._state_file, json.dumps(times) + "\n")
        except OSError as err:  # the spacing within this process still holds
            log.warning("could not record the time of the last arXiv request: %s", err)

    def _shared_times(self) -> dict[str, float]:
        if self._state_file is None:
            return {}
        try:
            data = load_json(self._state_file, missing={})
        except JSONFileError as err:
            log.warning("ignoring the unreadable time of the last arXiv request: %s", err)
            return {}
        return {k: float(v) for k, v in data.items()
                if isinstance(v, int | float) and math.isfinite(v)} if isinstance(data, dict) else {}

    def _shared_last(self) -> float | None:
        return self._shared_times().get(self._key)


def clean_text(text: str) -> str:
    """Collapse the hard wraps and indents of arXiv's Atom fields into single spaces, and drop
    the control and bidi-override characters no page or feed may carry."""
    return _WS_RE.sub(" ", clean(text)).strip()


MAX_PAGE = 2000  # the most results arXiv's API returns a request
_TOTAL_RE = re.compile(rb"<opensearch:totalResults[^>]*>\s*(\d+)\s*<")
_FAILURES = (arxiv.HTTPError, arxiv.UnexpectedEmptyPageError, NotAnAtomFeed,
             requests.RequestException)


class ArxivSource:
    """Searches arXiv's API, newest submissions first."""

    def __init__(
        self,
        session: RecordingSession,
        api_url: str,
        limiter: RateLimiter,
        *,
        num_retries: int = 3,
    ) -> None:
        self.api_url = api_url
        self._num_retries = num_retries
        self._session = session
        # The session spaces every request to the API, each try of each page.
        session.feed_url, session.limiter = api_url, limiter

    def _client(self, page_size: int) -> arxiv.Client:
        client = arxiv.Client(page_size=page_size, delay_seconds=0.0,
                              num_retries=self._num_retries)
        # The package's own session has no timeout; ours does, and carries our User-Agent.
        client._session = self._session
        client.query_url_format = self.api_url + "?{}"
        return client

    def search(self, query: str, max_papers: int, max_abstract_chars: int) -> list[Paper]:
        """The first `max_papers` results of `query`, newest submission first."""
        try:
            results = list(self._client(min(max_papers, MAX_PAGE)).results(self._search(
                query, max_papers)))
        except _FAILURES as err:
            raise self._error(err) from err
        if not results:
            self._raise_if_rejected()
        papers = papers_from_results(results, max_abstract_chars)
        log.info("arXiv returned %d paper(s) for %r", len(papers), query)
        return papers

    def search_window(self, query: str, limit: int, max_abstract_chars: int,
                      page_size: int = MAX_PAGE) -> Window:
        """Every result of `query` up to `limit`, newest first, in pages of `page_size` (each
        page a request, spaced like every other). A page that fails after its retries ends
        the window there: what came before is kept, and the window says it is incomplete."""
        results: list[arxiv.Result] = []
        incomplete = ""
        try:  # one more than asked for tells whether the limit cut the window short
            for result in self._client(min(limit + 1, page_size)).results(self._search(
                    query, limit + 1)):
                results.append(result)
        except _FAILURES as err:
            if not results:
                raise self._error(err) from err
            incomplete = str(self._error(err))
            log.warning("the window ends early after %d paper(s): %s", len(results), incomplete)
        if not results:
            self._raise_if_rejected()
        total = _TOTAL_RE.search(self._session.last_body or b"")
        papers = papers_from_results(results[:limit], max_abstract_chars)
        log.info("arXiv listed %d paper(s) in the window of %r", len(papers), query)
        return Window(tuple(papers), int(total.group(1)) if total else None,
                      len(results) > limit, incomplete)

    def lookup(self, base_ids: Sequence[str], max_abstract_chars: int) -> list[Paper]:
        """The latest version of each paper, by id without version: one request per
        `LOOKUP_BATCH` ids (arXiv's page of 100), each spaced like every other request."""
        papers: list[Paper] = []
        for start in range(0, len(base_ids), LOOKUP_BATCH):
            batch = list(base_ids[start:start + LOOKUP_BATCH])
            search = arxiv.Search(id_list=batch, max_results=len(batch))
            try:
                results = list(self._client(len(batch)).results(search))
            except _FAILURES as err:
                raise self._error(err) from err
            if len(results) < len(batch):  # an error feed with HTTP 200 parses as no entries
                self._raise_if_rejected()
            papers += papers_from_results(results, max_abstract_chars)
        log.info("arXiv answered %d of %d looked-up paper(s)", len(papers), len(base_ids))
        return papers

    def _raise_if_rejected(self) -> None:
        """An error feed with HTTP 200 parses as an empty page: tell it from "no match"."""
        message = error_feed_message(self._session.last_body)
        if message:
            raise ArxivError(f"arXiv rejected the query ({self.api_url}): {message}")

    @staticmethod
    def _search(query: str, max_results: int) -> arxiv.Search:
        return arxiv.Search(query=query, max_results=max_results,
                            sort_by=arxiv.SortCriterion.SubmittedDate,
                            sort_order=arxiv.SortOrder.Descending)

    def _error(self, err: Exception) -> ArxivError:
        """What went wrong, in words that say what to check."""
        if isinstance(err, arxiv.HTTPError):
            message = error_feed_message(self._session.last_body)
            if message:
                return ArxivError(f"arXiv rejected the query ({err.url}): {message}")
            return ArxivError(
                f"arXiv answered HTTP {err.status} to {err.url} (after {err.retry + 1} tries); "
                "check [arxiv] query and api_url in config.toml")
        if isinstance(err, arxiv.UnexpectedEmptyPageError):
            return ArxivError(f"arXiv returned an unexpected empty page for {err.url}")
        if isinstance(err, NotAnAtomFeed):
            return ArxivError(
                f"arXiv answered {err.url} with {_kind_of(err.body)} instead of an Atom feed "
                f"(after {self._num_retries + 1} tries); nothing was recorded, so running the "
                "same command later asks again")
        assert isinstance(err, requests.RequestException)
        return ArxivError(
            f"could not reach arXiv at {self.api_url}: {connection_reason(err)}; check your network "
            "and [arxiv] api_url in config.toml")


def papers_from_results(results: list[arxiv.Result], max_abstract_chars: int) -> list[Paper]:
    """Papers for the results whose ids are arXiv ids, each id once.

    An id names the paper's page, cache entries and PDF, so an entry whose id is not an
    arXiv id (`../../x`, `quant-ph_0201082v1`, anything with a quote) is left out, with the id
    in the warning, and a repeated id keeps its first entry.
    """
    papers: dict[str, Paper] = {}
    for result in results:
        arxiv_id = result.get_short_id()
        if not valid_arxiv_id(arxiv_id):
            log.warning("left out an arXiv entry whose id is not an arXiv id: %r", arxiv_id[:200])
        elif arxiv_id in papers:
            log.warning("left out a second arXiv entry with the id %s", arxiv_id)
        else:
            papers[arxiv_id] = _paper(result, max_abstract_chars)
    return list(papers.values())


def _paper(result: arxiv.Result, max_abstract_chars: int) -> Paper:
    arxiv_id = result.get_short_id()
    return Paper(
        arxiv_id=arxiv_id,
        title=cut(clean_text(result.title), MAX_TITLE_CHARS),
        authors=tuple(cut(clean_text(a.name), MAX_AUTHOR_CHARS) for a in result.authors),
        published=result.published.date().isoformat(),
        updated=result.updated.date().isoformat(),
        abstract=cut(clean_text(result.summary), max_abstract_chars),
        categories=tuple(clean_text(c) for c in result.categories),
        abs_url=f"https://arxiv.org/abs/{arxiv_id}",
        pdf_url=result.pdf_url,
        comment=cut(clean_text(result.comment or ""), MAX_COMMENT_CHARS),
    )


def _kind_of(body: bytes) -> str:
    head = body[:4096]
    if b"<html" in head.lower():
        title = re.search(rb"<title>(.*?)</title>", head, re.IGNORECASE | re.DOTALL)
        shown = clean_text(title.group(1).decode("utf-8", "replace"))[:80] if title else ""
        return f"an HTML page ({shown!r})" if shown else "an HTML page"
    return "an empty answer" if not body.strip() else "something else"


def connection_reason(err: requests.RequestException | urllib3.exceptions.HTTPError | OSError
                      ) -> str:
    """What went wrong with a connection, in a few words (never the error's own text)."""
    if isinstance(err, requests.Timeout | urllib3.exceptions.TimeoutError):
        return "the connection timed out"
    if isinstance(err, requests.ConnectionError | urllib3.exceptions.ProtocolError | OSError):
        return "the connection failed"
    return type(err).__name__
