"""`digest send` delivers each reader the edition once, as a mail queue would: two runs at once,
a record that cannot be written after delivery, a changed site address, repeated addresses, and
a server that quotes the login back. Against a real SMTP server (aiosmtpd) on 127.0.0.1, over
the golden edition's record (no build needed: sending reads the record alone)."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from base64 import b64encode
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import pytest
from click.testing import CliRunner, Result

from generator.cli import cli
from generator.text.urls import redact_text
from tests.servers.smtp import Inbox, Smtp, free_port

ROOT = Path(__file__).resolve().parents[1]
EDITION = "2026-12-02"
SITE = "https://digest.example.org/research/"


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def workspace(folder: Path, port: int, to: list[str], auth: str = "") -> Path:
    """A workspace with the golden edition published and `[email]` pointing at `port`."""
    edition = folder / "site_src" / "editions" / EDITION
    edition.mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "golden" / f"editions__{EDITION}__edition.json",
                edition / "edition.json")
    config = folder / "config.toml"
    config.write_text(f"""[digest]
title = "Test Digest"
site_url = "{SITE}"

[email]
to = {json.dumps(to)}
from = "Test Digest <digest@example.org>"
smtp_host = "127.0.0.1"
smtp_port = {port}
security = "none"
timeout_seconds = 5
{auth}""")
    return config


def record(config: Path) -> list[dict[str, str]]:
    path = config.parent / ".cache" / "editions" / EDITION / "sent.json"
    return list(json.loads(path.read_text())["recipients"])


def test_two_sends_at_once_mail_each_reader_once(tmp_path: Path) -> None:
    """The second run is refused by the workspace lock while the first waits on a slow server."""
    entered, release = threading.Event(), threading.Event()

    def slow(rcpts: list[str]) -> None:
        entered.set()
        release.wait(60)

    with Smtp(tmp_path, tls=False) as smtp:
        smtp.inbox.on_data = slow
        config = workspace(tmp_path / "ws", smtp.port, ["ada@example.org", "bo@example.org"])
        first = subprocess.Popen([sys.executable, "-m", "generator", "send", "--config",
                                  str(config)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
        try:
            assert entered.wait(60), "the first send never reached the server"
            second = run("send", "--config", str(config))
            assert second.exit_code == 1
            assert "another digest run is using this workspace" in second.output
        finally:
            smtp.inbox.on_data = None
            release.set()
            output, _ = first.communicate(timeout=60)
        assert first.returncode == 0, output.decode()
        # One message per reader, each with its own address alone in To.
        assert sorted(rcpts for _, rcpts, _ in smtp.inbox.messages) == [["ada@example.org"],
                                                                       ["bo@example.org"]]
        assert b"bo@example.org" not in smtp.inbox.messages[0][2]
        again = run("send", "--config", str(config))
        assert again.exit_code == 0 and "nothing sent" in again.output
        assert len(smtp.inbox.messages) == 2


def test_a_record_that_cannot_be_written_after_delivery_never_resends(tmp_path: Path) -> None:
    """The server accepts the first message, then the record's folder cannot be written: the
    run says who got it, and the next run holds that reader back instead of mailing them again."""
    with Smtp(tmp_path, tls=False) as smtp:
        config = workspace(tmp_path / "ws", smtp.port, ["ada@example.org", "bo@example.org"])
        folder = config.parent / ".cache" / "editions" / EDITION
        away = folder.with_name("away")

        def break_the_record(rcpts: list[str]) -> None:
            smtp.inbox.on_data = None
            folder.rename(away)
            folder.write_text("")  # a file where the folder was: no write can succeed

        smtp.inbox.on_data = break_the_record
        failed = run("send", "--config", str(config))
        assert failed.exit_code == 1
        assert "The newsletter went out to ada@example.org." in failed.output
        assert "will not send it to them again" in failed.output
        assert "ada@example.org back as possibly sent" in failed.output
        assert [rcpts for _, rcpts, _ in smtp.inbox.messages] == [["ada@example.org"]]
        folder.unlink()
        away.rename(folder)

        again = run("send", "--config", str(config))
        assert again.exit_code == 1, again.output  # a reader may lack it: someone decides
        assert "Held back: ada@example.org" in again.output and "--resend-held" in again.output
        assert [rcpts for _, rcpts, _ in smtp.inbox.messages] == [["ada@example.org"],
                                                                   ["bo@example.org"]]
        assert [(r["to"], r["state"]) for r in record(config)] == [
            ("ada@example.org", "sending"), ("bo@example.org", "sent")]
        assert (config.parent / ".cache" / "editions" / EDITION / "sent.json").stat(
            ).st_mode & 0o077 == 0  # addresses are the owner's alone
        decided = run("send", "--config", str(config), "--resend-held")
        assert decided.exit_code == 0, decided.output
        assert [rcpts for _, rcpts, _ in smtp.inbox.messages][2:] == [["ada@example.org"]]
        assert run("send", "--config", str(config), "--resend").exit_code == 0
        assert len(smtp.inbox.messages) == 5


def test_a_changed_site_address_or_a_repeated_address_sends_nobody_twice(tmp_path: Path) -> None:
    with Smtp(tmp_path, tls=False) as smtp:
        config = workspace(tmp_path / "ws", smtp.port,
                           ["Ada <ada@example.org>", "ADA@Example.org", " bo@example.org",
                            "ada@example.org"])
        assert run("send", "--config", str(config)).exit_code == 0
        assert sorted(rcpts for _, rcpts, _ in smtp.inbox.messages) == [["ada@example.org"],
                                                                       ["bo@example.org"]]
        moved = run("send", "--config", str(config),
                    env={"DIGEST_SITE_URL": "https://elsewhere.example.org/"})
        assert moved.exit_code == 0 and "nothing sent" in moved.output
        # The same mailboxes written otherwise are the same readers.
        config.write_text(config.read_text().replace(
            '["Ada <ada@example.org>", "ADA@Example.org", " bo@example.org", "ada@example.org"]',
            '["Ada Lovelace <ada@example.org>", "bo@example.org"]'))
        renamed = run("send", "--config", str(config))
        assert renamed.exit_code == 0 and "nothing sent" in renamed.output
        assert len(smtp.inbox.messages) == 2 and len(record(config)) == 2
        # A record written by the release before (keyed by a Message-ID, no state) counts too.
        path = config.parent / ".cache" / "editions" / EDITION / "sent.json"
        path.write_text(json.dumps({"message_id": "<digest-x@old.example>", "recipients": [
            {"to": "ada@example.org", "at": "2026-12-02T08:00:00+00:00"}]}))
        upgraded = run("send", "--config", str(config))
        assert upgraded.exit_code == 0 and "(1 had it already)" in upgraded.output
        assert [rcpts for _, rcpts, _ in smtp.inbox.messages][2:] == [["bo@example.org"]]
        # A record that cannot be read stops the run: it never means "send to everyone".
        path.write_text("{not json")
        unreadable = run("send", "--config", str(config))
        assert unreadable.exit_code == 1 and "cannot be read" in unreadable.output
        assert len(smtp.inbox.messages) == 3


class EchoingAuth(Inbox):
    """A server that quotes the AUTH PLAIN blob, and the password in it, in its 535 reply."""

    async def handle_AUTH(self, server: Any, session: Any, envelope: Any, args: list[str]
                          ) -> str:
        from base64 import b64decode

        blob = args[1] if len(args) > 1 else ""
        password = b64decode(blob).split(b"\0")[-1].decode()
        return f"535 5.7.8 credentials {blob} rejected (password {password})"


def encodings(user: str, password: str) -> set[str]:
    """The password as a server or a page may quote it back: as is, URL-encoded (quote, with
    "/" kept or not, quote_plus, lower-case escapes), JSON- and HTML-escaped, base64 alone
    (AUTH LOGIN) and in the AUTH PLAIN and HTTP Basic blobs (padded or not, URL-safe)."""
    url = {quote(password), quote(password, safe=""), quote_plus(password)}
    url |= {re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), form) for form in url}
    blobs = {b64encode(data).decode() for data in (
        password.encode(), f"\0{user}\0{password}".encode(), f"{user}:{password}".encode())}
    blobs |= {blob.rstrip("=") for blob in blobs}
    blobs |= {blob.translate(URLSAFE) for blob in blobs}
    return {password, json.dumps(password)[1:-1], html.escape(password)} | url | blobs


URLSAFE = str.maketrans("+/", "-_")
# Seven characters (short secrets are secrets too); and one that each encoding changes its
# own way: a space (%20 or +), "/" (kept by quote, not with safe=""), "+", "&", "=" and "!".
PASSWORDS = ["pw7Chr!", "pw 7/Chr+&=!"]


def _send_logging_in(tmp_path: Path, password: str, *, accepted: bool) -> Result:
    """`digest send` to an SMTP server that echoes the login back, as user "mailer"."""
    from aiosmtpd.controller import Controller
    from aiosmtpd.smtp import AuthResult

    port = free_port()
    controller = Controller(EchoingAuth(), hostname="127.0.0.1", port=port,
                            auth_require_tls=False,
                            authenticator=lambda *a: AuthResult(success=accepted))
    controller.start()
    try:
        config = workspace(tmp_path / "ws", port, ["ada@example.org"],
                           'username_env = "DIGEST_SMTP_USER"\n'
                           'password_env = "DIGEST_SMTP_PASSWORD"\n')
        return run("send", "--config", str(config),
                   env={"DIGEST_SMTP_USER": "mailer", "DIGEST_SMTP_PASSWORD": password})
    finally:
        controller.stop()


@pytest.mark.parametrize("password", PASSWORDS)
def test_a_server_that_quotes_the_login_back_prints_no_part_of_it(tmp_path: Path,
                                                                   password: str) -> None:
    result = _send_logging_in(tmp_path, password, accepted=False)
    assert result.exit_code == 1
    assert "refused the login of the user in DIGEST_SMTP_USER: 535 5.7.8 authentication " \
        "failed" in result.output
    secrets = encodings("mailer", password)
    assert [form for form in secrets if form in result.output] == []
    # Whatever else echoes it, in any of these encodings, is redacted by value from now on.
    for form in sorted(secrets):
        for shown in (f"key {form}.", f"?p={form}&q=1", json.dumps(f"AUTH {form}")):
            redacted = redact_text(shown)
            assert [s for s in secrets if s in redacted] == [], (form, redacted)


def test_a_password_outside_ascii_is_named_not_a_traceback(tmp_path: Path) -> None:
    """Python's smtplib sends AUTH as ASCII: a password with 'é' crashed mid-login."""
    result = _send_logging_in(tmp_path, "pässwörd7", accepted=True)
    assert result.exit_code == 1, result.output
    assert "characters outside ASCII" in result.output and "Traceback" not in result.output
    assert "pässwörd7" not in result.output and "ä" not in result.output


@pytest.mark.parametrize("key, value", [("unsubscribe", "https://x.example/u\r\nBcc: all@x"),
                                        ("subject", "{title}\nBcc: all@x"),
                                        ("unsubscribe", "mailto:d@x.org\u2028Bcc: all@x")])
def test_a_line_break_in_an_email_setting_is_a_config_error_naming_the_key(
        tmp_path: Path, key: str, value: str) -> None:
    config = workspace(tmp_path / "ws", free_port(), ["ada@example.org"])
    config.write_text(config.read_text() + f"{key} = {json.dumps(value)}\n")
    result = run("send", "--config", str(config))
    assert result.exit_code == 2
    assert f"email.{key}: must be one line" in result.output
    assert "Traceback" not in result.output


class RefusesTheSender(Inbox):
    """A server that will not take mail from our sender (a relay not set up for it)."""

    async def handle_MAIL(self, server: Any, session: Any, envelope: Any, address: str,
                          mail_options: Any) -> str:
        return "553 5.7.1 sender not allowed"


def test_a_failure_before_the_message_is_handed_over_holds_nobody_back(tmp_path: Path) -> None:
    with Smtp(tmp_path, tls=False, handler=RefusesTheSender()) as smtp:
        config = workspace(tmp_path / "ws", smtp.port, ["ada@example.org", "bo@example.org"])
        result = run("send", "--config", str(config))
        assert result.exit_code == 1
        assert "553 5.7.1 mailbox name not allowed" in result.output
        assert "may have received it" not in result.output
        again = run("send", "--config", str(config))
        assert "Held back" not in again.output and smtp.inbox.messages == []
