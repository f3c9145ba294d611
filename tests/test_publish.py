"""Publishing: editions with history, the feed, offline reading, archives and deployment."""

from __future__ import annotations

import contextlib
import functools
import http.server
import io
import json
import os
import re
import shutil
import subprocess
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
import yaml
from click.testing import CliRunner, Result

from generator.cli import cli
from tests.browser import launch_chromium
from tests.conftest import ROOT, read_record, write_config
from tests.servers.arxiv import ArxivServer
from tests.servers.sglang import Answer, SglangServer

ATOM = "{http://www.w3.org/2005/Atom}"
FIRST, SECOND, THIRD = "2026-11-25", "2026-12-02", "2026-12-09"
LOCAL_ASSET_ATTRS = re.compile(r'<(script|link|img|iframe|source)\b[^>]*\b(?:src|href)="([^"]*)"')


@contextlib.contextmanager
def mock_env(values: dict[str, str]) -> Iterator[None]:
    """Environment variables set for the duration (the CLI reads DIGEST_SITE_URL there)."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def digest(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def build(config: Path, edition: str, *extra: str) -> Result:
    result = digest("build", "--config", str(config), "--edition", edition, *extra)
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture(scope="module")
def two_editions(tmp_path_factory: pytest.TempPathFactory, fixtures: Path) -> Iterator[Path]:
    """Two editions built once for the module's read-only checks (its own servers)."""
    arxiv, sglang = ArxivServer(fixtures).start(), SglangServer().start()
    try:
        config = write_config(tmp_path_factory.mktemp("two") / "ws", arxiv, sglang)
        build(config, FIRST)
        build(config, SECOND, "--zip")
        yield config.parent
    finally:
        arxiv.stop()
        sglang.stop()


def test_both_editions_are_reachable_from_the_home_page(two_editions: Path) -> None:
    home = (two_editions / "site" / "index.html").read_text()
    for edition in (FIRST, SECOND):
        assert f'href="editions/{edition}/index.html"' in home
        assert (two_editions / "site" / "editions" / edition / "index.html").is_file()
    source = (two_editions / "site_src" / "index.md").read_text()
    assert source.index(SECOND) < source.index(FIRST)  # latest first


def test_the_feed_parses_and_lists_both_editions(two_editions: Path) -> None:
    root = ElementTree.parse(two_editions / "site" / "feed.xml").getroot()
    assert root.tag == f"{ATOM}feed"
    entries = root.findall(f"{ATOM}entry")
    titles = [e.findtext(f"{ATOM}title") for e in entries]
    # Each title says what is in its entry: the picks by name, else the papers' count.
    second, first = (read_record(two_editions / "config.toml", e) for e in (SECOND, FIRST))
    assert titles == [
        f"Test Digest, {SECOND}: " + (", ".join(p.name for p in second.picks)
                                     or f"nothing new, of {len(second.papers)} papers"),
        f"Test Digest, {FIRST}: " + ", ".join(p.name for p in first.picks)]
    assert first.picks  # the first edition's papers are all new
    links = [e.find(f"{ATOM}link").get("href") for e in entries]  # type: ignore[union-attr]
    assert links[0] == f"editions/{SECOND}/index.html"
    assert all(e.findtext(f"{ATOM}summary") for e in entries)


def test_a_seen_paper_is_marked_seen(two_editions: Path) -> None:
    overview = (two_editions / "site_src" / "editions" / SECOND / "index.md").read_text()
    assert "**Nothing new** · 6 seen in an earlier edition" in overview
    assert "No new papers since the last edition" in overview
    assert "### Seen before (6) { data-search-exclude }" in overview and "### New" not in overview
    paper = (two_editions / "site_src" / "editions" / SECOND / "papers" / "2202.12139v1.md")
    text = paper.read_text()
    assert "seen in an earlier edition" in text and f"[{FIRST}](../../{FIRST}/papers/" in text


def test_the_site_loads_nothing_from_another_host_and_holds_no_full_text(two_editions: Path) -> None:
    site = two_editions / "site"
    for page in site.rglob("*.html"):
        for tag, url in LOCAL_ASSET_ATTRS.findall(page.read_text()):
            if tag == "link" and not url.endswith((".css", ".js", ".ico", ".png", ".svg")):
                continue  # navigation links, the feed
            assert "://" not in url and not url.startswith("//"), (page, url)
    assert not list(site.rglob("*.pdf"))
    assert not [p for p in site.rglob("*") if p.suffix in (".woff", ".woff2", ".ttf")]
    # Papers link arXiv itself, their PDFs too, never the API host they were fetched from.
    pages = [p.read_text() for p in (site / "papers").glob("*.html")]
    assert any('href="https://arxiv.org/pdf/' in page for page in pages)
    assert not any("127.0.0.1" in page for page in pages)
    index = (site / "search" / "search_index.js").read_text()
    assert index.startswith("var __index =")  # offline search
    assert (site / "assets" / "javascripts" / "iframe-worker-shim.js").is_file()


def test_every_synthesized_page_says_which_model_server_and_prompt_wrote_it(
        two_editions: Path) -> None:
    """Provenance: the model, the server kind (SGLang says so at /server_info), the date and
    the prompt's hash, in each synthesis page's footer and in the record."""
    record = read_record(two_editions / "config.toml", SECOND)
    assert record.server == "SGLang"
    prompt = next(p for p in record.prompts if p.name == "research-map")
    assert len(prompt.prompt_hash) == 12
    page = (two_editions / "site" / "editions" / SECOND / "research-map.html").read_text()
    footer = page[page.index('class="digest-provenance"'):]
    assert f"made {record.built_at[:10]}" in footer
    assert f"written by {prompt.completion.model} on SGLang" in footer
    assert f"from prompt <code>{prompt.prompt_hash}</code>" in footer
    assert len({p.prompt_hash for p in record.prompts}) == len(record.prompts)  # one hash per distinct prompt


def test_the_archive_holds_the_whole_site(two_editions: Path) -> None:
    with zipfile.ZipFile(two_editions / "site.zip") as archive:
        names = set(archive.namelist())
    assert "site/index.html" in names and f"site/editions/{SECOND}/thinking.html" in names


def test_skip_seen_keeps_seen_papers_out(workspace: Path, sglang_server: SglangServer) -> None:
    build(workspace, FIRST)
    sent = len(sglang_server.state.chat_requests)
    workspace.write_text(workspace.read_text().replace("[llm]", "skip_seen = true\n\n[llm]"))
    build(workspace, SECOND)
    record = (workspace.parent / "site_src" / "editions" / SECOND / "index.md").read_text()
    assert "No new papers since the last edition" in record and "left out (`skip_seen`)" in record
    assert len(sglang_server.state.chat_requests) == sent  # nothing to synthesize


def test_since_last_edition_asks_arxiv_for_a_date_window(
    workspace: Path, arxiv_server: ArxivServer
) -> None:
    build(workspace, FIRST)
    workspace.write_text(workspace.read_text().replace("[llm]", "since_last_edition = true\n\n[llm]"))
    build(workspace, SECOND)
    last = arxiv_server.state.api_requests()[-1]
    assert "submittedDate%3A%5B202611250000+TO+202612022359%5D" in last


def docs_bytes(workspace: Path) -> dict[str, bytes]:
    docs = workspace.parent / "site_src"
    return {str(p.relative_to(docs)): p.read_bytes() for p in sorted(docs.rglob("*"))
            if p.is_file()}


def test_the_archive_alone_renders_every_edition_again_byte_for_byte(
    tmp_path: Path, fixtures: Path, arxiv_server: ArxivServer, sglang_server: SglangServer
) -> None:
    """Three editions with briefs and themes; the cache removed; a template changed: every
    edition shows the change and its full answers, and with the template back every file is
    what a render with the cache wrote."""
    workspace = write_config(tmp_path / "ws", arxiv_server, sglang_server, structured=True,
                             max_papers=3, full_text_papers=2)
    editions = (FIRST, SECOND, THIRD)
    for edition in editions:  # the stages, not `build`: no site is needed until the end
        for stage in ("fetch", "synthesize", "render"):
            result = digest(stage, "--config", str(workspace), "--edition", edition)
            assert result.exit_code == 0, result.output
    cache = workspace.parent / ".cache"
    text = next(s["full_text"]["text"] for f in sorted(cache.rglob("fetch.json"))
                for s in json.loads(f.read_text())["sources"]
                if s["full_text"]["status"] == "ok")
    assert digest("render", "--config", str(workspace), "--all").exit_code == 0
    with_cache = docs_bytes(workspace)
    # Never the papers' text: not a sentence of it in any file of the archive.
    sentence = next(line for line in text.splitlines() if len(line) > 60)
    assert not [p for p, b in with_cache.items() if sentence.encode() in b]

    shutil.rmtree(cache)
    arxiv_server.stop()
    sglang_server.stop()  # no network from here on
    templates = workspace.parent / "templates"
    templates.mkdir()
    default = (ROOT / "templates" / "research_map.md.j2").read_text()
    (templates / "research_map.md.j2").write_text(default + "\nRendered by the new template.\n")
    result = digest("render", "--config", str(workspace), "--all")
    assert result.exit_code == 0 and "Rendered 3 edition(s)" in result.output, result.output
    for edition in editions:
        page = (workspace.parent / "site_src" / "editions" / edition / "research-map.md")
        assert "Rendered by the new template." in page.read_text()
        record = json.loads((page.parent / "edition.json").read_text())
        answer = next(p["completion"]["content"] for p in record["prompts"]
                      if p["name"] == "research-map")
        assert len(answer) > 200 and record["briefs"] and record["themes"]
    # The first edition's paper pages list the later editions too.
    paper = workspace.parent / "site_src" / "editions" / FIRST / "papers" / "2202.12139v1.md"
    assert f"[{THIRD}](../../{THIRD}/papers/2202.12139v1.md)" in paper.read_text()

    shutil.rmtree(templates)
    assert digest("render", "--config", str(workspace), "--all").exit_code == 0
    without_cache = docs_bytes(workspace)
    assert sorted(without_cache) == sorted(with_cache)
    assert [p for p in with_cache if with_cache[p] != without_cache[p]] == []
    assert digest("site", "--config", str(workspace)).exit_code == 0


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


def test_deploy_pushes_the_site_to_gh_pages(workspace: Path, tmp_path: Path) -> None:
    if not shutil.which("git"):
        pytest.skip("git is not installed")
    remote = tmp_path / "remote.git"
    git("init", "--bare", "-q", str(remote), cwd=tmp_path)
    ws = workspace.parent
    git("init", "-q", cwd=ws)
    git("-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "--allow-empty",
        "-m", "start", cwd=ws)
    git("remote", "add", "origin", str(remote), cwd=ws)
    shutil.copy(ROOT / "mkdocs.yml", ws / "mkdocs.yml")
    build(workspace, SECOND)
    result = CliRunner(env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
                            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
                       ).invoke(cli, ["deploy", "--config", str(workspace)])
    assert result.exit_code == 0, result.output
    files = git("ls-tree", "-r", "--name-only", "gh-pages", cwd=remote).split()
    assert "index.html" in files and ".nojekyll" in files
    assert f"editions/{SECOND}/index.html" in files


def test_deploy_outside_a_git_repository_says_so(workspace: Path) -> None:
    build(workspace, SECOND)
    result = digest("deploy", "--config", str(workspace))
    assert result.exit_code == 1 and "is not a git repository" in result.output


def test_the_workflow_builds_on_a_schedule_and_deploys_with_secrets() -> None:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "digest.yml").read_text())
    triggers = workflow[True]  # YAML reads the key `on` as true
    assert "schedule" in triggers and "workflow_dispatch" in triggers
    steps = workflow["jobs"]["build"]["steps"]
    build_step = next(s for s in steps if s.get("name") == "Build the edition")
    assert "digest build" in build_step["run"]
    assert build_step["env"]["DIGEST_LLM_BASE_URL"] == "${{ secrets.DIGEST_LLM_BASE_URL }}"
    assert build_step["env"]["SGLANG_API_KEY"] == "${{ secrets.SGLANG_API_KEY }}"
    uses = [s.get("uses", "") for s in steps] + [
        s.get("uses", "") for s in workflow["jobs"]["deploy"]["steps"]]
    assert any(u.startswith("actions/cache/save") for u in uses)
    assert any(u.startswith("actions/deploy-pages") for u in uses)
    # The newsletter goes after the deploy, only where its password secret is set.
    send = workflow["jobs"]["send"]
    assert send["needs"] == ["build", "deploy"] and send["permissions"]["contents"] == "read"
    send_step = next(s for s in send["steps"] if s.get("name") == "Send the newsletter")
    assert send_step["env"]["DIGEST_SMTP_PASSWORD"] == "${{ secrets.DIGEST_SMTP_PASSWORD }}"
    assert 'if [ -z "$DIGEST_SMTP_PASSWORD" ]' in send_step["run"]
    assert "digest send" in send_step["run"]
    # Actions on Node 24 (the Node 20 majors are deprecated), pinned to a major.
    majors = {u.split("@")[0]: int(u.split("@v")[1]) for u in uses if u}
    assert majors["actions/checkout"] >= 5 and majors["actions/deploy-pages"] >= 5
    assert majors["actions/upload-pages-artifact"] >= 5 and majors["actions/setup-python"] >= 6
    # A re-run keeps the run id: its cache key must differ, or its answers are never saved.
    keys = [s["with"]["key"] for s in steps if "actions/cache" in s.get("uses", "")]
    assert all("github.run_attempt" in k for k in keys)
    # The site is uploaded before the commit-back, which may not stop it.
    names = [s.get("uses", s.get("name", "")) for s in steps]
    commit = names.index("Keep the edition's pages and records in the repository")
    upload = next(i for i, n in enumerate(names) if n.startswith("actions/upload-pages-artifact@"))
    assert upload < commit
    assert steps[commit]["continue-on-error"] is True
    # Write access only where it is needed.
    assert workflow["permissions"] == {}
    assert workflow["jobs"]["build"]["permissions"] == {"contents": "write", "pages": "read",
                                                        "issues": "write"}  # the marks
    steps = workflow["jobs"]["build"]["steps"]
    names = [s.get("name", "") for s in steps]
    # The readers' marks are read before the build, with the job's own token.
    assert names.index("Read the readers' marks") < names.index("Build the edition")
    read = steps[names.index("Read the readers' marks")]
    assert "digest feedback pull --keep-open --if-configured" in read["run"]
    assert read["env"]["GITHUB_TOKEN"] == "${{ github.token }}"
    # Closed only once the marks are committed and pushed: no mark is lost to a failed push.
    keep, close = names.index("Keep the readers' marks"), names.index("Close the marks' issues")
    assert names.index("Read the readers' marks") < keep < close
    assert "git push" in steps[keep]["run"] and steps[close]["if"] == "steps.marks.outcome == 'success'"
    assert "digest feedback close" in steps[close]["run"]
    site_url = next(s for s in steps if s.get("name") == "Build the edition")["env"]
    assert site_url["DIGEST_SITE_URL"] == "${{ steps.pages.outputs.base_url }}"
    assert workflow["jobs"]["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}


@pytest.mark.parametrize(("builds_site", "exit_code", "published", "job_fails"), [
    (True, 0, True, False), (True, 1, True, False), (False, 1, False, True)])
def test_the_workflow_publishes_what_was_built_and_fails_only_without_a_site(
        tmp_path: Path, builds_site: bool, exit_code: int, published: bool,
        job_fails: bool) -> None:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "digest.yml").read_text())
    script = next(s for s in workflow["jobs"]["build"]["steps"]
                  if s.get("name") == "Build the edition")["run"]
    stub = tmp_path / "bin" / "digest"  # stands in for the real build: one failed prompt, say
    stub.parent.mkdir()
    make = "mkdir -p site && echo '<html>' > site/index.html\n" if builds_site else ""
    stub.write_text(f"#!/bin/sh\n{make}exit {exit_code}\n")
    stub.chmod(0o755)
    output = tmp_path / "github_output"
    output.touch()
    done = subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, env={"PATH": f"{stub.parent}:/usr/bin:/bin",
                                          "GITHUB_OUTPUT": str(output), "EDITION": ""})
    assert (done.returncode != 0) == job_fails, done.stderr
    assert ("built=true" in output.read_text()) == published


def test_the_site_works_offline_in_a_browser(two_editions: Path) -> None:
    requests: list[str] = []
    with launch_chromium() as browser:
        page = browser.new_page()
        page.on("request", lambda request: requests.append(request.url))
        page.goto((two_editions / "site" / "index.html").as_uri())
        assert page.title() == "Test Digest"
        assert page.locator("h1").first.inner_text().startswith("Edition ")
        # Typed key by key, as a reader does: Material's search reacts to key events, so a
        # value set at once (fill) after the index is ready is never searched for.
        page.locator("input.md-search__input").press_sequentially("Fuzzing")
        page.wait_for_selector(".md-search-result__item", timeout=30_000)
        assert page.locator(".md-search-result__item").count() >= 1
        page.goto((two_editions / "site" / "editions" / SECOND / "index.html").as_uri())
        assert page.locator("svg[role=img]").count() == 1  # the submission timeline
    elsewhere = [url for url in requests if not url.startswith(("file:", "data:", "blob:"))]
    assert elsewhere == []


def test_the_feed_stays_well_formed_with_control_characters_in_answers(
        workspace: Path, sglang_server: SglangServer) -> None:
    sglang_server.state.responder = lambda body: Answer(
        "## Field overview\n\nA bell\x07, a NUL\x00, an escape\x1b[1m and \x0c form feed.\n")
    build(workspace, SECOND)
    feed = ElementTree.parse(workspace.parent / "site" / "feed.xml")
    summary = feed.getroot().find(f"{ATOM}entry/{ATOM}summary")
    assert summary is not None and "A bell, a NUL, an escape1m and form feed." in str(summary.text)


class _PagesHandler(http.server.SimpleHTTPRequestHandler):
    """GitHub Pages for a project site: the site under /repo/, 404.html for anything missing."""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def send_head(self) -> Any:
        if not self.path.startswith("/repo/"):
            self.path = "/missing"
        else:
            self.path = self.path[len("/repo"):]
        target = Path(self.translate_path(self.path))
        if target.is_dir():
            target = target / "index.html"
        if not target.is_file():
            body = (Path(self.directory) / "404.html").read_bytes()
            self.send_response(404)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            return io.BytesIO(body)
        return super().send_head()


def test_the_404_page_works_on_a_project_site_under_a_sub_path(
        tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer) -> None:
    """Served as GitHub Pages serves a project site, with the workflow's DIGEST_SITE_URL: a
    missing page deep under /repo/ is styled and links the home page, the latest edition and
    search, each of which loads."""
    config = write_config(tmp_path / "ws", arxiv_server, sglang_server)
    site = config.parent / "site"
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_PagesHandler, directory=str(site)))
    base = f"http://127.0.0.1:{server.server_address[1]}/repo/"
    with mock_env({"DIGEST_SITE_URL": base}):
        build(config, SECOND)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    failed: list[str] = []
    try:
        with launch_chromium() as browser:
            page = browser.new_page()
            page.on("response", lambda r: failed.append(r.url) if r.status >= 400
                    and not r.url.endswith("/no/such/page/") else None)
            response = page.goto(base + "editions/no/such/page/")
            assert response is not None and response.status == 404
            assert page.locator("h1").first.inner_text() == "This page is not in the digest"
            # Styled: Material's stylesheet loaded from under /repo/, not the domain root.
            assert page.evaluate("document.styleSheets.length") >= 2
            links = {a.inner_text(): a.get_attribute("href")
                     for a in page.locator("article a").all()}
            assert links[f"The latest edition ({SECOND})"] == f"/repo/editions/{SECOND}/index.html"
            for text in ("The home page", f"The latest edition ({SECOND})", "Search the digest"):
                page.locator("article a", has_text=text).first.click()
                page.wait_for_load_state()
                assert page.url.startswith(base) and "not in the digest" not in page.content()
                page.go_back()
    finally:
        server.shutdown()
    assert failed == []


def test_the_site_is_rebuilt_when_anything_mkdocs_reads_changes(tmp_path: Path) -> None:
    """Not only the Markdown and mkdocs.yml: the theme's custom_dir, hooks and an INHERIT base
    (a changed override must not leave the old site in place after `digest build`)."""
    from generator.publish.freshness import fingerprint

    docs = tmp_path / "site_src"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n")
    (tmp_path / "overrides" / "partials").mkdir(parents=True)
    # A base elsewhere: its paths resolve against the inheriting config's folder, as MkDocs
    # merges it.
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "base.yml").write_text("hooks: [hooks/extra.py]\n")
    (tmp_path / "hooks").mkdir()
    (tmp_path / "hooks" / "extra.py").write_text("x = 1\n")
    config = tmp_path / "mkdocs.yml"
    config.write_text("INHERIT: shared/base.yml\ntheme:\n  name: material\n  custom_dir: overrides\n"
                      "hooks:\n  - hooks/main.py\nmarkdown_extensions:\n  - pymdownx.emoji:\n"
                      "      emoji_index: !!python/name:material.extensions.emoji.twemoji\n")
    (tmp_path / "hooks" / "main.py").write_text("def on_page_markdown(md, **kw):\n    return md\n")
    footer = tmp_path / "overrides" / "partials" / "footer.html"
    footer.write_text("<footer>one</footer>")
    seen = {fingerprint(docs, config, "Site")}
    assert fingerprint(docs, config, "Site") in seen  # nothing changed: the same
    for path, text in ((footer, "<footer>two</footer>"),
                       (tmp_path / "overrides" / "main.html", "{% extends 'base.html' %}"),
                       (tmp_path / "hooks" / "main.py", "# changed\n"),
                       (tmp_path / "hooks" / "extra.py", "x = 2\n"),
                       (docs / "index.md", "# Home, changed\n")):
        path.write_text(text)
        changed = fingerprint(docs, config, "Site")
        assert changed not in seen, path
        seen.add(changed)
