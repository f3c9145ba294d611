"""The chat webhook's URL as a careless user sets it: a bracket left open, a port out of range,
the URL pasted into config.toml alone or in a list. One line in our words, nothing recorded as
"may be in the channel", the URL's secret part never echoed, no word of our message eaten."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import cli
from generator.text.urls import redact_text
from tests.test_chat import VARIABLE, send, workspace


@pytest.mark.parametrize(("url", "why"), [
    ("https://[::1/services/T1/B2/secret-token", "an unclosed [ in its host"),
    ("https://hooks.example.org:99999/services/T1/B2/secret-token", "a port out of range"),
])
def test_a_malformed_webhook_url_is_one_line_and_nothing_is_held(tmp_path: Path, url: str,
                                                                  why: str) -> None:
    config = workspace(tmp_path / "ws")
    for _ in range(2):  # and the next run says the same: nothing is held back as "in doubt"
        result = send(config, url)
        assert result.exit_code == 1 and f"malformed one ({why}" in result.output, result.output
        assert "secret-token" not in result.output and "Traceback" not in result.output
        assert "may be in the channel" not in result.output
    assert not list((tmp_path / "ws").rglob("posted.json"))


def test_a_url_in_config_is_refused_in_whole_words_and_not_echoed_from_a_list(tmp_path: Path
                                                                              ) -> None:
    secret = "https://hooks.slack.com/services/T1/B2/pasted-by-mistake"
    for value in (f'"{secret}"', f'["{secret}"]'):
        config = workspace(tmp_path / f"ws{len(value)}")
        config.write_text(config.read_text().replace(f'"{VARIABLE}"', value))
        result = CliRunner().invoke(cli, ["send", "--config", str(config)])
        assert result.exit_code == 2 and "/services/T1" not in result.output, result.output
        if value.startswith("["):
            assert 'got an array (["https://hooks.slack.com/…"])' in result.output
        else:
            assert "which is a secret: put the URL in an environment variable" in result.output


def test_prose_after_secret_keeps_its_words_and_credentials_still_go() -> None:
    assert redact_text("a secret: put it here") == "a secret: put it here"
    assert redact_text("password: hunter2, secret=abc, 'api_key': 'xyz'") == (
        "password: [redacted], secret=[redacted], 'api_key': '[redacted]'")
