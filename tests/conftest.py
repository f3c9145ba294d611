"""Fixtures: real HTTP servers on 127.0.0.1 shaped like arXiv and SGLang, and a workspace."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from generator.archive.record import EditionRecord
from generator.errors import PdfTextError
from generator.fetch import papers, pdf_text
from generator.papers import FullText
from tests.servers.arxiv import ArxivServer
from tests.servers.github import GitHubServer
from tests.servers.sglang import SglangServer

# CI (the CI variable set) draws the same examples every run, so a red run is red again and a
# green one did not pass by a lucky draw; elsewhere each run searches anew. No deadline in
# either: an example slowed by a loaded machine is not a failure. HYPOTHESIS_PROFILE picks one.
# (Both on hypothesis's defaults: it loads a "ci" profile of its own where CI is in the
# environment at all, even empty, and a new profile would inherit that.)
settings.register_profile("ci", settings.get_profile("default"), derandomize=True,
                          database=None, deadline=None)
settings.register_profile("dev", settings.get_profile("default"), deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE",
                                     "ci" if os.environ.get("CI") else "dev"))

ROOT = Path(__file__).resolve().parents[1]
# The recorded data, in the repository (tests/fixtures/UPSTREAM.md says where it comes from).
FIXTURES = Path(os.environ.get("DIGEST_FIXTURES", ROOT / "tests" / "fixtures"))


_TEXTS: dict[tuple[bytes, int], FullText | PdfTextError] = {}


def _extracted_once(data: bytes, max_chars: int) -> FullText:
    """pypdf's text of these bytes, extracted once a test process: every build of the suite
    reads the same recorded PDFs into a fresh workspace, and extraction (deterministic for the
    bytes, failures included) was a third of a build's CPU. The real extractor does the work."""
    key = (hashlib.sha256(data).digest(), max_chars)
    if key not in _TEXTS:
        try:
            _TEXTS[key] = pdf_text.extract_text(data, max_chars)
        except PdfTextError as err:
            _TEXTS[key] = err
    found = _TEXTS[key]
    if isinstance(found, PdfTextError):
        raise PdfTextError(str(found))
    return found


@pytest.fixture(autouse=True)
def _pdf_text_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(papers, "extract_text", _extracted_once)


@pytest.fixture(scope="session")
def fixtures() -> Path:
    if not (FIXTURES / "arxiv_api").is_dir():
        pytest.fail(f"test fixtures not found at {FIXTURES} (set DIGEST_FIXTURES)")
    return FIXTURES


@pytest.fixture
def arxiv_server(fixtures: Path) -> Iterator[ArxivServer]:
    server = ArxivServer(fixtures).start()
    yield server
    server.stop()


@pytest.fixture
def sglang_server() -> Iterator[SglangServer]:
    server = SglangServer().start()
    yield server
    server.stop()


def write_config(directory: Path, arxiv_server: ArxivServer, sglang_server: SglangServer,
                 extra: str = "", *, max_papers: int = 6, full_text_papers: int = 3,
                 max_pdf_chars: int = 6000, structured: bool = False,
                 evidence: bool = False, continuity: bool = False) -> Path:
    """A workspace config pointing at the local servers, with arXiv's delay off for speed and
    PDF text cut at `max_pdf_chars` (a page or two of each PDF: extraction is most of a small
    build's CPU, and a few pages exercise it as well as twenty).

    Briefs and the theme map are off unless `structured`, evidence checks unless `evidence`,
    continuity (its withdrawal lookup and comparison request) unless `continuity`: most tests
    count the six prose prompts and arXiv's requests; tests/test_briefs.py covers the
    structured ones, tests/test_evidence.py the evidence checks and tests/test_continuity.py
    the editions' continuity.
    """
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "config.toml"
    path.write_text(f"""
[digest]
title = "Test Digest"

[briefs]
enabled = {str(structured).lower()}

[prompts.themes]
enabled = {str(structured).lower()}

[evidence]
enabled = {str(evidence).lower()}

[continuity]
enabled = {str(continuity).lower()}

[arxiv]
query = "testing"
max_papers = {max_papers}
full_text_papers = {full_text_papers}
max_pdf_chars = {max_pdf_chars}
api_url = "{arxiv_server.api_url}"
delay_seconds = 0.0
timeout_seconds = 5.0

[llm]
base_url = "{sglang_server.base_url}"
max_retries = 0
{extra}
""", encoding="utf-8")
    return path


@pytest.fixture
def github() -> Iterator[GitHubServer]:
    """A GitHub-REST-shaped server for the readers' marks (tests/servers/github.py)."""
    server = GitHubServer().start()
    yield server
    server.stop()


@pytest.fixture
def workspace(tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer) -> Path:
    """A workspace folder with config.toml (the default mkdocs.yml is used)."""
    return write_config(tmp_path / "ws", arxiv_server, sglang_server)


def read_record(config: Path, edition: str) -> EditionRecord:
    """An edition's record as the workspace of `config` published it, typed."""
    path = config.parent / "site_src" / "editions" / edition / "edition.json"
    return EditionRecord.from_json(json.loads(path.read_text()), str(path))
