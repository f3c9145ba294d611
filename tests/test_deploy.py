"""`digest deploy` against local git remotes: a bare repository, none, a rejecting one, and a
remote whose URL carries a token. The site is a small hand-made one (what is pushed is
checked in test_publish.py, after a real build): these tests are about failures in our words."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from generator.cli import cli
from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(not shutil.which("git"), reason="git is not installed")

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True, env={**GIT_ENV, "PATH": "/usr/bin:/bin"}).stdout


def deploy(config: Path, *args: str) -> Result:
    return CliRunner(env=GIT_ENV).invoke(cli, ["deploy", "--config", str(config), *args])


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A workspace that is a git repository with one commit and a built site, and no remote."""
    ws = tmp_path / "ws"
    (ws / "site").mkdir(parents=True)
    (ws / "site" / "index.html").write_text("<!doctype html><title>Digest</title>\n")
    (ws / "site_src").mkdir()
    (ws / "site_src" / "index.md").write_text("# Digest\n")
    (ws / "config.toml").write_text('[arxiv]\nquery = "cat:cs.CL"\n')
    shutil.copy(ROOT / "mkdocs.yml", ws / "mkdocs.yml")
    git("init", "-q", "-b", "main", cwd=ws)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=ws)
    return ws


def test_a_workspace_without_a_remote_is_told_how_to_add_one(repo: Path) -> None:
    result = deploy(repo / "config.toml")
    assert result.exit_code == 1, result.output
    assert "has no remote 'origin'" in result.output
    assert "it has none: add one" in result.output and "git -C" in result.output
    assert "Traceback" not in result.output and "CalledProcessError" not in result.output
    assert "gh-pages" not in git("branch", "--list", cwd=repo)  # nothing committed


def test_another_remote_is_named_and_remote_picks_it(repo: Path, tmp_path: Path) -> None:
    bare = tmp_path / "pages.git"
    git("init", "--bare", "-q", str(bare), cwd=tmp_path)
    git("remote", "add", "pages", str(bare), cwd=repo)
    result = deploy(repo / "config.toml")
    assert result.exit_code == 1, result.output
    assert "its remotes are pages: name one with `digest deploy --remote pages`" in result.output
    result = deploy(repo / "config.toml", "--remote", "pages")
    assert result.exit_code == 0, result.output
    assert "to the gh-pages branch of pages" in result.output
    files = git("ls-tree", "-r", "--name-only", "gh-pages", cwd=bare).split()
    assert files == [".nojekyll", "index.html"]


def test_a_remote_with_other_commits_is_not_overwritten_without_force(
        repo: Path, tmp_path: Path) -> None:
    bare = tmp_path / "remote.git"
    git("init", "--bare", "-q", str(bare), cwd=tmp_path)
    git("remote", "add", "origin", str(bare), cwd=repo)
    other = tmp_path / "other"
    git("clone", "-q", str(bare), str(other), cwd=tmp_path)
    git("checkout", "-q", "-b", "gh-pages", cwd=other)
    (other / "index.html").write_text("someone else's site\n")
    git("add", "index.html", cwd=other)
    git("commit", "-q", "-m", "theirs", cwd=other)
    git("push", "-q", "origin", "gh-pages", cwd=other)

    result = deploy(repo / "config.toml")
    assert result.exit_code == 1, result.output
    assert "the remote's gh-pages has commits this one lacks: `digest deploy --force`" \
        in result.output
    assert git("show", "gh-pages:index.html", cwd=bare) == "someone else's site\n"
    result = deploy(repo / "config.toml", "--force")
    assert result.exit_code == 0, result.output
    assert "<title>Digest</title>" in git("show", "gh-pages:index.html", cwd=bare)


def test_a_remote_that_cannot_be_reached_hides_the_token_in_its_url(repo: Path) -> None:
    token = "ghp_Zq8Xw2Lm5Nb7Vc4Kj1Hg6Fd3Sa9Pt0Ry"
    git("remote", "add", "origin", f"http://x-access-token:{token}@127.0.0.1:9/o/n.git",
        cwd=repo)
    result = CliRunner(env=GIT_ENV).invoke(cli, ["-v", "deploy", "--config",
                                                 str(repo / "config.toml")])
    assert result.exit_code == 1, result.output
    assert "git push to the remote 'origin' failed" in result.output
    assert "the remote could not be reached" in result.output
    assert token not in result.output and token[4:12] not in result.output
