"""The built wheel carries the page templates and the workspace skeleton, and `digest init` run
from it (not from this source tree) writes the same workspace as the source tree does."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import cli
from generator.publish.workspace import FILES
from tests.conftest import ROOT


def build_wheel(target: Path) -> Path:
    """The project's wheel, built as pip builds it (with the installed hatchling where there
    is one, so no network is needed; else in an isolated environment pip fetches)."""
    isolated = importlib.util.find_spec("hatchling") is None
    run = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "--disable-pip-version-check",
         *([] if isolated else ["--no-build-isolation"]), "-w", str(target), str(ROOT)],
        capture_output=True, text=True)
    if run.returncode != 0 and isolated:
        pytest.skip(f"the build backend (hatchling) is not installed and could not be fetched:"
                    f" {run.stderr.strip().splitlines()[-1:]}")
    assert run.returncode == 0, run.stderr
    (wheel,) = target.glob("research_digest-*.whl")
    return wheel


def test_the_wheel_carries_the_templates_and_the_skeleton_and_init_works_from_it(
        tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path / "dist")
    names = set(zipfile.ZipFile(wheel).namelist())
    templates = {f"generator/_data/templates/{p.relative_to(ROOT / 'templates').as_posix()}"
                 for p in (ROOT / "templates").rglob("*") if p.is_file()}
    assert templates and templates <= names
    skeleton = {"config.toml", "mkdocs.yml", "constraints.txt",
                *(p.name for p in (ROOT / "skeleton").iterdir())}
    assert {f"generator/_data/skeleton/{n}" for n in skeleton} <= names

    # Installed as pip installs a pure-Python wheel (unpacked onto the path), ahead of this tree.
    installed = tmp_path / "installed"
    zipfile.ZipFile(wheel).extractall(installed)
    script = ("import sys; from generator.publish.workspace import skeleton_file; "
              "print(skeleton_file('digest.yml')); from generator.cli import cli; "
              "cli(['init', sys.argv[1]])")
    run = subprocess.run([sys.executable, "-c", script, str(tmp_path / "from-wheel")],
                         capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(installed)})
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(str(installed / "generator" / "_data" / "skeleton")), run.stdout
    assert CliRunner().invoke(cli, ["init", str(tmp_path / "from-source")]).exit_code == 0
    for name in FILES:
        assert (tmp_path / "from-wheel" / name).read_text() == (
            tmp_path / "from-source" / name).read_text(), name
