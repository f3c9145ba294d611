"""`digest` end to end against the local arXiv- and SGLang-shaped servers, with real MkDocs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from generator.cli import cli
from generator.store.cache import Cache
from tests.conftest import write_config
from tests.htmlcheck import live_problems
from tests.servers.arxiv import ArxivServer, PdfResponse
from tests.servers.sglang import Answer, Fault, SglangServer, task_of

EDITION = "2026-12-02"
PAGES = ["index.md", "research-map.md", "memory-management.md", "benchmarks-and-metrics.md",
         "engineering-roadmap.md", "thinking.md", "edition.json"]


def digest(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def build(config: Path, edition: str = EDITION) -> Result:
    return digest("build", "--config", str(config), "--edition", edition)


def article(html: str) -> str:
    """The page's own content, without the theme's chrome (which has its own scripts)."""
    match = re.search(r"<article[^>]*>(.*)</article>", html, re.DOTALL)
    assert match, "no <article> in page"
    return match.group(1)


def test_every_command_has_help_with_an_example() -> None:
    assert "Example:" in digest("--help").output
    for name, command in cli.commands.items():
        output = digest(name, "--help").output
        assert "Example:" in output and f"digest {name}" in output, name
        assert command.help


def test_init_writes_a_workspace_and_never_overwrites(tmp_path: Path) -> None:
    result = digest("init", str(tmp_path / "my-digest"))
    assert result.exit_code == 0, result.output
    assert (tmp_path / "my-digest" / "config.toml").is_file()
    assert (tmp_path / "my-digest" / "mkdocs.yml").is_file()
    again = digest("init", str(tmp_path / "my-digest"))
    assert again.exit_code == 2 and "already exist" in again.output


def test_build_end_to_end_then_a_rebuild_sends_nothing(
    workspace: Path, arxiv_server: ArxivServer, sglang_server: SglangServer
) -> None:
    result = build(workspace)
    assert result.exit_code == 0, result.output
    assert ("6 new, of 6 papers. 6 papers read (3 with full text, 0 missing), 6 prompt(s) sent"
            in result.output)

    ws = workspace.parent
    edition_dir = ws / "site_src" / "editions" / EDITION
    for page in PAGES:
        assert (edition_dir / page).is_file(), page
    assert len(list((edition_dir / "papers").glob("*.md"))) == 6

    # Every prompt sent once; the thinking one with thinking on.
    requests = sglang_server.state.chat_requests
    assert len(requests) == 6
    assert sum(1 for r in requests if r.get("chat_template_kwargs", {}).get("thinking")) == 1
    # All prompts start with the same system message and bundle (shared prefix for the cache).
    prefixes = {r["messages"][0]["content"] + r["messages"][1]["content"].split("\n---\n")[0]
                for r in requests}
    assert len(prefixes) == 1

    thinking = (edition_dir / "thinking.md").read_text()
    assert '    ??? info "The model\'s reasoning' in thinking
    # The reasoning's citations are linked too, and read as the paper's name.
    assert re.search(r"First, compare \[[^\]]+\]\(papers/2202\.12139v1\.md", thinking)
    assert "[Paper 1](" not in thinking
    assert "| Completion tokens |" in thinking and "extra completion tokens" in thinking

    record = json.loads((edition_dir / "edition.json").read_text())
    assert [p["number"] for p in record["papers"]] == [1, 2, 3, 4, 5, 6]
    assert [p["full_text"]["status"] for p in record["papers"]] == ["ok"] * 3 + ["not_requested"] * 3
    assert {c["name"] for c in record["prompts"]} == {
        "research-map", "memory-management", "benchmarks-and-metrics", "engineering-roadmap",
        "thinking-off", "thinking-on"}
    assert all(c["completion"]["usage"]["completion_tokens"] > 0 for c in record["prompts"])
    assert all(c["completion"]["content"] for c in record["prompts"])  # every answer, whole
    assert "text" not in json.dumps(record["papers"][0]["full_text"]).replace("full_text", "")

    site = ws / "site"
    html = (site / "editions" / EDITION / "thinking.html").read_text()
    assert "First, compare" in html
    assert (site / "index.html").is_file() and (site / "search" / "search_index.json").is_file()
    home = (site / "index.html").read_text()
    assert f"editions/{EDITION}/index.html" in home and "md-header" in home

    # Never publish arXiv PDFs or extracted text: a phrase from a full-text excerpt is nowhere.
    cache = Cache(ws / ".cache")
    fetched = cache.get_fetch(EDITION)
    assert fetched is not None
    excerpt = fetched.sources[0].full_text.text
    phrase = excerpt[len(excerpt) // 2: len(excerpt) // 2 + 40]
    assert not list(site.rglob("*.pdf"))
    for path in list(site.rglob("*.html")) + list(site.rglob("*.json")) + list(
            (ws / "site_src").rglob("*.*")):
        assert phrase not in path.read_text(errors="ignore"), path

    # The rebuild reuses everything: no arXiv request, no PDF, no prompt, not even a model list.
    api_before, models_before = len(arxiv_server.state.requests), sglang_server.state.model_requests
    again = build(workspace)
    assert again.exit_code == 0, again.output
    assert "0 prompt(s) sent" in again.output
    assert len(sglang_server.state.chat_requests) == 6
    assert sglang_server.state.model_requests == models_before
    assert len(arxiv_server.state.requests) == api_before


def test_stages_run_one_at_a_time(workspace: Path, sglang_server: SglangServer) -> None:
    config = str(workspace)
    early = digest("render", "--config", config, "--edition", EDITION)
    assert early.exit_code == 2 and "has not been fetched yet" in early.output
    fetched = digest("fetch", "--config", config, "--edition", EDITION)
    assert fetched.exit_code == 0, fetched.output
    assert "6 paper(s) recorded" in fetched.output
    assert not sglang_server.state.chat_requests
    unsynth = digest("render", "--config", config, "--edition", EDITION)
    assert unsynth.exit_code == 2 and "has no synthesis yet" in unsynth.output
    assert digest("synthesize", "--config", config, "--edition", EDITION).exit_code == 0
    assert len(sglang_server.state.chat_requests) == 6
    assert digest("render", "--config", config, "--edition", EDITION).exit_code == 0
    site = digest("site", "--config", config)
    assert site.exit_code == 0, site.output
    assert (workspace.parent / "site" / "editions" / EDITION / "research-map.html").is_file()


def test_broken_pdfs_do_not_sink_the_edition(
    workspace: Path, arxiv_server: ArxivServer, fixtures: Path
) -> None:
    real = next((fixtures / "pdfs").glob("*1111.2011v2*.pdf")).read_bytes()
    arxiv_server.state.pdfs["2202.12139v1"] = PdfResponse(
        200, b"<html><body>Please solve this captcha</body></html>", "text/html")
    arxiv_server.state.pdfs["2405.13786v1"] = PdfResponse(200, real[:5000])
    result = build(workspace)
    assert result.exit_code == 0, result.output
    assert "(1 with full text, 2 missing)" in result.output
    papers = workspace.parent / "site_src" / "editions" / EDITION / "papers"
    page = (papers / "2202.12139v1.md").read_text()
    assert "missing, so the synthesis used the abstract only" in page
    assert "instead of a PDF" in page
    assert "## Abstract" in page and "deep learning" in page.lower()
    assert "damaged or truncated" in (papers / "2405.13786v1.md").read_text()


def test_a_failed_prompt_is_reported_and_the_rerun_sends_only_it(
    workspace: Path, sglang_server: SglangServer
) -> None:
    def flaky(body: dict[str, object]) -> Answer | Fault:
        if "(Memory management)" in task_of(body):
            return Fault(500, "CUDA out of memory", "InternalServerError")
        return Answer("An answer citing Paper 1.")

    sglang_server.state.responder = flaky
    result = build(workspace)
    assert result.exit_code == 1
    assert "1 prompt(s) failed: memory-management" in result.output
    edition_dir = workspace.parent / "site_src" / "editions" / EDITION
    page = (edition_dir / "memory-management.md").read_text()
    assert '!!! failure "This prompt failed"' in page and "HTTP 500 from" in page
    assert "internal server error" in page and "CUDA" not in page  # our words, not the server's
    assert "1 prompt(s) failed" in (edition_dir / "index.md").read_text()
    assert (workspace.parent / "site" / "index.html").is_file()  # the rest was published

    sglang_server.state.responder = lambda body: Answer("Now it works, see Paper 2.")
    before = len(sglang_server.state.chat_requests)
    again = build(workspace)
    assert again.exit_code == 0, again.output
    assert len(sglang_server.state.chat_requests) == before + 1
    assert "Now it works" in (edition_dir / "memory-management.md").read_text()


def test_truncated_answers_are_marked(workspace: Path, sglang_server: SglangServer) -> None:
    sglang_server.state.responder = lambda body: Answer("Half an ans", finish_reason="length")
    assert build(workspace).exit_code == 0
    page = (workspace.parent / "site_src" / "editions" / EDITION / "research-map.md").read_text()
    assert '!!! warning "Truncated answer"' in page and "3,000-token limit" in page


def test_unreachable_server_fails_before_anything_is_written(
    tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer
) -> None:
    config = write_config(tmp_path / "ws", arxiv_server, sglang_server)
    config.write_text(config.read_text().replace(sglang_server.base_url, "http://127.0.0.1:9/v1"))
    result = build(config)
    assert result.exit_code == 1
    assert "the LLM server at http://127.0.0.1:9/v1 did not answer" in result.output
    assert "python -m sglang.launch_server" in result.output
    assert not (tmp_path / "ws" / "site_src").exists() and not (tmp_path / "ws" / "site").exists()
    assert not arxiv_server.state.requests


def test_unserved_model_fails_with_the_served_list(workspace: Path, sglang_server: SglangServer) -> None:
    sglang_server.state.models = ["Qwen/Qwen3-8B"]
    result = build(workspace)
    assert result.exit_code == 1 and "it serves: Qwen/Qwen3-8B" in result.output


def test_bad_config_exits_2_naming_file_and_key(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[arxiv]\nmax_papers = 'x'\n[llm]\nbase_ur = 'http://x'\n")
    result = build(config)
    assert result.exit_code == 2
    assert str(config) in result.output
    assert "arxiv.max_papers: expected an integer" in result.output
    assert "llm.base_ur: unknown key (did you mean 'llm.base_url'?)" in result.output


def test_bad_edition_name_exits_2(workspace: Path) -> None:
    result = build(workspace, edition="../../etc")
    assert result.exit_code == 2 and "invalid edition name" in result.output


def test_a_second_run_at_once_is_refused(workspace: Path) -> None:
    with Cache(workspace.parent / ".cache").lock():
        result = build(workspace)
    assert result.exit_code == 1 and "another digest run is using this workspace" in result.output


def test_no_papers_makes_an_edition_that_says_so(
    workspace: Path, arxiv_server: ArxivServer, sglang_server: SglangServer
) -> None:
    arxiv_server.state.default_feed = "arxivpy2026_idlist_0808.05394_nonexistent_empty.xml"
    result = build(workspace)
    assert result.exit_code == 0, result.output
    overview = (workspace.parent / "site_src" / "editions" / EDITION / "index.md").read_text()
    assert "No papers matched" in overview
    assert not sglang_server.state.chat_requests


def test_editions_accumulate_newest_first(workspace: Path) -> None:
    assert build(workspace, "2026-11-25").exit_code == 0
    assert build(workspace, EDITION).exit_code == 0
    ws = workspace.parent
    home = (ws / "site_src" / "index.md").read_text()
    assert home.startswith(
        f"# Edition {EDITION}\n\n**Nothing new** · [all 6 papers](editions/{EDITION}/index.md)")
    assert home.index(f"[{EDITION}](editions/{EDITION}/index.md)") < home.index(
        "[2026-11-25](editions/2026-11-25/index.md)")
    paper = (ws / "site_src" / "editions" / EDITION / "papers" / "2202.12139v1.md").read_text()
    assert "[2026-11-25](../../2026-11-25/papers/2202.12139v1.md)" in paper
    assert (ws / "site" / "editions" / "2026-11-25" / "index.html").is_file()


HOSTILE_TITLE = ('<script>alert("t")</script><img src=x onerror=alert(1)> {{ 7*7 }} {% if %} '
                 '| pipe | [x](javascript:alert(2)) Wübben Ørsted $\\alpha_1$')


def test_hostile_metadata_and_model_output_stay_inert(
    workspace: Path, arxiv_server: ArxivServer, sglang_server: SglangServer, fixtures: Path
) -> None:
    feed = (fixtures / "arxiv_api" / "arxivpy2026_search_testing_start0_max10.xml").read_text()
    first_title = re.search(r"<entry>.*?<title>(.*?)</title>", feed, re.DOTALL)
    assert first_title
    escaped = HOSTILE_TITLE.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    arxiv_server.state.feed_override = feed.replace(first_title.group(1), escaped, 1).encode()
    sglang_server.state.responder = lambda body: Answer(
        "# Result\n\n<script>alert('m')</script> <iframe src=https://evil.example></iframe>\n"
        "[go](javascript:alert(3)) {{ config }} Paper 1 is **good**.\n")
    result = build(workspace)
    assert result.exit_code == 0, result.output
    site = workspace.parent / "site" / "editions" / EDITION
    for page in [site / "index.html", site / "research-map.html",
                 site / "papers" / "2202.12139v1.html"]:
        content = article(page.read_text())
        assert live_problems(content) == [], page
    paper = article((site / "papers" / "2202.12139v1.html").read_text())
    assert ("&lt;script&gt;alert(\"t\")&lt;/script&gt;" in paper
            or "&lt;script&gt;alert(&quot;t&quot;)" in paper)
    assert "{{ 7*7 }}" in paper and "Wübben Ørsted" in paper and "<math" in paper
    research_map = article((site / "research-map.html").read_text())
    assert "<strong>good</strong>" in research_map and "&lt;iframe" in research_map


@pytest.mark.parametrize("command", ["build", "fetch", "synthesize", "render", "site", "serve"])
def test_missing_config_is_a_usage_error(tmp_path: Path, command: str) -> None:
    result = digest(command, "--config", str(tmp_path / "none.toml"))
    assert result.exit_code == 2 and "file not found" in result.output


def test_a_workspace_template_overrides_the_default(workspace: Path) -> None:
    templates = workspace.parent / "templates"
    templates.mkdir()
    (templates / "home.md.j2").write_text("# {{ title | plain }}\n\nOur own home page.\n")
    assert build(workspace).exit_code == 0
    assert "Our own home page." in (workspace.parent / "site_src" / "index.md").read_text()
    # The other templates still come from the defaults.
    overview = workspace.parent / "site_src" / "editions" / EDITION / "index.md"
    assert "## Papers" in overview.read_text()
