"""`digest send`: the edition as a newsletter, through a real SMTP server (aiosmtpd) started here.

With STARTTLS (a certificate made for 127.0.0.1, trusted through SSL_CERT_FILE) and AUTH, and
without either; a server that is down, refuses the login, or refuses one recipient.
"""

from __future__ import annotations

import email
import email.policy
import json
import re
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path

import html5lib
import pytest
from click.testing import CliRunner, Result

from generator.cli import cli
from generator.deliver.newsletter import OWN_MARKUP
from generator.publish.inert import live_in_fragment
from tests.browser import launch_chromium
from tests.conftest import write_config
from tests.servers.arxiv import ArxivServer
from tests.servers.sglang import Answer, SglangServer, realistic_responder, structured_answer
from tests.servers.smtp import Smtp, free_port

EDITION = "2026-12-02"
SITE = "https://digest.example.org/research/"
TO = ["ada@example.org", "bo@example.org"]


def email_config(config: Path, port: int, *, tls: bool, to: list[str] = TO) -> None:
    security = "starttls" if tls else "none"
    auth = 'username_env = "DIGEST_SMTP_USER"\npassword_env = "DIGEST_SMTP_PASSWORD"\n' if tls \
        else ""
    config.write_text(config.read_text().replace("[digest]\n", f'[digest]\nsite_url = "{SITE}"\n')
                      + f"""
[email]
to = {json.dumps(to)}
from = "Test Digest <digest@example.org>"
smtp_host = "127.0.0.1"
smtp_port = {port}
security = "{security}"
timeout_seconds = 5
unsubscribe = "mailto:digest@example.org?subject=unsubscribe"
{auth}""")


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory, fixtures: Path
              ) -> Iterator[tuple[Path, str]]:
    """One edition built once for the module (its own servers), and its config's text."""
    arxiv, sglang = ArxivServer(fixtures).start(), SglangServer().start()
    sglang.state.responder = realistic_responder
    try:
        config = write_config(tmp_path_factory.mktemp("mail") / "ws", arxiv, sglang,
                              structured=True)
        result = run("build", "--config", str(config), "--edition", EDITION)
        assert result.exit_code == 0, result.output
        yield config, config.read_text()
    finally:
        arxiv.stop()
        sglang.stop()


@pytest.fixture
def built(published: tuple[Path, str]) -> Path:
    """The published edition with its config as built and nothing sent yet."""
    config, text = published
    config.write_text(text)
    (config.parent / ".cache" / "editions" / EDITION / "sent.json").unlink(missing_ok=True)
    return config


@pytest.fixture
def tls_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    yield {"DIGEST_SMTP_USER": "digest", "DIGEST_SMTP_PASSWORD": "s3cret!"}


def parts(raw: bytes) -> tuple[EmailMessage, str, str]:
    message = email.message_from_bytes(raw, policy=email.policy.default)
    assert isinstance(message, EmailMessage)
    assert message.get_content_type() == "multipart/alternative"
    text = message.get_body(("plain",))
    html = message.get_body(("html",))
    assert text is not None and html is not None
    return message, text.get_content(), html.get_content()


def test_the_edition_arrives_once_with_both_parts_over_starttls_and_auth(
        built: Path, tmp_path: Path, tls_env: dict[str, str]) -> None:
    with Smtp(tmp_path, tls=True) as smtp:
        assert smtp.cert is not None
        email_config(built, smtp.port, tls=True)
        env = {**tls_env, "SSL_CERT_FILE": str(smtp.cert)}
        result = run("send", "--config", str(built), env=env)
        assert result.exit_code == 0, result.output
        assert f"sent to {len(TO)} recipient(s)" in result.output
        # One message per reader, each addressed to that reader alone, over one login.
        assert [(sender, rcpts) for sender, rcpts, _ in smtp.inbox.messages] == [
            ("digest@example.org", [address]) for address in TO]
        raw = smtp.inbox.messages[0][2]
        assert smtp.logins == [(b"digest", b"s3cret!")]
        message, text, html = parts(raw)
        record = json.loads((built.parent / "site_src" / "editions" / EDITION
                             / "edition.json").read_text())
        pick = record["picks"][0]
        # The subject names the top pick, so the inbox says what is in it.
        assert message["Subject"] == f"Test Digest · {EDITION}: {pick['name']}"
        assert message["List-Unsubscribe"] == "<mailto:digest@example.org?subject=unsubscribe>"
        assert message["Message-ID"].endswith("@digest.example.org>")
        assert message["To"] == TO[0]
        assert pick["name"] in text and pick["name"] in html
        # The lead first: the picks, with why each matters, before anything else; who wrote
        # each paper, its arXiv page.
        assert text.index(pick["name"]) < text.index("EDITOR'S PICKS") + 40
        assert html.index(pick["name"]) < html.index("Editor&#x27;s picks") + 200
        first = record["papers"][0]
        assert first["authors"][0] in text and f"https://arxiv.org/abs/{first['arxiv_id']}" in html
        assert "prefers-color-scheme: dark" in html
        assert f"{SITE}editions/{EDITION}/research-map.html" in text
        assert f'href="{SITE}editions/{EDITION}/papers/' in html
        assert "Paper 1" not in text and "s3cret" not in raw.decode(errors="replace")
        # Sent once: a second run sends nothing and says so; --resend sends again.
        again = run("send", "--config", str(built), env=env)
        assert again.exit_code == 0 and "nothing sent" in again.output
        assert len(smtp.inbox.messages) == 2
        assert run("send", "--config", str(built), "--resend", env=env).exit_code == 0
        assert len(smtp.inbox.messages) == 4
    sent = json.loads((built.parent / ".cache" / "editions" / EDITION / "sent.json").read_text())
    assert [r["to"] for r in sent["recipients"]] == TO * 2


def test_a_refused_recipient_is_one_line_and_the_next_run_completes_the_delivery(
        built: Path, tmp_path: Path) -> None:
    with Smtp(tmp_path, tls=False) as smtp:
        email_config(built, smtp.port, tls=False)
        smtp.inbox.refuse = {"bo@example.org"}
        result = run("send", "--config", str(built))
        assert result.exit_code == 1
        assert "refused: bo@example.org (550 5.1.1 mailbox unavailable)" in result.output
        assert [rcpts for _, rcpts, _ in smtp.inbox.messages] == [["ada@example.org"]]
        smtp.inbox.refuse = set()
        again = run("send", "--config", str(built))
        assert again.exit_code == 0 and "(1 had it already)" in again.output
        assert [rcpts for _, rcpts, _ in smtp.inbox.messages] == [["ada@example.org"],
                                                                   ["bo@example.org"]]


def test_a_server_that_is_down_or_refuses_the_login_is_one_line_and_exit_1(
        built: Path, tmp_path: Path, tls_env: dict[str, str]) -> None:
    email_config(built, free_port(), tls=False)
    down = run("send", "--config", str(built))
    assert down.exit_code == 1
    assert "could not send through 127.0.0.1:" in down.output and "connection refused" in down.output
    assert len(down.output.strip().splitlines()) == 1
    with Smtp(tmp_path, tls=True) as smtp:
        assert smtp.cert is not None
        built.write_text(built.read_text().split("\n[email]")[0].replace(
            f'site_url = "{SITE}"\n', ""))
        email_config(built, smtp.port, tls=True)
        env = {**tls_env, "DIGEST_SMTP_PASSWORD": "wrong", "SSL_CERT_FILE": str(smtp.cert)}
        refused = run("send", "--config", str(built), env=env)
        assert refused.exit_code == 1
        assert "refused the login of the user in DIGEST_SMTP_USER: 535" in refused.output
        assert "wrong" not in refused.output
        untrusted = run("send", "--config", str(built), env=tls_env)  # no SSL_CERT_FILE
        assert untrusted.exit_code == 1 and "TLS connection to 127.0.0.1" in untrusted.output
        assert smtp.inbox.messages == []
    assert not (built.parent / ".cache" / "editions" / EDITION / "sent.json").exists()


def test_a_dry_run_writes_an_eml_whose_html_is_inert_and_fits_a_phone(
        tmp_path: Path, arxiv_server: ArxivServer, sglang_server: SglangServer) -> None:
    hostile = "<script>alert(1)</script><img src=x onerror=alert(2)> $\\text{<b>x</b>}$"
    sglang_server.state.responder = lambda body: Answer(
        f"## Field overview\n\nPaper 1 shows {hostile} a wide gain.\n")
    sglang_server.state.structured_responder = lambda body: (
        Answer(json.dumps({"tldr": f"TLDR {hostile}", "problem": "p", "method": "m",
                           "result": "r", "limitations": "l"}))
        if "tldr" in json.dumps(body) and "brief" in json.dumps(body).lower()
        else structured_answer(body) or Answer("{}"))
    config = write_config(tmp_path / "ws", arxiv_server, sglang_server, structured=True)
    assert run("build", "--config", str(config), "--edition", EDITION).exit_code == 0
    email_config(config, 25, tls=False)
    result = run("send", "--config", str(config), "--dry-run")
    assert result.exit_code == 0, result.output
    eml = config.parent / ".cache" / "editions" / EDITION / "newsletter.eml"
    assert str(eml) in result.output
    _, text, html = parts(eml.read_bytes())
    # Live: only our own constant stylesheet (the dark-mode colours), never the model's text.
    assert live_in_fragment(html, allowed=OWN_MARKUP) == []
    assert live_in_fragment(html) == ["<style>"]
    assert "TLDR &lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;" in html
    tree = html5lib.parse(html, namespaceHTMLElements=False)
    tags = {element.tag for element in tree.iter()}
    attributes = {name for element in tree.iter() for name in element.attrib}
    assert not tags & {"script", "img", "link", "iframe", "object", "svg"}
    assert [f"<style>{e.text}</style>" for e in tree.iter("style")] == [OWN_MARKUP]
    assert "url(" not in OWN_MARKUP and "@import" not in OWN_MARKUP
    assert attributes <= {"lang", "charset", "name", "content", "style", "href", "class"}
    # Nothing loads from elsewhere: links are followed only when clicked.
    assert not any("url(" in element.get("style", "") for element in tree.iter())
    assert "<script>alert(1)</script>" in text  # plain text is text
    with launch_chromium() as browser:
        for width in (390, 640):
            page = browser.new_page(viewport={"width": width, "height": 900})
            page.set_content(html)
            assert page.evaluate("document.documentElement.scrollWidth <= innerWidth"), width
            assert page.evaluate("document.querySelectorAll('script, img, iframe').length") == 0


def test_sending_without_a_site_url_is_refused_with_a_reason(built: Path) -> None:
    email_config(built, 25, tls=False)
    built.write_text(built.read_text().replace(f'site_url = "{SITE}"\n', ""))
    result = run("send", "--config", str(built))
    assert result.exit_code == 2
    assert "set [digest] site_url" in result.output


def test_a_subject_names_the_top_pick_or_drops_the_place_for_it() -> None:
    from generator.deliver.newsletter import subject_line

    assert subject_line("{title} · {edition}: {pick}", "D", "2026-12-02", "FastKV") == \
        "D · 2026-12-02: FastKV"
    assert subject_line("{title} · {edition}: {pick}", "D", "2026-12-02", "") == "D · 2026-12-02"
    assert subject_line("{pick} — {title}", "D", "e", "") == "D"
    assert subject_line("{title} · {edition}", "D", "e", "FastKV") == "D · e"  # not asked for


def test_a_subject_fills_each_place_once_and_is_never_empty() -> None:
    from generator.deliver.newsletter import subject_line

    assert subject_line("{title}: {pick}", "D", "e", "Evil {edition}") == "D: Evil {edition}"
    assert subject_line("{title} ({pick})", "D", "e", "") == "D"
    assert subject_line("{pick}", "D", "e", "") == "D · e"


def test_the_dark_mail_colours_read_at_7_to_1_or_more() -> None:
    """Clients that honour prefers-color-scheme show OWN_MARKUP's colours on its background."""
    def luminance(colour: str) -> float:
        channels = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
        r, g, b = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    background = re.search(r"\.dm-page\{background:(#[0-9a-f]{6})", OWN_MARKUP)
    colours = re.findall(r"\{color:(#[0-9a-f]{6})", OWN_MARKUP)
    assert background and len(colours) == 3
    dark = luminance(background.group(1))
    for colour in colours:
        assert (luminance(colour) + 0.05) / (dark + 0.05) >= 7, colour
