"""Operating the tool: quiet honest output, edition names, removing an edition, server advice."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from generator.cli import cli
from generator.errors import UsageError
from generator.pipeline import check_edition
from generator.publish.site import ARXIV_CREDIT
from tests.conftest import ROOT
from tests.servers.arxiv import ArxivServer, PdfResponse
from tests.servers.sglang import Fault, SglangServer

FIRST, SECOND = "2026-11-25", "2026-12-02"


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def build(config: Path, edition: str) -> Result:
    return run("build", "--config", str(config), "--edition", edition)


def test_a_cached_rebuild_off_a_terminal_prints_a_line_per_stage(workspace: Path) -> None:
    assert build(workspace, SECOND).exit_code == 0
    result = build(workspace, SECOND)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert not [line for line in lines if "done" in line or "fetched" in line], lines
    assert [line for line in lines if line.endswith("…")] == [
        "fetch: arXiv search and full text…", lines[2], "render: Markdown pages…",
        "site: MkDocs build and check…"]
    assert "6 of 6 prompt(s) answered from the cache" in result.output


def test_a_failed_prompt_is_reported_once(workspace: Path, sglang_server: SglangServer) -> None:
    sglang_server.state.responder = lambda body: Fault(500, "the GPU caught fire")
    result = build(workspace, SECOND)
    assert result.exit_code == 1
    # Six prompts, each reported once in our words; the server's own words go to the log
    # only (once), never to a page or a record.
    assert result.output.count("HTTP 500 from") == 6
    assert result.output.count("internal server error") == 6
    assert result.output.count("the GPU caught fire") <= 1
    published = [p for p in (workspace.parent / "site_src").rglob("*") if p.is_file()]
    assert published and not any("GPU caught fire" in p.read_text() for p in published)


def test_a_missing_pdf_is_reported_once(workspace: Path, arxiv_server: ArxivServer) -> None:
    # Off a terminal, one line per event: not the log's warning and the progress line both.
    arxiv_server.state.pdfs["2202.12139v1"] = PdfResponse(404, b"Not found", "text/plain")
    result = build(workspace, SECOND)
    assert result.exit_code == 0, result.output
    assert result.output.count("no full text for 2202.12139v1") == 1, result.output


@pytest.mark.parametrize("name", ["yesterday", "latest", "2026-13-01", "../../etc", "2026-12-02x"])
def test_editions_are_named_by_their_date(workspace: Path, name: str) -> None:
    result = build(workspace, name)
    assert result.exit_code == 2
    assert "an edition is named by its date" in result.output


def test_a_suffix_names_a_second_edition_of_a_day_on_purpose() -> None:
    assert check_edition("2026-12-02-special") == "2026-12-02-special"
    with pytest.raises(UsageError):
        check_edition("2026-12-02_special")


def test_remove_takes_an_edition_off_the_site_and_keeps_its_cache(workspace: Path) -> None:
    ws = workspace.parent
    assert build(workspace, FIRST).exit_code == 0
    assert build(workspace, SECOND).exit_code == 0
    second = json.loads((ws / "site_src" / "editions" / SECOND / "edition.json").read_text())
    assert {p["status"] for p in second["papers"]} == {"seen"}
    result = run("remove", "--config", str(workspace), FIRST)
    assert result.exit_code == 0, result.output
    assert not (ws / "site_src" / "editions" / FIRST).exists()
    assert not (ws / "site" / "editions" / FIRST).exists()
    assert FIRST not in (ws / "site" / "index.html").read_text()
    # Named for the workflow's restore (committed with the pages, never published).
    assert (ws / "site_src" / ".removed-editions").read_text() == f"{FIRST}\n"
    assert not list((ws / "site").rglob(".removed-editions"))
    second = json.loads((ws / "site_src" / "editions" / SECOND / "edition.json").read_text())
    assert {p["status"] for p in second["papers"]} == {"new"}  # nothing is seen before now
    assert (ws / ".cache" / "editions" / FIRST / "synthesis.json").is_file()
    assert run("render", "--config", str(workspace), "--all").exit_code == 0
    assert not (ws / "site_src" / "editions" / FIRST).exists()  # not brought back
    assert run("remove", "--config", str(workspace), FIRST).exit_code == 2  # gone already


def test_the_site_credits_arxiv_in_its_footer(workspace: Path) -> None:
    assert build(workspace, SECOND).exit_code == 0
    page = (workspace.parent / "site" / "editions" / SECOND / "index.html").read_text()
    assert ARXIV_CREDIT in page


def test_server_command_for_a_remote_server_listens_and_wants_the_key(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[llm]\nbase_url = "https://llm.example.org/v1"\n')
    result = CliRunner().invoke(cli, ["server-command", "--config", str(config)])
    assert result.exit_code == 0, result.output
    assert '--host 0.0.0.0 --api-key "$SGLANG_API_KEY"' in result.output
    assert "--context-length" in result.output and "TLS" in result.output


def test_no_server_names_every_way_out(workspace: Path, sglang_server: SglangServer) -> None:
    sglang_server.stop()
    result = build(workspace, SECOND)
    assert result.exit_code == 1
    for advice in ("digest doctor", "--wait-for-server", "DIGEST_LLM_BASE_URL",
                   "--context-length", "python -m sglang.launch_server"):
        assert advice in result.output, advice


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_says_where_and_takes_verbose_after_the_command(workspace: Path) -> None:
    assert build(workspace, SECOND).exit_code == 0
    address = f"127.0.0.1:{_free_port()}"
    process = subprocess.Popen(
        [sys.executable, "-m", "generator", "serve", "-v", "--config", str(workspace),
         "--dev-addr", address], stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert process.stderr is not None
        first = process.stderr.readline()
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert first.startswith("Serving ") and f"http://{address}/" in first


def test_an_unchanged_rebuild_runs_no_site_build_and_digest_site_always_does(
        workspace: Path) -> None:
    site = workspace.parent / "site"
    assert build(workspace, SECOND).exit_code == 0
    built = (site / "index.html").stat().st_ino
    assert build(workspace, SECOND).exit_code == 0
    assert (site / "index.html").stat().st_ino == built  # not rebuilt: the same files
    assert run("site", "--config", str(workspace)).exit_code == 0
    assert (site / "index.html").stat().st_ino != built  # an explicit build always builds
    (workspace.parent / "mkdocs.yml").write_text((ROOT / "mkdocs.yml").read_text()
                                                 .replace("primary: indigo", "primary: teal"))
    rebuilt = (site / "index.html").stat().st_ino
    assert build(workspace, SECOND).exit_code == 0
    assert (site / "index.html").stat().st_ino != rebuilt  # mkdocs.yml changed: built again


def test_an_unchanged_rebuild_imports_neither_openai_nor_mkdocs(workspace: Path) -> None:
    assert build(workspace, SECOND).exit_code == 0
    code = ("import sys\nfrom generator.cli import main\n"
            "try:\n    main(['build', '--config', sys.argv[1], '--edition', sys.argv[2]])\n"
            "except SystemExit as exit:\n    assert not exit.code, exit.code\n"
            "print(sorted({'openai', 'mkdocs', 'material'} & sys.modules.keys()))")
    done = subprocess.run([sys.executable, "-c", code, str(workspace), SECOND], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize("command", ["site", "serve"])
def test_a_site_before_any_edition_says_to_build_first(tmp_path: Path, command: str) -> None:
    """A workspace just made by `digest init` has no pages: one line saying what to run, not
    MkDocs' complaint about docs_dir (and no 'Serving …' first)."""
    assert CliRunner().invoke(cli, ["init", str(tmp_path / "ws")]).exit_code == 0
    result = CliRunner().invoke(cli, [command, "--config", str(tmp_path / "ws" / "config.toml")])
    assert result.exit_code == 2, result.output
    assert "run `digest build` first" in result.output
    assert "Serving" not in result.output and "mkdocs" not in result.output.lower()
    assert not (tmp_path / "ws" / "site").exists()
