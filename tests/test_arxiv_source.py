"""The arXiv client against an arXiv-shaped server: parsing, ids, rate limits and PDF faults."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from generator.errors import ArxivError, InvalidPaperId, PdfTextError
from generator.fetch.arxiv_source import (
    ArxivSource,
    HttpSession,
    RateLimiter,
    RecordingSession,
)
from generator.fetch.pdf_download import PdfDownloader
from generator.papers import paper_slug, valid_arxiv_id
from generator.text.safe_text import cut
from tests.servers.arxiv import ArxivServer, PdfResponse


def source(server: ArxivServer, delay: float = 0.0) -> ArxivSource:
    return ArxivSource(RecordingSession(timeout=5), server.api_url, RateLimiter(delay), num_retries=0)


def test_search_asks_for_newest_first_and_parses_papers(arxiv_server: ArxivServer) -> None:
    papers = source(arxiv_server).search("testing", 4, 2000)
    assert len(papers) == 4
    (request,) = arxiv_server.state.api_requests()
    assert "sortBy=submittedDate" in request and "sortOrder=descending" in request
    assert "max_results=4" in request
    first = papers[0]
    assert first.arxiv_id == "2202.12139v1"
    assert first.base_id == "2202.12139"
    assert first.title.startswith("Testing Deep Learning Models")
    assert first.abs_url == "https://arxiv.org/abs/2202.12139v1"
    assert first.pdf_url and first.pdf_url.startswith(arxiv_server.url)
    assert first.published == "2022-02-24"
    assert "\n" not in first.abstract


def test_old_style_ids_keep_their_slash(arxiv_server: ArxivServer) -> None:
    arxiv_server.state.default_feed = "pubs_idlist_math_0211159.xml"
    (paper,) = source(arxiv_server).search("au:perelman", 5, 2000)
    assert paper.arxiv_id == "math/0211159v1"
    assert paper.slug == "math_0211159v1"
    assert paper.abs_url == "https://arxiv.org/abs/math/0211159v1"


def test_authors_and_non_ascii_names(arxiv_server: ArxivServer) -> None:
    arxiv_server.state.default_feed = "pubs_idlist_astro-ph_9812133.xml"
    (paper,) = source(arxiv_server).search("x", 1, 2000)
    assert len(paper.authors) == 32
    assert paper.short_authors().endswith(", et al.")
    assert paper.short_authors().count(",") == 5


def test_abstracts_are_cut_at_a_word_boundary(arxiv_server: ArxivServer) -> None:
    papers = source(arxiv_server).search("testing", 3, 120)
    assert all(len(p.abstract) <= 120 for p in papers)
    assert papers[0].abstract.endswith("…")
    assert cut("short", 10) == "short"


def test_empty_result_is_an_empty_list(arxiv_server: ArxivServer) -> None:
    arxiv_server.state.default_feed = "arxivpy2026_idlist_0808.05394_nonexistent_empty.xml"
    assert source(arxiv_server).search("nothing", 5, 2000) == []


def test_http_error_names_the_url(arxiv_server: ArxivServer) -> None:
    arxiv_server.state.feed_status = 503
    with pytest.raises(ArxivError, match=r"HTTP 503 to http://127\.0\.0\.1:\d+/api/query \(after"):
        source(arxiv_server).search("testing", 3, 2000)


def test_unreachable_api_names_the_url() -> None:
    dead = ArxivSource(RecordingSession(timeout=2), "http://127.0.0.1:9/api/query", RateLimiter(0),
                       num_retries=0)
    with pytest.raises(ArxivError, match=r"could not reach arXiv at http://127\.0\.0\.1:9/api/query"):
        dead.search("testing", 3, 2000)


class FakeClock:
    """Time that passes only when someone sleeps: spacing is checked without waiting."""

    def __init__(self) -> None:
        self.now = 1_000_000.0
        self.slept: list[float] = []

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_every_request_waits_its_turn(arxiv_server: ArxivServer) -> None:
    clock = FakeClock()
    limiter = RateLimiter(3.0, clock=clock.time, sleep=clock.sleep)
    session = RecordingSession(timeout=5)
    papers = ArxivSource(session, arxiv_server.api_url, limiter).search("testing", 3, 2000)
    downloader = PdfDownloader(session, limiter, 10_000_000)
    for paper in papers[:2]:
        assert paper.pdf_url
        downloader.download(paper.pdf_url)
    assert len(arxiv_server.state.requests) == 3
    assert clock.slept == [3.0, 3.0]  # the API request, then each PDF three seconds after


def test_every_try_waits_its_turn_when_arxiv_answers_an_html_page(
        arxiv_server: ArxivServer) -> None:
    # arXiv rate-limiting with an HTML page: the package's own spacing never saw those tries
    # (they raise before it records them), so they once went 6, 52 and 91 ms apart.
    arxiv_server.state.feed_override = b"<html><title>Rate exceeded</title></html>"
    clock = FakeClock()
    limiter = RateLimiter(3.0, clock=clock.time, sleep=clock.sleep)
    with pytest.raises(ArxivError):
        ArxivSource(RecordingSession(timeout=5), arxiv_server.api_url, limiter,
                    num_retries=2).search("testing", 3, 2000)
    assert len(arxiv_server.state.api_requests()) == 3
    assert clock.slept == [3.0, 3.0]  # each try after the first, three seconds after the last


def test_the_spacing_is_shared_through_the_state_file(tmp_path: Path) -> None:
    clock = FakeClock()
    state = tmp_path / "last-request.json"
    RateLimiter(3.0, state, key="export.arxiv.org", clock=clock.time, sleep=clock.sleep).wait()
    clock.now += 1.0  # another command starts a second later
    later = RateLimiter(3.0, state, key="export.arxiv.org", clock=clock.time, sleep=clock.sleep)
    later.wait()
    assert clock.slept == [2.0]
    other_host = RateLimiter(3.0, state, key="mirror.example", clock=clock.time,
                             sleep=clock.sleep)
    other_host.wait()
    assert clock.slept == [2.0]  # a different host keeps its own time


def downloader(server: ArxivServer, max_bytes: int = 10_000_000) -> PdfDownloader:
    return PdfDownloader(HttpSession(timeout=5), RateLimiter(0), max_bytes)


def test_download_returns_pdf_bytes(arxiv_server: ArxivServer) -> None:
    data = downloader(arxiv_server).download(f"{arxiv_server.url}/pdf/2202.12139v1")
    assert data.startswith(b"%PDF-")


@pytest.mark.parametrize(
    ("response", "reason"),
    [
        (PdfResponse(404, b"gone", "text/plain"), "HTTP 404"),
        (PdfResponse(200, b"<!DOCTYPE html><html><body>captcha</body></html>", "text/html"),
         "sent an HTML page instead of a PDF"),
        (PdfResponse(200, b"\x89PNG....", "image/png"), "sent something else instead of a PDF"),
    ],
    ids=["404", "html", "not-pdf"],
)
def test_download_faults_give_reasons(arxiv_server: ArxivServer, response: PdfResponse,
                                      reason: str) -> None:
    arxiv_server.state.pdfs["1.1"] = response
    with pytest.raises(PdfTextError, match=reason):
        downloader(arxiv_server).download(f"{arxiv_server.url}/pdf/1.1")


def test_download_size_is_capped(arxiv_server: ArxivServer, fixtures: Path) -> None:
    with pytest.raises(PdfTextError, match=r"larger than the 0.1 MB cap"):
        downloader(arxiv_server, max_bytes=100_000).download(f"{arxiv_server.url}/pdf/2202.12139v1")


def test_unreachable_pdf_host_gives_a_reason() -> None:
    with pytest.raises(PdfTextError, match="the connection failed"):
        PdfDownloader(HttpSession(timeout=2), RateLimiter(0), 1000).download(
            "http://127.0.0.1:9/pdf/1.1")


@pytest.mark.parametrize("arxiv_id", ["2401.01234v2", "0704.0001", "1501.00001v12",
                                      "quant-ph/0201082v1", "math.AG/0601001", "astro-ph/0601001"])
def test_arxiv_ids_of_both_styles_are_valid(arxiv_id: str) -> None:
    assert valid_arxiv_id(arxiv_id)
    assert "/" not in paper_slug(arxiv_id)


@pytest.mark.parametrize("arxiv_id", ["../../x", "quant-ph_0201082v1", '2401.01234v1"', "",
                                      "2401.01234/../x", "2401.1234567", ".2401.01234",
                                      "2401.01234v1\n", "QUANT-PH/0201082"])
def test_anything_else_is_refused_with_the_id_named(arxiv_id: str) -> None:
    assert not valid_arxiv_id(arxiv_id)
    with pytest.raises(InvalidPaperId, match=re.escape(repr(arxiv_id))):
        paper_slug(arxiv_id)


def test_a_papers_code_is_the_repository_it_names_itself(arxiv_server: ArxivServer) -> None:
    """Recorded abstracts that name their code (github.com/huawei-noah/..., "our code at
    github.com/sihaoevery/lambda_vit."): each paper gets its repositories, whole; a comment
    or the first page of its text count too, a host's own pages (github.com/about) never."""
    from generator.fetch.code import code_links
    from generator.fetch.papers import with_code
    from generator.papers import FullText, Source

    arxiv_server.state.default_feed = "lumen_search_ti_attention_OR_transformer_max3.xml"
    papers = source(arxiv_server).search("ti:attention OR transformer", 3, 2000)
    found = {p.arxiv_id: with_code(Source(p, FullText("not_requested"))).paper.code
             for p in papers}
    assert sorted(url for urls in found.values() for url in urls) == [
        "https://github.com/huawei-noah/CV-Backbones", "https://github.com/sihaoevery/lambda_vit"]
    first = papers[0]
    page = FullText("ok", "Title\nCode: https://gitlab.com/team/tool.git and see github.com/about/x")
    assert with_code(Source(first, page)).paper.code[-1] == "https://gitlab.com/team/tool"
    assert code_links("12 pages; data at https://zenodo.org/records/42 (zenodo.org/communities/x)"
                      ) == ("https://zenodo.org/records/42",)
