"""The reader steers triage: marks from the site (GitHub issues), the mail (mailto:) and the
command line, kept in feedback.json, read by triage in its shared prefix, never on the site."""

from __future__ import annotations

import email
import email.policy
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from generator.cli import cli
from generator.feedback import load_marks, mail_link, parse_mark
from tests.conftest import read_record, write_config
from tests.servers.arxiv import ArxivServer
from tests.servers.github import GitHubServer
from tests.servers.sglang import SglangServer
from tests.test_publish import mock_env

EDITION, NEXT = "2026-11-25", "2026-12-02"
MARKED, OTHER = "2202.12139", "2405.13786"  # papers of the recorded feed


def digest(*args: str, env: dict[str, str] | None = None) -> Result:
    with mock_env(env or {}):
        return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def github() -> Iterator[GitHubServer]:
    server = GitHubServer().start()
    yield server
    server.stop()


@pytest.fixture
def workspace(tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer) -> Path:
    return write_config(tmp_path / "ws", arxiv_server, sglang_server,
                        extra='\n[feedback]\ngithub_repo = "reader/digest"\n'
                              'email = "marks@example.org"\n')


def pull(config: Path, github: GitHubServer, token: str = "ghs_test-token") -> Result:
    return digest("feedback", "pull", "--config", str(config),
                  env={"GITHUB_API_URL": github.api_url, "GITHUB_TOKEN": token})


def test_a_mark_reads_from_an_issue_title_or_a_mail_subject_and_nothing_else() -> None:
    assert parse_mark("digest-feedback more 2202.12139") == ("2202.12139", "more")
    assert parse_mark("Re: digest-feedback LESS arXiv:2202.12139v2.") == ("2202.12139", "less")
    assert parse_mark("digest-feedback more ../../etc") is None
    assert parse_mark("Great digest, thanks!") is None
    assert mail_link("marks@example.org", "2202.12139v1", "more") == (
        "mailto:marks@example.org?subject=digest-feedback%20more%202202.12139")


def test_pull_reads_every_page_closes_each_mark_with_a_comment_and_leaves_the_rest(
        workspace: Path, github: GitHubServer) -> None:
    state = github.state
    for i in range(120):  # more than a page of 100: the link header's next page is followed
        state.add_issue(f"digest-feedback {'more' if i % 2 else 'less'} 2202.{10000 + i}",
                        labels=("digest-feedback",))
    chat = state.add_issue("Love the digest", labels=("digest-feedback",))
    pr = state.add_issue("digest-feedback more 2202.99999", labels=("digest-feedback",),
                         pull_request=True)
    state.add_issue("digest-feedback more 2202.88888")  # not labelled: not read
    state.add_issue(f"digest-feedback more {MARKED}", labels=("digest-feedback",))
    state.add_issue(f"digest-feedback less {MARKED}", labels=("digest-feedback",))  # last counts
    result = pull(workspace, github)
    assert result.exit_code == 0, result.output
    marks = load_marks(workspace.parent / "feedback.json")
    assert len(marks.marks) == 121 and marks.get(MARKED).kind == "less"  # type: ignore[union-attr]
    assert marks.get("2202.99999") is None and marks.get("2202.88888") is None
    pages = [p for m, p in state.requests if m == "GET"]
    assert len(pages) == 2 and pages[1].startswith("/repositories/1300192/issues?")
    closed = {i["number"] for i in state.issues if i["state"] == "closed"}
    assert len(closed) == 122 and chat not in closed and pr not in closed
    assert len(state.comments) == 122 and "marked “less like this”" in state.comments[-1][1]
    assert f"#{chat}" in result.output and "not in any edition yet" in result.output
    assert all(a == "Bearer ghs_test-token" for a in state.authorizations)
    # A second pull finds nothing new and changes nothing.
    assert pull(workspace, github).exit_code == 0
    assert len(load_marks(workspace.parent / "feedback.json").marks) == 121


@pytest.mark.parametrize("problem, words", [
    ("token", "GitHub refused the token (HTTP 401)"),
    ("repo", "GitHub has no repository reader/digest that this token can see (HTTP 404)"),
    ("write", "needs the 'issues: write' permission"),
    ("rate", "rate limit is spent (HTTP 403)"),
])
def test_a_refusal_names_the_repository_and_what_the_token_needs(
        workspace: Path, github: GitHubServer, problem: str, words: str) -> None:
    github.state.add_issue(f"digest-feedback more {MARKED}", labels=("digest-feedback",))
    token = "wrong" if problem == "token" else "ghs_test-token"
    if problem == "repo":
        github.state.repo = "someone/else"
    github.state.can_write = problem != "write"
    github.state.remaining = 0 if problem == "rate" else 5000
    result = pull(workspace, github, token)
    assert result.exit_code == (1 if problem == "rate" else 2), result.output
    assert words in result.output
    assert "wrong" not in result.output and "ghs_" not in result.output
    # A close the token may not make loses no mark: it was kept before any issue was closed.
    kept = load_marks(workspace.parent / "feedback.json")
    assert bool(kept.get(MARKED)) == (problem == "write")


def test_add_remove_and_list_keep_one_mark_per_paper(workspace: Path) -> None:
    config = str(workspace)
    assert digest("feedback", "add", MARKED, "more", "--config", config).exit_code == 0
    result = digest("feedback", "add", f"{MARKED}v3", "less", "--config", config)
    assert result.exit_code == 0 and "in no edition yet" in result.output
    bad = digest("feedback", "add", "not-an-id", "more", "--config", config)
    assert bad.exit_code == 2 and "is not an arXiv id" in bad.output
    listed = digest("feedback", "list", "--config", config).output
    assert listed.count(MARKED) == 1 and listed.startswith("less")
    assert digest("feedback", "remove", MARKED, "--config", config).exit_code == 0
    assert "No marks yet." in digest("feedback", "list", "--config", config).output
    (workspace.parent / "feedback.json").write_text('{"marks": [{"arxiv_id": 7}]}')
    mangled = digest("feedback", "list", "--config", config)
    assert mangled.exit_code == 2 and "feedback.json" in mangled.output
    assert "marks[0]" in mangled.output


def triage_config(workspace: Path) -> str:
    text = workspace.read_text().replace(
        "[feedback]", '[triage]\ninterests = "software testing"\nmax_candidates = 10\n\n'
                      "[feedback]")
    workspace.write_text(text)
    return str(workspace)


def test_marks_reach_the_triage_prefix_its_page_and_the_mail_and_never_the_site(
        workspace: Path, sglang_server: SglangServer) -> None:
    config = triage_config(workspace)
    result = digest("build", "--config", config, "--edition", EDITION)
    assert result.exit_code == 0, result.output
    before = list(sglang_server.state.chat_requests)
    assert digest("feedback", "add", MARKED, "more", "--config", config).exit_code == 0
    assert digest("feedback", "add", OTHER, "less", "--config", config).exit_code == 0
    result = digest("build", "--config", config, "--edition", NEXT)
    assert result.exit_code == 0, result.output
    triage = [r for r in sglang_server.state.chat_requests[len(before):]
              if "The reader's interests:" in str(r["messages"][0]["content"])]
    assert triage
    system = {r["messages"][0]["content"] for r in triage}
    assert len(system) == 1  # every candidate shares one prefix, the marks in it
    (prefix,) = system
    assert "More like these:\n- Testing Deep Learning" in prefix and "Less like these:" in prefix
    assert prefix.index("The reader's interests:") < prefix.index("More like these:")
    record = read_record(workspace, NEXT)
    assert record.triage and record.triage.marks == 2
    assert set(record.triage.marked) == {MARKED, OTHER}
    assert not [p for p, _ in record.picked if p.arxiv_id.startswith((MARKED, OTHER))]
    docs = workspace.parent / "site_src"
    assert "**Your marks shaped it:** 2 papers" in (docs / "editions" / NEXT / "triage.md"
                                                       ).read_text()
    overview = (docs / "editions" / NEXT / "index.md").read_text()
    assert "https://github.com/reader/digest/issues/new?title=digest-feedback%20more%20" \
        in overview and "labels=digest-feedback" in overview
    # The marks survive rendering everything again and are nowhere on the site.
    marks = (workspace.parent / "feedback.json").read_text()
    assert digest("render", "--all", "--config", config).exit_code == 0
    assert digest("site", "--config", config).exit_code == 0
    assert (workspace.parent / "feedback.json").read_text() == marks
    site = workspace.parent / "site"
    assert not list(site.rglob("feedback.json"))
    assert not any('"kind": "more"' in p.read_text(errors="replace")
                   for p in site.rglob("*") if p.is_file() and p.suffix in (".html", ".json"))
    # The mail offers the marks as mailto: links with the machine-readable subject.
    workspace.write_text(workspace.read_text() + '\n[email]\nto = ["r@example.org"]\n'
                         'from = "d@example.org"\nsmtp_host = "localhost"\n')
    assert digest("send", "--config", config, "--dry-run", "--edition", EDITION,
                  env={"DIGEST_SITE_URL": "https://example.org/d/"}).exit_code == 0
    eml = (workspace.parent / ".cache" / "editions" / EDITION / "newsletter.eml").read_bytes()
    message = email.message_from_bytes(eml, policy=email.policy.default)
    html = message.get_body(("html",)).get_content()  # type: ignore[union-attr]
    assert 'href="mailto:marks@example.org?subject=digest-feedback%20more%20' in html
