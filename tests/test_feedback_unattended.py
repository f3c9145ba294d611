"""`digest feedback` run with nobody watching (the workflow pulls before every build): under
the workspace lock, marks keyed by repository, GitHub's rate limits and odd answers in our
words, only the marks' issues asked for, a deadline for a whole answer, no token in any output.

The concurrency tests run the commands as processes (the lock is a file lock, as between two
cron jobs) and order them with events, never with sleeps."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from email.utils import format_datetime
from pathlib import Path
from urllib.parse import quote

import pytest
import requests

from generator.marks import FORMAT, load_marks
from generator.marks import pull as pull_marks
from generator.marks.github import GitHubIssues
from tests.conftest import ROOT, write_config
from tests.servers.arxiv import ArxivServer
from tests.servers.github import GitHubServer, Refusal
from tests.servers.sglang import SglangServer
from tests.test_feedback import digest, pull

A, B, C, D = "2202.12139", "2005.14124", "2301.00001", "2301.00002"


@pytest.fixture
def workspace(tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer) -> Path:
    return write_config(tmp_path / "ws", arxiv_server, sglang_server,
                        extra='\n[feedback]\ngithub_repo = "reader/digest"\n')


def marks_file(config: Path) -> Path:
    return config.parent / "feedback.json"


def spawn(config: Path, github: GitHubServer, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "GITHUB_API_URL": github.api_url, "GITHUB_TOKEN": github.state.token}
    return subprocess.Popen([sys.executable, "-m", "generator", "feedback", *args, "--config",
                             str(config)], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def wait_for_line(process: subprocess.Popen[str], words: str) -> str:
    """Read the process's stderr until a line says `words` (it waits for the lock then)."""
    assert process.stderr is not None
    for line in process.stderr:
        if words in line:
            return line
    raise AssertionError(f"the process ended without saying {words!r}")


def holding_pull(config: Path, github: GitHubServer) -> tuple[subprocess.Popen[str],
                                                                threading.Event]:
    """A pull that holds the workspace lock, stopped at its search until the event is set."""
    gate = threading.Event()
    github.state.hold = gate
    first = spawn(config, github, "pull")
    assert github.state.held.wait(60), "the first pull never asked GitHub"
    return first, gate


def test_two_pulls_at_once_thank_each_reader_once(workspace: Path,
                                                  github: GitHubServer) -> None:
    for paper in (A, B, C):
        github.state.add_issue(f"digest-feedback more {paper}")
    first, gate = holding_pull(workspace, github)
    refused = spawn(workspace, github, "pull", "--lock-wait", "0")
    _, said = refused.communicate(timeout=60)
    assert refused.returncode == 1 and "still holds this workspace's lock" in said
    assert f"process {first.pid}" in said and "Traceback" not in said
    second = spawn(workspace, github, "pull", "--lock-wait", "60")
    assert f"process {first.pid}" in wait_for_line(second, "Waiting up to 60 s")
    gate.set()
    for process in (first, second):
        out, err = process.communicate(timeout=60)
        assert process.returncode == 0, out + err
    assert sorted(n for n, _ in github.state.comments) == [1, 2, 3]
    assert len(load_marks(marks_file(workspace)).marks) == 3


def test_a_pull_beside_add_keeps_both_marks(workspace: Path,
                                            github: GitHubServer) -> None:
    github.state.add_issue(f"digest-feedback less {A}")
    first, gate = holding_pull(workspace, github)
    add = spawn(workspace, github, "add", B, "more")
    wait_for_line(add, "Waiting up to")
    gate.set()
    for process in (first, add):
        out, err = process.communicate(timeout=60)
        assert process.returncode == 0, out + err
    marks = load_marks(marks_file(workspace))
    assert {(m.arxiv_id, m.kind) for m in marks.marks} == {(A, "less"), (B, "more")}


def test_marks_are_kept_by_repository_and_an_old_file_is_read(
        workspace: Path, github: GitHubServer) -> None:
    """A file of format 1 (issue numbers alone) is read as the configured repository's; after
    [feedback] github_repo changes, the new repository's #1 and #2 are marks of their own."""
    path = marks_file(workspace)
    path.write_text(json.dumps({"marks": [{"arxiv_id": A, "kind": "more", "source": "site",
                                           "at": "2026-01-05", "issue": 1}], "read": [1]}))
    github.state.add_issue(f"digest-feedback more {A}")  # read; its close had failed
    github.state.add_issue(f"digest-feedback less {B}")
    assert digest("feedback", "add", C, "more", "--config", str(workspace)).exit_code == 0
    result = pull(workspace, github)
    assert result.exit_code == 0, result.output
    assert "#2: less like" in result.output and "#1:" not in result.output
    stored = json.loads(path.read_text())
    assert stored["format"] == FORMAT == 2
    assert stored["read"] == [{"repo": "reader/digest", "number": 1},
                              {"repo": "reader/digest", "number": 2}]
    github.state.new_repository("reader/other")
    github.state.add_issue(f"digest-feedback less {C}")
    github.state.add_issue(f"digest-feedback more {D}")
    workspace.write_text(workspace.read_text().replace('"reader/digest"', '"reader/other"'))
    result = pull(workspace, github)
    assert result.exit_code == 0, result.output
    marks = load_marks(path)
    assert {(m.arxiv_id, m.kind) for m in marks.marks} == {
        (A, "more"), (B, "less"), (C, "less"), (D, "more")}
    assert marks.get(D).repo == "reader/other"  # type: ignore[union-attr]
    assert len(marks.read) == 4 and all(i["state"] == "closed" for i in github.state.issues)


NOW = int(time.time())  # when the module was imported: resets hours away, so a slow run still sees them ahead
LIMITS = {
    "primary": (Refusal(403, {"X-RateLimit-Remaining": "0",
                              "X-RateLimit-Reset": str(NOW + 3 * 3600)}),
                "primary rate limit is spent (HTTP 403)", "run the same command again after"),
    "primary 429": (Refusal(429, {"X-RateLimit-Remaining": "0",
                                  "X-RateLimit-Reset": str(NOW + 2 * 3600)}),
                    "primary rate limit is spent (HTTP 429)", "again after"),
    "reset past": (Refusal(403, {"X-RateLimit-Remaining": "0",
                                 "X-RateLimit-Reset": str(NOW - 120)}),
                   "primary rate limit", "it has reset already"),
    "reset absurd": (Refusal(403, {"X-RateLimit-Remaining": "0",
                                   "X-RateLimit-Reset": "999999999999"}),
                     "did not say when in a form this version reads", "again in an hour"),
    "reset words": (Refusal(403, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "soon"}),
                    "did not say when in a form", "in an hour"),
    "retry-after": (Refusal(429, {"Retry-After": "30"}, "slow down"),
                    "secondary rate limit is spent (HTTP 429)", "(in 30 s)"),
    "retry-after 403": (Refusal(403, {"Retry-After": "120"}, "You have exceeded a limit"),
                        "secondary rate limit is spent (HTTP 403)", "(in 2 min)"),
    "retry-after date": (Refusal(429, {"Retry-After": format_datetime(
        datetime.fromtimestamp(NOW + 3000, UTC), usegmt=True)}), "secondary", "again after"),
    "retry-after words": (Refusal(429, {"Retry-After": "later, please"}),
                          "did not say when in a form", "in a few minutes"),
    "retry-after huge": (Refusal(403, {"Retry-After": "99999999999999999999"}),
                         "did not say when in a form", "in a few minutes"),
}


@pytest.mark.parametrize("case", [*LIMITS, "secondary"])
def test_a_spent_rate_limit_is_told_with_when_to_run_again(
        workspace: Path, github: GitHubServer, case: str) -> None:
    """Never as a permission problem, never a traceback, nothing written."""
    github.state.add_issue(f"digest-feedback more {A}")
    if case == "secondary":  # a 403 without Retry-After whose body says which limit it is
        github.state.secondary = True
        words, when = "secondary rate limit is spent (HTTP 403)", "wait at least a minute"
    else:
        github.state.refusal, words, when = LIMITS[case]
    result = pull(workspace, github)
    assert result.exit_code == 1, result.output
    assert words in result.output and when in result.output
    assert "permission" not in result.output and "reader/digest" in result.output
    assert not marks_file(workspace).exists()


ISSUE = '{"number": 1, "title": "digest-feedback more 2202.12139", "state": "open"}'
ODD = {
    "number 1e999": '{"total_count": 1, "items": [{"number": 1e999, "title": "t"}]}',
    "number as text": '{"total_count": 1, "items": [{"number": "7", "title": "t"}]}',
    "number true": '{"total_count": 1, "items": [{"number": true, "title": "t"}]}',
    "number 2.0": '{"total_count": 1, "items": [{"number": 2.0, "title": "t"}]}',
    "number 0": '{"total_count": 1, "items": [{"number": 0, "title": "t"}]}',
    "number huge": '{"total_count": 1, "items": [{"number": 99999999999999, "title": "t"}]}',
    "title a number": '{"total_count": 1, "items": [{"number": 3, "title": 5}]}',
    "items an object": '{"total_count": 1, "items": {"0": ' + ISSUE + "}}",
    "an item a string": '{"total_count": 1, "items": ["digest-feedback more 2202.12139"]}',
    "total as text": '{"total_count": "1", "items": [' + ISSUE + "]}",
    "NaN": '{"total_count": NaN, "items": []}',
    "not JSON": "<html>Unicorn! We are having trouble</html>",
    "deep": '{"total_count": 1, "items": [' + "[" * 5000 + "]" * 5000 + "]}",
    "a list": "[" + ISSUE + "]",
}


@pytest.mark.parametrize("case", ODD)
def test_an_answer_that_is_not_the_apis_is_said_with_its_url_and_nothing_is_written(
        workspace: Path, github: GitHubServer, case: str) -> None:
    github.state.add_issue(f"digest-feedback more {A}")
    github.state.search_body = ODD[case].encode()
    result = pull(workspace, github)
    assert result.exit_code == 1, result.output
    assert "GitHub's answer could not be read" in result.output
    assert f"{github.api_url}/search/issues" in result.output
    assert "ghs_test-token" not in result.output and "?q=" not in result.output
    assert not marks_file(workspace).exists() and not github.state.comments


def test_a_flood_of_other_issues_hides_no_mark(workspace: Path,
                                               github: GitHubServer) -> None:
    for i in range(5000):
        github.state.add_issue(f"Typo on page {i}")
    for paper in (A, B, C):
        github.state.add_issue(f"digest-feedback more {paper}")
    result = pull(workspace, github)
    assert result.exit_code == 0, result.output
    assert len(load_marks(marks_file(workspace)).marks) == 3
    assert len([p for m, p in github.state.requests if m == "GET"]) == 1
    assert sum(i["state"] == "closed" for i in github.state.issues) == 3


def test_a_page_cap_reads_the_newest_says_what_is_left_and_never_undoes_a_newer_mark(
        tmp_path: Path, github: GitHubServer) -> None:
    """Newest first: the next pull reads the rest, and an older issue it reads then does not
    undo a newer issue's mark of the same paper."""
    for title in (f"more {A}", f"more {B}", f"more {C}", f"less {A}", f"more {D}"):
        github.state.add_issue(f"digest-feedback {title}")
    path = tmp_path / "feedback.json"
    lefts = []
    with requests.Session() as session:
        issues = GitHubIssues(session, github.api_url, "reader/digest", github.state.token,
                              per_page=2, max_pages=1)
        for _ in range(3):
            lefts.append(pull_marks(issues, path).left)
    assert lefts == [3, 1, 0]
    marks = load_marks(path)
    assert marks.get(A).kind == "less" and len(marks.marks) == 4  # type: ignore[union-attr]
    assert len(github.state.comments) == 5


@pytest.mark.parametrize("headers_too", [False, True])
def test_an_answer_trickled_a_byte_at_a_time_is_cut_at_the_deadline(
        workspace: Path, github: GitHubServer, headers_too: bool) -> None:
    github.state.add_issue(f"digest-feedback more {A}")
    github.state.trickle_s, github.state.trickle_headers = 0.1, headers_too  # reads of 0.1 s
    result = digest("feedback", "pull", "--timeout", "0.5", "--config", str(workspace),
                    env={"GITHUB_API_URL": github.api_url, "GITHUB_TOKEN": "ghs_test-token"})
    assert result.exit_code == 1, result.output
    assert "did not answer within 0.5 s when asked to search the issues of reader/digest" \
        in result.output
    assert not marks_file(workspace).exists()


def test_a_token_echoed_across_the_logs_cut_is_redacted_before_the_cut(
        workspace: Path, github: GitHubServer) -> None:
    token = "ghs_Q7x9Kp2mZr4Tv8Wn3Ls6Hd1Fj5Bc0YqXeRt"
    github.state.token, github.state.can_write = token, False
    github.state.echo_at = 270  # the token spans characters 283-323 of the body: the cut (300)
    github.state.add_issue(f"digest-feedback more {A}")
    result = digest("feedback", "pull", "-v", "--config", str(workspace),
                    env={"GITHUB_API_URL": github.api_url, "GITHUB_TOKEN": token})
    assert result.exit_code == 2, result.output
    assert "GitHub answered HTTP 403 to PATCH" in result.output and "[redacted]" in result.output
    secret = token[4:]
    forms = [secret, quote(token, safe=""), base64.b64encode(token.encode()).decode()]
    pieces = {form[i:i + 6] for form in forms for i in range(len(form) - 5)}
    assert not [p for p in pieces if p in result.output]


def test_a_deeply_nested_marks_file_is_named_not_a_recursion_error(
        workspace: Path) -> None:
    marks_file(workspace).write_text("[" * 100_000 + "]" * 100_000)
    for args in (("list",), ("add", A, "more")):
        result = digest("feedback", *args, "--config", str(workspace))
        assert result.exit_code == 2, result.output
        assert "feedback.json nests 100000 levels deep" in result.output
