"""`digest init`: a repository a user can push as it is, whose workflow GitHub accepts, that
runs only commands and files the workspace has, and installs the very version that wrote it."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import click
import pytest
import yaml
from click.testing import CliRunner, Result

import generator
from generator.cli import cli
from generator.config import load_config
from generator.prompts.kinds import BUILTIN_KINDS
from generator.publish.workspace import FILES, WORKFLOW, git_install, install_from
from tests.conftest import ROOT

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org",
           "PATH": "/usr/bin:/bin"}
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def digest(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def workflow_schema_problems(*files: Path) -> str:
    """check-jsonschema against its bundled copy of GitHub's workflow schema (offline); ""
    when every file validates."""
    run = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema",
                          "vendor.github-workflows", *map(str, files)],
                         capture_output=True, text=True)
    return "" if run.returncode == 0 else run.stdout + run.stderr


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    result = digest("init", str(tmp_path / "my-digest"))
    assert result.exit_code == 0, result.output
    return tmp_path / "my-digest"


def test_init_writes_every_file_of_a_repository_and_pins_the_installed_version(ws: Path) -> None:
    assert sorted(str(p.relative_to(ws)) for p in ws.rglob("*") if p.is_file()) == sorted(
        str(name) for name in FILES)
    installed = metadata.version("research-digest")
    assert installed == generator.__version__  # one version: pyproject reads __init__.py's
    requirement = [line for line in (ws / "requirements.txt").read_text().splitlines()
                   if line and not line.startswith("#")]
    assert requirement == [f"research-digest=={installed}", "-c constraints.txt"]
    ours = {line for line in (ROOT / "constraints.txt").read_text().splitlines()
            if line and not line.startswith("#")}
    assert {line for line in (ws / "constraints.txt").read_text().splitlines()
            if line and not line.startswith("#")} == ours
    readme = (ws / "README.md").read_text()
    for needed in ("DIGEST_LLM_BASE_URL", "SGLANG_API_KEY", "DIGEST_SMTP_PASSWORD",
                   "GitHub Actions", f"research-digest {installed} from PyPI",
                   "pip install -r requirements.txt", "digest build"):
        assert needed in readme, needed
    again = digest("init", str(ws))
    assert again.exit_code == 2 and "already exist; not overwriting" in again.output
    assert "digest init --upgrade-workflow" in again.output


@pytest.mark.skipif(not shutil.which("git"), reason="git is not installed")
def test_a_first_git_add_commits_the_digest_but_not_the_site_or_the_cache(ws: Path) -> None:
    made = ["site/index.html", "site.zip", ".site.building-123/index.html", ".cache/digest.lock",
            ".cache/pdfs/2401.00001v1.pdf", ".cache/text/2401.00001v1.txt",
            "site_src/editions/2026-12-07/edition.json", "feedback.json"]
    for name in made:
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text("x")
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True, env=GIT_ENV)
    subprocess.run(["git", "add", "."], cwd=ws, check=True, env=GIT_ENV)
    staged = subprocess.run(["git", "diff", "--cached", "--name-only"], cwd=ws, check=True,
                            env=GIT_ENV, capture_output=True, text=True).stdout.split()
    assert sorted(staged) == sorted([*map(str, FILES), "site_src/editions/2026-12-07/edition.json",
                                     "feedback.json"])


def _steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    return list(job.get("steps", []))


def test_the_workflow_validates_and_names_only_what_the_workspace_has(ws: Path) -> None:
    workflow = ws / WORKFLOW
    assert workflow_schema_problems(workflow) == ""
    jobs: dict[str, dict[str, Any]] = yaml.safe_load(workflow.read_text())["jobs"]
    config = load_config(ws / "config.toml", registry=BUILTIN_KINDS)
    # Every file the workflow reads is in the workspace; what it writes is where the config
    # puts it.
    made = {"site": config.site_dir, "site.zip": config.site_dir.with_name("site.zip"),
            ".cache": config.cache_dir, "site_src": config.docs_dir,
            ".records": ws / ".records"}  # the records artifact, downloaded (git ignores it)
    ignored = (ws / ".gitignore").read_text().split()
    for job in jobs.values():
        for step in _steps(job):
            with_ = step.get("with", {})
            for key in ("path", "cache-dependency-path"):
                if key in with_:
                    # A path named by an expression: its folder (an edition's, under site_src/).
                    name = with_[key].split("${{")[0].rstrip("/")
                    top = name.split("/")[0]
                    assert (ws / name).is_file() or (ws / top).resolve() == made[top].resolve(), name
                    assert ((ws / name).is_file() or top == "site_src"
                            or {f"/{top}/", f"/{top}"} & set(ignored)), name
            for read in re.findall(r"(?:(?<![\w-])-r|open\(\")\s*([\w.]+)", step.get("run", "")):
                assert (ws / read).is_file(), read
            kept = re.search(r"digest workflow keep .*?\"( [\w./ ]+)$", step.get("run", ""), re.M)
            for added in kept.group(1).split() if kept else ():
                assert added == "feedback.json" or (ws / added).resolve() == made[added].resolve()
    assert "-c constraints.txt" in (ws / "requirements.txt").read_text()
    # Every `digest` command it runs exists, with the options it passes.
    runs = "\n".join(step.get("run", "") for job in jobs.values() for step in _steps(job))
    calls = re.findall(r"\bdigest ([a-z-]+)((?: [a-z][a-z-]*)?)([^|\n]*)", runs)
    assert {name for name, _, _ in calls} >= {"build", "doctor", "send", "feedback"}
    for name, sub, rest in calls:
        command = cli.commands[name]
        if sub.strip() and isinstance(command, click.Group):
            command = command.commands[sub.strip()]
        known = {opt for p in command.params for opt in p.opts}
        assert set(re.findall(r"--[a-z-]+", rest)) <= known, (name, sub, rest)
    # Every step output it reads comes from a step of the same job; every job it needs exists.
    for name, job in jobs.items():
        ids = {step["id"] for step in _steps(job) if "id" in step}
        text = json.dumps(job)
        assert set(re.findall(r"steps\.([\w-]+)\.", text)) <= ids, name
        needs = job.get("needs", [])
        needed = {needs} if isinstance(needs, str) else set(needs)
        assert needed <= set(jobs) and set(re.findall(r"needs\.([\w-]+)\.", text)) <= needed


def test_the_workflow_passes_the_chat_webhooks_secret_to_the_send_that_posts_it(ws: Path) -> None:
    jobs: dict[str, dict[str, Any]] = yaml.safe_load((ws / WORKFLOW).read_text())["jobs"]
    (step,) = [s for s in _steps(jobs["send"]) if "digest send" in s.get("run", "")]
    # The variable the config's example names, from the secret of that name, beside SMTP's.
    example = re.search(r'^# webhook_url_env = "(\w+)"', (ws / "config.toml").read_text(),
                        re.MULTILINE)
    assert example is not None
    variable = example.group(1)
    assert step["env"][variable] == f"${{{{ secrets.{variable} }}}}"
    assert step["env"]["DIGEST_SMTP_PASSWORD"] == "${{ secrets.DIGEST_SMTP_PASSWORD }}"
    # The job runs where only [chat] is set too.
    (check,) = [s for s in _steps(jobs["send"]) if s.get("id") == "mail"]
    assert '"chat"' in check["run"] and '"webhook_url_env"' in check["run"]
    assert variable in (ws / "README.md").read_text()


def test_this_repositorys_workflows_validate() -> None:
    assert workflow_schema_problems(*sorted((ROOT / ".github" / "workflows").glob("*.yml"))) == ""


def test_upgrade_workflow_rewrites_the_workflow_and_pins_and_nothing_else(ws: Path) -> None:
    (ws / "config.toml").write_text('[arxiv]\nquery = "cat:cs.DC"\n')
    (ws / "README.md").write_text("# Our digest\n")
    (ws / WORKFLOW).write_text("name: old\n")
    (ws / "requirements.txt").write_text("research-digest==0.0.9\n")
    result = digest("init", "--upgrade-workflow", str(ws))
    assert result.exit_code == 0, result.output
    assert "(was: research-digest==0.0.9)" in result.output
    assert (ws / "config.toml").read_text() == '[arxiv]\nquery = "cat:cs.DC"\n'
    assert (ws / "README.md").read_text() == "# Our digest\n"
    assert "Publish the digest" in (ws / WORKFLOW).read_text()
    assert f"research-digest=={metadata.version('research-digest')}" in (
        ws / "requirements.txt").read_text()
    nowhere = digest("init", "--upgrade-workflow", str(ws / "nothing-here"))
    assert nowhere.exit_code == 2 and "config.toml not found" in nowhere.output


def test_from_git_pins_a_repository_and_ref_and_a_bad_one_is_one_line(tmp_path: Path) -> None:
    url = "https://github.com/example/research-digest"
    result = digest("init", "--from-git", f"{url}@v0.1.0", str(tmp_path / "ws"))
    assert result.exit_code == 0, result.output
    assert f"research-digest @ git+{url}@v0.1.0\n" in (tmp_path / "ws" / "requirements.txt"
                                                       ).read_text()
    assert f"research-digest from {url} at `v0.1.0`" in (tmp_path / "ws" / "README.md").read_text()
    bad = digest("init", "--from-git", url, str(tmp_path / "other"))
    assert bad.exit_code == 2 and "as URL@REF, e.g. https://" in bad.output
    assert not (tmp_path / "other").exists()


def test_the_pin_follows_how_the_tool_was_installed() -> None:
    from_index = install_from("1.2.3", None)
    assert (from_index.requirement, from_index.warning) == ("research-digest==1.2.3", "")
    from_git = install_from("1.2.3", json.dumps({
        "url": "https://github.com/example/research-digest",
        "vcs_info": {"vcs": "git", "requested_revision": "main", "commit_id": COMMIT}}))
    assert from_git.requirement == (
        f"research-digest @ git+https://github.com/example/research-digest@{COMMIT}")
    assert from_git.warning == "" and "at `0123456789ab`" in from_git.origin
    from_folder = install_from("1.2.3", json.dumps({"url": "file:///src/research-digest",
                                                    "dir_info": {"editable": True}}))
    assert from_folder.requirement == "research-digest==1.2.3"
    assert "installed from a local folder" in from_folder.warning
    assert "--from-git URL@REF" in from_folder.warning
    with_token = install_from("1.2.3", json.dumps({
        "url": "https://x-access-token:ghs_secret@github.com/example/research-digest",
        "vcs_info": {"vcs": "git", "commit_id": COMMIT}}))
    assert with_token.requirement == "research-digest==1.2.3"
    assert "ghs_secret" not in with_token.warning + with_token.origin


def test_an_existing_readme_is_kept_and_gitignore_gets_the_digests_lines(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# Made on GitHub\n")
    (tmp_path / ".gitignore").write_text("*.log")
    result = digest("init", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert (tmp_path / "README.md").read_text() == "# Made on GitHub\n"
    ignore = (tmp_path / ".gitignore").read_text()
    assert ignore.startswith("*.log\n") and "/.cache/" in ignore.split()
    assert "Kept your" in result.output and "Added the digest's lines" in result.output


def test_from_git_with_a_branch_is_told_to_pin_a_tag_or_commit(tmp_path: Path) -> None:
    url = "https://github.com/example/research-digest"
    result = digest("init", "--from-git", f"{url}@main", str(tmp_path / "ws"))
    assert result.exit_code == 0
    assert "'main' looks like a branch, which moves" in result.output
    for pinned in ("v0.2.0", COMMIT):
        assert git_install(f"{url}@{pinned}", "0.2.0").warning == ""


@pytest.mark.skipif(not shutil.which("git"), reason="git is not installed")
def test_a_clone_installed_from_its_folder_is_offered_its_own_commit(tmp_path: Path) -> None:
    clone = tmp_path / "research-digest"
    clone.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=clone, check=True, env=GIT_ENV)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "x"], cwd=clone, check=True,
                   env=GIT_ENV)
    subprocess.run(["git", "remote", "add", "origin", "https://github.com/lab/research-digest.git"],
                   cwd=clone, check=True, env=GIT_ENV)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=clone, check=True, env=GIT_ENV,
                          capture_output=True, text=True).stdout.strip()
    pin = install_from("0.1.0", json.dumps({"url": clone.as_uri(), "dir_info": {}}))
    assert f"--from-git URL@REF (e.g. https://github.com/lab/research-digest@{head}" in pin.warning
    elsewhere = install_from("0.1.0", json.dumps({"url": (tmp_path / "no").as_uri(),
                                                   "dir_info": {}}))
    assert "OWNER/research-digest@COMMIT" in elsewhere.warning and "@main" not in elsewhere.warning


@pytest.mark.parametrize(("exit_code", "site"), [(3, False), (1, True), (0, True)])
def test_the_build_step_says_what_was_published(ws: Path, tmp_path: Path, exit_code: int,
                                                site: bool) -> None:
    """The build step's own shell, with `digest build` standing in: a failed build that made no
    site fails the job and says nothing was published; one that made a site publishes it."""
    jobs = yaml.safe_load((ws / WORKFLOW).read_text())["jobs"]
    (step,) = [s for s in _steps(jobs["build"]) if s.get("id") == "edition"]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "digest").write_text(
        f"#!/bin/sh\n{'mkdir -p site && touch site/index.html' if site else ':'}\n"
        f"exit {exit_code}\n")
    (bin_dir / "digest").chmod(0o755)
    output = tmp_path / "output"
    run = subprocess.run(["bash", "-eo", "pipefail", "-c", step["run"]], cwd=tmp_path,
                         capture_output=True, text=True,
                         env={"PATH": f"{bin_dir}:/usr/bin:/bin", "EDITION": "2026-12-07",
                              "GITHUB_OUTPUT": str(output)})
    said = run.stdout + run.stderr
    if site:
        assert run.returncode == 0 and output.read_text() == "built=true\n"
        assert ("publishing what was built" in said) == (exit_code != 0)
    else:
        assert run.returncode == exit_code and not output.exists()
        assert "built no site: nothing is published" in said
        assert "publishing what was built" not in said
