"""A new workspace: a repository a user can push as it is, and the workflow that publishes it.

`digest init` writes config.toml and mkdocs.yml (the digest), a .gitignore (what must never be
committed: the site, the cache with its PDFs), a README for the digest's own repository, and
`.github/workflows/digest.yml`, which installs the tool from requirements.txt: research-digest
pinned to the version that wrote it, so a weekly run never picks up a release nobody tried with
this workspace. `digest init --upgrade-workflow` rewrites the workflow and its pins only.

The pin is the version installed now: from PyPI (`research-digest==X.Y.Z`) where it came from
an index, or the same repository at the same commit where pip installed it from git (PEP 610's
direct_url.json says which); `--from-git URL@REF` names a repository and ref instead.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import jinja2

from ..edition.render import default_template_dir
from ..errors import UsageError
from ..text.urls import redact_url

log = logging.getLogger(__name__)

DISTRIBUTION = "research-digest"
WORKFLOW = Path(".github") / "workflows" / "digest.yml"
# What the workflow installs from: the pinned tool, and the tested versions of its dependencies.
PINS = (Path("requirements.txt"), Path("constraints.txt"))
# Each file of a new workspace, and the skeleton file it is made from (.j2: a template).
FILES: dict[Path, str] = {
    Path("config.toml"): "config.toml",
    Path("mkdocs.yml"): "mkdocs.yml",
    Path(".gitignore"): "gitignore",
    Path("README.md"): "README.md.j2",
    WORKFLOW: "digest.yml",
    Path("requirements.txt"): "requirements.txt.j2",
    Path("constraints.txt"): "constraints.txt",
}
UPGRADED = (WORKFLOW, *PINS)  # what --upgrade-workflow rewrites; the user's files stay
KEPT_IF_PRESENT = (Path("README.md"), Path(".gitignore"))  # a repository made with either
# OWNER: the repository research-digest came from (no release tag exists yet to name here).
GIT_EXAMPLE = "https://github.com/OWNER/research-digest@COMMIT"
_REF_RE = re.compile(r"^(?:git\+)?(https://[^@\s]+)@([\w./-]+)$")
_COMMIT_RE = re.compile(r"[0-9a-f]{40}")
_TAG_RE = re.compile(r"v?\d+(?:\.\d+)*(?:[.-]?(?:a|b|rc|post|dev)\d*)?")  # v0.2.0, 1.0rc1


@dataclass(frozen=True)
class Install:
    """How the workspace's workflow installs the tool."""

    requirement: str  # the line of requirements.txt
    version: str  # the version that wrote the workspace
    origin: str  # where it comes from, in words, for the README
    upgrade: str  # the command that installs a newer one
    warning: str = ""  # why this pin may not install as it is ("" when it will)


@dataclass(frozen=True)
class Written:
    """What `write_workspace` or `upgrade_workflow` did, file by file."""

    written: tuple[Path, ...]
    kept: tuple[Path, ...] = ()  # present already and left as they were
    appended: tuple[Path, ...] = ()  # present already; the digest's lines added at the end
    previous: str = ""  # the requirement the workflow installed before an upgrade


def skeleton_file(name: str) -> Path:
    """A skeleton file: the wheel's copy (generator/_data/skeleton/), else the repository's
    (skeleton/, or the root for the files the repository itself uses as a workspace)."""
    packaged = default_template_dir().parent / "skeleton" / name
    if packaged.is_file():
        return packaged
    root = Path(__file__).resolve().parents[2]
    source = root / "skeleton" / name
    return source if source.is_file() else root / name


def running_install() -> Install:
    """The pin for the research-digest running now, read from its installed metadata."""
    try:
        found = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        from .. import __version__

        return registry_install(__version__, f"{DISTRIBUTION} is not installed as a package "
                                "(run from a source tree)")
    return install_from(found.version, found.read_text("direct_url.json"))


def install_from(version: str, direct_url: str | None) -> Install:
    """The pin for `version`, given how pip installed it (PEP 610; None: from an index)."""
    if direct_url is None:
        return registry_install(version)
    try:
        where = json.loads(direct_url)
    except json.JSONDecodeError:
        where = {}
    url, vcs = str(where.get("url", "")), where.get("vcs_info") or {}
    shown = redact_url(url)  # a URL with credentials in it goes into no file and no message
    if (vcs.get("vcs") == "git" and re.fullmatch(r"[0-9a-f]{40}", str(vcs.get("commit_id")))
            and url.startswith("https://") and shown == url and "#" not in url):
        return git_install(f"{url}@{vcs['commit_id']}", version)
    kind = ("a git repository the workflow cannot reach as it is" if vcs else
            "a local folder" if "dir_info" in where else "a file or URL")
    example = _clone_pin(url) if "dir_info" in where else ""
    return registry_install(version, f"this research-digest was installed from {kind} ({shown})",
                            example=example)


def _clone_pin(url: str) -> str:
    """`URL@COMMIT` for a local folder that is a clone of a public https repository (its
    origin, its checked-out commit); "" otherwise."""
    if not url.startswith("file://"):
        return ""
    folder = Path(url.removeprefix("file://"))

    def git(*args: str) -> str:
        try:
            done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True,
                                  text=True, check=False, timeout=10, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return done.stdout.strip() if done.returncode == 0 else ""

    origin, commit = git("remote", "get-url", "origin"), git("rev-parse", "HEAD")
    origin = origin.removesuffix(".git")
    if (origin.startswith("https://") and redact_url(origin) == origin
            and _COMMIT_RE.fullmatch(commit)):
        return f"{origin}@{commit}"
    return ""


def registry_install(version: str, unsure: str = "", example: str = "") -> Install:
    """research-digest==version from PyPI; `unsure` says why that release may not exist."""
    suggestion = (f"e.g. {example}, this clone's commit: push it first" if example else
                  f"e.g. {GIT_EXAMPLE}, with the repository you got research-digest from and "
                  "a release tag of it or a commit")
    warning = (f"{unsure}: the workflow installs {DISTRIBUTION}=={version} from PyPI, which "
               f"works once that version is released there; until then pass --from-git "
               f"URL@REF ({suggestion}).") if unsure else ""
    return Install(f"{DISTRIBUTION}=={version}", version,
                   f"research-digest {version} from PyPI.",
                   f"pip install -U {DISTRIBUTION}", warning)


def git_install(spec: str, version: str) -> Install:
    """research-digest from a git repository at a ref: `URL@REF` (a tag or a commit pins it)."""
    match = _REF_RE.match(spec.strip())
    if not match:
        raise UsageError(f"--from-git {redact_url(spec)!r}: give the repository's https URL "
                         f"(without credentials: a public repository) and a tag or "
                         f"commit, as URL@REF, e.g. {GIT_EXAMPLE}")
    url, ref = match.groups()
    shown = ref[:12] if _COMMIT_RE.fullmatch(ref) else ref
    moving = not (_COMMIT_RE.fullmatch(ref) or _TAG_RE.fullmatch(ref))
    warning = (f"{ref!r} looks like a branch, which moves: each weekly run would install "
               "whatever it points to that day, against constraints made for this version. "
               "Pin a release tag or a commit (`git rev-parse HEAD` in a clone).") if moving else ""
    return Install(f"{DISTRIBUTION} @ git+{url}@{ref}", version,
                   f"research-digest from {url} at `{shown}` (version {version}).",
                   f'pip install -U "{DISTRIBUTION} @ git+{url}@NEW-TAG-OR-COMMIT"', warning)


def write_workspace(directory: Path, install: Install) -> Written:
    """Write every file of a new workspace into `directory`; nothing is overwritten.

    A README.md or .gitignore already there (a repository created with one) is kept; the
    .gitignore gets the digest's lines at its end. Any other file already there stops it
    before anything is written."""
    present = [name for name in FILES if (directory / name).exists()]
    blocking = [name for name in present if name not in KEPT_IF_PRESENT]
    if blocking:
        hint = (f"; to rewrite the workflow for this version, run `digest init "
                f"--upgrade-workflow {directory}`" if Path("config.toml") in blocking else "")
        verb = "exists" if len(blocking) == 1 else "exist"
        raise UsageError(f"{', '.join(str(directory / n) for n in blocking)} already {verb}; "
                         f"not overwriting{hint}")
    written, kept, appended = [], [], []
    for name in FILES:
        if name == Path(".gitignore") and name in present:
            if _append_ignores(directory / name):
                appended.append(name)
            else:
                kept.append(name)
        elif name in present:
            kept.append(name)
        else:
            _write(directory, name, install)
            written.append(name)
    return Written(tuple(written), tuple(kept), tuple(appended))


def upgrade_workflow(directory: Path, install: Install) -> Written:
    """Rewrite the workflow and its pins for `install`; config.toml and the rest stay."""
    if not (directory / "config.toml").is_file():
        raise UsageError(f"{directory / 'config.toml'} not found: --upgrade-workflow rewrites "
                         f"the workflow of an existing workspace; `digest init {directory}` "
                         "makes a new one")
    requirements = directory / "requirements.txt"
    previous = pinned_requirement(requirements.read_text(encoding="utf-8")) \
        if requirements.is_file() else ""
    for name in UPGRADED:
        _write(directory, name, install)
    return Written(UPGRADED, previous=previous)


def pinned_requirement(text: str) -> str:
    """The research-digest line of a requirements file ("" when there is none)."""
    return next((line.strip() for line in text.splitlines()
                 if line.strip().startswith(DISTRIBUTION)), "")


def render(name: Path, install: Install) -> str:
    """The text of one workspace file for `install`."""
    source = skeleton_file(FILES[name])
    text = source.read_text(encoding="utf-8")
    if name == Path("constraints.txt"):  # the tool's own, under a header for this workspace
        pins = [line for line in text.splitlines() if line and not line.startswith("#")]
        return (f"# The versions of research-digest's dependencies that its tests ran with "
                f"(research-digest\n# {install.version}); requirements.txt applies them. "
                f"`digest init --upgrade-workflow .` rewrites\n# this file.\n"
                + "\n".join(pins) + "\n")
    if source.suffix != ".j2":
        return text
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             autoescape=False)
    return env.from_string(text).render(
        version=install.version, requirement=install.requirement,
        install_note=install.origin, upgrade=install.upgrade)


def _write(directory: Path, name: Path, install: Install) -> None:
    target = directory / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render(name, install), encoding="utf-8")
    log.info("wrote %s", target)


def _append_ignores(path: Path) -> bool:
    """Add the digest's ignores to a user's .gitignore; False when it has them already."""
    text = path.read_text(encoding="utf-8")
    if "/.cache/" in text.split():
        return False
    ours = skeleton_file(FILES[Path(".gitignore")]).read_text(encoding="utf-8")
    path.write_text(text + ("" if text.endswith("\n") or not text else "\n") + "\n" + ours,
                    encoding="utf-8")
    return True
