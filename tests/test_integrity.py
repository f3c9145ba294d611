"""Nothing a paper or a model writes can erase, fake or leak anything (issue 24).

Unit tests on fixed objects for each hole, plus the few that need the real thing: a MkDocs
build that would lose text, `digest serve` over a plugin-less mkdocs.yml in Chromium, the LLM
client over HTTP against a server that echoes the API key, and a build whose disk fills up.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import markdown
import pytest
from click.testing import CliRunner

from generator.archive.history import History
from generator.cli import cli
from generator.cli.common import write_error
from generator.completions import PromptRequest
from generator.edition.render import make_environment, render_edition, write_pages
from generator.errors import LlmRequestError, SiteBuildError
from generator.papers import valid_arxiv_id
from generator.publish.sanitize import lost_text, sanitize_html
from generator.publish.site import build_site, with_our_plugins
from generator.synthesis.llm_client import ChatClient
from generator.synthesis.structured import parse_answer
from generator.synthesis.triage import TRIAGE_SCHEMA
from generator.text.safe_text import md_model, md_text, plain
from generator.text.tex import math_text
from generator.text.urls import REDACTED, redact_secrets, redact_text, register_secret
from tests.browser import launch_chromium
from tests.conftest import ROOT
from tests.edition_fixture import EDITION, one_paper_edition
from tests.htmlcheck import live_problems
from tests.servers.sglang import Answer, Fault, SglangServer

EXTENSIONS = ["tables", "attr_list", "admonition", "pymdownx.superfences"]
PAYLOADS = ["$\\text{<script>}$", "$\\text{<style>}$", "$\\mathrm{<svg/onload=alert(1)>}$",
            "$\\text{</p><title>}$", "$$\\text{<textarea>}$$", "\\(\\text{<plaintext>}\\)"]


# Case 1: math conversion cannot emit markup ----------------------------------------------------

@pytest.mark.parametrize("payload", PAYLOADS)
def test_tex_with_markup_in_plain_text_stays_text(payload: str) -> None:
    raw = markdown.markdown(md_text(f"Before {payload} after the formula."), extensions=EXTENSIONS)
    assert live_problems(raw) == []  # inert before any sanitizer runs
    assert lost_text(raw, sanitize_html(raw)) is None  # and the sanitizer removes no text
    assert "after the formula." in raw


@pytest.mark.parametrize("payload", PAYLOADS)
def test_tex_with_markup_in_a_model_answer_stays_text(payload: str) -> None:
    answer = f"Paper 1 shows {payload} clearly.\n\nThe last paragraph."
    raw = markdown.markdown(md_model(answer), extensions=EXTENSIONS)
    assert live_problems(raw) == []
    assert lost_text(raw, sanitize_html(raw)) is None
    assert "The last paragraph." in raw


def test_escaped_markup_in_tex_is_shown_not_decoded_into_tags() -> None:
    markup = md_text("$\\text{&lt;script&gt;}$")
    assert "<script" not in markup
    assert math_text("\\text{<b>}") == "<b>"  # plain text for tooltips: escaped by its callers
    assert "<" not in plain("x $\\text{<b>}$ y").replace("&lt;", "")


# Case 1 and the integrity check: a page that would lose text is not built -----------------------

def test_the_sanitizer_reports_text_it_would_remove() -> None:
    assert lost_text("<p>a <b>b</b> &lt;c&gt;</p>", "<p>a <b>b</b> &lt;c&gt;</p>") is None
    swallowed = "<p>Fast decoding <mtext><script></mtext> for LLMs</p><p>Paper 2</p>"
    assert "forLLMs" in (lost_text(swallowed, sanitize_html(swallowed)) or "")
    hidden = "<p>x<title>y</p><p>the rest</p>"
    assert lost_text(hidden, sanitize_html(hidden)) is not None
    chart = "<svg><title>a bar</title><rect/></svg><p>text</p>"
    assert lost_text(chart, sanitize_html(chart)) is None  # an SVG title is no loss


def test_a_page_that_would_lose_text_fails_the_build_and_keeps_the_old_site(
        tmp_path: Path) -> None:
    docs, site = tmp_path / "docs", tmp_path / "site"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nAll fine.\n")
    build_site(ROOT / "mkdocs.yml", docs, site, "Digest", fallback_yml=ROOT / "mkdocs.yml",
               history=History.load(docs))
    before = (site / "index.html").read_bytes()
    (docs / "later.md").write_text("# Later\n\nThe start <style>and everything after</style>.\n")
    with pytest.raises(SiteBuildError) as raised:
        build_site(ROOT / "mkdocs.yml", docs, site, "Digest", fallback_yml=ROOT / "mkdocs.yml",
               history=History.load(docs))
    assert "later.md: the sanitizer would remove text" in str(raised.value)
    assert (site / "index.html").read_bytes() == before


# Case 2: `digest serve` sanitizes and checks whatever mkdocs.yml says ----------------------------

def test_serve_adds_our_plugins_to_any_plugin_list(tmp_path: Path) -> None:
    yml = tmp_path / "mkdocs.yml"
    yml.write_text("site_name: x\nplugins:\n  - search:\n      lang: en\n  - offline\n")
    assert with_our_plugins(yml) == [{"search": {"lang": "en"}}, "offline", "digest-sanitize",
                                     "digest-reading"]
    yml.write_text("site_name: x\n")
    assert with_our_plugins(yml) == ["search", "digest-sanitize", "digest-reading"]
    yml.write_text("site_name: x\nplugins:\n  digest-sanitize: {}\n")
    assert with_our_plugins(yml) == {"digest-sanitize": {}, "digest-reading": {}}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """`digest serve` over a hostile edition, with a mkdocs.yml that lacks the sanitizer."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "config.toml").write_text('[digest]\ntitle = "Served"\n')
    (ws / "mkdocs.yml").write_text((ROOT / "mkdocs.yml").read_text()
                                   .replace("  - digest-sanitize\n", ""))
    tldr = "$\\text{<svg/onload=alert(1)>}$ and <img src=x onerror=alert(2)>"
    edition = one_paper_edition(f"A title {tldr}", ("A. Author",), f"An abstract {tldr} END",
                                f"Paper 1 says {tldr}.\n\n<script>alert(3)</script> END")
    write_pages(ws / "site_src", render_edition(make_environment(ROOT), edition, []))
    # What an older version could have left in site_src: raw markup only the sanitizer stops.
    page = ws / "site_src" / "editions" / EDITION / "research-map.md"
    page.write_text(page.read_text() + "\n\n<img src=x onerror=alert(4)>\n")
    port = _free_port()
    log = (tmp_path / "serve.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-c", "from generator.cli import main; main()", "serve", "--config",
         str(ws / "config.toml"), "--dev-addr", f"127.0.0.1:{port}"],
        stdout=log, stderr=subprocess.STDOUT, cwd=ws)
    try:
        for _ in range(600):  # the first build takes a few seconds
            if process.poll() is not None:
                pytest.fail((tmp_path / "serve.log").read_text())
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def test_serve_without_the_plugin_in_mkdocs_yml_runs_no_script(served: str) -> None:
    dialogs: list[str] = []
    with launch_chromium() as browser:
        page = browser.new_page()
        def dismiss(dialog: Any) -> None:
            dialogs.append(dialog.message)
            dialog.dismiss()

        page.on("dialog", dismiss)
        for path in ("/", f"/editions/{EDITION}/", f"/editions/{EDITION}/research-map.html",
                     f"/editions/{EDITION}/papers/2501.00001v1.html"):
            response = page.goto(served + path)
            assert response is not None and response.ok, path
            page.wait_for_load_state("load")
            assert live_problems(page.inner_html("article")) == [], path
            if path.endswith(".html"):  # the answer, the abstract: whole, after the payload
                assert "END" in page.inner_text("article"), path
    assert dialogs == []


# Case 3: text from structured answers is cleaned where it enters --------------------------------

def test_json_escapes_in_a_structured_answer_are_cleaned_and_bounded() -> None:
    answer = json.dumps({"score": 3, "reason": "x"}).replace(
        '"x"', '"ok\\ud800\\u0000\\u202e' + "word " * 100_000 + '"')
    answer = answer[:-1] + ', "interests": ["a\\udfffb"]}'
    data = parse_answer(answer, TRIAGE_SCHEMA)
    assert len(data["reason"]) <= 300  # the schema's maxLength, no longer ignored
    assert data["reason"].startswith("okword")
    assert data["interests"] == ["ab"]
    json.dumps(data, ensure_ascii=False).encode("utf-8")  # writable: no lone surrogate left


# Case 6: secrets are redacted by value and by shape, everywhere ----------------------------------

KEY = "sk-test-0123456789abcdefSECRET"


def test_credentials_are_redacted_by_shape_and_by_value() -> None:
    register_secret("a-local-key-without-shape-42")
    for text in (f"Authorization: Bearer {KEY}", f'{{"api_key": "{KEY}"}}', f"key={KEY}",
                 "echo a-local-key-without-shape-42 back", "https://user:pw@host.example/v1"):
        assert KEY not in redact_text(text) and "pw@" not in redact_text(text)
        assert "a-local-key-without-shape-42" not in redact_secrets(text)
    assert redact_secrets("Bearer tokens expire; the password field is empty.") == (
        "Bearer tokens expire; the password field is empty.")  # prose about keys stays


def test_a_key_echoed_by_the_server_reaches_no_message_or_answer() -> None:
    register_secret(KEY)  # what make_services does with the key from the environment
    server = SglangServer().start()
    try:
        client = ChatClient(server.base_url, "deepseek-ai/DeepSeek-V4-Flash", KEY, max_retries=0)
        request = PromptRequest(name="research-map", title="Map", kind="research_map",
                                question="", messages=(), max_tokens=50, temperature=0)
        server.state.faults.append(Fault(400, f"bad request; headers were Authorization: "
                                              f"Bearer {KEY}, x-api-key: {KEY}"))
        with pytest.raises(LlmRequestError) as raised:
            client.complete(request)
        # Our words are published; the server's (kept for the log) are redacted.
        assert KEY not in str(raised.value) and "Bearer" not in str(raised.value)
        assert KEY not in raised.value.detail and REDACTED in raised.value.detail
        server.state.responder = lambda body: Answer(f"Your key is {KEY}, as you said.")
        assert KEY not in client.complete(request).content
    finally:
        server.stop()


# The smaller cases ------------------------------------------------------------------------------

def test_arxiv_ids_take_ascii_digits_only() -> None:
    assert valid_arxiv_id("2401.01234v2")
    assert not valid_arxiv_id("\uff12\uff14\uff10\uff11.01234")
    assert not valid_arxiv_id("2401.\u0661\u0662\u0663\u0664")  # Arabic-Indic digits


def test_a_full_disk_is_one_line_naming_the_path() -> None:
    err = OSError(errno.ENOSPC, "No space left on device", "/ws/.cache/completions/ab.json")
    line = write_error(err)
    assert "\n" not in line
    assert line.startswith("no space left on the device for /ws/.cache/completions/ab.json")


def test_a_write_that_fails_midway_is_one_line_and_leaves_nothing_half_written(
        workspace: Path) -> None:
    # A file-size limit makes every large write fail as a full disk would, midway through.
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))

    result = subprocess.run(
        [sys.executable, "-c", "from generator.cli import main; main()", "build", "--config",
         str(workspace), "--edition", EDITION],
        capture_output=True, text=True, preexec_fn=limit, timeout=300,
        env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert result.returncode == 1, result.stdout + result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and str(workspace.parent) in errors[0], result.stderr
    assert "Traceback" not in result.stderr
    assert not list(workspace.parent.rglob("*.tmp"))  # no half-written file left behind
    assert not (workspace.parent / "site").exists()  # nothing published from a failed run


def test_a_key_echoed_by_the_server_reaches_no_file_and_no_log_line(
        workspace: Path, sglang_server: SglangServer) -> None:
    key = "sk-echoed-9876543210zyxwvuKEY"

    def echo(body: dict[str, Any]) -> Answer | Fault:
        if "deep" in json.dumps(body).lower():
            return Fault(400, f"invalid request: Authorization: Bearer {key} is not allowed")
        return Answer(f"Paper 1 says so. The key you sent was {key}.")

    sglang_server.state.responder = echo
    result = CliRunner().invoke(cli, ["-v", "build", "--config", str(workspace), "--edition",
                                      EDITION], env={"SGLANG_API_KEY": key})
    assert result.exit_code == 1, result.output  # the deep dives failed, and say so
    assert key not in result.output
    assert sglang_server.state.authorizations[-1] == f"Bearer {key}"  # the key was sent
    written = [p for p in workspace.parent.rglob("*") if p.is_file()]
    assert any(p.name == "search_index.json" for p in written)
    for path in written:
        assert key.encode() not in path.read_bytes(), path
