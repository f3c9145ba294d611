"""Nothing lost, nothing leaked, nothing outside the workspace: one test per case of issue 18.

Each asserts what the user sees and that a rerun asks again for what was not really answered,
and asks nothing for what was.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from click.testing import CliRunner, Result

from generator.cli import cli
from generator.errors import LlmRequestError
from generator.store.cache import Cache
from generator.text.urls import redact_text, redact_url
from tests.conftest import FIXTURES, write_config
from tests.feeds import Entry, atom_feed
from tests.servers.arxiv import ArxivServer, PdfResponse
from tests.servers.sglang import Fault, SglangServer

EDITION = "2026-12-02"


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner(env=env).invoke(cli, list(args))


def build(config: Path, env: dict[str, str] | None = None) -> Result:
    return run("build", "--config", str(config), "--edition", EDITION, env=env)


def every_file(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


# 1. A credential in the server URL ---------------------------------------------------------------

def test_a_credential_in_the_server_url_is_never_published(
        workspace: Path, sglang_server: SglangServer) -> None:
    port = sglang_server.base_url.split(":")[2].split("/")[0]
    secret_url = f"http://ci:S3CRET-pw@127.0.0.1:{port}/v1"
    # The server's own error message repeats a URL with secrets in it, too.
    sglang_server.state.faults = [Fault(503, f"overloaded at {secret_url}?token=QUERY-SECRET"
                                             "#FRAGMENT-SECRET")] * 40
    result = build(workspace, env={"DIGEST_LLM_BASE_URL": secret_url})
    assert result.exit_code == 1
    ws = workspace.parent
    page = (ws / "site_src" / "editions" / EDITION / "research-map.md").read_text()
    assert f"http://127.0.0.1:{port}/v1" in page  # the prompt failed and says where
    for secret in ("S3CRET-pw", "QUERY-SECRET", "FRAGMENT-SECRET"):
        assert secret not in result.output
        for path in every_file(ws):
            assert secret.encode() not in path.read_bytes(), path


def test_urls_are_shown_without_user_info_query_or_fragment() -> None:
    assert redact_url("https://u:p@host.example:8443/v1?key=k#f") == "https://host.example:8443/v1"
    assert redact_url("http://[::1]:30000/v1") == "http://[::1]:30000/v1"
    assert redact_text("HTTP 503 from http://ci:pw@h/v1 (see https://x/y?token=t).") == (
        "HTTP 503 from http://h/v1 (see https://x/y).")
    assert str(LlmRequestError("no answer from http://a:b@h:1/v1")) == "no answer from http://h:1/v1"


# 2. A stream that just stops -------------------------------------------------------------------

def test_an_answer_that_stops_without_a_finish_reason_is_not_kept(
        workspace: Path, sglang_server: SglangServer) -> None:
    sglang_server.state.cut_streams = 1
    result = build(workspace)
    assert result.exit_code == 1
    assert "without a finish reason" in result.output
    sent = len(sglang_server.state.chat_requests)
    result = build(workspace)
    assert result.exit_code == 0, result.output
    assert len(sglang_server.state.chat_requests) == sent + 1  # only the cut one, asked again
    assert build(workspace).exit_code == 0
    assert len(sglang_server.state.chat_requests) == sent + 1  # and then nothing


def test_a_cut_stream_is_asked_again_within_the_run_when_retries_are_allowed(
        tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer) -> None:
    config = write_config(tmp_path / "ws", arxiv_server, sglang_server)
    config.write_text(config.read_text().replace("max_retries = 0", "max_retries = 1"))
    sglang_server.state.cut_streams = 1
    result = build(config)
    assert result.exit_code == 0, result.output
    assert len(sglang_server.state.chat_requests) == 7  # six prompts, one of them twice


# 3. An HTML page with HTTP 200 from arXiv --------------------------------------------------------

def test_an_html_page_from_arxiv_is_an_error_and_is_never_cached(
        workspace: Path, arxiv_server: ArxivServer, sglang_server: SglangServer) -> None:
    arxiv_server.state.feed_override = (
        b"<html><head><title>Rate exceeded</title></head><body>Rate exceeded.</body></html>")
    result = build(workspace)
    assert result.exit_code == 1
    assert "an HTML page ('Rate exceeded') instead of an Atom feed" in result.output
    assert arxiv_server.url in result.output
    assert len(arxiv_server.state.api_requests()) == 4  # retried like a 503
    assert sglang_server.state.chat_requests == []
    arxiv_server.state.feed_override = None  # arXiv recovers: the rerun asks again
    result = build(workspace)
    assert result.exit_code == 0, result.output
    assert len(arxiv_server.state.api_requests()) == 5


# 4. A PDF that trickles ------------------------------------------------------------------------

def test_a_trickling_pdf_hits_the_download_deadline(
        tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer) -> None:
    config = write_config(tmp_path / "ws", arxiv_server, sglang_server)
    config.write_text(config.read_text().replace(
        "timeout_seconds = 5.0", "timeout_seconds = 5.0\npdf_deadline_seconds = 1.0"))
    pdf = next((FIXTURES / "pdfs").glob("*.pdf")).read_bytes()
    arxiv_server.state.pdfs["2202.12139v1"] = PdfResponse(body=pdf, trickle_s=0.1)
    result = build(config)
    assert result.exit_code == 0, result.output
    page = (tmp_path / "ws" / "site_src" / "editions" / EDITION / "papers" / "2202.12139v1.md")
    assert "took longer than 1 s" in page.read_text()


# 5. Paths: the site folder is only replaced when it is ours ---------------------------------------

def test_a_site_dir_holding_other_files_is_never_replaced(workspace: Path) -> None:
    ws = workspace.parent
    assert build(workspace).exit_code == 0
    (ws / "site").rename(ws / "built")
    (ws / "site").mkdir()
    (ws / "site" / "thesis.tex").write_text("years of work")
    result = run("site", "--config", str(workspace))
    assert result.exit_code == 1
    assert "holds files that `digest site` did not write" in result.output
    assert (ws / "site" / "thesis.tex").read_text() == "years of work"
    assert not [p for p in ws.iterdir() if p.name.startswith(".site.")]


def test_our_own_site_is_replaced_and_a_killed_builds_leftovers_are_removed(
        workspace: Path) -> None:
    ws = workspace.parent
    assert build(workspace).exit_code == 0
    assert (ws / "site" / ".digest-site").is_file()
    leftover = ws / ".site.building-999999999"  # a pid that cannot be running
    (leftover / "assets").mkdir(parents=True)
    assert run("site", "--config", str(workspace)).exit_code == 0
    assert not leftover.exists()


# 7. One huge title ---------------------------------------------------------------------------

def test_a_huge_title_is_cut_and_the_edition_builds(
        workspace: Path, arxiv_server: ArxivServer, sglang_server: SglangServer) -> None:
    arxiv_server.state.feed_override = atom_feed([
        Entry("2612.00001v1", "Huge " + "word " * 40_000, authors=("X" * 50_000,)),
        Entry("2612.00002v1", "A normal title")])
    result = build(workspace)
    assert result.exit_code == 0, result.output
    bundle_prompt = str(sglang_server.state.chat_requests[0]["messages"][-1]["content"])
    assert bundle_prompt.count("word ") < 200 and "X" * 1_000 not in bundle_prompt
    record = json.loads((workspace.parent / "site_src" / "editions" / EDITION / "edition.json")
                        .read_text())
    assert len(record["papers"][0]["title"]) <= 500 and record["papers"][0]["title"].endswith("…")


# 8. arXiv's three seconds across processes -----------------------------------------------------

def test_the_time_of_the_last_request_outlives_the_command(
        tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer) -> None:
    # How a limiter waits for a time in this file is tested on a fake clock
    # (tests/test_arxiv_source.py); here, that real commands write and share it.
    config = write_config(tmp_path / "ws", arxiv_server, sglang_server)
    state = tmp_path / "ws" / ".cache" / "arxiv-last-request.json"
    run("doctor", "--config", str(config))
    after_doctor = json.loads(state.read_text())["127.0.0.1"]
    assert run("fetch", "--config", str(config), "--edition", EDITION).exit_code == 0
    assert json.loads(state.read_text())["127.0.0.1"] > after_doctor
    assert list(json.loads(state.read_text())) == ["127.0.0.1"]  # one entry per host


# 9. Smaller: the lock, file modes, the User-Agent -------------------------------------------------

def test_digest_site_takes_the_workspace_lock(workspace: Path) -> None:
    assert build(workspace).exit_code == 0
    with Cache(workspace.parent / ".cache").lock():
        result = run("site", "--config", str(workspace))
    assert result.exit_code == 1
    assert "another digest run is using this workspace" in result.output


def test_pages_and_cache_files_are_readable_by_a_web_server(
        workspace: Path, arxiv_server: ArxivServer) -> None:
    old = os.umask(0o022)
    try:
        assert build(workspace).exit_code == 0
    finally:
        os.umask(old)
    ws = workspace.parent
    for path in every_file(ws / "site_src") + every_file(ws / "site"):
        assert stat.S_IMODE(path.stat().st_mode) & 0o044 == 0o044, path
    api_agents = [ua for ua, (_, p) in zip(arxiv_server.state.user_agents,
                                            arxiv_server.state.requests, strict=True)
                  if p.startswith("/api/")]
    assert api_agents and all(ua.startswith("research-digest/") for ua in api_agents)
