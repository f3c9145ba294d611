"""`digest deploy`: the built site onto the gh-pages branch of a git remote, as `mkdocs
gh-deploy` does (ghp-import makes the branch's commit), with every failure in our words.

The remote is checked before anything is committed (a workspace without one is told how to add
it, or to name another with `--remote`), the push runs with its output captured and git never
asks for a password (an unattended run would wait for ever), and git's own words go to the log
only, redacted: a remote's URL may carry a token.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
from pathlib import Path

from .. import __version__
from ..errors import SiteBuildError
from ..text.urls import redact_text

log = logging.getLogger(__name__)

PUSH_TIMEOUT_S = 600.0


class DeployError(SiteBuildError):
    """The site was built but could not be published; the message says what to change."""


def deploy_site(mkdocs_yml: Path, site_dir: Path, *, fallback_yml: Path, message: str | None,
                force: bool, remote: str | None = None) -> str:
    """Publish the built site to the gh-pages branch of the workspace's git remote (`remote`,
    else mkdocs.yml's `remote_name`, else origin); returns the remote's name."""
    import ghp_import  # type: ignore[import-untyped]
    from mkdocs.config import load_config
    from mkdocs.exceptions import MkDocsException

    workspace = mkdocs_yml.parent
    if not (site_dir / "index.html").is_file():
        raise SiteBuildError(f"there is no built site in {site_dir}: run `digest build` first")
    if _git(workspace, "rev-parse", "--is-inside-work-tree").returncode != 0:
        raise SiteBuildError(f"{workspace} is not a git repository with a remote to deploy to "
                             f"(`git -C {workspace} init`, then add a remote)")
    config_file = mkdocs_yml if mkdocs_yml.is_file() else fallback_yml
    try:
        config = load_config(str(config_file), site_dir=str(site_dir))
    except (MkDocsException, OSError) as err:
        raise DeployError(f"{config_file} could not be read for the deployment ({err})") from err
    name = remote or config.remote_name
    branch = config.remote_branch
    _check_remote(workspace, name, given=remote is not None)
    sha = _git(workspace, "rev-parse", "--short", "HEAD").stdout.strip() or "no commit"
    try:
        with contextlib.chdir(workspace):  # ghp-import runs git in the current folder
            ghp_import.ghp_import(str(site_dir), mesg=message or f"Deployed {sha} with "
                                  f"research-digest {__version__}", remote=name,
                                  branch=branch, push=False, force=force, nojekyll=True)
    except ghp_import.GhpError as err:
        log.info("ghp-import: %s", redact_text(str(err.message)))
        raise DeployError(f"the {branch} branch could not be made in {workspace} (git: "
                          f"{_first_line(str(err.message))}); nothing was pushed") from err
    _push(workspace, name, branch, force)
    log.info("deployed %s to the %s branch of %s", site_dir, branch, name)
    return name


def _check_remote(workspace: Path, name: str, *, given: bool) -> None:
    if _git(workspace, "remote", "get-url", name).returncode == 0:
        return
    others = _git(workspace, "remote").stdout.split()
    known = (f"its remotes are {', '.join(others)}: name one with `digest deploy --remote "
             f"{others[0]}`, or add {name}" if others else "it has none: add one")
    where = "the one named with --remote" if given else "mkdocs.yml's remote_name, default origin"
    raise DeployError(
        f"the git repository {workspace} has no remote {name!r} ({where}) to push the site to; "
        f"{known} (`git -C {workspace} remote add {name} git@github.com:OWNER/NAME.git`) and "
        "run `digest deploy` again")


def _push(workspace: Path, name: str, branch: str, force: bool) -> None:
    args = ["push", name, branch] + (["--force"] if force else [])
    done = _git(workspace, *args, timeout=PUSH_TIMEOUT_S)
    if done.returncode == 0:
        return
    said = redact_text(done.stderr)
    log.info("git %s answered (exit %d): %s", " ".join(args), done.returncode, said[-2000:])
    raise DeployError(f"git push to the remote {name!r} failed: {_push_reason(said, branch)} "
                      f"(the {branch} branch is committed locally; -v shows git's own words)")


def _push_reason(said: str, branch: str) -> str:
    text = said.casefold()
    if "rejected" in text or "non-fast-forward" in text or "fetch first" in text:
        return (f"the remote's {branch} has commits this one lacks: `digest deploy --force` "
                "replaces it")
    if any(w in text for w in ("authentication failed", "permission denied", "could not read "
                               "username", "terminal prompts disabled", "403", "401")):
        return ("the remote refused the credentials: check the remote's URL and that this "
                "machine may push to it (a deploy key, `gh auth login`, or a token)")
    if any(w in text for w in ("could not resolve host", "unable to access", "connection",
                               "timed out", "network")):
        return "the remote could not be reached: check the network and the remote's URL"
    if "does not appear to be a git repository" in text or "not found" in text:
        return ("there is no repository at the remote's URL: check it with "
                "`git remote -v`")
    return "git gave no reason this version recognises"


def _first_line(text: str) -> str:
    return redact_text(text.strip().splitlines()[0] if text.strip() else "no reason given")[:200]


def _git(workspace: Path, *args: str, timeout: float = 60.0
         ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GCM_INTERACTIVE": "never"}
    try:
        return subprocess.run(["git", "-C", str(workspace), *args], capture_output=True,
                              text=True, check=False, env=env, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except FileNotFoundError as err:
        raise DeployError("git is not installed (or not on PATH): `digest deploy` pushes "
                          "with it") from err
    except subprocess.TimeoutExpired as err:
        raise DeployError(f"`git {args[0]}` in {workspace} did not finish within {timeout:g} s "
                          "(a remote that does not answer?); run `digest deploy` again") from err
