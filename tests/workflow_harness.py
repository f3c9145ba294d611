"""The workflow `digest init` writes, run as GitHub would run it, on this machine.

`Harness.run` takes the digest.yml from the workspace and runs its jobs (build, deploy, send)
in order, each on a fresh runner: a clone of the remote at depth 1 (actions/checkout), its
`run:` steps in bash as GitHub runs them (`bash --noprofile --norc -eo pipefail`), with the
expressions (`${{ steps.x.outputs.y }}`, `needs`, `secrets`, `vars`, `inputs`, `github`,
`always()`, `fromJSON`) evaluated, step outputs read from GITHUB_OUTPUT, `if:` and
`continue-on-error` honoured. The actions are emulated by what they do to the runner:
actions/cache (exact key, else the newest entry matching a restore key; an entry is never
overwritten; `evict()` drops them all, as GitHub does after seven days unused), the Pages
artifact as a folder that deploy-pages publishes (served over HTTP at the configure-pages URL),
artifacts as folders per run, setup-python as the Python running the tests. Three tools are
stood in for on PATH: `pip` (the tool is installed already), `gh` (the runs and their
artifacts, as `gh run list/download` give them), `date` (the runner's clock, moved a week at a
time). `digest` runs in this process (one start-up for the whole test, not one per step): the
command on PATH hands its arguments, environment and folder to the test process, which runs the
CLI and hands back its output and exit code.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from generator.cli import cli
from tests.workflow_stand_ins import DATE, DIGEST, GH, PIP, Pages

BRANCH = "main"
_EXPR = re.compile(r"\$\{\{(.*?)\}\}", re.S)

class _Missing(str):
    """A property that is not there: '' (as on GitHub), whose properties are missing too."""

    def __getattr__(self, name: str) -> _Missing:
        return MISSING


MISSING = _Missing("")


class Context:
    """An expression context (`steps`, `needs`, ...): a missing property is ''."""

    def __init__(self, values: dict[str, Any]) -> None:
        self._values = values

    def __getattr__(self, name: str) -> Any:
        value = self._values.get(name, MISSING)
        return Context(value) if isinstance(value, dict) else value


def evaluate(expression: str, names: dict[str, Any]) -> Any:
    """One `${{ }}` expression of the subset the workflow uses, in Python's words."""
    parts = re.split(r"('(?:[^']|'')*')", expression)  # the string literals at odd places
    for i, part in enumerate(parts):
        if i % 2:
            parts[i] = repr(part[1:-1].replace("''", "'"))
            continue
        part = part.replace("&&", " and ").replace("||", " or ")
        part = re.sub(r"!(?!=)", " not ", part)
        parts[i] = re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", part))
    code = "".join(parts)
    return eval(code.strip(), {"__builtins__": {}}, names)  # noqa: S307 (our own workflow)


def substitute(text: str, names: dict[str, Any]) -> str:
    def one(match: re.Match[str]) -> str:
        value = evaluate(match.group(1), names)
        return json.dumps(value) if isinstance(value, (list, dict)) else \
            ("true" if value is True else "false" if value is False else str(value))
    return _EXPR.sub(one, text)


@dataclass
class Job:
    name: str
    result: str = "skipped"  # success, failure or skipped
    outputs: dict[str, str] = field(default_factory=dict)
    runs_on: Any = None
    summary: str = ""
    log: list[str] = field(default_factory=list)
    steps: dict[str, str] = field(default_factory=dict)  # a named step: its outcome


@dataclass
class Run:
    id: int
    jobs: dict[str, Job]
    artifacts: dict[str, Path]

    @property
    def conclusion(self) -> str:
        return "failure" if any(j.result == "failure" for j in self.jobs.values()) else "success"


class Harness:
    def __init__(self, root: Path, remote: Path, *, secrets: dict[str, str],
                 variables: dict[str, str] | None = None) -> None:
        self.root, self.remote = root, remote
        self.secrets, self.variables = secrets, variables or {}
        self.caches: dict[str, Path] = {}  # key -> saved folder, oldest first
        self.runs: list[Run] = []
        self.pages = Pages(root / "pages")
        self.bin = root / "bin"
        self.bin.mkdir()
        # A short path: a Unix socket's name is limited to about 100 bytes.
        self._socket_dir = tempfile.mkdtemp(prefix="digest-")
        self.socket_path = os.path.join(self._socket_dir, "s")
        self.calls: list[tuple[str, ...]] = []  # every digest command the workflow ran
        self._write_tools()
        self.before_step: dict[str, Callable[[], None]] = {}  # step name -> what happens then

    def _write_tools(self) -> None:
        python = sys.executable
        for name, text in (("digest", DIGEST.format(python=python, sock=self.socket_path)),
                           ("gh", GH.format(python=python,
                                             runs=str(self.root / "runs.json"))),
                           ("pip", PIP), ("date", DATE)):
            (self.bin / name).write_text(text)
            (self.bin / name).chmod(0o755)

    def evict(self) -> None:
        """GitHub evicts cache entries unused for seven days: a weekly run's, at the edge."""
        self.caches.clear()

    def stop(self) -> None:
        self.pages.stop()
        shutil.rmtree(self._socket_dir, ignore_errors=True)

    def run(self, workflow: Path, today: str, inputs: dict[str, str] | None = None,
            attempt: int = 1, only: tuple[str, ...] = ()) -> Run:
        """One run of the workflow (a new run id unless `attempt` > 1 re-runs the last one,
        `only` its named jobs, the others' results kept)."""
        spec = yaml.safe_load(workflow.read_text())
        if attempt > 1:
            run = self.runs[-1]
        else:
            run = Run(len(self.runs) + 1, {}, {})
            self.runs.append(run)
        for name, job_spec in spec["jobs"].items():
            if only and name not in only:
                continue
            job = Job(name)
            run.jobs[name] = job
            needs = job_spec.get("needs", [])
            needs = [needs] if isinstance(needs, str) else needs
            need_ctx = {n: {"result": run.jobs[n].result, "outputs": run.jobs[n].outputs}
                        for n in needs}
            names = self._names(run, attempt, inputs or {}, need_ctx, {}, failed=any(
                run.jobs[n].result != "success" for n in needs))
            condition = job_spec.get("if", "success()")
            if not evaluate(_bare(condition), names):
                continue
            runs_on = job_spec["runs-on"]
            job.runs_on = evaluate(_bare(runs_on), names) if "${{" in str(runs_on) else runs_on
            self._job(run, job, job_spec, today, attempt, inputs or {}, need_ctx)
        self._save_runs()
        return run

    def _names(self, run: Run, attempt: int, inputs: dict[str, str], needs: dict[str, Any],
               steps: dict[str, Any], *, failed: bool) -> dict[str, Any]:
        return {
            "github": Context({"run_id": str(run.id), "run_attempt": str(attempt),
                               "ref_name": BRANCH, "token": "ghs_test-token"}),
            "secrets": Context(self.secrets), "vars": Context(self.variables),
            "inputs": Context(inputs), "needs": Context(needs), "steps": Context(steps),
            "always": lambda: True, "success": lambda: not failed,
            "failure": lambda: failed, "cancelled": lambda: False,
            "fromJSON": json.loads,
        }

    def _job(self, run: Run, job: Job, spec: dict[str, Any], today: str, attempt: int,
             inputs: dict[str, str], needs: dict[str, Any]) -> None:
        runner = self.root / f"run{run.id}-{attempt}" / job.name
        work = runner / "repo"
        work.mkdir(parents=True)
        for folder in ("temp", "out"):
            (runner / folder).mkdir()
        steps: dict[str, Any] = {}
        failed = False
        env_base = {
            "PATH": f"{self.bin}:{Path(sys.executable).parent}:/usr/bin:/bin",
            "HOME": str(runner), "CI": "true", "GITHUB_ACTIONS": "true",
            "GITHUB_REF_NAME": BRANCH, "GITHUB_RUN_ID": str(run.id),
            "GITHUB_WORKSPACE": str(work), "RUNNER_TEMP": str(runner / "temp"),
            "HARNESS_TODAY": today, "LANG": "C.UTF-8",
            "GIT_CONFIG_GLOBAL": str(runner / "gitconfig"),
        }
        for index, step in enumerate(spec.get("steps", [])):
            names = self._names(run, attempt, inputs, needs, steps, failed=failed)
            label = step.get("name") or step.get("uses") or step.get("run", "")[:40]
            if label in self.before_step:
                self.before_step.pop(label)()
            if not evaluate(_bare(step.get("if", "success()")), names):
                job.steps[label] = "skipped"
                continue
            env = {**env_base, **{k: substitute(str(v), names)
                                  for k, v in step.get("env", {}).items()}}
            output_file = runner / "out" / f"output-{index}"
            summary_file = runner / "out" / f"summary-{index}"
            output_file.touch()
            env.update(GITHUB_OUTPUT=str(output_file), GITHUB_STEP_SUMMARY=str(summary_file))
            try:
                if "run" in step:
                    ok = self._shell(substitute(step["run"], names), env, work, job)
                else:
                    with_ = {k: substitute(str(v), names)
                             for k, v in step.get("with", {}).items()}
                    ok = self._action(step["uses"].split("@")[0], with_, work, run, job,
                                      output_file, env)
            except Exception:
                job.log.append(traceback.format_exc())
                ok = False
            outputs = dict(line.split("=", 1) for line in
                           output_file.read_text().splitlines() if "=" in line)
            if summary_file.exists():
                job.summary += summary_file.read_text()
            outcome = "success" if ok else "failure"
            job.steps[label] = outcome
            if "id" in step:
                steps[step["id"]] = {"outputs": outputs, "outcome": outcome,
                                     "conclusion": "success" if ok or step.get(
                                         "continue-on-error") else "failure"}
            if not ok and not step.get("continue-on-error"):
                failed = True
        job.result = "failure" if failed else "success"
        names = self._names(run, attempt, inputs, needs, steps, failed=failed)
        job.outputs = {k: substitute(str(v), names) for k, v in spec.get("outputs", {}).items()}

    def _shell(self, script: str, env: dict[str, str], work: Path, job: Job) -> bool:
        path = Path(env["RUNNER_TEMP"]) / "step.sh"
        path.write_text(script)
        with socket.socket(socket.AF_UNIX) as listener:
            if os.path.exists(self.socket_path):
                os.unlink(self.socket_path)
            listener.bind(self.socket_path)
            listener.listen()
            listener.settimeout(0.05)
            process = subprocess.Popen(["bash", "--noprofile", "--norc", "-eo", "pipefail",
                                        str(path)], cwd=work, env=env,
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            reader = _Drain(process)
            while process.poll() is None:
                try:
                    connection, _ = listener.accept()
                except TimeoutError:
                    continue
                with connection:
                    self._serve(connection)
            reader.join()
        job.log.append(f"$ {script.strip()}\n{reader.text}")
        return process.returncode == 0

    def _serve(self, connection: socket.socket) -> None:
        """Run one `digest` command of a step in this process, where the step ran it."""
        data = b""
        while not data.endswith(b"\n"):
            data += connection.recv(65536)
        asked = json.loads(data)
        argv = list(asked["argv"])
        self.calls.append(tuple(argv))
        overrides: dict[str, str | None] = {k: None for k in os.environ}
        overrides.update(asked["env"])
        here = os.getcwd()
        os.chdir(asked["cwd"])
        try:
            result = CliRunner().invoke(cli, argv, env=overrides, catch_exceptions=True)
        finally:
            os.chdir(here)
        stderr = result.stderr
        code = result.exit_code
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            # Never a traceback from a command: the test fails on it.
            stderr += "".join(traceback.format_exception(result.exception))
            code = 99
        answer = {"stdout": result.stdout, "stderr": stderr, "code": code}
        connection.sendall(json.dumps(answer).encode() + b"\n")

    def _action(self, name: str, with_: dict[str, str], work: Path, run: Run, job: Job,
                output_file: Path, env: dict[str, str]) -> bool:
        out: dict[str, str] = {}
        if name == "actions/checkout":
            self._checkout(work, with_.get("ref") or BRANCH, env)
        elif name == "actions/setup-python":
            pass  # this Python, with the tool installed (see the pip stand-in)
        elif name == "actions/cache/restore":
            key = with_["key"]
            prefixes = [p.strip() for p in with_.get("restore-keys", "").splitlines() if p]
            hit = key if key in self.caches else next(
                (k for k in reversed(self.caches) if any(k.startswith(p) for p in prefixes)),
                None)
            if hit is not None:
                shutil.copytree(self.caches[hit], work / with_["path"], dirs_exist_ok=True)
            out["cache-hit"] = "true" if hit == key else "false"
        elif name == "actions/cache/save":
            key, source = with_["key"], work / with_["path"]
            if key in self.caches or not source.exists():
                job.log.append(f"cache: not saved ({key})")
            else:
                kept = self.root / "caches" / key
                shutil.copytree(source, kept)
                self.caches[key] = kept
        elif name == "actions/configure-pages":
            out["base_url"] = self.pages.url
        elif name in ("actions/upload-pages-artifact", "actions/upload-artifact"):
            artifact = "github-pages" if name.endswith("pages-artifact") else with_["name"]
            source = work / with_["path"]
            if not source.exists():
                return with_.get("if-no-files-found") == "ignore"
            kept = self.root / "artifacts" / str(run.id) / artifact
            if kept.exists():
                return False  # an artifact's name is taken once a run
            if source.is_dir():
                shutil.copytree(source, kept)
            else:
                kept.mkdir(parents=True)
                shutil.copy2(source, kept / source.name)
            run.artifacts[artifact] = kept
        elif name == "actions/download-artifact":
            if with_["name"] not in run.artifacts:
                return False
            shutil.copytree(run.artifacts[with_["name"]], work / with_["path"],
                            dirs_exist_ok=True)
        elif name == "actions/deploy-pages":
            self.pages.deploy(run.artifacts["github-pages"])
            out["page_url"] = self.pages.url + "/"
        else:
            raise AssertionError(f"the harness does not emulate {name}")
        with output_file.open("a") as handle:
            handle.writelines(f"{k}={v}\n" for k, v in out.items())
        return True

    def _checkout(self, work: Path, ref: str, env: dict[str, str]) -> None:
        """actions/checkout: the ref at depth 1, `origin` set up, the branch checked out (a
        commit: a detached HEAD)."""
        def git(*args: str) -> None:
            subprocess.run(["git", *args], cwd=work, env=env, check=True,
                           capture_output=True)
        git("init", "-q", "-b", BRANCH)
        git("remote", "add", "origin", self.remote.as_uri())
        if re.fullmatch(r"[0-9a-f]{40}", ref):
            git("fetch", "-q", "--depth", "1", "origin", ref)
            git("checkout", "-q", "--detach", "FETCH_HEAD")
        else:
            git("fetch", "-q", "--depth", "1", "origin",
                f"+refs/heads/{ref}:refs/remotes/origin/{ref}")
            git("checkout", "-q", "-B", ref, f"refs/remotes/origin/{ref}")

    def _save_runs(self) -> None:
        (self.root / "runs.json").write_text(json.dumps([
            {"id": r.id, "conclusion": r.conclusion,
             "artifacts": {k: str(v) for k, v in r.artifacts.items()}} for r in self.runs]))


class _Drain(threading.Thread):
    """A step's output, read while it runs (a full pipe would stop it)."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        super().__init__(daemon=True)
        self.process, self.text = process, ""
        self.start()

    def run(self) -> None:
        assert self.process.stdout is not None
        self.text = self.process.stdout.read().decode("utf-8", "replace")


def _bare(condition: Any) -> str:
    """An `if:`/`runs-on:` value as an expression (GitHub allows it with or without ${{ }})."""
    text = str(condition).strip()
    match = re.fullmatch(r"\$\{\{(.*)\}\}", text, re.S)
    return match.group(1) if match else text
