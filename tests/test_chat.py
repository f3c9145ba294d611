"""The edition in the team's chat: `digest send` posts it once to an incoming webhook (a real
HTTP server on 127.0.0.1), retries a refused post on the next run only, holds a post in doubt,
never shows the webhook's URL, and says what the mail says in the same words."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

from click.testing import CliRunner, Result

from generator.archive.lead import edition_counts, pick_backing, since_lines
from generator.archive.record import EditionRecord
from generator.cli import cli
from generator.deliver.chat import chat_post, discord_escape, payload, slack_escape
from generator.text.safe_text import text_of
from tests.scenario import fortnight
from tests.servers.webhook import DROP, TOKEN, WebhookServer

ROOT = Path(__file__).resolve().parents[1]
EDITION = "2026-12-02"
SITE = "https://digest.example.org/research/"
VARIABLE = "DIGEST_CHAT_WEBHOOK_URL"
HOSTILE = "<!channel> @everyone [click](https://evil.example) *bold* <@123> & :x:"


def workspace(folder: Path, format: str = "slack") -> Path:
    """A workspace with the golden edition published and [chat] on."""
    edition = folder / "site_src" / "editions" / EDITION
    edition.mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "golden" / f"editions__{EDITION}__edition.json",
                edition / "edition.json")
    config = folder / "config.toml"
    config.write_text(f'[digest]\ntitle = "Test Digest"\nsite_url = "{SITE}"\n\n'
                      f'[chat]\nwebhook_url_env = "{VARIABLE}"\nformat = "{format}"\n'
                      "timeout_seconds = 5\n")
    return config


def send(config: Path, url: str, *args: str) -> Result:
    return CliRunner().invoke(cli, ["send", "-v", "--config", str(config), *args],
                              env={VARIABLE: url}, catch_exceptions=False)


def nowhere(secret: str, folder: Path, *outputs: str) -> None:
    """`secret` (the URL, or its token) in no output and no file the workspace holds."""
    for output in outputs:
        assert secret not in output
    for path in folder.rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(errors="replace"), path


def test_one_post_per_edition_none_after_a_500_until_the_next_run(tmp_path: Path) -> None:
    config = workspace(tmp_path / "ws")
    with WebhookServer() as hook:
        hook.state.plan = [500]
        failed = send(config, hook.url)
        assert failed.exit_code == 1
        assert "failed on its side (HTTP 500); nothing was posted" in failed.output
        assert "the next `digest send` tries again" in failed.output
        assert hook.state.requests == 1 and not hook.state.posts  # not retried in the run
        first = send(config, hook.url)
        assert first.exit_code == 0, first.output
        assert "posted to the chat webhook at 127.0.0.1 (DIGEST_CHAT_WEBHOOK_URL)" in first.output
        again = send(config, hook.url)
        assert again.exit_code == 0 and "was already posted" in again.output
        assert hook.state.requests == 2 and len(hook.state.posts) == 1
        # A webhook that is gone is said in our words, naming the variable to change.
        gone = send(config, hook.url.replace("/services/", "/gone/"), "--resend")
        assert gone.exit_code == 1 and "has no webhook at this address (HTTP 404)" in gone.output
        assert f"set {VARIABLE}" in gone.output
    nowhere(hook.url, tmp_path, failed.output, first.output, again.output, gone.output)
    nowhere(TOKEN.rsplit("/", 1)[-1], tmp_path, failed.output, first.output, gone.output)
    (post,) = hook.state.posts
    record = EditionRecord.from_json(json.loads(
        (tmp_path / "ws" / "site_src" / "editions" / EDITION / "edition.json").read_text()), "")
    text = json.dumps(post, ensure_ascii=False)
    assert slack_escape(edition_counts(record)) in text
    assert f"{SITE}editions/{EDITION}/index.html" in text
    for pick, _ in record.picked:  # each pick with its mark, in the mail's words
        assert json.dumps(slack_escape(pick_backing(record, pick)), ensure_ascii=False)[1:-1] \
            in text


def test_a_post_in_doubt_is_held_never_doubled_until_resend_held(tmp_path: Path) -> None:
    config = workspace(tmp_path / "ws", "discord")
    with WebhookServer() as hook:
        hook.state.plan, hook.state.ok_status = [DROP], 204
        cut = send(config, hook.url)
        assert cut.exit_code == 1 and "may be in the channel" in cut.output
        held = send(config, hook.url)
        assert held.exit_code == 1 and "Held back" in held.output
        assert hook.state.requests == 1
        resent = send(config, hook.url, "--resend-held")
        assert resent.exit_code == 0, resent.output
        assert hook.state.requests == 2 and len(hook.state.posts) == 1
        assert hook.state.posts[0]["allowed_mentions"] == {"parse": []}
    nowhere(hook.url, tmp_path, cut.output, held.output, resent.output)


def test_the_post_says_what_the_mail_says_and_hostile_text_stays_text() -> None:
    record = fortnight().second.record
    pick = record.picks[0]
    record = replace(record, picks=(replace(pick, name=HOSTILE), *record.picks[1:]))
    post = chat_post("Digest", record, SITE)
    assert post.counts == edition_counts(record) and post.since
    assert list(post.since) == [text_of(line) for line in since_lines(record)]
    assert [p.backing for p in post.picks] == [pick_backing(record, p) for p, _ in record.picked]
    slack = json.dumps(payload(post, "slack"), ensure_ascii=False)
    assert "<!channel>" not in slack and "<@123>" not in slack
    assert slack_escape(HOSTILE) in slack
    discord = payload(post, "discord")
    description = discord["embeds"][0]["description"]
    assert discord_escape(HOSTILE) in description and "[click](" not in description
    assert discord["allowed_mentions"] == {"parse": []}
    plain = payload(post, "json")
    assert plain["picks"][0]["name"] == HOSTILE and plain["since"]["lines"] == list(post.since)


def test_a_url_put_in_the_config_is_refused_without_repeating_it(tmp_path: Path) -> None:
    config = workspace(tmp_path / "ws")
    secret = "https://hooks.slack.com/services/T1/B2/pasted-by-mistake"
    config.write_text(config.read_text().replace(VARIABLE, secret).replace('"slack"', '"teams"'))
    result = CliRunner().invoke(cli, ["send", "--config", str(config)], catch_exceptions=False)
    assert result.exit_code == 2 and "not the URL itself" in result.output
    assert "chat.format: expected 'slack', 'discord', 'json'" in result.output
    assert "pasted-by-mistake" not in result.output
    unset = CliRunner().invoke(cli, ["send", "--config", str(workspace(tmp_path / "other"))],
                               env={VARIABLE: ""}, catch_exceptions=False)
    assert unset.exit_code == 1 and f"export {VARIABLE}" in unset.output
