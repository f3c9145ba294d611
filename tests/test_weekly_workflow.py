"""Three Mondays of the workflow `digest init` writes, run step by step (tests/workflow_harness.py)
on a self-hosted runner beside a local model server: a plain week, a week whose commit-back
the branch refuses while someone else pushes to it, and a week whose cache GitHub evicted.
Every edition is published, kept in git, mailed and posted exactly once."""

from __future__ import annotations

import email
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from click.testing import CliRunner

from generator.cli import cli
from generator.config import load_config
from generator.pipeline.restore import found_on_site
from generator.prompts.kinds import BUILTIN_KINDS
from generator.publish.workspace import WORKFLOW
from tests.feeds import Entry, atom_feed
from tests.servers.arxiv import ArxivServer
from tests.servers.sglang import SglangServer
from tests.servers.smtp import Smtp
from tests.servers.webhook import WebhookServer
from tests.workflow_harness import BRANCH, Harness

WEEKS = ("2026-11-30", "2026-12-07", "2026-12-14")
PAPERS = {week: [Entry(f"2611.{n}{i:04d}v1", f"Paper {i} of {week}",
                       published=f"{week}T01:00:00Z") for i in (1, 2)]
          for n, week in enumerate(WEEKS, start=7)}
GIT_ENV = {"GIT_AUTHOR_NAME": "Someone", "GIT_AUTHOR_EMAIL": "someone@example.org",
           "GIT_COMMITTER_NAME": "Someone", "GIT_COMMITTER_EMAIL": "someone@example.org",
           "PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
# The branch protected against the bot's pushes: what "Restrict who can push" answers.
HOOK = """#!/bin/sh
while read old new ref; do
  if git log --format=%s "$old..$new" | grep -q '^Digest edition'; then
    echo "error: GH006: Protected branch update failed for refs/heads/main." >&2
    exit 1
  fi
done
"""


def git(where: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=where, env=GIT_ENV, check=True,
                          capture_output=True, text=True).stdout


def small_config(ws: Path, arxiv: ArxivServer, smtp_port: int) -> None:
    """init's config, made tiny: two papers a week, no PDFs, the prose prompts only."""
    written = load_config(ws / "config.toml", registry=BUILTIN_KINDS)
    assert written.arxiv.since_last_edition  # a weekly config for a weekly workflow
    (ws / "config.toml").write_text(f"""[digest]
title = "Lab Digest"

[arxiv]
query = "cat:cs.LG"
since_last_edition = true
max_papers = 2
full_text_papers = 0
api_url = "{arxiv.api_url}"
delay_seconds = 0.0
timeout_seconds = 5.0

[llm]
base_url = "http://localhost:30000/v1"
max_retries = 0

[briefs]
enabled = false

[prompts.themes]
enabled = false

[evidence]
enabled = false

[continuity]
enabled = false

[email]
to = ["reader@example.org"]
from = "Lab Digest <digest@example.org>"
smtp_host = "127.0.0.1"
smtp_port = {smtp_port}
security = "none"
timeout_seconds = 5

[chat]
webhook_url_env = "DIGEST_CHAT_WEBHOOK_URL"
""")


@pytest.fixture
def world(tmp_path: Path, fixtures: Path) -> Iterator[dict[str, object]]:
    arxiv, sglang = ArxivServer(fixtures).start(), SglangServer().start()
    with Smtp(tmp_path, tls=False) as smtp, WebhookServer() as hook:
        ws = tmp_path / "lab-digest"
        made = CliRunner().invoke(cli, ["init", str(ws)], catch_exceptions=False)
        assert made.exit_code == 0, made.output
        small_config(ws, arxiv, smtp.port)
        remote = tmp_path / "remote.git"
        git(tmp_path, "init", "-q", "--bare", "-b", BRANCH, str(remote))
        git(remote, "config", "uploadpack.allowAnySHA1InWant", "true")
        git(ws, "init", "-q", "-b", BRANCH)
        git(ws, "add", ".")
        git(ws, "commit", "-q", "-m", "A research digest")
        git(ws, "push", "-q", remote.as_uri(), BRANCH)
        harness = Harness(tmp_path / "github", remote, secrets={
            "DIGEST_LLM_BASE_URL": sglang.base_url,  # the runner's own machine serves it
            "DIGEST_CHAT_WEBHOOK_URL": hook.url},
            variables={"DIGEST_RUNS_ON": '["self-hosted", "gpu"]'})
        try:
            yield {"ws": ws, "remote": remote, "harness": harness, "arxiv": arxiv,
                   "smtp": smtp, "hook": hook, "tmp": tmp_path}
        finally:
            harness.stop()
            arxiv.stop()
            sglang.stop()


def someone_pushes(tmp: Path, remote: Path, name: str) -> None:
    """A commit on the branch from elsewhere, while the edition builds."""
    other = tmp / f"other-{name}"
    git(tmp, "clone", "-q", remote.as_uri(), str(other))
    (other / "README.md").write_text((other / "README.md").read_text() + f"\n{name}\n")
    git(other, "commit", "-q", "-am", f"Edit the README ({name})")
    git(other, "push", "-q", "origin", BRANCH)


def editions_in_git(remote: Path) -> list[str]:
    listing = git(remote, "ls-tree", "--name-only", f"{BRANCH}:site_src/editions")
    return sorted(n for n in listing.split() if n[:4].isdigit())


def editions_on_site(harness: Harness) -> list[str]:
    return sorted(p.parent.name for p in (harness.pages.root / "editions").glob("*/edition.json"))


def mailed(smtp: Smtp) -> list[str]:
    """The edition each message carries, by its subject."""
    subjects = [str(email.message_from_bytes(data)["Subject"])
                for _, _, data in smtp.inbox.messages]
    return [next((w for w in WEEKS if w in s), s) for s in subjects]


def posted(hook: WebhookServer) -> list[str]:
    """The edition each chat post links to (its overview, its papers' pages)."""
    found = [re.search(r"editions/(\d{4}-\d{2}-\d{2})/", json.dumps(p)) for p in hook.state.posts]
    return [m.group(1) if m else "none" for m in found]


@pytest.mark.skipif(not (shutil.which("git") and shutil.which("bash")),
                    reason="the workflow's steps need git and bash")
def test_three_weeks_keep_publish_mail_and_post_every_edition_once(
        world: dict[str, object]) -> None:
    ws, remote, tmp = Path(str(world["ws"])), Path(str(world["remote"])), Path(str(world["tmp"]))
    harness, arxiv = world["harness"], world["arxiv"]
    smtp, hook = world["smtp"], world["hook"]
    assert isinstance(harness, Harness) and isinstance(arxiv, ArxivServer)
    assert isinstance(smtp, Smtp) and isinstance(hook, WebhookServer)
    workflow = ws / WORKFLOW

    def week(n: int) -> None:
        arxiv.state.feed_override = atom_feed(PAPERS[WEEKS[n]])

    # Week 1: a plain Monday (the schedule: no inputs, the edition named by the runner's date).
    week(0)
    first = harness.run(workflow, WEEKS[0])
    build = first.jobs["build"]
    assert build.result == "success", "\n".join(build.log)
    assert build.runs_on == ["self-hosted", "gpu"]  # DIGEST_RUNS_ON: the GPU machine's runner
    assert build.outputs["edition"] == WEEKS[0]
    assert len(build.outputs["commit"]) == 40, "\n".join(build.log[-2:]) + str(build.steps)
    assert first.jobs["deploy"].result == first.jobs["send"].result == "success"
    assert editions_in_git(remote) == [WEEKS[0]] == editions_on_site(harness)
    assert mailed(smtp) == [WEEKS[0]] and posted(hook) == [WEEKS[0]]

    # Week 2: someone pushes while the edition builds, and the branch refuses the bot's push.
    week(1)
    hook_file = remote / "hooks" / "pre-receive"
    hook_file.write_text(HOOK)
    hook_file.chmod(0o755)
    harness.before_step["Keep the edition's pages and records in the repository"] = \
        lambda: someone_pushes(tmp, remote, "week 2")
    second = harness.run(workflow, WEEKS[1])
    build = second.jobs["build"]
    assert build.result == "failure"  # red, and it says why
    assert build.steps["Keep the edition's pages and records in the repository"] == "failure"
    assert "The edition was not committed" in build.summary
    assert "protected branch" in build.summary and "3 attempt(s)" in build.summary
    assert f"digest-records-{WEEKS[1]}" in second.artifacts
    assert second.jobs["deploy"].result == "success"  # the site that built is published
    assert editions_on_site(harness) == list(WEEKS[:2])
    assert editions_in_git(remote) == [WEEKS[0]]  # not in git yet
    # The send job sends the edition the build built, from its records.
    assert second.jobs["send"].result == "success", "\n".join(second.jobs["send"].log)
    assert mailed(smtp) == list(WEEKS[:2]) and posted(hook) == list(WEEKS[:2])
    # The deployed site serves each edition's record, found by its sitemap: the restore's
    # second source, where no artifact is left.
    with requests.Session() as session:
        on_site = found_on_site(harness.pages.url, lambda url: (
            lambda r: r.content if r.status_code == 200 else None)(session.get(url, timeout=5)))
    assert [f.edition for f in on_site] == list(WEEKS[:2])

    # Week 3: the branch accepts pushes again, GitHub evicted the cache, and someone pushes
    # again while it builds: the rebase carries the edition onto their commit.
    week(2)
    hook_file.unlink()
    harness.evict()
    harness.before_step["Keep the edition's pages and records in the repository"] = \
        lambda: someone_pushes(tmp, remote, "week 3")
    third = harness.run(workflow, WEEKS[2])
    build = third.jobs["build"]
    assert build.result == "success", "\n".join(build.log)
    log = "\n".join(build.log)
    assert f"Restored edition {WEEKS[1]}" in log
    assert "(after 2 attempts)" in log
    assert editions_in_git(remote) == list(WEEKS) == editions_on_site(harness)
    readme = git(remote, "show", f"{BRANCH}:README.md")
    assert "week 2" in readme and "week 3" in readme  # nobody's commit was lost either
    assert third.jobs["send"].result == "success"
    assert mailed(smtp) == list(WEEKS) and posted(hook) == list(WEEKS)
    sends = [c for c in harness.calls if c[0] == "send"]
    assert sends == [("send", "--edition", week) for week in WEEKS]  # never "the latest"

    # "Re-run jobs" on the send job: its delivery record comes back, nothing goes twice.
    again = harness.run(workflow, WEEKS[2], attempt=2, only=("send",))
    assert again.jobs["send"].result == "success"
    assert mailed(smtp) == list(WEEKS) and posted(hook) == list(WEEKS)
    # The cache was saved once a run, and holds no PDF.
    assert [k for k in harness.caches if k.startswith("digest-cache-")] == [
        "digest-cache-3-1"]
    assert not list(harness.caches["digest-cache-3-1"].rglob("*.pdf"))
    # Every digest command ran without a traceback (the in-process runner marks one 99).
    assert all("Traceback" not in line for job in third.jobs.values() for line in job.log)
